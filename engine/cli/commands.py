"""Command line: `python -m engine train ...`, `... gallery`, `... datasets`, `... risk`,
`... attack RUN_DIR` (membership attacks on a finished run: engine/cli/attack.py),
`... tune` (a tuning study: engine/cli/tune.py).

Bad input ends with exit status 2 and one line on stderr, never a traceback.
Method knobs are passed as extra flags (`--n-features 2000`, `--top-k 50`) or as
`--param name=value`; the method's Params dataclass decides what is valid.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import closing
from pathlib import Path

from engine.cli.options import add_data_arguments, dataset_and_options, extra_flags, pairs
from engine.core.errors import InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line instead of usage + error
        raise InputError(message)


def build_parser() -> _Parser:
    p = _Parser(prog="python -m engine", description="DP Synth Lab engine")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    t = sub.add_parser("train", help="train one method on one dataset and write its artifacts")
    t.add_argument("--method", default="dpmerf")
    t.add_argument("--dataset", default="digits")
    t.add_argument("--epsilon", default="1", help="total privacy budget; 'inf' = no noise")
    t.add_argument("--delta", default="1e-5")
    t.add_argument("--seed", type=int, default=0, help="model seed (DP noise is never seeded)")
    t.add_argument("--device", default="auto")
    t.add_argument("--n-synthetic", type=int, default=None)
    t.add_argument("--out", required=True, help="folder for config/metrics/synthetic/samples")
    t.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its artifacts are deleted first)")
    t.add_argument("--param", action="append", default=[], help="method knob name=value")
    add_data_arguments(t)
    t.add_argument("--no-eval", action="store_true", help="skip the downstream evaluation")
    t.add_argument("--cnn", action="store_true", help="also evaluate the small CNN (images)")
    g = sub.add_parser("gallery", help="build the precomputed runs the app shows at start-up")
    g.add_argument("--out", default=None, help="folder (default: assets/gallery)")
    g.add_argument("--only", default="", help="only entries whose name contains this text")
    g.add_argument("--no-fashion", action="store_true", help="digits only")
    g.add_argument("--fashion-datalens", action="store_true",
                   help="also DataLens on Fashion-MNIST (about an hour on a CPU)")
    g.add_argument("--rebuild", action="store_true", help="retrain entries already built")
    g.add_argument("--list", action="store_true", help="print the entry names and stop")

    led = sub.add_parser("ledger", help="privacy budget spent per dataset (the run store's ledger)")
    led.add_argument("--json", action="store_true", help="datasets with their runs and total ε")
    led.add_argument("--cap", action="append", default=[],
                     help="budget cap NAME=EPS (or NAME=none), e.g. --cap digits=5")
    led.add_argument("--delta", default=None, help="the ledger's δ for the datasets given by --cap")

    a = sub.add_parser("attack", help="measure membership attacks on a finished run (NOT "
                                      "private: a diagnostic for the data owner)")
    a.add_argument("run_dir", help="the run's folder (config.json, metrics.json, synthetic.*)")
    a.add_argument("--folds", type=int, default=2, help="held-back part cut into this many folds")
    a.add_argument("--seed", type=int, default=0, help="seeds the game's sampling of records")
    a.add_argument("--json", action="store_true", help="print the result as JSON")
    from engine.cli.tune import add_parser as add_tune

    add_tune(sub)
    sub.add_parser("datasets", help="list datasets and whether each is available here")
    sub.add_parser("methods", help="list methods")
    r = sub.add_parser("risk", help="what an (epsilon, delta) or a run allows an attacker")
    r.add_argument("--epsilon", default=None, help="'inf' = no privacy")
    r.add_argument("--delta", default="0", help="0 is allowed here (pure DP)")
    r.add_argument("--mu", default=None, help="a Gaussian mechanism's mu = sensitivity/sigma")
    r.add_argument("--run", default=None, metavar="RUN_DIR", help="a finished run's folder")
    r.add_argument("--prior", default="0.01", help="the attacker's prior, for the posterior")
    r.add_argument("--json", action="store_true", help="strict JSON instead of text")
    r.add_argument("--game", type=int, default=0, metavar="ROUNDS",
                   help="also play ROUNDS of the membership game's optimal attacker at --epsilon")
    return p


def _config_from(args, extra):
    from engine.core.config import RunConfig, parse_epsilon

    try:
        delta = float(args.delta)
    except ValueError:
        raise InputError(f"delta must be a number in (0, 0.1], e.g. 1e-5. Got {args.delta!r}.") from None
    dataset, options = dataset_and_options(args)
    params = {**pairs(args.param, "--param"), **extra_flags(extra)}
    return RunConfig(method=args.method, dataset=dataset, epsilon=parse_epsilon(args.epsilon),
                     delta=delta, seed=args.seed, device=args.device,
                     n_synthetic=args.n_synthetic, data_options=options,
                     params=params, cnn_eval=args.cnn).validate()


def _train(args, extra) -> int:
    from tqdm import tqdm

    from engine.methods.preview import cost_line
    from engine.runs.artifacts import check_out_dir, claim_out_dir
    from engine.runs.runner import execute, prepare

    config = _config_from(args, extra)
    check_out_dir(args.out, overwrite=args.overwrite)  # before the data is loaded
    prepared = prepare(config)  # all input checks happen before any file is written
    claim_out_dir(args.out, overwrite=args.overwrite)
    if line := cost_line(prepared.preview.cost):
        print(f"estimated: {line}", file=sys.stderr)
    if not config.private:
        print("NOTE: epsilon=inf - a NON-PRIVATE reference run, no noise is added.", file=sys.stderr)
    for line in prepared.preview.notices():
        print(line, file=sys.stderr)
    bar = None
    final = None
    # closing(): on Ctrl-C the run is closed at once, so metrics.json says "interrupted".
    with closing(execute(config, args.out, full_eval=not args.no_eval,
                         prepared=prepared)) as events:
        for ev in events:
            if ev.phase == "release":
                tqdm.write(f"privacy: {ev.message}; epsilon spent {ev.epsilon_spent:.4g}",
                           file=sys.stderr)
            elif ev.phase == "train":
                if bar is None:
                    bar = tqdm(total=ev.total, desc=f"{config.method} on {config.dataset}",
                               unit="step")
                bar.update(ev.step - bar.n)
                loss = {} if ev.loss is None else {"loss": f"{ev.loss:.4g}"}  # optional
                bar.set_postfix(**loss, eps=f"{ev.epsilon_spent:.3g}")
            elif ev.phase == "evaluate":
                if bar is not None:
                    bar.close()
                    bar = None
                print(f"{ev.message} ...", file=sys.stderr)
            elif ev.phase == "probe":
                tqdm.write(f"step {ev.step}: " + ", ".join(f"{k}={v:.3f}" for k, v in
                                                           ev.metrics.items()), file=sys.stderr)
            else:
                final = ev
    if bar is not None:
        bar.close()
    metrics = json.loads((Path(args.out) / "metrics.json").read_text())
    eps = metrics["epsilon_spent"]
    print(f"{final.phase}: epsilon spent {eps if isinstance(eps, str) else f'{eps:.4f}'} "
          f"(delta {config.delta:g}, {metrics['accountant']}); "
          f"{metrics['seconds']['train']:.1f}s training")
    if metrics["accuracy"]:
        print("accuracy on the real test split (NOT private: measured on real records):")
    for key, val in metrics["accuracy"].items():
        if isinstance(val, float):
            print(f"  {key:28s} {val:.4f}")
    print(f"artifacts in {args.out}")
    return 0


def _gallery(args) -> int:
    from engine.runs import gallery

    planned = gallery.plan(more=not args.no_fashion, slow=args.fashion_datalens)
    if args.list:
        for config in planned:
            print(gallery.entry_name(config))
        return 0
    configs = [c for c in planned if args.only in gallery.entry_name(c)]
    if not configs:
        raise InputError(f"no gallery entry name contains {args.only!r}; "
                         "list the names with: python -m engine gallery --list")
    gallery.build(configs, Path(args.out) if args.out else gallery.GALLERY_DIR,
                  rebuild=args.rebuild)
    return 0


def _datasets() -> int:
    from engine.data.catalog import list_datasets

    print(f"{'name':14s} {'kind':8s} {'here':12s} where / what")
    for d in list_datasets():
        state = "available" if d["available"] else "unavailable"
        print(f"{d['name']:14s} {d['kind']:8s} {state:12s} {d['where']}")
    print("\nYour own data: --csv FILE.csv --label COLUMN (a table), or --npz FILE.npz "
          "(images: arrays x and y), e.g.\n  python -m engine train --csv my.csv --label "
          "income --out runs/mine")
    return 0


def _methods() -> int:
    from engine.methods.registry import available_methods, get_method

    for name in available_methods():
        print(f"{name:10s} {get_method(name).TITLE}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args, extra = build_parser().parse_known_args(argv)
        if extra and args.command != "train":
            raise InputError(f"unrecognised arguments: {' '.join(extra)}")
        if args.command == "train":
            return _train(args, extra)
        if args.command == "gallery":
            return _gallery(args)
        if args.command == "ledger":
            from engine.cli.ledger import main as ledger_main

            return ledger_main(args)
        if args.command == "attack":
            from engine.cli.attack import main as attack_main

            return attack_main(args)
        if args.command == "tune":
            from engine.cli.tune import main as tune_main

            return tune_main(args)
        if args.command == "datasets":
            return _datasets()
        if args.command == "risk":
            from engine.cli.risk import main as risk_main

            return risk_main(args)
        return _methods()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
