"""How close a synthetic table is to the real one, column by column and pair by pair.

Per column: total variation distance for categorical columns (½ Σ |p − q| over the
category list), and for numeric ones the Wasserstein-1 distance divided by the column's
range (its public bounds when given, else the real records' own min–max) plus the
Kolmogorov–Smirnov statistic (scipy.stats). Per pair of columns: a dependence score on
the real and on the synthetic table — Pearson correlation for two numeric columns,
Cramér's V (scipy.stats.contingency.association) when one or both are categorical, the
numeric one cut into `BINS` equal-width bins on the same range — and their absolute
difference, as a matrix and averaged. The label is one more categorical column.
Rules broken (`rules_broken`): the share of synthetic numeric values outside the
column's bounds, and of synthetic rows that break a pair rule of the real table (a value
that always comes with one value of another column: declared in the schema, e.g.
education → education_num, or seen in ≥ `RULE_SUPPORT` real records, e.g. "Husband" →
"Male").

Privacy: NOT private. Every figure is measured on the real training records without
noise (like the accuracies); metrics.json lists it under disclosures "not private".
"""

from __future__ import annotations

import numpy as np
from scipy.stats import ks_2samp, wasserstein_distance
from scipy.stats.contingency import association

from engine.data.dataset import Column

BINS = 10  # numeric columns in dependence tables and histograms
MAX_ROWS = 20_000  # rows compared per table (a seeded subsample beyond this)
RULE_SUPPORT = 20  # real records a value needs before "it always comes with w" is a rule


def _range(real: np.ndarray, col: Column) -> tuple[float, float]:
    if col.bounds is not None:
        return float(col.bounds[0]), float(col.bounds[1])
    lo, hi = float(np.min(real)), float(np.max(real))
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _codes(v: np.ndarray, col: Column, rng: tuple[float, float]) -> tuple[np.ndarray, int]:
    """Category codes, or the numeric values cut into BINS bins on `rng` (clipped)."""
    if col.kind == "cat":
        k = len(col.categories)
        return np.clip(np.rint(v), 0, k - 1).astype(np.int64), k
    edges = np.linspace(rng[0], rng[1], BINS + 1)
    return np.clip(np.searchsorted(edges[1:-1], v, side="right"), 0, BINS - 1), BINS


def column_distance(real: np.ndarray, syn: np.ndarray, col: Column,
                    rng: tuple[float, float]) -> dict:
    """One column's distance (see the module docstring)."""
    if col.kind == "cat":
        k = len(col.categories)
        p = np.bincount(_codes(real, col, rng)[0], minlength=k) / len(real)
        q = np.bincount(_codes(syn, col, rng)[0], minlength=k) / len(syn)
        return {"kind": "categorical", "tv": float(0.5 * np.abs(p - q).sum())}
    span = rng[1] - rng[0]
    return {"kind": "numeric",
            "wasserstein_normalised": float(wasserstein_distance(real, syn) / span),
            "ks": float(ks_2samp(real, syn).statistic)}


def cramers_v(a: np.ndarray, b: np.ndarray, ka: int, kb: int) -> float:
    """Cramér's V of two code vectors; 0 when a table has fewer than two non-empty rows or
    columns (no association can be measured)."""
    table = np.bincount(a * kb + b, minlength=ka * kb).reshape(ka, kb)
    table = table[table.sum(1) > 0][:, table.sum(0) > 0]
    if min(table.shape) < 2:
        return 0.0
    return float(association(table, method="cramer"))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def dependence_matrix(x: np.ndarray, columns: list[Column],
                      ranges: list[tuple[float, float]]) -> np.ndarray:
    """(d, d) dependence scores of one table, 1 on the diagonal."""
    d = len(columns)
    coded = [_codes(x[:, j], c, r) for j, (c, r) in enumerate(zip(columns, ranges))]
    out = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            if columns[i].kind == "num" and columns[j].kind == "num":
                s = _pearson(x[:, i], x[:, j])
            else:
                s = cramers_v(coded[i][0], coded[j][0], coded[i][1], coded[j][1])
            out[i, j] = out[j, i] = s
    return out


def _subsample(x: np.ndarray, seed: int) -> np.ndarray:
    if len(x) <= MAX_ROWS:
        return x
    return x[np.random.default_rng(seed).choice(len(x), MAX_ROWS, replace=False)]


def fidelity(real_x: np.ndarray, real_y: np.ndarray | None, syn_x: np.ndarray,
             syn_y: np.ndarray | None, columns: list[Column], class_names: list[str] | None = None,
             *, label: str = "label", seed: int = 0) -> dict:
    """Per-column distances, dependence matrices and their differences, and per-column
    histograms (real vs synthetic, for the Runs page). The label joins as a categorical
    column when both tables have one."""
    columns = list(columns)
    rules = rules_broken(real_x, syn_x, columns)  # every row: a rare break still counts
    if real_y is not None and syn_y is not None and (syn_y >= 0).any():
        columns.append(Column(label, "cat", categories=list(class_names)))
        real_x = np.column_stack([real_x, real_y])
        syn_x = np.column_stack([syn_x, syn_y])
    real_x = _subsample(np.asarray(real_x, np.float64), seed)
    syn_x = _subsample(np.asarray(syn_x, np.float64), seed)
    ranges = [_range(real_x[:, j], c) for j, c in enumerate(columns)]
    per_col = {c.name: column_distance(real_x[:, j], syn_x[:, j], c, ranges[j])
               for j, c in enumerate(columns)}
    for j, c in enumerate(columns):
        per_col[c.name]["histogram"] = _histograms(real_x[:, j], syn_x[:, j], c, ranges[j])
    dep_real = dependence_matrix(real_x, columns, ranges)
    dep_syn = dependence_matrix(syn_x, columns, ranges)
    diff = np.abs(dep_real - dep_syn)
    off = ~np.eye(len(columns), dtype=bool)
    # The headline per column is bounded in [0, 1] for both kinds: TV or KS (Wasserstein
    # / range is unbounded when synthetic values land far outside the real range).
    scores = [v.get("tv", v.get("ks")) for v in per_col.values()]
    return {
        "columns": per_col,
        "mean_column_distance": float(np.mean(scores)),
        "dependence": {"names": [c.name for c in columns], "real": dep_real.tolist(),
                       "synthetic": dep_syn.tolist(), "abs_difference": diff.tolist()},
        "mean_dependence_error": float(diff[off].mean()) if off.any() else 0.0,
        "rules_broken": rules,
        "how": "per column: total variation (categorical), KS and Wasserstein-1 / range "
               "(numeric; range = public bounds, else the real records' min-max); the mean "
               "column distance averages TV and KS; pairs: "
               f"|real - synthetic| of Pearson r (numeric pairs) or Cramér's V (numeric cut "
               f"into {BINS} bins); measured on the real training records",
    }


def _histograms(real: np.ndarray, syn: np.ndarray, col: Column,
                rng: tuple[float, float]) -> dict:
    """Shares per category or per bin, real and synthetic, on the same bins."""
    codes_r, k = _codes(real, col, rng)
    codes_s, _ = _codes(syn, col, rng)
    if col.kind == "cat":
        x = list(col.categories)
    else:
        edges = np.linspace(rng[0], rng[1], k + 1)
        x = [float(v) for v in (edges[:-1] + edges[1:]) / 2]
    return {"x": x, "real": (np.bincount(codes_r, minlength=k) / len(real)).tolist(),
            "synthetic": (np.bincount(codes_s, minlength=k) / len(syn)).tolist()}


# ------------------------------------------------------------------ rules broken
def rules_broken(real_x: np.ndarray, syn_x: np.ndarray, columns: list[Column]) -> dict:
    """What in the synthetic table the real one never allows (module docstring):
    `outside_bounds` (share of numeric values outside [lo, hi]: public bounds, else the
    real records' min–max) with its share per column, `broken_pairs` (share of rows that
    break a pair rule), the rules and their shares of rows, and `rows` (share of rows
    breaking anything). NOT private: read from the real training records."""
    real_x, syn_x = np.asarray(real_x, np.float64), np.asarray(syn_x, np.float64)
    n = max(1, len(syn_x))
    bad_rows = np.zeros(len(syn_x), bool)
    outside = {}
    for j, c in enumerate(columns):
        if c.kind == "num":
            lo, hi = c.bounds if c.bounds is not None else (real_x[:, j].min(), real_x[:, j].max())
            out = (syn_x[:, j] < lo) | (syn_x[:, j] > hi)
            outside[c.name], bad_rows = float(out.mean()) if len(out) else 0.0, bad_rows | out
    pairs = {}
    pair_rows = np.zeros(len(syn_x), bool)
    for (i, j), declared in _rule_pairs(columns).items():
        broken = _pair_breaks(real_x[:, i], real_x[:, j], syn_x[:, i], syn_x[:, j], declared)
        if broken is not None:
            name = f"{columns[i].name} → {columns[j].name}" + (" (declared)" if declared else "")
            pairs[name], pair_rows = float(broken.mean()), pair_rows | broken
    return {"outside_bounds": float(np.mean(list(outside.values()))) if outside else 0.0,
            "outside_bounds_by_column": outside,
            "broken_pairs": float(pair_rows.sum() / n), "pairs": pairs,
            "rows": float((bad_rows | pair_rows).sum() / n),
            "how": "numeric values outside public bounds (else the real min-max); rows "
                   "where a value comes with another column's value the real table never "
                   f"pairs it with (declared in the schema, or seen in >= {RULE_SUPPORT} real "
                   "records with one partner only); measured on the real training records"}


def _rule_pairs(columns: list[Column]) -> dict[tuple[int, int], bool]:
    """(i, j) → declared: every declared dependency, and every ordered pair of
    categorical columns (a rule is looked for in the data)."""
    index = {c.name: k for k, c in enumerate(columns)}
    out = {(i, j): False for i, a in enumerate(columns) for j, b in enumerate(columns)
           if i != j and a.kind == b.kind == "cat"}
    for i, c in enumerate(columns):
        out.update({(i, index[b]): True for b in c.determines if b in index})
    return out


def _pair_breaks(ra, rb, sa, sb, declared: bool) -> np.ndarray | None:
    """Per synthetic row, whether (a, b) breaks a rule of the real pairs; None when the
    real pairs hold no rule. Declared: any pair the real table never holds breaks it;
    else only an a-value with ≥ RULE_SUPPORT real records, all with one partner, rules."""
    _, codes = np.unique(np.concatenate([ra, sa]), return_inverse=True)
    _, bcodes = np.unique(np.concatenate([rb, sb]), return_inverse=True)
    ka, kb, m = codes.max() + 1, bcodes.max() + 1, len(ra)
    table = np.bincount(codes[:m] * kb + bcodes[:m], minlength=ka * kb).reshape(ka, kb)
    support, partners = table.sum(1), (table > 0).sum(1)
    ruled = np.full(ka, True) if declared else (partners == 1) & (support >= RULE_SUPPORT)
    if not ruled.any():
        return None
    sa_code, sb_code = codes[m:], bcodes[m:]
    return ruled[sa_code] & (table[sa_code, sb_code] == 0)
