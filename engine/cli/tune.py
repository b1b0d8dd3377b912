"""`python -m engine tune`: a tuning study from the command line (engine/jobs/study.py).

    python -m engine tune --method dpmerf --dataset digits --epsilon 1 \\
        --knob lr=1e-3:1e-1:log --knob n_features=500,1000,2000,5000 --trials 24 --sampler tpe

Prints the preview first (time, memory per trial, the ledger's total after every trial
beside the private alternative; refused past the dataset's cap), then one line per trial
as it ends, then the best settings against the defaults' score and the ledger's total
for the study. `--study NAME` names it; given alone it continues that study (the runs of
its unfinished trials are re-attached). `--list` lists the store's studies. `--json`
prints the whole result as strict JSON on stdout (the lines above go to stderr).
Trials train in the run store's worker ($DPSYNTH_RUNS), charged to its ledger.
`--csv FILE --label COLUMN` (or `--npz FILE`, `--data-option`) tunes on a user's own file,
charged to the ledger under the file's SHA-256 like `train`.
`--tune-on digits_public` runs the trials on that public stand-in (not charged) and then
one run of the best settings on --dataset at --epsilon (charged once).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from engine.cli.options import add_data_arguments
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps


def add_parser(sub) -> None:
    t = sub.add_parser("tune", help="a tuning study: Optuna proposes, every trial is a run on "
                                    "the ledger")
    t.add_argument("--method", default="dpmerf")
    t.add_argument("--dataset", default="digits")
    t.add_argument("--epsilon", default="1", help="every trial's ε ('inf' = no noise)")
    t.add_argument("--delta", default="1e-5")
    t.add_argument("--seed", type=int, default=0, help="every trial's model seed")
    add_data_arguments(t)  # a user's own file: --csv FILE --label COLUMN, or --npz FILE
    t.add_argument("--knob", action="append", default=[],
                   help="name=lo:hi[:log] (a range) or name=a,b,c (choices); at most 4")
    t.add_argument("--param", action="append", default=[],
                   help="a knob fixed for every trial, name=value")
    t.add_argument("--trials", type=int, default=24)
    t.add_argument("--sampler", default="tpe", help="grid, random, tpe or cmaes")
    t.add_argument("--objective", default=None,
                   help="a stored score, e.g. synthetic/logreg (default), synthetic/mlp")
    t.add_argument("--direction", default=None, help="maximize or minimize")
    t.add_argument("--second", default=None, choices=("seconds", "epsilon"),
                   help="a second objective, minimised, for a Pareto front of the trials: "
                        "seconds (the run's wall time) or epsilon (its spent ε; needs "
                        "--knob epsilon=lo:hi[:log])")
    t.add_argument("--importance", default="ped-anova", choices=("ped-anova", "fanova"),
                   help="the knob-importance evaluator printed at the end (Optuna's)")
    t.add_argument("--tune-on", default=None, dest="tune_on",
                   help="a public stand-in the trials run on (digits_public, fashion_public); "
                        "then ONE run of the best settings on --dataset is charged")
    t.add_argument("--study", default=None, help="its name; alone, continue that study")
    t.add_argument("--slots", type=int, default=None, help="trials trained at once")
    t.add_argument("--list", action="store_true", help="list the run store's studies")
    t.add_argument("--json", action="store_true", help="the result as JSON on stdout")


def _spec(args):
    from engine.cli.options import dataset_and_options, pairs as _pairs
    from engine.core.config import RunConfig, parse_epsilon
    from engine.runs.study_space import DEFAULT_OBJECTIVE, build_spec

    try:
        delta = float(args.delta)
    except ValueError:
        raise InputError(f"delta must be a number in (0, 0.1]. Got {args.delta!r}.") from None
    dataset, options = dataset_and_options(args)
    base = RunConfig(method=args.method, dataset=dataset, data_options=options,
                     epsilon=parse_epsilon(args.epsilon), delta=delta, seed=args.seed,
                     device="cpu", params=_pairs(args.param, "--param")).validate()
    return build_spec(base, args.knob, trials=args.trials, sampler=args.sampler,
                      objective=args.objective or DEFAULT_OBJECTIVE, direction=args.direction,
                      second=args.second, tune_on=args.tune_on)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _list(root) -> int:
    from engine.cli.tune_report import epsilon_words
    from engine.jobs.study import load_spec, study_names

    names = study_names(root)
    if not names:
        print("no studies in this run store yet")
    for name in names:
        spec = load_spec(root, name)
        knobs = "; ".join(k.words() for k in spec.knobs) if spec else "?"
        print(f"{name}: {spec.base.method} on {spec.base.dataset}, {epsilon_words(spec)}, "
              f"{spec.trials} trials ({spec.sampler}), {knobs}" if spec else name)
    return 0


def main(args) -> int:
    from engine.cli import tune_report
    from engine.jobs import public_study
    from engine.jobs.manager import JobManager
    from engine.jobs.study import Study, defaults_score, ledger_totals, load_spec
    from engine.runs.study_preview import study_preview
    from engine.store.runs import RunStore, default_root

    root = default_root()
    if args.list:
        return _list(root)
    name = args.study
    if name and not args.knob:
        spec = load_spec(root, name)
        if spec is None:
            raise InputError(f"no study {name!r} in {root}; start one with --knob ...")
    else:
        spec = _spec(args)
        name = name or f"{spec.base.method}-{spec.base.dataset}-{time.strftime('%Y%m%d-%H%M%S')}"
    jm = JobManager(RunStore(root), slots_per_device=args.slots)
    try:
        study = Study(spec, name, jm)
        left = spec.trials - len(study.result().done)
        pending = jm.uncharged()  # queued or claimed, not yet charged
        _say(f"study {name}: {spec.base.method} on {spec.base.dataset}"
             + (f" (trials on {spec.tune_on_words}, public)" if spec.tune_on else "")
             + f" {tune_report.epsilon_words(spec)}, {spec.sampler}, {left} of {spec.trials} "
             "trial(s) to go; "
             + "; ".join(k.words() for k in spec.knobs))
        seen = study_preview(replace(spec, trials=max(1, left)), root=root, slots=jm.slots,
                             pending=pending)
        for line in seen.lines():
            _say(line)
        t0 = time.time()

        def progress(info, res) -> None:
            value = f"{info.value:.4f}" if info.value is not None else f"FAILED ({info.message})"
            best = res.best
            _say(f"trial {info.number}: {spec.objective} {value}"
                 + (f", {spec.second} {info.second:.4g}" if info.second is not None else "")
                 + " with "
                 + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in info.params.items())
                 + (f"; best so far {best.value:.4f}" if best else "")
                 + f" ({len(res.done)}/{spec.trials}, {time.time() - t0:.0f} s)")

        res = study.run(on_trial=progress)
        wall = time.time() - t0
        final = public_study.final(study)  # a tune-on study's one private run
        default, source = defaults_score(spec, jm.store)
        led = ledger_totals(root, spec, name)
        extra = tune_report.report(study.study, res, args.importance, _say)
    finally:
        jm.shutdown()
    best = res.best
    if best is None:
        _say("no trial finished with a score")
    else:
        _say(f"best: {spec.objective} {best.value:.4f} with {best.params} (run {best.run_id})")
    if final is not None:
        got = f"{final['value']:.4f}" if final["value"] is not None else \
            f"none ({final['why'] or final['status']})"
        _say(f"private run on {final['dataset']} with the best settings of {spec.tune_on_words} "
             f"(trial {final['trial']}): {spec.objective} {got} (run {final['run_id']})")
    _say(f"defaults at ε = {spec.base.epsilon:g}: "  # with ε searched, not the trials' ε
         f"{'%.4f' % default if default is not None else 'unknown'} ({source})")
    _say(f"ledger: the study's {led['study_runs']} run(s) composed ε = "
         f"{led['study_epsilon']:.4g}; {led['dataset']} in all ε = {led['dataset_epsilon']:.4g}"
         f" at δ = {led.get('delta', spec.base.delta):g}")
    if args.json:
        print(dumps({**res.to_dict(), "preview": seen.to_dict(), "seconds": wall,
                     "defaults": {"value": default, "source": source}, "ledger": led,
                     **extra, "final": final}))
    if final is not None:
        return 0 if final["value"] is not None else 1
    return 0 if best is not None else 1
