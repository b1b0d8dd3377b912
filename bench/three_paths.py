"""Benchmark (not a test): the three ways to tune the same knobs at the same ε, on the
same number of trials (engine/jobs/three_paths.py runs them, in a throwaway run store):

(a) tune on the private data, every trial charged; (b) private repeat-and-select,
E[K] = trials, charged once; (c) tune on a public stand-in, one private run.

The private data is digits_private (half of digits; its own 20 % test part is held out);
the public stand-ins are digits_public (the other half of digits) and fashion_public
(Fashion-MNIST averaged down to 8×8, skipped with the reason when Fashion-MNIST is not
installed). Paths (a) and (b) do not depend on the stand-in, so they run once and the
Fashion case reuses their rows (said so in its rows). Every figure is the objective of
what the path hands over on digits_private's real test part: a NON-private diagnostic.

    .venv/bin/python bench/three_paths.py [--trials 8] [--epsilon 1] [--fixed epochs=30]
        [--knob lr=1e-3:1e-1:log --knob n_features=...] [--sampler tpe] [--slots 2]
        [--only digits|fashion] [--json rows.json] [--tiny]

`--tiny` is the configuration tests/test_bench_three_paths.py runs (two trials, tiny runs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.config import RunConfig, parse_epsilon  # noqa: E402
from engine.core.jsonsafe import dumps  # noqa: E402
from engine.cli.options import pairs  # noqa: E402

KNOBS = ["lr=1e-3:1e-1:log", "n_features=500,1000,2000,5000"]
TINY = {"knobs": ["lr=1e-3:1e-1:log", "n_features=200,400"], "trials": 2,
        "fixed": ["epochs=2", "batch_size=100"]}
CASES = {"digits": "digits_public", "fashion": "fashion_public"}
PRIVATE = "digits_private"


def skip_reason(stand_in: str) -> str | None:
    from engine.data.catalog import list_datasets

    entry = {e["name"]: e for e in list_datasets()}[stand_in]
    return None if entry["available"] else entry["where"]


def one_case(base: RunConfig, knobs: list[str], trials: int, sampler: str, tune_on: str,
             paths: tuple, slots: int | None) -> list[dict]:
    from engine.jobs import three_paths
    from engine.jobs.manager import JobManager
    from engine.jobs.study import Study
    from engine.runs.study_space import build_spec
    from engine.store.runs import RunStore

    spec = build_spec(base, knobs, trials=trials, sampler=sampler, tune_on=tune_on)
    with tempfile.TemporaryDirectory(prefix="bench-three-paths-") as tmp:
        jm = JobManager(RunStore(tmp), slots_per_device=slots)
        try:
            Study(spec, "paths", jm)  # stores the spec the paths read
            t0 = time.time()
            three_paths.measure(jm, "paths", paths=paths)
            print(f"{tune_on}: paths {','.join(paths)} in {time.time() - t0:.0f} s",
                  file=sys.stderr, flush=True)
            return [r for r in three_paths.rows(jm, "paths") if r["path"] in paths]
        finally:
            jm.shutdown()


def _settings(s) -> str:
    if not s:
        return "-"
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in s.items())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", default="dpmerf")
    p.add_argument("--epsilon", default="1")
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--sampler", default="tpe")
    p.add_argument("--knob", action="append", default=None)
    p.add_argument("--fixed", action="append", default=[], help="a knob fixed for every run")
    p.add_argument("--slots", type=int, default=None)
    p.add_argument("--only", default="", help="digits or fashion")
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args(argv)
    if args.tiny:
        args.knob, args.trials = TINY["knobs"], TINY["trials"]
        args.fixed = TINY["fixed"] + args.fixed
    knobs = args.knob or KNOBS
    base = RunConfig(method=args.method, dataset=PRIVATE, epsilon=parse_epsilon(args.epsilon),
                     device="cpu", params=pairs(args.fixed, "--fixed")).validate()
    table, skipped, shared = [], {}, None
    for case, stand_in in CASES.items():
        if args.only and case != args.only:
            continue
        why = skip_reason(stand_in)
        if why:
            skipped[case] = f"{stand_in} not installed: {why}"
            print(f"skipped {case}: {skipped[case]}", file=sys.stderr)
            continue
        paths = ("c", "a", "b") if shared is None else ("c",)
        got = one_case(base, knobs, args.trials, args.sampler, stand_in, paths, args.slots)
        if shared is None:
            shared = [r for r in got if r["path"] in ("a", "b")]
        else:  # (a) and (b) never touch the stand-in: the first case's rows
            got += [{**r, "note": f"same run as the {next(iter(CASES))} case; " + r["note"]}
                    for r in shared]
        table += [{**r, "case": f"{stand_in} → {PRIVATE}"} for r in sorted(got, key=lambda r: r["path"])]
    print(f"\n{args.method}, ε = {args.epsilon} per run, {args.trials} trials ({args.sampler}), "
          f"knobs {'; '.join(knobs)}, fixed {pairs(args.fixed, '--fixed') or 'none'}")
    print(f"| case | path | {table[0]['objective'] if table else 'objective'} on {PRIVATE}'s "
          "test part | ε paid by the private records (ledger) | planned | seconds (wall) | "
          "seconds (runs added) | settings |")
    print("|---|---|---|---|---|---|---|---|")
    for r in table:
        value = "-" if r["value"] is None else f"{r['value']:.4f}"
        secs = "- | -" if r["seconds"] is None else f"{r['seconds']:.0f} | {r['run_seconds']:.0f}"
        print(f"| {r['case']} | ({r['path']}) {r['words']} | {value} | "
              f"{r['ledger_epsilon']:.3g} | {r['planned_epsilon']:.3g} | {secs} | "
              f"{_settings(r['settings'])} |")
    for case, why in skipped.items():
        print(f"skipped {case}: {why}")
    if args.json:
        Path(args.json).write_text(dumps({"rows": table, "skipped": skipped}))
    return 0 if table else 1


if __name__ == "__main__":
    sys.exit(main())
