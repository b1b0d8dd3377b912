"""Job runner: runs train in a worker's processes, never in the caller's; queueing,
estimates, owner-only control, stop latency, reuse of identical runs, failure paths.

The main path drives the real engine (engine.runs.runner.execute on digits). Scheduling and
crash handling use a scripted stand-in trainer (tests/job_fakes.py), because what they
test is the job runner's bookkeeping, not the method.
"""

import math
import os
import time

import pytest

from engine.runs import slots
from engine.core.config import RunConfig
from engine.core.processes import TORCH_BASELINE_GB
from engine.core.errors import InputError
from engine.jobs.manager import JobManager, NotOwner
from engine.store.runs import RunStatus, RunStore
from conftest import HANG_S
from job_fakes import pids, scripted, times

TINY = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu",
                 params={"n_features": 500, "epochs": 1})


def fake(seed=0, **params) -> RunConfig:
    return RunConfig(device="cpu", seed=seed, params=params)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    jm = JobManager(RunStore(tmp_path_factory.mktemp("real")), full_eval=False)
    yield jm
    jm.shutdown()


@pytest.fixture(scope="module")
def jm(tmp_path_factory):
    """One worker with the scripted trainer for the bookkeeping tests."""
    jm = JobManager(RunStore(tmp_path_factory.mktemp("fake")), execute=scripted,
                    heartbeat_s=0.1, slots_per_device=1)
    yield jm
    jm.shutdown()


def _wait_for(cond, timeout=60.0):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.02)


# ------------------------------------------------------------------ real engine


def test_real_tiny_run_finishes_in_another_process(real):
    rid = real.submit(TINY)
    assert real.wait(rid, timeout=HANG_S) == RunStatus.FINISHED
    row = real.store.get_run(rid)
    assert row.status == "finished" and row.message
    # The row names the process that trained it: not this one.
    assert int(row.owner.split(":")[0]) != os.getpid()
    assert 0 < row.epsilon_spent <= 1.0 + 1e-9  # never more than the target
    hist = real.store.metric_history(rid)
    assert hist["epsilon_spent"] and hist["loss"]
    names = set(real.store.artifacts(rid))
    assert {"config.json", "metrics.json", "synthetic.npz", "samples.png"} <= names
    snap = real.snapshot(rid)
    assert snap.samples is not None and snap.samples[0].shape[1:] == (1, 8, 8)
    assert snap.loss_curve and snap.eps_curve and snap.fraction == 1.0
    assert snap.eta_s is None and snap.position is None


def test_cancel_a_running_real_job(real):
    rid = real.submit(RunConfig(dataset="digits", device="cpu",
                                params={"n_features": 500, "epochs": 400}))
    _wait_for(lambda: real.snapshot(rid).step >= 2, timeout=HANG_S)
    assert real.cancel(rid)  # how fast: bench/stop.py measures it (the 2 s promise)
    assert real.wait(rid, timeout=10) == RunStatus.CANCELLED
    assert real.store.get_run(rid).status == "cancelled"
    snap = real.snapshot(rid)
    assert snap.step < snap.total


def test_bad_params_fail_with_the_engine_message(real):
    rid = real.submit(RunConfig(dataset="digits", device="cpu", params={"n_features": 3}))
    assert real.wait(rid, timeout=HANG_S) == RunStatus.FAILED
    msg = real.store.get_run(rid).message
    assert "n_features" in msg and "Traceback" not in msg


def test_invalid_config_is_refused_at_submit(real):
    before = len(real.store.list_runs())
    with pytest.raises(InputError, match="epsilon"):
        real.submit(RunConfig(epsilon=-1.0, device="cpu"))
    assert len(real.store.list_runs()) == before


# ------------------------------------------------------- bookkeeping with stand-ins


def test_training_runs_in_a_worker_process_not_the_caller(jm):
    rid = jm.submit(fake(seed=100))
    assert jm.wait(rid, timeout=60) == RunStatus.FINISHED
    trainer, worker = pids(jm.store.artifact_dir(rid))
    assert trainer != os.getpid() and worker != os.getpid()
    assert trainer != worker  # the worker hands each run to a trainer process
    assert int(jm.store.get_run(rid).owner.split(":")[0]) == trainer


def test_workers_and_trainers_are_forked_from_this_processs_one_server(jm):
    """engine/core/processes.start_child: the worker and its trainers all come from the
    fork server this process started (torch imported once there), not a trainer from a
    server of the worker's own, which would import everything again per worker."""
    from pathlib import Path

    def parent(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

    rid = jm.submit(fake(seed=110))
    assert jm.wait(rid, timeout=60) == RunStatus.FINISHED
    trainer, server = pids(jm.store.artifact_dir(rid))
    worker = int((jm.store.root / "worker.pid").read_text().split(":")[0])
    assert parent(worker) == server != worker  # the trainer is not the worker's own child
    assert parent(server) == os.getpid()  # and the server is this process's
    assert "forkserver" in Path(f"/proc/{server}/cmdline").read_text()


def test_one_job_per_device_at_a_time_in_fifo_order(jm):
    ids = [jm.submit(fake(seed=200 + i, sleep=0.05)) for i in range(4)]
    assert [jm.wait(i, timeout=60) for i in ids] == [RunStatus.FINISHED] * 4
    spans = [times(jm.store.artifact_dir(i)) for i in ids]
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end <= start  # never two at once, in submission order
    assert jm.store.get_run(ids[0]).metrics["synthetic/logreg"] == 0.6


def test_queue_positions_and_estimates(jm):
    gate = jm.store.root / "open-300"
    gate.touch()  # measured history: two runs of this config that did not wait
    for seed in (300, 301):
        assert jm.wait(jm.submit(fake(seed=seed, do="gate", gate=gate.name)), 60).terminal
    gate.unlink()
    first = jm.submit(fake(seed=310, do="gate", gate=gate.name))
    queued = [jm.submit(fake(seed=311 + i, do="gate", gate=gate.name)) for i in range(2)]
    _wait_for(lambda: jm.status(first) == RunStatus.RUNNING)
    t0 = time.monotonic()
    snaps = [jm.snapshot(r) for r in queued]
    # the two snapshots share a plan when taken within PLAN_REUSE_S; on a starved
    # machine they may not, and the second's clock then runs on by the time between
    apart = time.monotonic() - t0
    assert [s.position for s in snaps] == [1, 2]
    assert [s.status for s in snaps] == [RunStatus.QUEUED] * 2
    assert [q.run_id for q in jm.queue()] == [first, *queued]
    # Estimates from the measured runs: the second queued run starts when the first ends.
    assert all(s.start_in_s is not None and s.eta_s is not None for s in snaps)
    assert snaps[0].start_in_s < snaps[1].start_in_s
    assert snaps[0].eta_s == pytest.approx(snaps[1].start_in_s, abs=0.5 + apart)
    gate.touch()
    assert [jm.wait(r, timeout=60) for r in [first, *queued]] == [RunStatus.FINISHED] * 3


def test_only_the_owner_or_an_instructor_may_stop_or_delete(jm):
    rid = jm.submit(fake(seed=400, do="gate", gate="open-400"), session="alice")
    assert jm.snapshot(rid).session == "alice"
    with pytest.raises(NotOwner, match="belongs to another participant"):
        jm.cancel(rid, session="bob")
    assert jm.status(rid) in (RunStatus.QUEUED, RunStatus.RUNNING)
    unowned = jm.submit(fake(seed=401))  # the command line's: no browser session may stop it
    with pytest.raises(NotOwner, match="belongs to no session; only its owner or an instructor"):
        jm.cancel(unowned, session="alice")
    assert jm.cancel(unowned)  # ...but the command line itself may
    assert jm.may_control(rid, session="alice", instructor=False)
    assert not jm.may_control(rid, session="bob", instructor=False)
    assert jm.cancel(rid, session="bob", instructor=True)
    assert jm.wait(rid, timeout=10) == RunStatus.CANCELLED
    with pytest.raises(NotOwner, match="delete"):
        jm.delete(rid, session="bob")
    assert jm.store.get_run(rid) is not None
    jm.delete(rid, session="alice")
    assert jm.store.get_run(rid) is None


def test_stop_ends_a_run_even_in_a_step_that_ignores_it(jm):
    rid = jm.submit(fake(seed=500, do="slow_step", step_s=60), session="s")
    _wait_for(lambda: jm.snapshot(rid).step >= 1)
    assert jm.cancel(rid, session="s")
    # The step sleeps 60 s: ending long before that means the trainer was killed (how
    # soon after the grace period is measured by bench/stop.py, not asserted here).
    assert jm.wait(rid, timeout=30) == RunStatus.CANCELLED
    assert "stopped by the user" in jm.store.get_run(rid).message
    # The next run starts at once on the freed slot.
    assert jm.wait(jm.submit(fake(seed=501)), timeout=30) == RunStatus.FINISHED


def test_identical_config_and_seed_reuses_the_finished_run(jm):
    first = jm.request(fake(seed=600))
    assert not first.reused and jm.wait(first.run_id, timeout=60) == RunStatus.FINISHED
    again = jm.request(fake(seed=600))
    assert again == (first.run_id, True)
    assert len(jm.store.list_runs()) == len({r.run_id for r in jm.store.list_runs()})
    other = jm.request(fake(seed=601))  # another seed is another run
    assert not other.reused and other.run_id != first.run_id
    forced = jm.request(fake(seed=600), reuse=False)
    assert not forced.reused and forced.run_id != first.run_id
    for r in (other.run_id, forced.run_id):
        assert jm.wait(r, timeout=60) == RunStatus.FINISHED


def test_crash_is_failed_never_finished(jm):
    rid = jm.submit(fake(seed=700, do="crash"))
    assert jm.wait(rid, timeout=60) == RunStatus.FAILED
    row = jm.store.get_run(rid)
    assert row.message == "RuntimeError: boom" and row.metrics["probe/logreg"] == 0.2
    assert "Traceback" in (jm.store.artifact_dir(rid) / "error.txt").read_text()


def test_iterator_without_done_is_failed(jm):
    rid = jm.submit(fake(seed=701, do="no_done"))
    assert jm.wait(rid, timeout=60) == RunStatus.FAILED
    assert "without a final 'done'" in jm.store.get_run(rid).message


def test_a_killed_trainer_is_failed_and_the_queue_goes_on(jm):
    rid = jm.submit(fake(seed=702, do="slow_step", step_s=60))
    _wait_for(lambda: jm.snapshot(rid).step >= 1)
    trainer, _ = pids(jm.store.artifact_dir(rid))
    os.kill(trainer, 9)
    assert jm.wait(rid, timeout=10) == RunStatus.FAILED
    assert "ended without a result (exit code -9)" in jm.store.get_run(rid).message
    assert jm.wait(jm.submit(fake(seed=703)), timeout=30) == RunStatus.FINISHED


def test_cancel_while_queued_never_starts(jm):
    first = jm.submit(fake(seed=800, do="gate", gate="open-800"))
    second = jm.submit(fake(seed=801))
    assert jm.cancel(second)
    (jm.store.root / "open-800").touch()
    assert jm.wait(first, timeout=60) == RunStatus.FINISHED
    assert jm.wait(second, timeout=5) == RunStatus.CANCELLED
    assert not (jm.store.artifact_dir(second) / "pid").exists()  # never started
    assert not jm.cancel(first)  # terminal runs cannot be cancelled


def test_trainer_threads_fill_the_cores_of_its_slots(jm):
    rid = jm.submit(fake(seed=900, do="threads"))
    assert jm.wait(rid, timeout=60) == RunStatus.FINISHED
    threads = jm.store.get_run(rid).metrics["threads"]
    # One slot here: it gets every core (trainers run niced, so pages still come first).
    assert threads == jm.settings.torch_threads == slots.plan(slots=1).threads == slots.cores()
    # BLAS/OpenMP pools (scikit-learn's evaluation) get the same count, not every core each
    assert jm.store.get_run(rid).metrics["pool_threads"] == threads
    assert jm.occupancy() == (0, 1) and jm.occupancy_line() == "0 of 1 training slot busy"


def test_slots_default_to_one_per_core_and_honour_the_override(tmp_path):
    assert slots.plan(n_cores=2, env={}) == slots.Plan(slots=2, threads=1)
    assert slots.plan(n_cores=8, env={"DPSYNTH_SLOTS": "2"}) == slots.Plan(2, 4)
    assert slots.plan(n_cores=2, env={"DPSYNTH_SLOTS": "4"}) == slots.Plan(4, 1)  # never 0
    for bad in ("0", "two"):
        with pytest.raises(InputError, match="DPSYNTH_SLOTS"):
            slots.plan(n_cores=2, env={"DPSYNTH_SLOTS": bad})
    three = JobManager(RunStore(tmp_path), slots_per_device=3)
    assert three.slots_per_device == 3 == three.settings.slots_per_device
    three.shutdown()


def test_a_second_run_starts_only_where_memory_allows():
    mem = (16.0, 8.0)  # GB: machine, available now
    assert slots.fits(1.0, [1.0], mem)
    assert not slots.fits(7.5, [7.5], mem)  # together over 90 % of the machine
    assert not slots.fits(7.5, [], mem)  # over 90 % of what is free now
    assert not slots.fits(None, [1.0], mem) and not slots.fits(1.0, [None], mem)  # unknown
    cfg = RunConfig(method="dpmerf", dataset="digits")
    need = slots.run_memory_gb(cfg)
    assert need is not None and TORCH_BASELINE_GB < need < 2.0


def test_evaluating_has_its_own_state_and_progress(jm):
    done = jm.submit(fake(seed=1000, eval_s=1.5))  # measured: evaluation takes ~1.5 s
    assert jm.wait(done, timeout=60) == RunStatus.FINISHED
    rid = jm.submit(fake(seed=1001, eval_s=1.5))
    _wait_for(lambda: jm.snapshot(rid).evaluating)
    first = jm.snapshot(rid)
    # No sleep-then-timing assert: progress is read from two snapshots, however slow the
    # machine. Elapsed time and the share done grow; never "done" before it is.
    _wait_for(lambda: (jm.snapshot(rid).eval_elapsed_s or 0) > first.eval_elapsed_s
              or not jm.snapshot(rid).evaluating)
    later = jm.snapshot(rid)
    if later.evaluating:
        assert later.eval_fraction >= first.eval_fraction
    for snap in (first, later):
        if snap.evaluating:
            assert 0 <= snap.eval_fraction <= 0.99 and snap.eta_s is not None
    assert jm.wait(rid, timeout=60) == RunStatus.FINISHED and not jm.snapshot(rid).evaluating


def test_heartbeat_keeps_live_runs_from_being_recovered(jm):
    rid = jm.submit(fake(seed=1100, do="gate", gate="open-1100"))
    _wait_for(lambda: jm.status(rid) == RunStatus.RUNNING)
    # No sleep: wait for two more beats, then open the store as another process would,
    # calling "stale" anything older than the gap it took (plus slack): still running.
    beats = [jm.store.get_run(rid).heartbeat]
    for _ in range(2):
        _wait_for(lambda: jm.store.get_run(rid).heartbeat > beats[-1])
        beats.append(jm.store.get_run(rid).heartbeat)
    stale_after = 3 * (beats[-1] - beats[0]) + 1.0
    assert RunStore(jm.store.root, stale_after_s=stale_after).get_run(rid).status == "running"
    (jm.store.root / "open-1100").touch()
    assert jm.wait(rid, timeout=30) == RunStatus.FINISHED
    assert math.isfinite(jm.store.get_run(rid).heartbeat)


def test_after_a_default_changes_train_trains_anew(jm, monkeypatch):
    """Reuse matches the resolved settings: the same overrides under a new default are a
    new run (engine/methods/registry.settings_for), not the finished run of the old default."""
    from dataclasses import replace

    from engine.methods.dpmerf import method as dpmerf

    first = jm.request(fake(seed=650))
    assert jm.wait(first.run_id, timeout=60) == RunStatus.FINISHED
    assert jm.request(fake(seed=650)) == (first.run_id, True)
    for_data = dpmerf.Params.for_data.__func__
    monkeypatch.setattr(dpmerf.Params, "for_data", classmethod(
        lambda cls, data: replace(for_data(cls, data), lr=for_data(cls, data).lr / 2)))
    fresh = jm.request(fake(seed=650))
    assert not fresh.reused and fresh.run_id != first.run_id
    assert jm.wait(fresh.run_id, timeout=60) == RunStatus.FINISHED
