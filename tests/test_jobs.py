"""Job runner: real tiny DP-MERF runs end to end, cancel, queueing, failure paths.

The main path drives the real engine (engine.runner.execute on digits). Scheduling and
crash handling use small stand-in trainers, because what they test is the job runner's
bookkeeping, not the method.
"""

import math
import os
import threading
import time

import numpy as np
import pytest

from engine.config import RunConfig
from engine.errors import InputError
from engine.events import Event
from engine.jobs import JobManager
from engine.store import RunStatus, RunStore

TINY = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu",
                 params={"n_features": 500, "epochs": 1})


@pytest.fixture
def manager(tmp_path):
    jm = JobManager(RunStore(tmp_path), full_eval=False)
    yield jm
    jm.shutdown()


def test_real_tiny_run_finishes_and_is_stored(manager, tmp_path):
    rid = manager.submit(TINY)
    assert manager.wait(rid, timeout=120) == RunStatus.FINISHED
    row = manager.store.get_run(rid)
    assert row["status"] == "finished" and row["message"]
    assert 0 < row["epsilon_spent"] <= 1.0 + 1e-9  # never more than the target
    hist = manager.store.metric_history(rid)
    assert hist["epsilon_spent"] and hist["loss"]
    names = set(manager.store.artifacts(rid))
    assert {"config.json", "metrics.json", "synthetic.npz", "samples.png"} <= names
    snap = manager.snapshot(rid)
    assert snap.samples is not None and snap.samples[0].shape[1:] == (1, 8, 8)
    assert snap.loss_curve and snap.eps_curve and snap.fraction == 1.0
    assert snap.first_samples_at is not None and snap.eta_s is None


def test_cancel_a_running_real_job(manager):
    cfg = RunConfig(dataset="digits", device="cpu", params={"n_features": 500, "epochs": 400})
    rid = manager.submit(cfg)
    deadline = time.time() + 60
    while (manager.snapshot(rid).step < 2 or manager.status(rid) != RunStatus.RUNNING) \
            and time.time() < deadline:
        time.sleep(0.05)
    assert manager.cancel(rid)
    assert manager.wait(rid, timeout=60) == RunStatus.CANCELLED
    assert manager.store.get_run(rid)["status"] == "cancelled"
    assert manager.snapshot(rid).step < manager.snapshot(rid).total


def test_bad_params_fail_with_the_engine_message(manager):
    rid = manager.submit(RunConfig(dataset="digits", device="cpu", params={"n_features": 3}))
    assert manager.wait(rid, timeout=60) == RunStatus.FAILED
    msg = manager.store.get_run(rid)["message"]
    assert "n_features" in msg and "Traceback" not in msg


def test_invalid_config_is_refused_at_submit(manager):
    with pytest.raises(InputError, match="epsilon"):
        manager.submit(RunConfig(epsilon=-1.0, device="cpu"))
    assert manager.store.list_runs() == []


# ------------------------------------------------------- bookkeeping with stand-ins


def _events(n=3, *, sleep=0.0):
    for i in range(1, n + 1):
        time.sleep(sleep)
        yield Event("train", i, n, 0.5, loss=1.0 / i,
                    samples=(np.zeros((2, 1, 8, 8), np.float32), np.arange(2)))
    yield Event("done", n, n, 0.5, metrics={"synthetic/logreg": 0.6, "real/logreg": 0.9})


def test_one_job_per_device_at_a_time(tmp_path):
    running, peak, lock = [0], [0], threading.Lock()

    def execute(config, out_dir, *, stop=None, full_eval=True):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            yield from _events(3, sleep=0.02)
        finally:
            with lock:
                running[0] -= 1

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        ids = [jm.submit(RunConfig(device="cpu", seed=i)) for i in range(4)]
        assert [jm.wait(i, timeout=30) for i in ids] == [RunStatus.FINISHED] * 4
        assert peak[0] == 1
        starts = [jm.store.get_run(i)["started"] for i in ids]
        assert starts == sorted(starts)  # FIFO
        assert jm.store.get_run(ids[0])["accuracy"] == 0.6
    finally:
        jm.shutdown()


def test_crash_is_failed_never_finished(tmp_path):
    def execute(config, out_dir, *, stop=None, full_eval=True):
        yield Event("train", 1, 5, 0.5, loss=1.0, metrics={"probe/logreg": 0.2})
        raise RuntimeError("boom")

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        rid = jm.submit(RunConfig(device="cpu"))
        assert jm.wait(rid, timeout=30) == RunStatus.FAILED
        row = jm.store.get_run(rid)
        assert row["message"] == "RuntimeError: boom" and row["accuracy"] == 0.2
        assert "Traceback" in (tmp_path / rid / "error.txt").read_text()
    finally:
        jm.shutdown()


def test_iterator_without_done_is_failed(tmp_path):
    def execute(config, out_dir, *, stop=None, full_eval=True):
        yield Event("train", 1, 5, 0.5, loss=1.0)

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        rid = jm.submit(RunConfig(device="cpu"))
        assert jm.wait(rid, timeout=30) == RunStatus.FAILED
        assert "without a final 'done'" in jm.store.get_run(rid)["message"]
    finally:
        jm.shutdown()


def test_cancel_while_queued_never_starts(tmp_path):
    gate = threading.Event()
    started = []

    def execute(config, out_dir, *, stop=None, full_eval=True):
        started.append(config.seed)
        gate.wait(10)
        yield from _events(1)

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        first = jm.submit(RunConfig(device="cpu", seed=0))
        second = jm.submit(RunConfig(device="cpu", seed=1))
        assert jm.cancel(second)
        gate.set()
        assert jm.wait(first, timeout=30) == RunStatus.FINISHED
        assert jm.wait(second, timeout=30) == RunStatus.CANCELLED
        assert started == [0]
        assert not jm.cancel(first)  # terminal runs cannot be cancelled
    finally:
        jm.shutdown()


def test_worker_leaves_the_server_a_core(tmp_path):
    seen = []

    def execute(config, out_dir, *, stop=None, full_eval=True):
        import torch

        seen.append(torch.get_num_threads())
        yield from _events(1)

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        assert jm.wait(jm.submit(RunConfig(device="cpu")), timeout=30) == RunStatus.FINISHED
    finally:
        jm.shutdown()
    assert seen == [max(1, (os.cpu_count() or 2) - 1)]


def test_heartbeat_keeps_live_runs_from_being_recovered(tmp_path, monkeypatch):
    import engine.jobs as jobs_mod

    monkeypatch.setattr(jobs_mod, "HEARTBEAT_S", 0.05)
    gate = threading.Event()

    def execute(config, out_dir, *, stop=None, full_eval=True):
        gate.wait(10)
        yield from _events(1)

    jm = JobManager(RunStore(tmp_path), execute=execute)
    try:
        rid = jm.submit(RunConfig(device="cpu"))
        time.sleep(0.5)
        # Another process opening the store now sees a fresh heartbeat: not stale.
        assert RunStore(tmp_path, stale_after_s=0.3).get_run(rid)["status"] == "running"
        gate.set()
        assert jm.wait(rid, timeout=30) == RunStatus.FINISHED
    finally:
        jm.shutdown()
    assert math.isfinite(jm.store.get_run(rid)["heartbeat"])
