"""Benchmark (not a test): DP-MERF on full Fashion-MNIST at ε=1, δ=1e-5.

Prints the embedding time, generator training time, LogReg and MLP accuracy on the real
10k test set (train on 60k synthetic), and peak memory. Paper: LogReg .728, MLP .739.
Official code on a 2-core machine: ~400 s training, LogReg .716.

    .venv/bin/python bench/dpmerf_fashion.py [--epsilon 1] [--device auto] [--epochs 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine import data as datasets  # noqa: E402
from engine.config import RunConfig, parse_epsilon  # noqa: E402
from engine.device import resolve_device  # noqa: E402
from engine.dpmerf import train  # noqa: E402
from engine.cli import _pairs  # noqa: E402
from engine.evaluate import fit_and_score  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-synthetic", type=int, default=60_000)
    ap.add_argument("--param", action="append", default=[], help="DP-MERF knob name=value")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--save", help="also save the synthetic data (npz) here")
    ap.add_argument("--models", default="logreg,mlp", help="classifiers to fit, comma-separated")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all)")
    args = ap.parse_args()
    params = _pairs(args.param, "--param")
    if args.threads:
        torch.set_num_threads(args.threads)

    data = datasets.load("fashion_mnist", seed=args.seed)
    config = RunConfig(method="dpmerf", dataset="fashion_mnist", epsilon=parse_epsilon(args.epsilon),
                       delta=args.delta, seed=args.seed, n_synthetic=args.n_synthetic,
                       params=params).validate()
    device = resolve_device(args.device)
    t0 = time.perf_counter()
    release_s = None
    for ev in train(config, data, device):
        if ev.phase == "release":
            release_s = time.perf_counter() - t0
            print(f"release: {ev.message}  [{release_s:.1f}s]", flush=True)
        elif ev.phase == "train" and ev.step % 100 == 0:
            print(f"step {ev.step}/{ev.total} loss {ev.loss:.4g}  [{time.perf_counter() - t0:.1f}s]", flush=True)
        elif ev.phase == "done":
            result = ev.result
    train_s = time.perf_counter() - t0
    print(f"training done in {train_s:.1f}s (embedding+release {release_s:.1f}s, "
          f"generator + 60k samples {train_s - release_s:.1f}s)", flush=True)

    if args.save:
        import numpy as np

        np.savez_compressed(args.save, x=result.x, y=result.y)
    figures = {"epsilon_spent": result.privacy["epsilon_spent"],
               "noise_multiplier": result.privacy["releases"][-1]["noise_multiplier"],
               "accountant": result.privacy["accountant"], "device": str(device),
               "threads": torch.get_num_threads(), "seconds_release": round(release_s, 1),
               "seconds_train_total": round(train_s, 1), "steps": result.info["steps"]}
    for model in args.models.split(","):
        t = time.perf_counter()
        figures[model] = fit_and_score(model, result.x, result.y, data, seed=args.seed)["accuracy"]
        print(f"{model}: {figures[model]:.4f} ({time.perf_counter() - t:.0f}s to fit)", flush=True)
    figures["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    if device.type == "cuda":
        figures["peak_cuda_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
