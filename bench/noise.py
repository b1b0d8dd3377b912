"""Benchmark (not a test): how long DP-MERF's largest noise release takes, old and new.

The Fashion-MNIST embedding is 10,000 random features × 10 classes = 100,000 values. The
new release (engine/privacy/noise.py: snap to the public grid, add the rounded Gaussian in
float64) is timed against the old one (float32 `torch.randn` from an OS-seeded
generator, added in float32). Prints the median over `--repeats` of each and the growth.

    .venv/bin/python bench/noise.py [--values 100000] [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.privacy.noise import gaussian_noise, noise_generator, snap  # noqa: E402


def old_release(emb: torch.Tensor, std: float) -> torch.Tensor:
    """The release before issue 28: float32 Box–Muller noise, added in float32."""
    gen = noise_generator("cpu")
    return emb + torch.randn(emb.shape, generator=gen, dtype=torch.float32) * std


def new_release(emb: torch.Tensor, std: float) -> torch.Tensor:
    """dpmerf._release's noise step as shipped."""
    noisy = snap(emb, std) + gaussian_noise(emb.shape, std, dtype=torch.float64)
    return noisy.float()


def timed(fn, emb, std, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(emb, std)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    # Fashion at ε = 1: m = 60,000, Δ = 2/m, z ≈ 4.4 (the size of σ only sets the grid).
    std = 4.4 * 2 / 60_000
    emb = torch.rand(args.values // 10, 10) * 0.02
    new_release(emb, std)  # warm (imports, the tail table)
    old = timed(old_release, emb, std, args.repeats)
    new = timed(new_release, emb, std, args.repeats)
    print(f"noise release of {emb.numel():,} values, median of {args.repeats}: "
          f"old (float32 torch.randn) {old * 1e3:.1f} ms, new (rounded Gaussian on the grid, "
          f"float64) {new * 1e3:.1f} ms, growth {(new - old) * 1e3:+.1f} ms")
    return {"old_s": old, "new_s": new}


if __name__ == "__main__":
    main()
