"""A stand-in trainer for the job tests, run in the worker's trainer processes.

Module level so the spawned processes can import it. What it does is chosen by the
run's config (`params["do"]`), so one worker serves every bookkeeping test; each call
leaves `pid` (its pid and parent pid) and `times` (start, end) in the run's folder.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from engine.methods.events import Event


@contextmanager
def scripted_manager(root):
    """A JobManager on a fresh store at `root` whose trainers run `scripted`: two slots,
    quick heartbeats, no scoring (the study tests' stand-in queue)."""
    from engine.jobs.manager import JobManager
    from engine.store.runs import RunStore

    jm = JobManager(RunStore(root), execute=scripted, heartbeat_s=0.1, slots_per_device=2,
                    full_eval=False)
    try:
        yield jm
    finally:
        jm.shutdown()


def scripted(config, out_dir, *, stop=None, full_eval=True):
    p = dict(config.params)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pid").write_text(f"{os.getpid()} {os.getppid()}")
    t0 = time.time()
    try:
        yield from _script(p, out, stop, full_eval)
    finally:
        (out / "times").write_text(f"{t0} {time.time()}")


def _script(p, out, stop, full_eval):
    do, n = p.get("do", "ok"), int(p.get("steps", 3))
    if do == "gate":  # wait for a file the test creates (a gate across processes)
        while not (out.parent / p["gate"]).exists():
            time.sleep(0.02)
    if do == "slow_step":  # one step that ignores the stop flag for a long time
        yield Event("train", 1, 2, 0.5, loss=1.0)
        time.sleep(float(p["step_s"]))
    for i in range(1, n + 1):
        if stop is not None and stop.is_set():
            return
        time.sleep(float(p.get("sleep", 0.0)))
        yield Event("train", i, n, 0.5, loss=1.0 / i, metrics=(
            {"probe/logreg": 0.2} if do == "crash" else {}),
            samples=(np.zeros((2, 1, 8, 8), np.float32), np.arange(2)))
        if do == "crash":
            raise RuntimeError("boom")
        if do == "no_done":
            return
    metrics = {"synthetic/logreg": 0.6, "real/logreg": 0.9}
    if do == "where":  # 1.0 inside a Ray worker process (tests/test_ray_study.py)
        metrics["on_ray"] = float("ray" in sys.modules and sys.modules["ray"].is_initialized())
    if do == "threads":
        import torch

        import numpy  # noqa: F401  (its BLAS pool, as the evaluation uses it)
        from threadpoolctl import threadpool_info

        metrics["threads"] = float(torch.get_num_threads())
        metrics["pool_threads"] = float(max(i["num_threads"] for i in threadpool_info()))
    if full_eval and p.get("eval_s"):
        yield Event("evaluate", n, n, 0.5, message="evaluating")
        time.sleep(float(p["eval_s"]))
    yield Event("done", n, n, 0.5, metrics=metrics, message="finished")


def times(out_dir) -> tuple[float, float]:
    start, end = (Path(out_dir) / "times").read_text().split()
    return float(start), float(end)


def pids(out_dir) -> tuple[int, int]:
    pid, parent = (Path(out_dir) / "pid").read_text().split()
    return int(pid), int(parent)
