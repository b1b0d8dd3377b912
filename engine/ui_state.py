"""Pure-Python helpers for the app: setting choices and their URL form, and the
tables/pictures the pages draw (no Streamlit here, so it is testable).

The Playground keeps its settings in the URL (Streamlit's `bind="query-params"`): every
value is a short string so a copied link restores it exactly; ui/knobs.py turns those
strings back into a validated RunConfig.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.errors import InputError

# ε on a log scale, plus the non-private reference. Strings: they go into the URL.
EPSILON_CHOICES = ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "inf"]
DELTA_CHOICES = ["1e-7", "1e-6", "1e-5", "1e-4", "1e-3"]
DEFAULTS = {"dataset": "digits", "method": "dpmerf", "eps": "1", "delta": "1e-5", "seed": 0}


def epsilon_label(choice: str) -> str:
    # The label is also the URL form of the choice (Streamlit binds formatted options),
    # so numbers stay bare: ?eps=0.5 works in a hand-written link.
    return "∞ (non-private)" if choice == "inf" else choice


def format_epsilon(eps: float | None) -> str:
    if eps is None or (isinstance(eps, float) and math.isinf(eps)):
        return "∞"
    return f"{eps:g}"


def privacy_in_words(eps: float, delta: float) -> str:
    """(ε, δ) as a plain sentence: the odds ratio e^ε and δ as a failure chance."""
    if math.isinf(eps):
        return ("ε = ∞: no privacy at all. Nothing limits what the output reveals about "
                "any one person (a reference run, trained without noise).")
    ratio = math.exp(eps)
    return (f"ε = {eps:g}: any result is at most e^ε ≈ {ratio:,.3g}× as likely with one "
            f"person's record as without it, so seeing it raises anyone's odds that this "
            f"person is in the data at most {ratio:,.3g}-fold (from 1:1 to {ratio:,.3g}:1). "
            f"δ = {delta:g}: the small chance that this promise fails (keep it below "
            f"1 / records).")


# ------------------------------------------------------------------ pictures / tables


def image_grid(x: np.ndarray, y: np.ndarray | None = None, *, per_row: int = 10,
               max_images: int = 100, pad: int = 1, scale: int = 1) -> np.ndarray:
    """Tile images (n, c, h, w) in [0, 1] into one uint8 picture (H, W) or (H, W, 3).

    With labels, images are sorted by class so each row reads as one digit/class.
    """
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 4:
        raise InputError(f"images must have shape (n, c, h, w); got {x.shape}.")
    if y is not None:
        order = np.argsort(np.asarray(y), kind="stable")
        x = x[order]
    x = np.clip(x[:max_images], 0.0, 1.0)
    n, c, h, w = x.shape
    cols = min(per_row, max(n, 1))
    rows = max(1, math.ceil(n / cols))
    grid = np.ones((c, rows * (h + pad) + pad, cols * (w + pad) + pad), dtype=np.float32)
    for i in range(n):
        r, q = divmod(i, cols)
        grid[:, pad + r * (h + pad): pad + r * (h + pad) + h,
             pad + q * (w + pad): pad + q * (w + pad) + w] = x[i]
    img = (grid * 255).round().astype(np.uint8)
    img = img[0] if c == 1 else np.transpose(img, (1, 2, 0))
    if scale > 1:
        img = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
    return img


def grid_scale(h: int, target: int = 28) -> int:
    """Integer upscaling so small images (digits are 8×8) are visible without blur."""
    return max(1, round(target / max(1, h)))


def runs_rows(runs: list[dict], labels: dict[str, dict] | None = None) -> list[dict]:
    """Store rows → flat dicts for a table; `labels` are the runs' names and tags."""
    from engine.tuning import differing_settings, settings_label

    labels = labels or {}
    out = []
    for r in runs:
        secs = (r["ended"] or r["heartbeat"] or r["created"]) - (r["started"] or r["created"])
        lab = labels.get(r["id"], {})
        out.append({
            "run": r["id"], "name": lab.get("name", ""), "tags": ", ".join(lab.get("tags", [])),
            "method": r["method"], "dataset": r["dataset"],
            "epsilon": format_epsilon(r["epsilon"]), "seed": r["seed"],
            "settings": settings_label(differing_settings(r["config"])),
            "accuracy": r["accuracy"], "real accuracy": r["real_accuracy"],
            "seconds": round(max(0.0, secs), 1) if r["started"] else None,
            "status": r["status"], "sweep": r["sweep"] or "",
        })
    return out


def privacy_utility(runs: list[dict]) -> dict[str, Any]:
    """Finished runs → accuracy vs ε per configuration: mean, min and max over seeds.

    A configuration is a method plus the settings that differ from its defaults
    (engine.tuning), so two tunings of one method are two lines, not one averaged blur.
    Non-private runs (ε = ∞) become one reference level per configuration, and the same
    classifier trained on real data (not private) becomes the top reference.
    """
    from engine.tuning import differing_settings, settings_label

    by: dict[tuple[str, str, float], list[float]] = {}
    nonpriv: dict[tuple[str, str], list[float]] = {}
    real: list[float] = []
    for r in runs:
        if r["status"] != "finished" or r["accuracy"] is None:
            continue
        if r["real_accuracy"] is not None:
            real.append(r["real_accuracy"])
        group = (r["method"], settings_label(differing_settings(r["config"])))
        if math.isinf(r["epsilon"]):
            nonpriv.setdefault(group, []).append(r["accuracy"])
        else:
            by.setdefault((*group, float(r["epsilon"])), []).append(r["accuracy"])
    lines: dict[tuple[str, str], dict[str, list[float]]] = {}
    for (method, settings, eps), accs in sorted(by.items()):
        d = lines.setdefault((method, settings),
                             {"epsilon": [], "mean": [], "lo": [], "hi": [], "n": []})
        d["epsilon"].append(eps)
        d["mean"].append(float(np.mean(accs)))
        d["lo"].append(float(np.min(accs)))
        d["hi"].append(float(np.max(accs)))
        d["n"].append(len(accs))
    return {"lines": lines,
            "nonprivate": {g: float(np.mean(a)) for g, a in nonpriv.items()},
            "real": float(np.mean(real)) if real else None}


def marginal_bins(real: np.ndarray, synth: np.ndarray, *, bins: int = 30,
                  categories: list[str] | None = None) -> dict[str, Any]:
    """Histograms of one column, real vs synthetic, on shared bins (fractions)."""
    real = np.asarray(real, dtype=np.float64)
    synth = np.asarray(synth, dtype=np.float64)
    if categories is not None:
        k = len(categories)
        rc = np.bincount(np.clip(np.rint(real), 0, k - 1).astype(int), minlength=k)
        sc = np.bincount(np.clip(np.rint(synth), 0, k - 1).astype(int), minlength=k)
        return {"x": list(categories), "real": rc / max(1, rc.sum()),
                "synthetic": sc / max(1, sc.sum()), "categorical": True}
    both = np.concatenate([real, synth])
    both = both[np.isfinite(both)]
    lo, hi = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    rh, _ = np.histogram(real, edges)
    sh, _ = np.histogram(synth, edges)
    centers = 0.5 * (edges[1:] + edges[:-1])
    return {"x": centers, "real": rh / max(1, rh.sum()), "synthetic": sh / max(1, sh.sum()),
            "categorical": False}
