"""Benchmark (not a test): empirical privacy audit of every release, with planted bugs.

For each release (DP-MERF image embedding and mixed tabular release, class counts, the
numeric-bounds histogram, DataLens votes under its stopping rule) and each claimed ε,
runs the REAL release code on a worst-case neighbouring pair many times and prints the
Clopper–Pearson lower bound on ε (engine/audit.py), as shipped and with each bug of
tests/test_audit.py planted into the real code (σ halved, sensitivity understated, a
feature map of norm 2, a record in two teachers, one step past the budget). A correct
implementation has every "as shipped" bound below the claim.

    .venv/bin/python bench/audit.py [--epsilon 1 3 6] [--trials 1000000] [--repeats 3]
                                    [--audit-delta 1e-2] [--confidence 0.999]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import pytest  # noqa: E402
import torch  # noqa: E402

from engine import audit  # noqa: E402
from test_audit import PLANTED  # noqa: E402  (the same planted bugs as the fast test)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 3.0, 6.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--audit-delta", type=float, default=1e-2,
                    help="delta at which the claim's privacy profile is checked")
    ap.add_argument("--confidence", type=float, default=0.999)
    ap.add_argument("--trials", type=int, default=1_000_000, help="per dataset of the pair")
    ap.add_argument("--repeats", type=int, default=3, help="independent audits per cell")
    args = ap.parse_args()
    torch.set_num_threads(1)

    print(f"{args.confidence:.1%} lower bounds on epsilon at delta'={args.audit_delta:g} "
          f"(releases configured for delta={args.delta:g}), {args.trials:,} trials per "
          f"dataset, min/max over {args.repeats} audits (threshold on 30%, bound on 70%)")
    print(f"{'release':32s} {'variant':26s} {'eps':>5s} {'claimed':>8s} {'lower bound':>17s} "
          f"{'verdict':>8s} {'s':>6s}")
    variants = [(name, "as shipped", None) for name in audit.RELEASES] + PLANTED
    for eps in args.epsilon:
        for name, label, plant in sorted(variants, key=lambda v: list(audit.RELEASES).index(v[0])):
            mp = pytest.MonkeyPatch()
            t0 = time.perf_counter()
            try:
                if plant is not None:
                    plant(mp)
                res = [audit.run_audit(name, args.trials, epsilon=eps, delta=args.delta,
                                       audit_delta=args.audit_delta, confidence=args.confidence)
                       for _ in range(args.repeats)]
            finally:
                mp.undo()
            lbs = [r.epsilon_lb for r in res]
            verdict = "FAIL" if max(lbs) > res[0].claimed_epsilon else "pass"
            print(f"{name:32s} {label:26s} {eps:5g} {res[0].claimed_epsilon:8.3f} "
                  f"{min(lbs):7.3f} .. {max(lbs):6.3f} {verdict:>8s} "
                  f"{time.perf_counter() - t0:6.1f}", flush=True)


if __name__ == "__main__":
    main()
