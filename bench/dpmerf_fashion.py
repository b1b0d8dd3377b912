"""Benchmark (not a test): DP-MERF on full Fashion-MNIST at ε=1, δ=1e-5.

Prints the embedding time, generator training time, LogReg and MLP accuracy on the real
10k test set (train on 60k synthetic), and peak memory. Paper: LogReg .728, MLP .739.
Official code on a 2-core machine: ~400 s training, LogReg .716.

Run-to-run spread is about ±.01 (fresh DP noise, generator and MLP randomness), so
`--seeds 0-9` runs ten times and prints the range, mean and sd of each figure.

    .venv/bin/python bench/dpmerf_fashion.py [--seeds 0-9] [--epsilon 1] [--device auto] [--param epochs=3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from engine.data import catalog as datasets
from engine.cli.options import pairs as _pairs
from engine.core.config import RunConfig, parse_epsilon
from engine.core.device import resolve_device
from engine.methods.dpmerf.method import train
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps
from engine.evaluation.utility import fit_and_score
from engine.methods.registry import make_params


def parse_seeds(text: str) -> list[int]:
    """"3" → [3]; "0-9" → 0…9; "1,4,7" → [1, 4, 7]."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seeds", "--seed", default="0", help='one seed, a range "0-9" or a list "1,4,7"')
    ap.add_argument("--n-synthetic", type=int, default=60_000)
    ap.add_argument("--param", action="append", default=[], help="DP-MERF knob name=value")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--save", help="also save the synthetic data (npz) here (last seed)")
    ap.add_argument("--models", default="logreg,mlp", help="classifiers to fit, comma-separated")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all)")
    args = ap.parse_args()
    params = _pairs(args.param, "--param")  # bad knobs fail here, before any data loads
    if args.threads:
        torch.set_num_threads(args.threads)
    data = datasets.load("fashion_mnist")  # the official split: the seed does not change it
    device = resolve_device(args.device)
    runs = [run_once(args, params, seed, data, device) for seed in parse_seeds(args.seeds)]
    out = runs[0] if len(runs) == 1 else {"runs": runs, "summary": summarise(runs, args.models)}
    print(dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(dumps(out, indent=2))


def run_once(args, params: dict, seed: int, data, device: torch.device) -> dict:
    """One training run and its downstream scores; prints progress as it goes."""
    print(f"--- seed {seed}", flush=True)
    config = RunConfig(method="dpmerf", dataset="fashion_mnist", epsilon=parse_epsilon(args.epsilon),
                       delta=args.delta, seed=seed, n_synthetic=args.n_synthetic,
                       params=params).validate()
    from engine.methods.dpmerf.cost import estimate

    p = make_params("dpmerf", data, params)
    preview = estimate(config, data, p, device)  # the Playground's cost preview, timed now
    t0 = time.perf_counter()
    release_s = None
    for ev in train(config, p, data, device):
        if ev.phase == "release":
            release_s = time.perf_counter() - t0
            print(f"release: {ev.message}  [{release_s:.1f}s]", flush=True)
        elif ev.phase == "train" and ev.step % 100 == 0:
            print(f"step {ev.step}/{ev.total} loss {ev.loss:.4g}  [{time.perf_counter() - t0:.1f}s]", flush=True)
        elif ev.phase == "done":
            result = ev.result
    train_s = time.perf_counter() - t0
    print(f"training done in {train_s:.1f}s (embedding+release {release_s:.1f}s, "
          f"generator + {len(result.y)} samples {train_s - release_s:.1f}s)", flush=True)
    pred = preview["estimated seconds"]
    print(f"preview error: predicted {pred:.1f}s ({preview['estimate basis']}) vs measured "
          f"{train_s:.1f}s ({100 * (pred - train_s) / train_s:+.0f} %)", flush=True)

    if args.save:
        import numpy as np

        np.savez_compressed(args.save, x=result.x, y=result.y)
    figures = {"seed": seed, "epsilon_spent": result.privacy.epsilon_spent,
               "noise_multiplier": result.privacy.releases[-1].noise_multiplier,
               "accountant": result.privacy.accountant, "device": str(device),
               "threads": torch.get_num_threads(), "seconds_release": round(release_s, 1),
               "seconds_train_total": round(train_s, 1), "steps": result.info["steps"]}
    for model in args.models.split(","):
        t = time.perf_counter()
        figures[model] = fit_and_score(model, result.x, result.y, data, seed=seed)["accuracy"]
        print(f"{model}: {figures[model]:.4f} ({time.perf_counter() - t:.0f}s to fit)", flush=True)
    # ru_maxrss is the process's peak so far: with several seeds, the peak of the runs up to here.
    figures["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    if device.type == "cuda":
        figures["peak_cuda_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return figures


def summarise(runs: list[dict], models: str) -> dict:
    """min, max, mean and sd of the figures that vary from run to run; peak memory is one
    number (the process's peak over all runs)."""
    out = {}
    for key in ["seconds_train_total", "seconds_release", *models.split(",")]:
        values = [r[key] for r in runs]
        out[key] = {"min": min(values), "max": max(values), "mean": round(statistics.mean(values), 4),
                    "sd": round(statistics.stdev(values), 4)}
        print(f"{key}: {min(values)}–{max(values)}, mean {out[key]['mean']}, sd {out[key]['sd']}")
    out["peak_rss_gb"] = max(r["peak_rss_gb"] for r in runs)
    return out


if __name__ == "__main__":
    try:
        main()
    except InputError as err:  # bad knob or dataset: one line, status 2, as the CLI does
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
