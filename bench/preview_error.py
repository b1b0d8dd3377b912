"""Benchmark (not a test): how far the cost preview's whole wait is from what runs measure.

The preview promises a run's whole wait (training, then scoring: the LogReg, MLP and RF
fits on the synthetic data and the real-data reference; engine/methods/preview.Cost.whole_s).
This runs `--runs` runs one after another the way a trainer does (engine/jobs/scheduling.run
in this process, a trainer slot's threads, a fresh run store), and prints for each what
its preview promised beside what it measured. Run 1 meets a cold store (its scoring is
timed on stand-in data); later runs learn from the finished ones
(engine/methods/scoring_cost.py, engine/store/cost_cache.py), and this process has fitted the
real-data reference by then (the preview knows: it is not counted again).

    .venv/bin/python bench/preview_error.py [--dataset fashion_mnist] [--method dpmerf ...]
        [--runs 2] [--param epochs=5] [--threads N] [--json out.json] [--tiny] [--rows 40000]

`--dataset census`: bench/census.py's census-like table (`--rows` rows, its schema), as
bench/tabular.py runs it; `--dataset fair`: Fair's survey from the installed statsmodels
with its code book as schema (bench/fair.py). `--method` takes several methods (e.g. `aim marginals`): each
gets `--runs` runs. The training error (predicted vs measured train seconds) is printed
beside the whole wait's.

`--tiny` (what tests/test_bench_preview_error.py runs): digits, a small DP-MERF, 2 runs;
with `--method marginals`, the marginals baseline on digits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _pct(predicted, measured) -> str:
    if predicted is None or not measured:
        return "—"
    return f"{100 * (predicted - measured) / measured:+.0f} %"


def _s(x) -> str:
    return "—" if x is None else f"{x:,.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="fashion_mnist")
    ap.add_argument("--method", "--methods", dest="methods", nargs="+", default=["dpmerf"])
    ap.add_argument("--rows", type=int, default=40_000, help="census rows (--dataset census)")
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--param", action="append", default=[], help="method knob name=value")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch and BLAS threads (default: a trainer slot's, engine/runs/slots.py)")
    ap.add_argument("--root", help="run store to use (default: a fresh temporary one)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--tiny", action="store_true", help="digits, a small DP-MERF, 2 runs")
    args = ap.parse_args(argv)
    if args.tiny:
        args.dataset, args.runs = "digits", 2
        if args.methods == ["dpmerf"]:
            args.param = args.param or ["n_features=200", "epochs=2", "batch_size=200"]
    root = Path(args.root or tempfile.mkdtemp(prefix="dpsynth-preview-error-"))
    os.environ["DPSYNTH_RUNS"] = str(root)  # the store, its ledger and the cost timings

    import torch
    from threadpoolctl import threadpool_limits

    from engine.cli.options import pairs as _pairs
    from engine.runs.slots import plan
    from engine.store.runs import RunStore

    threads = args.threads or plan().threads
    torch.set_num_threads(threads)  # as a trainer slot (engine/jobs/worker.py)
    threadpool_limits(threads)
    params = _pairs(args.param, "--param")
    store = RunStore(root)
    dataset, options = _dataset(args.dataset, root, args.rows)
    rows = []
    for method in args.methods:
        rows += _runs(args, method, dataset, options, params, threads, store, root)
    print(f"# load average at the end {os.getloadavg()[0]:.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def _dataset(name: str, root: Path, rows: int) -> tuple[str, dict | None]:
    """(catalog name, data options): the census or fair table is written into the store's
    folder."""
    if name not in ("census", "fair"):
        return name, None
    sys.path.insert(0, str(ROOT / "bench"))
    if name == "fair":
        from fair import LABEL, write as write_fair

        csv, schema = write_fair(root / "fair.csv")
        return "csv", {"path": str(csv), "label": LABEL, "schema": str(schema)}
    from census import write

    csv, schema = write(root / "census.csv", rows=rows, seed=0)
    return "csv", {"path": str(csv), "label": "income", "schema": str(schema)}


def _runs(args, method, dataset, options, params, threads, store, root) -> list[dict]:
    """`args.runs` runs of `method`, one after another, each printed as it ends."""
    from engine.runs import runner
    from engine.jobs import scheduling
    from engine.core.config import RunConfig, parse_epsilon

    load = os.getloadavg()
    print(f"# {method} on {args.dataset}, {args.runs} run(s), {threads} thread(s), "
          f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores; store {root}", flush=True)
    print("run | predicted train s | measured | train error | predicted scoring s | measured | "
          "predicted whole s | measured whole s | error | train basis | scoring basis | "
          "steps predicted / made", flush=True)
    rows = []
    for i in range(args.runs):
        config = RunConfig(method=method, dataset=dataset, data_options=options,
                           epsilon=parse_epsilon(args.epsilon), seed=i, params=params)
        basis, train_basis, steps = _basis(runner, config)  # the preview the run is about to make
        run_id = store.create_run(config)
        t0 = time.perf_counter()
        status = scheduling.run(store, run_id, runner.execute, stop=threading.Event(),
                                full_eval=True)
        whole = time.perf_counter() - t0  # data, preview, training, scoring, files
        metrics = json.loads((store.artifact_dir(run_id) / "metrics.json").read_text())
        secs = metrics.get("seconds", {})
        pred_scoring = secs.get("predicted_scoring")
        row = {"run": i + 1, "status": status.value, "predicted_train_s": secs.get("predicted"),
               "train_s": secs.get("train"), "predicted_scoring_s": pred_scoring,
               "scoring_s": secs.get("evaluate"), "score_synthetic_s": secs.get("score_synthetic"),
               "score_real_s": secs.get("score_real"),
               "predicted_whole_s": secs.get("predicted_whole"), "whole_s": round(whole, 3),
               "error": None if secs.get("predicted_whole") is None
               else (secs["predicted_whole"] - whole) / whole, "scoring_basis": basis,
               "method": method, "train_basis": train_basis,
               "train_error": None if not secs.get("predicted") or not secs.get("train")
               else (secs["predicted"] - secs["train"]) / secs["train"],
               "load_after": os.getloadavg()[0], "predicted_steps": steps,
               "steps": (metrics.get("info") or {}).get("steps")}
        rows.append(row)
        print(f"{i + 1} | {_s(row['predicted_train_s'])} | {_s(row['train_s'])} | "
              f"{_pct(row['predicted_train_s'], row['train_s'])} | "
              f"{_s(pred_scoring)} | {_s(row['scoring_s'])} | {_s(row['predicted_whole_s'])} | "
              f"{_s(whole)} | {_pct(row['predicted_whole_s'], whole)} | {train_basis} | {basis} | "
              f"{steps} / {row['steps']}",
              flush=True)
    return rows


def _basis(runner, config) -> tuple[str, str, int | None]:
    """How a preview of `config` finds its scoring and training times now (the run's own
    preview, in the trainer, follows a moment later with the same caches), and the steps
    (AIM: rounds) it expects."""
    from engine.data import catalog as datasets

    data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
    cost = runner.preview(config, data).cost
    return ((cost.scoring_basis or "—", cost.basis or "—", cost.steps) if cost
            else ("—", "—", None))


if __name__ == "__main__":
    sys.exit(main())
