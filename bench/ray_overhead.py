"""Benchmark (not a test): what Ray costs per run, beside the local worker, on this machine.

Queues N tiny runs (the marginals baseline on breast_cancer, distinct seeds, no final
evaluation) through a JobManager on a fresh store, once with the local trainer processes
and once on a one-machine Ray cluster (`ray.init(num_cpus=--cpus)`), and reads from the
store, per run:

    start → first event   the run's row claimed (RUNNING) → its first progress row stored:
                          data loading and the first release on both backends; on Ray
                          also packing, the task's scheduling, the worker process and the
                          event's trip home
    last event → stored   the last progress row → the row's terminal status: on Ray the
                          artifacts' bytes coming home and being written by the head
    total                 created → ended (queue wait included)

The Ray-minus-local difference of the medians is Ray's own overhead per run. Also stop
latency: a long DP-MERF run is stopped mid-training, request → CANCELLED.

    .venv/bin/python bench/ray_overhead.py [--runs 8] [--cpus 2] [--tiny] [--address ADDR]

`--address` joins a running cluster (its GCS address, or "auto") instead of starting one.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.config import RunConfig  # noqa: E402
from engine.jobs.manager import JobManager  # noqa: E402
from engine.store.records import RunStatus  # noqa: E402
from engine.store.runs import RunStore  # noqa: E402

SMALL = dict(method="marginals", dataset="breast_cancer", epsilon=1.0, device="cpu")
LONG = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu",
                 params={"n_features": 500, "epochs": 200})


def per_run(root: Path, run_id: str) -> dict[str, float]:
    """Seconds of one finished run, from the store's own timestamps."""
    con = sqlite3.connect(root / "runs.db")
    created, started, ended = con.execute(
        "SELECT created, started, ended FROM runs WHERE id=?", (run_id,)).fetchone()
    first, last = con.execute("SELECT MIN(time), MAX(time) FROM metrics WHERE run_id=?",
                              (run_id,)).fetchone()
    con.close()
    return {"start_to_first_event": first - started, "last_event_to_stored": ended - last,
            "total": ended - created}


def stop_latency(jm: JobManager) -> float:
    rid = jm.submit(LONG)
    while not (jm.store.get_run(rid).status == RunStatus.RUNNING and jm.store.get_run(rid).step):
        time.sleep(0.05)
    asked = time.time()
    jm.cancel(rid)
    assert jm.wait(rid, timeout=60) == RunStatus.CANCELLED, jm.store.get_run(rid).message
    return jm.store.get_run(rid).ended - asked


def measure(backend: str, runs: int, address: str | None, stop: bool) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"dpsynth-bench-{backend}-"))
    jm = JobManager(RunStore(root), full_eval=False, ray_address=address)
    try:
        t0 = time.time()
        ids = [jm.submit(RunConfig(seed=s, **SMALL)) for s in range(runs)]
        for rid in ids:
            status = jm.wait(rid, timeout=600)
            if status != RunStatus.FINISHED:
                raise SystemExit(f"{backend}: run {rid} ended {status}: "
                                 f"{jm.store.get_run(rid).message}")
        wall = time.time() - t0
        rows = [per_run(root, rid) for rid in ids]
        out = {"backend": backend, "runs": runs, "wall_s": wall}
        for key in rows[0]:
            values = sorted(r[key] for r in rows)
            out[key] = (statistics.median(values), values[-1])
        out["stop_s"] = stop_latency(jm) if stop else None
        return out
    finally:
        jm.shutdown()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--tiny", action="store_true", help="2 runs, no stop (the test's size)")
    ap.add_argument("--address", help="a running cluster to join (default: start one)")
    args = ap.parse_args(argv)
    runs, stop = (2, False) if args.tiny else (args.runs, True)

    import ray

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    try:
        address = ray.get_runtime_context().gcs_address
        results = [measure("local", runs, None, stop), measure("ray", runs, address, stop)]
    finally:
        ray.shutdown()
    print(f"{runs} tiny runs (marginals, breast_cancer) per backend; seconds, median / max")
    print(f"{'backend':8} {'wall':>7} {'start→1st event':>18} {'last event→stored':>19} "
          f"{'created→ended':>15} {'stop→CANCELLED':>15}")
    for r in results:
        cells = [f"{r[k][0]:7.2f} /{r[k][1]:6.2f}" for k in
                 ("start_to_first_event", "last_event_to_stored", "total")]
        stop_cell = "-" if r["stop_s"] is None else f"{r['stop_s']:.2f}"
        print(f"{r['backend']:8} {r['wall_s']:7.1f} {cells[0]:>18} {cells[1]:>19} "
              f"{cells[2]:>15} {stop_cell:>15}")
    local, on_ray = results
    for key in ("start_to_first_event", "last_event_to_stored"):
        print(f"Ray overhead, {key.replace('_', ' ')}: "
              f"{on_ray[key][0] - local[key][0]:+.2f} s (median, Ray − local)")


if __name__ == "__main__":
    main()
