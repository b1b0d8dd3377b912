"""Benchmark (not a test): empirical privacy audit of every method, with planted bugs.

For every registered method, each audit its AUDIT module declares (engine/audit/lower_bound.method_audits; DP-MERF's
`_release`: image embedding, mixed tabular embedding, class counts, numeric-bounds
histogram; DataLens through `train` and at the vote level; the marginals baseline and AIM
through `train`) runs the REAL code on a worst-case neighbouring pair many times and prints the
Clopper–Pearson lower bound on ε, as shipped and with each bug of tests/test_audit.py
planted into the real code (σ halved or × 0.75, sensitivity understated, a feature map of
norm 2, votes doubled in `teacher_votes`, a record in two teachers, one step past the
budget, AIM's noise skipped on empty cells, DP-MERF's counts with the embedding's σ). The
claim is the target (ε, δ)'s one Gaussian. A correct implementation has every "as
shipped" bound below the claim (`--shipped-only`: the false-positive check); a row
with its own settings (ε, δ', trials) is printed at those.

    .venv/bin/python bench/audit.py [--epsilon 1 3] [--trials 1000000] [--repeats 3]
                                    [--audit-delta 1e-2] [--confidence 0.999]
                                    [--only NAME ...] [--exact-noise] [--shipped-only]
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

from engine.audit import lower_bound as audit  # noqa: E402
from test_audit import PLANTED, SHARP  # noqa: E402  (the same planted bugs as the test)


def _rows(names):
    """(release, variant, plant, settings or None) in method_audits order."""
    rows = []
    for name in names:
        rows.append((name, "as shipped", None, None))
        if any(n == name and sharp for n, _, _, _, sharp in PLANTED):
            rows.append((name, "as shipped", None, SHARP))
        rows += [(n, bug, plant, sharp) for n, bug, plant, _, sharp in PLANTED if n == name]
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--audit-delta", type=float, default=1e-2,
                    help="delta at which the claim's privacy profile is checked")
    ap.add_argument("--confidence", type=float, default=0.999)
    ap.add_argument("--trials", type=int, default=1_000_000, help="per dataset of the pair")
    ap.add_argument("--repeats", type=int, default=3, help="independent audits per cell")
    ap.add_argument("--only", nargs="+", default=None, help="audit names to run")
    ap.add_argument("--shipped-only", action="store_true",
                    help="audit the code as shipped, no planted bugs (the false-positive check)")
    ap.add_argument("--exact-noise", action="store_true",
                    help="draw the trials with engine/privacy/noise.py itself (slow) instead of "
                         "float64 torch.randn under the same entry")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    names = [n for m in audit.method_audits().values() for n in m
             if args.only is None or n in args.only]
    method_of = {n: m for m, ns in audit.method_audits().items() for n in ns}

    print(f"{args.confidence:.1%} lower bounds on epsilon (releases configured for "
          f"delta={args.delta:g}), min .. max over {args.repeats} audits (threshold on 30%, "
          f"bound on 70%); {'engine/privacy/noise.py' if args.exact_noise else 'fast'} sampler")
    print(f"{'method':10s} {'release':31s} {'variant':31s} {'eps':>4s} {'delta_':>6s} "
          f"{'trials':>9s} {'claimed':>8s} {'lower bound':>16s} {'verdict':>7s} {'s':>6s}")
    done_sharp = set()
    for eps in args.epsilon:
        for name, label, plant, sharp in _rows(names):
            if args.shipped_only and plant is not None:
                continue
            if sharp and (name, label) in done_sharp:
                continue  # its own settings: once
            cfg = {"epsilon": eps, "audit_delta": args.audit_delta, "trials": args.trials,
                   **(sharp or {})}
            trials = cfg.pop("trials")
            mp = pytest.MonkeyPatch()
            t0 = time.perf_counter()
            try:
                if plant is not None:
                    plant(mp)
                res = [audit.run_audit(name, trials, delta=args.delta, confidence=args.confidence,
                                       exact_noise=args.exact_noise, **cfg)
                       for _ in range(args.repeats)]
            finally:
                mp.undo()
            if sharp:
                done_sharp.add((name, label))
            lbs = [r.epsilon_lb for r in res]
            verdict = "FAIL" if max(lbs) > res[0].claimed_epsilon else "pass"
            print(f"{method_of[name]:10s} {name:31s} {label:31s} {cfg['epsilon']:4g} "
                  f"{cfg['audit_delta']:6g} {trials:9,d} {res[0].claimed_epsilon:8.3f} "
                  f"{min(lbs):7.3f} .. {max(lbs):6.3f} {verdict:>7s} "
                  f"{time.perf_counter() - t0:6.1f}", flush=True)


if __name__ == "__main__":
    main()
