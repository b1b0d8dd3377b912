"""The training worker: trains the store's queued runs in processes of their own, so the
web server never trains and never competes with training for the GIL.

    app process (Streamlit)   JobManager: writes QUEUED rows and stop requests, reads progress
      └─ worker process       `serve`: one per run store (a lock file guards it); claims
           │                  QUEUED rows, one run per device slot, watches stop requests
           └─ trainer process `train_loop`: one per device slot (plus one spare), started
                              ahead of need so torch is already imported when a run
                              arrives; runs one run at a time and writes its progress,
                              live samples and final status into the store

Every process is forked from a fork server that has only imported torch and the other
heavy libraries (engine/core/processes.start_child): no process is forked after torch has
started its thread pools or CUDA, and none waits 5 s for its imports. A trainer dies with
its worker, and a worker with its app (each watches its starter), so no training outlives
the app that asked for it.

Guarantees kept from the thread-based runner: a run is FINISHED only after the trainer's
"done" event; anything else ends FAILED, CANCELLED or INTERRUPTED, never success. Stop:
the trainer's stop flag is set at once; a trainer that has not ended `STOP_GRACE_S` after
the request (a long step) is killed, the run recorded CANCELLED, and a fresh trainer
takes the next run. A trainer that dies mid-run leaves its run FAILED.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

from engine.core.processes import CTX, OWNER, TRAINER_NICE, process_token, start_child
from engine.jobs.scheduling import STOP_GRACE_S, PollLoop, WorkerSettings, run
from engine.store.runs import RunStatus, RunStore

_POOL_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# ---------------------------------------------------------------------- worker


def serve(settings: WorkerSettings, closing) -> None:
    """Entry point of the worker process. Returns at once if another worker holds the
    store; otherwise runs until `closing` is set, its app dies, or it has been idle."""
    root = Path(settings.root)
    lock = open(root / "worker.lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return
    (root / "worker.pid").write_text(OWNER or "")
    # Trainers start from here and take these variables with them (start_child applies
    # them to the pools the fork server loaded): their BLAS and OpenMP pools run with the
    # run's thread count, or two runs side by side would each spin a pool of every core
    # (measured: evaluation 10x slower with two slots).
    for var in _POOL_VARS:
        os.environ[var] = str(settings.torch_threads)
    if settings.ray_address:  # only then is Ray imported (engine/jobs/ray_backend.py)
        from engine.jobs.ray_backend import RayWorker

        worker: Any = RayWorker(settings, RunStore(root), closing)
    else:
        worker = _Worker(settings, RunStore(root), closing)
    reason = "the worker stopped"
    try:
        reason = worker.loop()
    finally:
        worker.close(reason)
        (root / "worker.pid").unlink(missing_ok=True)
        lock.close()


def worker_alive(root: str | os.PathLike) -> bool:
    """Is a worker process serving this store now (from its pid file)?"""
    try:
        token = (Path(root) / "worker.pid").read_text().strip()
    except OSError:
        return False
    return bool(token) and process_token(int(token.split(":")[0])) == token


class _Trainer:
    """One trainer process: runs the run ids it is sent, one at a time, and
    answers each with "ready" when the run's end is in the store."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.stop = CTX.Event()
        self.conn, child_end = CTX.Pipe()
        self.process = start_child(train_loop, (settings, child_end, self.stop),
                                   name="dpsynth-trainer")
        child_end.close()
        self.run_id: str | None = None
        self.device = ""
        self.kill_at: float | None = None

    def assign(self, run_id: str, device: str) -> None:
        self.stop.clear()
        self.run_id, self.device, self.kill_at = run_id, device, None
        self.conn.send(run_id)

    def done(self) -> bool:
        """Has the current run ended (answer received)? Raises EOFError if it died."""
        if not self.conn.poll():
            return False
        self.conn.recv()
        return True

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()


class _Worker(PollLoop):
    def __init__(self, settings: WorkerSettings, store: RunStore, closing) -> None:
        self.s = settings
        self.store = store
        self.closing = closing
        self.running: dict[str, _Trainer] = {}
        self.idle: list[_Trainer] = []
        self.parent_pid = int(settings.parent.split(":")[0])

    def loop(self) -> str:
        self.idle.append(_Trainer(self.s))  # imports torch now, before a run needs it
        return super().loop()

    def _claim(self) -> None:
        busy: dict[str, int] = {}
        for t in self.running.values():
            busy[t.device] = busy.get(t.device, 0) + 1
        full = {d for d, n in busy.items() if n >= self.s.slots_per_device}
        full |= self._no_memory(busy, full)
        claimed = self.store.claim_next(full=full)
        if claimed is None:
            return
        run_id, device = claimed
        self.idle = [t for t in self.idle if t.process.is_alive()]
        trainer = self.idle.pop(0) if self.idle else _Trainer(self.s)
        trainer.assign(run_id, device)
        self.running[run_id] = trainer
        if not self.idle:
            self.idle.append(_Trainer(self.s))  # the next run starts without an import wait

    def _no_memory(self, busy: dict[str, int], full: set[str]) -> set[str]:
        """Devices with a run training whose next queued run does not fit beside it
        (engine/runs/slots.py: the runs' cost-preview memory against the machine's)."""
        from engine.runs import slots

        out: set[str] = set()
        active = self.store.active_runs()
        for device in set(busy) - full:
            queued = [r for r in active if r.status == RunStatus.QUEUED and r.device == device]
            if not queued:
                continue
            running = [slots.run_memory_gb(r.config) for r in active
                       if r.run_id in self.running and r.device == device]
            if not slots.fits(slots.run_memory_gb(queued[0].config), running):
                out.add(device)
        return out

    def _stops(self) -> None:
        now = time.time()
        for run_id, asked in self.store.stop_requests(self.running).items():
            t = self.running[run_id]
            if t.kill_at is None:
                t.stop.set()  # the trainer ends at its next step, writing what it has
                t.kill_at = asked + STOP_GRACE_S
            elif now >= t.kill_at and t.process.is_alive():
                t.kill()  # a step longer than the grace period: do not wait for it
                self.store.finish(run_id, RunStatus.CANCELLED, if_active=True,
                                  message="stopped by the user (training process ended)")
                del self.running[run_id]

    def _reap(self) -> None:
        for run_id, t in list(self.running.items()):
            try:
                if t.done():
                    del self.running[run_id]
                    self.idle.append(t)
                continue
            except (EOFError, OSError):  # the trainer died mid-run
                pass
            t.kill()
            if t.kill_at is not None:
                status, msg = RunStatus.CANCELLED, "stopped by the user"
            else:
                status, msg = RunStatus.FAILED, ("the training process ended without a "
                                                 f"result (exit code {t.process.exitcode})")
            self.store.finish(run_id, status, message=msg, if_active=True)
            del self.running[run_id]

    def close(self, reason: str) -> None:
        for t in self.idle:
            t.kill()
        for run_id, t in self.running.items():
            t.kill()
            self.store.finish(run_id, RunStatus.INTERRUPTED, if_active=True,
                              message=f"interrupted: {reason}")
        self.running.clear()


# --------------------------------------------------------------------- trainer


def _default_execute(*args, **kwargs):
    from engine.runs.runner import execute

    return execute(*args, **kwargs)


def train_loop(settings: WorkerSettings, conn, stop) -> None:
    """Entry point of a trainer process: import the engine once, then run each run id
    the worker sends, answering "ready" when its end is in the store. It ends with the
    worker (engine/core/processes.start_child)."""
    os.nice(TRAINER_NICE)  # pages first: a busy CPU goes to the server, then to training
    import torch

    torch.set_num_threads(settings.torch_threads)
    if settings.execute is None:
        import engine.runs.runner  # noqa: F401  (warm import: torch, data, methods)
    from threadpoolctl import threadpool_limits  # scikit-learn's own dependency

    threadpool_limits(settings.torch_threads)  # pools loaded before the variables applied
    store = RunStore(settings.root, recover=False)
    while True:
        try:
            run_id = conn.recv()
        except EOFError:  # the worker closed
            return
        run(store, run_id, settings.execute or _default_execute, stop=stop,
            full_eval=settings.full_eval)
        conn.send("ready")
