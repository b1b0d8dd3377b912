"""Pure-Python helpers for the app: setting choices and their URL form, knob widgets'
bounds, and the tables/pictures the pages draw (no Streamlit here, so it is testable).

The Playground keeps its settings in the URL (Streamlit's `bind="query-params"`): every
value is a short string so a copied link restores it exactly; `config_from_settings`
turns those strings back into a validated RunConfig.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import RunConfig
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


@dataclass(frozen=True)
class Knob:
    """How to show one method parameter: widget kind and bounds."""

    name: str
    kind: str  # "int", "float", "choice", "bool", "optional_float", "optional_int"
    default: Any
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    choices: tuple = ()
    help: str = ""
    main: bool = False  # shown up front; others go under "Advanced"


# Bounds that make sense for each known knob; hi values scale with the dataset default.
_KNOWN: dict[str, dict[str, Any]] = {
    # DP-MERF
    "n_features": dict(kind="int", lo=100, hi=50_000, step=100, main=True,
                       help="Random features D. The noise per coordinate is fixed, so "
                            "small datasets want smaller D."),
    "length_scale": dict(kind="optional_float", lo=0.01, hi=100.0, main=True,
                         help="Gaussian-kernel length scale ℓ; empty = the dataset's "
                              "public default (no privacy cost)."),
    "epochs": dict(kind="int", lo=1, hi=1000, step=1, main=True,
                   help="Generator training length. Free after the release (post-processing)."),
    "lr": dict(kind="float", lo=1e-5, hi=0.5, main=True, help="Adam learning rate."),
    "batch_size": dict(kind="int", lo=2, hi=10_000, step=1),
    "latent": dict(kind="int", lo=1, hi=256, step=1),
    "labels": dict(kind="choice", choices=("balanced", "counts", "none")),
    "counts_share": dict(kind="float", lo=0.01, hi=0.99),
    "bounds_share": dict(kind="float", lo=0.01, hi=0.99),
    "accountant": dict(kind="choice", choices=("exact", "rdp")),
    "projection": dict(kind="choice", choices=("auto", "float32", "bfloat16"),
                       help="Precision of the random-feature matmul; auto = bf16 only "
                            "where this machine has fast bf16 (GPU, AVX512-BF16, AMX)."),
    "sample_every": dict(kind="int", lo=1, hi=10_000, step=1),
    "probe_every": dict(kind="int", lo=0, hi=100_000, step=1),
    # DataLens
    "teachers": dict(kind="int", lo=1, hi=10_000, step=1, main=True,
                     help="Teachers, each on its own disjoint slice of the data."),
    "top_k": dict(kind="int", lo=1, hi=10_000, step=1, main=True,
                  help="Coordinates each teacher votes on; sensitivity grows as 2√k."),
    "sigma": dict(kind="float", lo=0.0, hi=1e6, main=True,
                  help="Noise std added to the summed votes."),
    "beta": dict(kind="float", lo=0.0, hi=1.0, main=True,
                 help="Threshold: keep a coordinate when |noisy votes| ≥ β·teachers."),
    "clip": dict(kind="float", lo=1e-12, hi=1e3, main=True,
                 help="Gradient clip c before stochastic signs."),
    "gamma": dict(kind="float", lo=1e-3, hi=1e3),
    "batch": dict(kind="optional_int", lo=1, hi=100_000,
                  help="Synthetic records per step; empty = records per teacher."),
    "records_per_teacher": dict(kind="optional_int", lo=1, hi=100_000,
                                help="Empty = all records, split evenly."),
    "teacher_steps": dict(kind="int", lo=1, hi=100, step=1),
    "first_teacher_steps": dict(kind="int", lo=1, hi=1000, step=1),
    "lr_teacher": dict(kind="float", lo=1e-6, hi=0.5),
    "lr_student": dict(kind="float", lo=1e-6, hi=0.5),
    "max_steps": dict(kind="int", lo=1, hi=1_000_000, step=1,
                      help="Cap on iterations (the budget may stop training earlier)."),
}


def knobs(params, *, n_train: int | None = None, n_dims: int | None = None) -> list[Knob]:
    """Widget specs for a method's Params instance (its defaults are the dataset's).

    `n_train` / `n_dims` cap knobs that cannot exceed the data (teachers, top-k).
    Structural knobs (tuples of layer widths) are not shown.
    """
    out = []
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        if isinstance(v, (tuple, list, dict)):
            continue
        spec = dict(_KNOWN.get(f.name, {}))
        if f.name == "teachers" and n_train:
            spec["hi"] = n_train
        if f.name == "top_k" and n_dims:
            spec["hi"] = n_dims
        if not spec:  # unknown knob: infer from the default's type
            if isinstance(v, bool):
                spec = dict(kind="bool")
            elif isinstance(v, int):
                spec = dict(kind="int", lo=0, step=1)
            elif isinstance(v, float):
                spec = dict(kind="float", lo=0.0)
            elif v is None:
                spec = dict(kind="optional_float", lo=0.0)
            else:
                spec = dict(kind="choice", choices=(v,))
        if spec["kind"] == "choice" and v not in spec.get("choices", ()):
            spec["choices"] = tuple(spec.get("choices", ())) + (v,)
        if spec["kind"] in ("int", "float") and isinstance(v, (int, float)):
            # Keep the default reachable whatever the table says.
            if spec.get("lo") is not None and v < spec["lo"]:
                spec["lo"] = v
            if spec.get("hi") is not None and v > spec["hi"]:
                spec["hi"] = v
        out.append(Knob(name=f.name, default=v, **spec))
    return out


def config_from_settings(*, dataset: str, method: str, eps: str, delta: str, seed: int,
                         params: dict[str, Any], data_options: dict | None = None,
                         device: str = "auto") -> RunConfig:
    """The Playground's strings → a validated RunConfig (raises InputError)."""
    from engine.config import parse_epsilon

    try:
        delta_v = float(delta)
    except (TypeError, ValueError):
        raise InputError(f"delta must be a number such as 1e-5. Got {delta!r}.") from None
    return RunConfig(method=method, dataset=dataset, epsilon=parse_epsilon(eps),
                     delta=delta_v, seed=int(seed), device=device,
                     data_options=dict(data_options or {}),
                     params={k: v for k, v in params.items()}).validate()


def knob_key(method: str, name: str) -> str:
    """The Playground's widget key (and URL name) of a method knob: dpmerf_epochs."""
    return f"{method}_{name}"


def changed_params(params, values: dict[str, Any]) -> dict[str, Any]:
    """Only the knobs that differ from the dataset's defaults (short configs, clean URLs)."""
    out = {}
    for f in dataclasses.fields(params):
        if f.name in values and values[f.name] != getattr(params, f.name):
            out[f.name] = values[f.name]
    return out


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
