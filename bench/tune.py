"""Benchmark (not a test): Optuna's TPE against random search and a grid, on the same
trial budgets. Each sampler runs one study per repeat, in a run store of its own (so no
sampler reuses another's runs), through the real queue and worker (engine/jobs/study.py);
the figure is the best objective after the first 8, 16, 32 trials (by trial number),
mean ± spread over repeats, with the defaults' score (the gallery's run, or the store's)
as the line to beat. Every trial is a real run, charged to its store's ledger.

    .venv/bin/python bench/tune.py [--budgets 8,16,32] [--repeats 3] [--fixed epochs=30]
        [--samplers tpe,random,grid] [--knob lr=1e-3:1e-1:log --knob n_features=...]
        [--method dpmerf --dataset digits --epsilon 1] [--json rows.json] [--tiny]

The grid has 5 points per numeric range (engine/runs/study_space.GRID_POINTS), so with the
default knobs it has 20 points: its budgets stop there. `--tiny` is the configuration
tests/test_bench_tune.py runs (two trials, tiny runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.config import RunConfig, parse_epsilon  # noqa: E402
from engine.core.jsonsafe import dumps  # noqa: E402
from engine.cli.options import pairs  # noqa: E402
from engine.jobs.manager import JobManager  # noqa: E402
from engine.jobs.study import Study, defaults_score, ledger_totals  # noqa: E402
from engine.runs.study_space import build_spec  # noqa: E402
from engine.store.runs import RunStore  # noqa: E402

KNOBS = ["lr=1e-3:1e-1:log", "n_features=500,1000,2000,5000"]
TINY = {"knobs": ["lr=1e-3:1e-1:log", "n_features=200,400"], "budgets": "1,2",
        "fixed": ["epochs=2", "batch_size=100"], "samplers": "tpe,random,grid"}


def best_after(values: list[float | None], n: int, sign: int) -> float | None:
    """The best objective among the first `n` trials (failed ones have None)."""
    got = [v for v in values[:n] if v is not None]
    return None if not got else max(got, key=lambda v: sign * v)


def one_study(base: RunConfig, knobs: list[str], sampler: str, trials: int, objective: str,
              root: Path) -> tuple[list[float | None], float, dict]:
    spec = build_spec(base, knobs, trials=trials, sampler=sampler, objective=objective)
    jm = JobManager(RunStore(root))
    try:
        t0 = time.time()
        res = Study(spec, f"bench-{sampler}", jm).run()
        seconds = time.time() - t0
    finally:
        jm.shutdown()
    by_number = sorted(res.trials, key=lambda t: t.number)
    return ([t.value if t.state == "COMPLETE" else None for t in by_number], seconds,
            ledger_totals(root, spec, f"bench-{sampler}"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", default="dpmerf")
    p.add_argument("--dataset", default="digits")
    p.add_argument("--epsilon", default="1")
    p.add_argument("--budgets", default="8,16,32")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--samplers", default="tpe,random,grid")
    p.add_argument("--knob", action="append", default=None)
    p.add_argument("--fixed", action="append", default=[], help="a knob fixed for every trial")
    p.add_argument("--objective", default="synthetic/logreg")
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args(argv)
    if args.tiny:
        args.knob, args.budgets, args.repeats = TINY["knobs"], TINY["budgets"], 1
        args.fixed, args.samplers = TINY["fixed"] + args.fixed, TINY["samplers"]
    knobs = args.knob or KNOBS
    budgets = sorted(int(b) for b in args.budgets.split(","))
    samplers = args.samplers.split(",")
    rows = []
    for repeat in range(args.repeats):
        base = RunConfig(method=args.method, dataset=args.dataset,
                         epsilon=parse_epsilon(args.epsilon), device="cpu", seed=repeat,
                         params=pairs(args.fixed, "--fixed"))
        for sampler in samplers:
            with tempfile.TemporaryDirectory(prefix="bench-tune-") as tmp:
                values, seconds, led = one_study(base, knobs, sampler, budgets[-1],
                                                 args.objective, Path(tmp))
            print(f"repeat {repeat} {sampler}: {len(values)} trials, {seconds:.0f} s, "
                  f"{sum(v is None for v in values)} failed, ledger ε = "
                  f"{led['study_epsilon']:.3g}", file=sys.stderr, flush=True)
            rows.append({"repeat": repeat, "sampler": sampler, "values": values,
                         "seconds": seconds, "ledger_epsilon": led["study_epsilon"]})
    spec = build_spec(base, knobs, trials=1, sampler="random", objective=args.objective)
    sign = 1 if spec.direction == "maximize" else -1
    with tempfile.TemporaryDirectory() as tmp:
        default, source = defaults_score(spec, RunStore(tmp))
    print(f"\n{args.method} on {args.dataset}, ε = {args.epsilon}, knobs {'; '.join(knobs)}, "
          f"fixed {pairs(args.fixed, '--fixed') or 'none'}, {args.repeats} repeat(s)")
    print(f"defaults: {args.objective} = {default if default is None else f'{default:.4f}'} "
          f"({source})\n")
    print("| sampler | trials | best " + args.objective + " (mean) | min | max | "
          "whole study, s (mean) |")
    print("|---|---|---|---|---|---|")
    for sampler in samplers:
        mine = [r for r in rows if r["sampler"] == sampler]
        for n in budgets:
            if n > len(mine[0]["values"]):
                continue  # a grid smaller than the budget
            bests = [b for r in mine if (b := best_after(r["values"], n, sign)) is not None]
            secs = statistics.mean(r["seconds"] for r in mine)
            mean = f"{statistics.mean(bests):.4f}" if bests else "-"
            print(f"| {sampler} | {n} | {mean} | {min(bests, default=float('nan')):.4f} | "
                  f"{max(bests, default=float('nan')):.4f} | {secs:.0f} |")
    if args.json:
        Path(args.json).write_text(dumps({"rows": rows, "defaults": default,
                                          "defaults_source": source}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
