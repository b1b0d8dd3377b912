"""Measure membership attacks on a finished run and write them to its attack.json.

NOT PRIVATE: this reads the run's private training records (members) and held-back
records (non-members) to score engine/audit/membership.py's attacks. The result is a diagnostic
for the data owner, written to its own file (attack.json), never into the released files
(synthetic.npz / synthetic.csv, samples.png) nor metrics.json, and it is labelled so.

The game: the dataset's held-back part (its test part, or the held-back part of a
user's file) is shuffled and cut into `folds`; each fold in turn is the non-members and
the other folds the attacker's reference data, so the reference never holds an
evaluated record. Each fold gets as many members, sampled without replacement from the
training records. Scores of all folds are pooled. Records are encoded as the attacker
can: numeric columns scaled by their public bounds (or by the reference data's range
where none is public), categoricals and the label one-hot at weight 1/√2 (a different
category counts as much as a column's full range), images flattened.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np

from engine.audit import membership as attacks
from engine.data.dataset import Dataset
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps

FILE = "attack.json"
LABEL = ("NOT PRIVATE: membership-inference diagnostic computed from the run's private "
         "training records and its held-back records; for the data owner only, not part of "
         "the release and outside the run's epsilon. Do not publish it with the synthetic data.")
MAX_PER_SIDE = 10_000  # members (= non-members) scored at most; enough for 1 % FPR figures
# Seconds per unit of work, measured on this project's shared 2-core machine (Adult-sized
# table: 9,000 targets × 32,559 synthetic records of 20 features in 4 s); bench/attacks.py
# prints the real figure beside this preview. Distances per (target × record) pair plus
# per feature; a KDE per (target × kernel point × PCA dimension): 31 s there.
_S_PER_PAIR, _S_PER_PAIR_FEATURE = 5e-9, 4e-10
_S_PER_KERNEL_DIM = 2.4e-9  # KDE trees slow down with the PCA's dimension
_S_FIXED, _S_PER_TARGET = 2.0, 7e-5  # PCA, set-up; the bootstrap of each attack's AUC

ProgressFn = Callable[[int, int, str], None]


# ------------------------------------------------------------------ encoding
def _encoder(data: Dataset, reference_x: np.ndarray, labelled: bool):
    """x, y → rows of the attacker's feature space (built from public facts and the
    reference records only)."""
    w = 1 / math.sqrt(2)
    n_cls = data.n_classes

    def onehot(codes, k):
        codes = np.clip(np.rint(codes), 0, k - 1).astype(int)
        out = np.zeros((len(codes), k))
        out[np.arange(len(codes)), codes] = w
        return out

    if data.kind == "image":
        def enc(x, y):
            flat = np.asarray(x, np.float64).reshape(len(x), -1)
            return np.hstack([flat, onehot(y, n_cls)]) if labelled else flat
        return enc
    scales = []
    for j, col in enumerate(data.columns):
        if col.kind == "num":
            lo, hi = col.bounds if col.bounds else (reference_x[:, j].min(), reference_x[:, j].max())
            scales.append((lo, max(hi - lo, 1e-12)))
        else:
            scales.append(None)

    def enc(x, y):
        parts = [onehot(x[:, j], len(col.categories)) if col.kind == "cat"
                 else ((x[:, j] - scales[j][0]) / scales[j][1])[:, None]
                 for j, col in enumerate(data.columns)]
        if labelled:
            parts.append(onehot(y, n_cls))
        return np.hstack(parts)
    return enc


# ------------------------------------------------------------------ the game
def sizes(n_train: int, n_test: int, n_synthetic: int, features: int, *,
          folds: int = 2) -> dict:
    """How many records the game scores, and a rough time: the cost preview."""
    n_out = min(n_test, n_train, MAX_PER_SIDE)
    n_ref = n_test - n_out // folds
    targets = 2 * n_out
    kernels = min(n_synthetic, attacks.KDE_MAX_POINTS) + min(n_ref, attacks.KDE_MAX_POINTS)
    seconds = (targets * (n_synthetic + n_ref) * (_S_PER_PAIR + features * _S_PER_PAIR_FEATURE)
               + targets * kernels * min(features, attacks.PCA_COMPONENTS) * _S_PER_KERNEL_DIM
               + _S_FIXED + targets * _S_PER_TARGET)
    return {"members": n_out, "non-members": n_out, "reference per fold": n_ref,
            "synthetic": int(n_synthetic), "features": int(features), "folds": folds,
            "estimated seconds": round(seconds, 1)}


def data_sizes(data: Dataset, n_synthetic: int, *, folds: int = 2) -> dict:
    """`sizes` for a loaded dataset (features as the encoder builds them, label included)."""
    if data.kind == "image":
        dim = int(np.prod(data.x_train.shape[1:]))
    else:
        dim = sum(len(c.categories) if c.kind == "cat" else 1 for c in data.columns)
    return sizes(data.n_train, len(data.y_test), n_synthetic, dim + data.n_classes, folds=folds)


def run_sizes(run_dir, *, folds: int = 2) -> dict:
    """`sizes` from a run's files alone, without loading its data (the app's preview):
    counts from metrics.json, the width from the synthetic file's header (one column per
    CSV column: one-hot widths are not known without the data, so it reads low)."""
    run = Path(run_dir)
    m = json.loads((run / "metrics.json").read_text())
    features = 0
    if (run / "synthetic.npz").is_file():
        import zipfile

        with zipfile.ZipFile(run / "synthetic.npz") as zf, zf.open("x.npy") as f:
            version = np.lib.format.read_magic(f)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            features = int(np.prod(read(f)[0][1:]))
    elif (run / "synthetic.csv").is_file():
        with open(run / "synthetic.csv", encoding="utf-8") as f:
            features = len(f.readline().split(","))
    return sizes(int(m.get("n_train", 0)), int(m.get("n_test", 0)),
                 int(m.get("n_synthetic", 0)), features, folds=folds)


def preview_line(info: dict) -> str:
    return (f"attack: {info['members']:,} members + {info['non-members']:,} non-members "
            f"against {info['synthetic']:,} synthetic records of {info['features']:,} features "
            f"({info['folds']} folds, reference {info['reference per fold']:,} records each): "
            f"about {info['estimated seconds']:.0f} s")


def play(data: Dataset, syn_x: np.ndarray, syn_y: np.ndarray, *, folds: int = 2, seed: int = 0,
         progress: ProgressFn | None = None) -> tuple[dict, dict]:
    """Every attack's pooled scores: ({attack: member scores}, {attack: non-member scores})."""
    if len(data.y_test) < 2 * folds or data.n_train < folds:
        raise InputError(f"too few held-back records ({len(data.y_test)}) to attack this run; "
                         f"the game needs at least {2 * folds}.")
    rng = np.random.default_rng(seed)
    n_out = min(len(data.y_test), data.n_train, MAX_PER_SIDE)
    order = rng.permutation(len(data.y_test))
    evaluated = order[:n_out]
    members = rng.choice(data.n_train, n_out, replace=False)
    labelled = bool((np.asarray(syn_y) >= 0).any())
    s_in: dict[str, list] = {}
    s_out: dict[str, list] = {}
    for f in range(folds):
        out_idx = evaluated[f::folds]
        in_idx = members[f::folds]
        ref_idx = np.setdiff1d(order, out_idx)  # every held-back record not evaluated here
        if progress:
            progress(f, folds, f"fold {f + 1}/{folds}: scoring {len(in_idx) + len(out_idx):,} "
                               f"records against {len(syn_y):,} synthetic")
        enc = _encoder(data, data.x_test[ref_idx], labelled)
        targets = np.vstack([enc(data.x_train[in_idx], data.y_train[in_idx]),
                             enc(data.x_test[out_idx], data.y_test[out_idx])])
        scores = attacks.attack_scores(targets, enc(syn_x, syn_y),
                                       enc(data.x_test[ref_idx], data.y_test[ref_idx]),
                                       seed=seed + f)
        for name, s in scores.items():
            s_in.setdefault(name, []).append(s[:len(in_idx)])
            s_out.setdefault(name, []).append(s[len(in_idx):])
    if progress:
        progress(folds, folds, "scored")
    return ({k: np.concatenate(v) for k, v in s_in.items()},
            {k: np.concatenate(v) for k, v in s_out.items()})


def _tradeoffs(privacy_report: dict | None, epsilon: float, delta: float) -> dict:
    """The run's own curve (from its accountant report) and its (ε, δ) curve."""
    from engine.privacy import risk

    out = {"report": risk.for_report(privacy_report)} if privacy_report else {}
    out["epsilon"] = risk.for_epsilon(epsilon, delta)
    return out


def evaluate(s_in: dict, s_out: dict, *, epsilon: float, delta: float,
             privacy_report: dict | None = None, confidence: float = 0.95,
             seed: int = 0) -> dict:
    """Each attack's figures, each bound's figures, and every point outside a bound."""
    curves = _tradeoffs(privacy_report, epsilon, delta)
    result = {"attacks": {}, "bounds": {}, "violations": []}
    for key, t in curves.items():
        result["bounds"][key] = {
            "source": t.source, "tpr_at_1pct_fpr": float(t.tpr(np.array([0.01]))[0]),
            "auc_max": attacks.bound_auc(t.tpr), "curve": attacks.bound_points(t.tpr)}
    for name in s_in:
        summary = attacks.summarise(s_in[name], s_out[name], confidence=confidence, seed=seed)
        summary["title"] = attacks.TITLES.get(name, name)
        for key, t in curves.items():
            result["violations"] += [f"{v} ({key} bound)"
                                     for v in attacks.bound_check(summary, t.tpr, name=name)]
        result["attacks"][name] = summary
    result["inside_bound"] = not result["violations"]
    return result


def measure(data: Dataset, syn_x, syn_y, *, epsilon: float, delta: float,
            privacy_report: dict | None = None, folds: int = 2, seed: int = 0,
            confidence: float = 0.95, progress: ProgressFn | None = None) -> dict:
    """Play the game on one release and report it (the body of attack.json)."""
    t0 = time.perf_counter()
    info = data_sizes(data, len(syn_y), folds=folds)
    s_in, s_out = play(data, syn_x, syn_y, folds=folds, seed=seed, progress=progress)
    result = evaluate(s_in, s_out, epsilon=epsilon, delta=delta, privacy_report=privacy_report,
                      confidence=confidence, seed=seed)
    info.pop("estimated seconds")
    return {"label": LABEL, "game": info, "confidence": confidence, **result,
            "seconds": round(time.perf_counter() - t0, 3)}


# ------------------------------------------------------------------ a run's folder
def _fingerprint(run: Path) -> str:
    """Which run this result describes: a hash of its config and synthetic file."""
    h = hashlib.sha256()
    for name in ("config.json", "synthetic.npz", "synthetic.csv"):
        if (run / name).is_file():
            h.update(name.encode() + (run / name).read_bytes())
    return h.hexdigest()[:16]


def read_synthetic(run: Path, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The released records as x, y (y = −1 where the release has no labels)."""
    if (run / "synthetic.npz").is_file():
        with np.load(run / "synthetic.npz") as z:
            return z["x"], z["y"]
    if not (run / "synthetic.csv").is_file():
        raise InputError(f"{run} holds no synthetic.npz or synthetic.csv; is the run finished?")
    import pandas as pd

    from engine.data.catalog import frame_to_tabular

    frame = pd.read_csv(run / "synthetic.csv", dtype=str, keep_default_na=False)
    for c in data.columns:
        if c.kind == "num":
            frame[c.name] = pd.to_numeric(frame[c.name])
    x = frame_to_tabular(frame, data.columns)
    label = data.notes.get("label", "label")
    if label not in frame.columns:
        return x, np.full(len(x), -1)
    index = {name: i for i, name in enumerate(data.class_names)}
    y = frame[label].map(lambda v: index.get(v, index.get(str(v), -1))).to_numpy(int)
    return x, y


def load_run(run_dir) -> tuple[Path, dict, dict, Dataset]:
    """(folder, config.json, metrics.json, the dataset reloaded as the run saw it)."""
    from engine.core.config import RunConfig
    from engine.data import catalog as datasets

    run = Path(run_dir)
    if not (run / "config.json").is_file() or not (run / "metrics.json").is_file():
        raise InputError(f"{run} is not a finished run's folder (config.json and metrics.json "
                         "are needed).")
    config = json.loads((run / "config.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    if metrics.get("status") not in ("finished", "cancelled"):
        raise InputError(f"the run in {run} has status {metrics.get('status')!r}; only a run "
                         "that released its synthetic data can be attacked.")
    cfg = RunConfig.from_dict(config)
    data = datasets.load(cfg.dataset, seed=cfg.seed, options=cfg.data_options)
    return run, config, metrics, data


def attack_run(run_dir, *, folds: int = 2, seed: int = 0,
               progress: ProgressFn | None = None) -> dict:
    """Measure a finished run and write the result to its attack.json; return it."""
    from engine.core.config import parse_epsilon

    run, config, metrics, data = load_run(run_dir)
    syn_x, syn_y = read_synthetic(run, data)
    result = measure(data, syn_x, syn_y, epsilon=parse_epsilon(config["epsilon"]),
                     delta=float(config["delta"]), privacy_report=metrics.get("privacy"),
                     folds=folds, seed=seed, progress=progress)
    result["run"] = {"method": config["method"], "dataset": config["dataset"],
                     "epsilon": config["epsilon"], "delta": config["delta"],
                     "fingerprint": _fingerprint(run)}
    (run / FILE).write_text(dumps(result, indent=1, sort_keys=True))
    return result


def released(run_dir) -> bool:
    """Does the folder hold a release to attack (a synthetic file)?"""
    return any((Path(run_dir) / n).is_file() for n in ("synthetic.npz", "synthetic.csv"))


def saved(run_dir) -> dict | None:
    """The run's attack.json if it describes the run's current files, else None."""
    run = Path(run_dir)
    try:
        result = json.loads((run / FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return result if result.get("run", {}).get("fingerprint") == _fingerprint(run) else None
