"""Faults: cancel mid-run, SIGKILL of the serving process, concurrent jobs, concurrent
writers (threads and processes). The store must stay consistent through all of them.

Real engine runs on digits with tiny DP-MERF settings; the killed process is a separate
Python running engine.jobs.manager + engine.store.runs exactly as the app's process does.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from itertools import accumulate
from pathlib import Path

import numpy as np
import pytest

from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.store.runs import RunStatus, RunStore

from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[1]
SLOW = dict(n_features=300, epochs=400, batch_size=100, sample_every=5)


def _integrity(root: Path) -> str:
    con = sqlite3.connect(root / "runs.db")
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def _consistent(store: RunStore, rid: str) -> dict:
    """Row and metric rows agree: steps never go back, the row's step is the last one."""
    row = store.get_run(rid)
    hist = store.metric_history(rid)
    steps = [s for s, _ in hist.get("loss", [])]
    assert steps == sorted(steps), "metric steps went backwards"
    if steps:
        assert row.step >= steps[-1]
    if row.status in ("finished", "cancelled", "failed", "interrupted"):
        assert row.ended is not None and row.ended >= row.created
    return row


# ------------------------------------------------------------------ cancel


def test_cancel_mid_run_leaves_a_consistent_store(tmp_path):
    jm = JobManager(RunStore(tmp_path), full_eval=False, torch_threads=1)
    try:
        rid = jm.submit(RunConfig(dataset="digits", device="cpu", params=SLOW))
        deadline = time.time() + HANG_S
        while (jm.snapshot(rid).step < 5) and time.time() < deadline:
            time.sleep(0.05)
        assert jm.cancel(rid)
        assert jm.wait(rid, timeout=60) == RunStatus.CANCELLED
        row = _consistent(jm.store, rid)
        assert row.status == "cancelled" and 5 <= row.step < row.total
        metrics = json.loads((tmp_path / rid / "metrics.json").read_text())
        assert metrics["status"] == "cancelled"  # never written up as finished
        assert metrics["epsilon_spent"] <= 1.0 + 1e-9  # the release happened and counted
        assert not jm.store.list_runs(status="finished")
        # A later process opening the store leaves the terminal row alone.
        again = RunStore(tmp_path, stale_after_s=0.0).get_run(rid)
        assert again.status == "cancelled" and again.step == row.step
    finally:
        jm.shutdown()
    assert _integrity(tmp_path) == "ok"


# ------------------------------------------------------------------ SIGKILL

_SERVER = """
import sys
from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.store.runs import RunStore
if __name__ == "__main__":
    jm = JobManager(RunStore(sys.argv[1]), full_eval=False, torch_threads=1)
    rid = jm.submit(RunConfig(dataset="digits", device="cpu", params=%r))
    print(rid, flush=True)
    jm.wait(rid)
""" % (SLOW,)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _kill_mid_run(root: Path, *, whole_group: bool) -> tuple[str, dict, dict, list[int]]:
    """Start an app process (JobManager, worker, trainer) on `root`, SIGKILL it mid-run
    (`whole_group`: every process at once, as in a power cut), wait until no process of
    it is left; return the run id, its row and history, and the pids that were killed."""
    script = root / "server.py"
    script.write_text(_SERVER)
    proc = subprocess.Popen([sys.executable, str(script), str(root)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1",
                                 "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        rid = proc.stdout.readline().strip()
        assert rid, "the server process did not start a run"
        watcher = RunStore(root, recover=False)
        deadline = time.time() + HANG_S
        while time.time() < deadline:
            row = watcher.get_run(rid)
            if row.status == "running" and row.step >= 5:
                break
            time.sleep(0.1)
        trainer = int(watcher.get_run(rid).owner.split(":")[0])
        worker = int((root / "worker.pid").read_text().split(":")[0])
        assert len({proc.pid, worker, trainer}) == 3  # three processes, training in the last
        if whole_group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.time() + 10
    while (_alive(worker) or _alive(trainer)) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(worker) and not _alive(trainer), "training outlived its app"
    before = watcher.get_run(rid)
    history = watcher.metric_history(rid)
    watcher.close()
    assert before.step >= 5
    return rid, before, history, [proc.pid, worker, trainer]


def test_sigkill_of_everything_then_restart_lists_it_interrupted_with_last_metrics(tmp_path):
    rid, before, history, _ = _kill_mid_run(tmp_path, whole_group=True)
    assert before.status == "running"  # nobody was left to say otherwise
    jm = JobManager(RunStore(tmp_path), full_eval=False)  # exactly what the app does
    try:
        row = _consistent(jm.store, rid)
        assert row.status == "interrupted" and "interrupted" in row.message
        assert row.step == before.step and row.epsilon_spent == before.epsilon_spent
        assert jm.store.metric_history(rid) == history  # last metrics kept
        assert math.isfinite(row.epsilon_spent) and row.epsilon_spent <= 1.0
        assert not (tmp_path / rid / "metrics.json").exists()  # no finished write-up
        assert jm.status(rid) == RunStatus.INTERRUPTED
        assert rid not in jm.active()
    finally:
        jm.shutdown()
    assert _integrity(tmp_path) == "ok"


def test_sigkill_of_the_app_ends_its_training_as_interrupted(tmp_path):
    rid, before, history, _ = _kill_mid_run(tmp_path, whole_group=False)
    # The worker saw its app go, stopped the trainer and said so.
    assert before.status == "interrupted" and "the app that started it stopped" in \
        before.message
    row = _consistent(RunStore(tmp_path), rid)
    assert row.status == "interrupted" and row.step == before.step
    assert not (tmp_path / rid / "metrics.json").exists()
    assert _integrity(tmp_path) == "ok"


# ------------------------------------------------------------------ concurrent jobs


def test_four_concurrent_jobs_finish_with_separate_correct_results(tmp_path):
    jm = JobManager(RunStore(tmp_path), slots_per_device=4, full_eval=False, torch_threads=1)
    tiny = dict(n_features=200, epochs=6, batch_size=100, sample_every=5)
    configs = [RunConfig(dataset="digits", device="cpu", epsilon=eps, seed=i, n_synthetic=n,
                         params=tiny)
               for i, (eps, n) in enumerate([(0.5, 50), (1.0, 60), (4.0, 70), (math.inf, 80)])]
    try:
        ids = [jm.submit(c) for c in configs]
        statuses = [jm.wait(r, timeout=HANG_S) for r in ids]
        assert statuses == [RunStatus.FINISHED] * 4, [jm.store.get_run(r).message for r in ids]
        # They did train at the same time: the most runs between their trainer's start
        # and their end at any moment.
        rows = [jm.store.get_run(r) for r in ids]
        edges = sorted([(r.started, 1) for r in rows] + [(r.ended, -1) for r in rows])
        at_once = max(accumulate(d for _, d in edges))
        assert at_once >= 2, rows
        for rid, cfg in zip(ids, configs):
            row = _consistent(jm.store, rid)
            assert row.config == cfg
            d = tmp_path / rid
            assert RunConfig.from_dict(json.loads((d / "config.json").read_text())) == cfg
            metrics = json.loads((d / "metrics.json").read_text())
            assert metrics["status"] == "finished"
            if cfg.private:
                assert metrics["epsilon_spent"] == pytest.approx(cfg.epsilon, rel=1e-3)
                assert metrics["epsilon_spent"] <= cfg.epsilon + 1e-12
                assert row.epsilon_spent == pytest.approx(metrics["epsilon_spent"])
            else:
                assert metrics["epsilon_spent"] == "inf" and row.epsilon_spent is None
            with np.load(d / "synthetic.npz") as z:  # each run wrote its own output
                assert z["x"].shape == (cfg.n_synthetic, 1, 8, 8)
                assert z["y"].shape == (cfg.n_synthetic,)
        assert len(set(ids)) == 4
    finally:
        jm.shutdown()
    assert _integrity(tmp_path) == "ok"


# ------------------------------------------------------------------ concurrent writers

WRITES = 60


def _writer_process(root: str, rid: str, key: str) -> None:
    store = RunStore(root, recover=False)
    for step in range(WRITES):
        store.record_progress(rid, step=step, total=WRITES, epsilon_spent=0.25,
                              values={key: float(step)}, metrics={"probe/logreg": step / WRITES})
        store.heartbeat([rid])
        store.list_runs()
    store.close()


def test_concurrent_writers_threads_and_processes_never_corrupt_the_store(tmp_path):
    store = RunStore(tmp_path)
    ids = [store.create_run(RunConfig(seed=i)) for i in range(6)]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer_process, args=(str(tmp_path), rid, "proc"))
             for rid in ids[:3]]
    errors: list[BaseException] = []

    def thread_writer(rid):
        try:
            _writer_process(str(tmp_path), rid, "thread")
            store.finish(rid, RunStatus.FINISHED, metrics={"synthetic/logreg": 0.5})
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=thread_writer, args=(rid,)) for rid in ids[3:]]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for p in procs:
        p.join(120)
    assert not errors and all(p.exitcode == 0 for p in procs), (errors, [p.exitcode for p in procs])
    assert _integrity(tmp_path) == "ok"
    fresh = RunStore(tmp_path, recover=False)
    for rid in ids[:3]:
        hist = fresh.metric_history(rid)["proc"]
        assert [v for _, v in hist] == [float(s) for s in range(WRITES)]
        assert fresh.get_run(rid).step == WRITES - 1
    for rid in ids[3:]:
        assert len(fresh.metric_history(rid)["thread"]) == WRITES
        row = fresh.get_run(rid)
        assert row.status == "finished" and row.metrics == {"synthetic/logreg": 0.5}
