"""Benchmark (not a test): N simultaneous browser-less sessions start tiny runs at once.

Each "session" is a thread that does what the Playground does: submit a RunConfig to the
one shared JobManager (as ui/common.jobs() hands out), then poll its snapshot every
0.25 s until it is terminal. Reports, for N = 1, 4, 16: queue wait (queued → training),
time to completion, throughput, memory of this (the app's) process — training runs in
the worker's processes — and whether any run was lost (every run must be FINISHED in
the store with its metrics.json on disk). bench/workshop.py does the same through the
app itself: Streamlit sessions over its websocket protocol, or real browser pages.

    .venv/bin/python bench/load.py [--sessions 1 4 16] [--slots 1] [--no-eval]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core.config import RunConfig  # noqa: E402
from engine.jobs.manager import JobManager  # noqa: E402
from engine.store.runs import RunStatus, RunStore  # noqa: E402

TINY = {"n_features": 200, "epochs": 1, "batch_size": 100, "sample_every": 5}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def session(jm: JobManager, seed: int, out: dict, barrier: threading.Barrier) -> None:
    cfg = RunConfig(dataset="digits", device="cpu", epsilon=1.0, seed=seed, params=TINY)
    barrier.wait()  # everyone presses Train at the same moment
    t0 = time.time()
    rid = jm.submit(cfg)
    polls = 0
    while True:
        snap = jm.snapshot(rid)
        polls += 1
        if snap.status.terminal:
            break
        time.sleep(0.25)
    out[rid] = {"submitted": t0, "started": snap.started, "ended": snap.ended,
                "status": snap.status, "polls": polls}


def run_level(n: int, slots: int, full_eval: bool) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"dpsynth-load-{n}-"))
    jm = JobManager(RunStore(root), slots_per_device=slots, full_eval=full_eval)
    out: dict = {}
    barrier = threading.Barrier(n)
    threads = [threading.Thread(target=session, args=(jm, i, out, barrier)) for i in range(n)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    jm.shutdown()
    store = RunStore(root, recover=False)
    rows = store.list_runs()
    finished = [r for r in rows if r.status == RunStatus.FINISHED
                and (root / r.run_id / "metrics.json").exists()
                and json.loads((root / r.run_id / "metrics.json").read_text())["status"] == "finished"]
    waits = [v["started"] - v["submitted"] for v in out.values() if v["started"]]
    done = [v["ended"] - v["submitted"] for v in out.values() if v["ended"]]
    store.close()
    shutil.rmtree(root, ignore_errors=True)
    return {
        "N": n, "submitted": len(out), "in store": len(rows), "finished": len(finished),
        "lost": n - len(finished),
        "wait median s": statistics.median(waits), "wait max s": max(waits),
        "done median s": statistics.median(done), "done max s": max(done),
        "wall s": wall, "runs/min": 60 * n / wall, "rss MB": rss_mb(), "peak MB": peak_mb(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--slots", type=int, default=1, help="worker threads per device (app: 1)")
    ap.add_argument("--no-eval", action="store_true", help="skip the downstream evaluation")
    args = ap.parse_args()
    print(f"tiny DP-MERF digits runs {TINY}, full_eval={not args.no_eval}, "
          f"slots per device={args.slots}")
    cols = ["N", "submitted", "in store", "finished", "lost", "wait median s", "wait max s",
            "done median s", "done max s", "wall s", "runs/min", "rss MB", "peak MB"]
    print(" | ".join(cols))
    for n in args.sessions:
        r = run_level(n, args.slots, not args.no_eval)
        print(" | ".join(f"{r[c]:.1f}" if isinstance(r[c], float) else str(r[c]) for c in cols),
              flush=True)


if __name__ == "__main__":
    main()
