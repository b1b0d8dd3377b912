"""Benchmark (not a test): empirical privacy audit of every release, with broken variants.

For each release (DP-MERF mean embedding, class counts, DataLens top_agg votes) and each
claimed ε, runs the release on a worst-case neighbouring pair many times and prints the
95% Clopper–Pearson lower bound on ε (engine/audit.py), for the real code and for
deliberately broken copies: σ halved, the sensitivity understated 2× (DP-MERF/counts),
and one record in two teachers' partitions (DataLens, the official code's defect).
A correct implementation has every "as shipped" bound below the claim.

    .venv/bin/python bench/audit.py [--epsilon 1 3 6] [--trials 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine import audit  # noqa: E402
from engine import features as fx  # noqa: E402


def _overlap(n, teachers, seed=0, size=None):
    from engine.datalens import partition

    parts = partition(n, teachers, seed, size).copy()
    parts[1, 0] = parts[0, 0]
    return parts


def _understated(attr):
    """Run with features.<attr> halved (claimed sensitivity half the true one)."""
    def run(name, trials, **kw):
        old = getattr(fx, attr)
        setattr(fx, attr, old / 2)
        try:
            return audit.run_audit(name, trials, **kw)
        finally:
            setattr(fx, attr, old)
    return run


VARIANTS = {
    "DP-MERF mean embedding": {
        "as shipped": lambda n, t, **kw: audit.run_audit(n, t, **kw),
        "sigma halved": lambda n, t, **kw: audit.run_audit(n, t, noise_scale=0.5, **kw),
        "sensitivity 2x understated": _understated("EMBEDDING_SENSITIVITY"),
    },
    "class counts": {
        "as shipped": lambda n, t, **kw: audit.run_audit(n, t, **kw),
        "sigma halved": lambda n, t, **kw: audit.run_audit(n, t, noise_scale=0.5, **kw),
        "sensitivity 2x understated": _understated("COUNTS_SENSITIVITY"),
    },
    "DataLens top_agg votes": {
        "as shipped": lambda n, t, **kw: audit.run_audit(n, t, **kw),
        "sigma halved": lambda n, t, **kw: audit.run_audit(n, t, noise_scale=0.5, **kw),
        "record in two teachers": lambda n, t, **kw: audit.run_audit(
            n, t, partition_fn=_overlap, **kw),
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 3.0, 6.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--trials", type=int, default=1_000_000, help="per dataset of the pair")
    ap.add_argument("--repeats", type=int, default=3, help="independent audits per cell")
    args = ap.parse_args()
    torch.set_num_threads(1)

    print(f"95% lower bounds on epsilon, delta={args.delta:g}, {args.trials:,} trials per "
          f"dataset, min/max over {args.repeats} audits (threshold on 30%, bound on 70%)")
    print(f"{'release':26s} {'variant':28s} {'claimed eps':>11s} {'lower bound':>17s} "
          f"{'verdict':>8s} {'s':>6s}")
    for eps in args.epsilon:
        for name, variants in VARIANTS.items():
            for label, fn in variants.items():
                t0 = time.perf_counter()
                res = [fn(name, args.trials, epsilon=eps, delta=args.delta)
                       for _ in range(args.repeats)]
                lbs = [r.epsilon_lb for r in res]
                verdict = "FAIL" if max(lbs) > res[0].claimed_epsilon else "pass"
                print(f"{name:26s} {label:28s} {res[0].claimed_epsilon:11.3f} "
                      f"{min(lbs):7.3f} .. {max(lbs):6.3f} {verdict:>8s} "
                      f"{time.perf_counter() - t0:6.1f}", flush=True)


if __name__ == "__main__":
    main()
