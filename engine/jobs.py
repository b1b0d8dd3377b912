"""Background jobs: run trainers off the UI thread, one at a time per device, cancellable.

`JobManager.submit(config)` registers a QUEUED run in the `RunStore` and puts it on the
queue of its device ("cpu" or "cuda:N"); each device has `slots_per_device` worker
threads (default 1, so runs on one device never compete). A worker drives
`engine.runner.execute(...)`, mirrors every Event into an in-memory `JobSnapshot`
(what the pages poll once a second) and into the store (what survives a restart).

Worker threads never touch Streamlit. Status is set to FINISHED only after the trainer's
"done" event; every other way out (exception, an iterator that just stops, a cancel)
records FAILED or CANCELLED, never success. A heartbeat thread touches every active run
so that a store opened by a later process can tell dead runs from live ones.
"""

from __future__ import annotations

import copy
import os
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from engine.config import RunConfig
from engine.errors import InputError
from engine.store import ACTIVE, RunStatus, RunStore

HEARTBEAT_S = 5.0
# Finished jobs kept in memory for live pages; older ones are read from the store.
KEEP_FINISHED = 64

Execute = Callable[..., Iterator[Any]]


@dataclass
class JobSnapshot:
    """A copy of a job's live state, safe to read from any thread."""

    run_id: str
    config: RunConfig
    device: str
    status: RunStatus = RunStatus.QUEUED
    phase: str = ""
    step: int = 0
    total: int = 0
    epsilon_spent: float | None = None
    eps_curve: list[tuple[int, float]] = field(default_factory=list)
    loss_curve: list[tuple[int, float]] = field(default_factory=list)
    probe_curve: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    samples: tuple[np.ndarray, np.ndarray] | None = None
    samples_version: int = 0  # bumps when new samples arrive, so pages redraw only then
    metrics: dict[str, float] = field(default_factory=dict)
    message: str = ""
    created: float = field(default_factory=time.time)
    started: float | None = None
    ended: float | None = None
    first_samples_at: float | None = None

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total) if self.total else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left, extrapolated from the training steps so far."""
        if self.started is None or self.status.terminal or not self.total or self.step <= 0:
            return None
        elapsed = time.time() - self.started
        return elapsed / self.step * max(0, self.total - self.step)


class _Job:
    def __init__(self, snap: JobSnapshot) -> None:
        self.snap = snap
        self.stop = threading.Event()
        self.lock = threading.Lock()


def _device_key(config: RunConfig) -> str:
    """The queue a run waits in: one per physical device."""
    if config.device == "cpu":
        return "cpu"
    from engine.device import resolve_device  # imports torch; only when a job is queued

    dev = resolve_device(config.device)
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"


def _default_execute(*args, **kwargs):
    from engine.runner import execute

    return execute(*args, **kwargs)


class JobManager:
    """Bounded pool of worker threads per device, fed by FIFO queues."""

    def __init__(self, store: RunStore, *, slots_per_device: int = 1,
                 execute: Execute | None = None, full_eval: bool = True,
                 torch_threads: int | None = None) -> None:
        if slots_per_device < 1:
            raise InputError(f"slots_per_device must be >= 1. Got {slots_per_device!r}.")
        self.store = store
        self.slots_per_device = slots_per_device
        self.full_eval = full_eval
        self._execute = execute or _default_execute
        # Leave the server one core so the page stays responsive while a job trains.
        self.torch_threads = torch_threads or max(1, (os.cpu_count() or 2) - 1)
        self._jobs: dict[str, _Job] = {}
        self._queues: dict[str, queue.Queue] = {}
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._hb = threading.Thread(target=self._heartbeat_loop, name="dpsynth-heartbeat",
                                    daemon=True)
        self._hb.start()

    # ------------------------------------------------------------------ public
    def submit(self, config: RunConfig, *, sweep: str | None = None) -> str:
        """Validate, register as QUEUED, enqueue; returns the run id."""
        if self._closed.is_set():
            raise RuntimeError("JobManager is shut down")
        config.validate()
        device = _device_key(config)
        run_id = self.store.create_run(config, sweep=sweep)
        job = _Job(JobSnapshot(run_id=run_id, config=config, device=device))
        with self._lock:
            self._jobs[run_id] = job
            q = self._queues.get(device)
            if q is None:
                q = self._queues[device] = queue.Queue()
                for i in range(self.slots_per_device):
                    t = threading.Thread(target=self._worker, args=(q,), daemon=True,
                                         name=f"dpsynth-{device}-{i}")
                    t.start()
                    self._workers.append(t)
            self._forget_old()
        q.put(run_id)
        return run_id

    def cancel(self, run_id: str) -> bool:
        """Ask a run to stop. Queued runs never start; running ones stop at the next step."""
        job = self._jobs.get(run_id)
        if job is None or job.snap.status.terminal:
            return False
        job.stop.set()
        return True

    def snapshot(self, run_id: str) -> JobSnapshot | None:
        job = self._jobs.get(run_id)
        if job is None:
            return None
        with job.lock:
            return copy.copy(job.snap)  # lists are append-only; a shallow copy is enough

    def status(self, run_id: str) -> RunStatus | None:
        job = self._jobs.get(run_id)
        if job is not None:
            return job.snap.status
        row = self.store.get_run(run_id)
        return RunStatus(row["status"]) if row else None

    def active(self) -> list[str]:
        return [rid for rid, j in list(self._jobs.items()) if j.snap.status in ACTIVE]

    def wait(self, run_id: str, timeout: float | None = None) -> RunStatus | None:
        """Block until a run is terminal (for the CLI and tests)."""
        deadline = None if timeout is None else time.time() + timeout
        while True:
            st = self.status(run_id)
            if st is None or st.terminal:
                return st
            if deadline is not None and time.time() > deadline:
                return st
            time.sleep(0.05)

    def shutdown(self, *, wait: bool = True, timeout: float = 30.0) -> None:
        """Cancel everything, stop the workers."""
        self._closed.set()
        for rid in self.active():
            self.cancel(rid)
        for q in list(self._queues.values()):
            for _ in range(self.slots_per_device):
                q.put(None)
        if wait:
            end = time.time() + timeout
            for t in self._workers:
                t.join(max(0.0, end - time.time()))

    # ----------------------------------------------------------------- workers
    def _worker(self, q: queue.Queue) -> None:
        while True:
            run_id = q.get()
            if run_id is None:
                return
            job = self._jobs.get(run_id)
            if job is not None:
                self._run(job)

    def _set(self, job: _Job, **kw) -> None:
        with job.lock:
            for k, v in kw.items():
                setattr(job.snap, k, v)

    def _run(self, job: _Job) -> None:
        run_id = job.snap.run_id
        if job.stop.is_set():
            self._set(job, status=RunStatus.CANCELLED, ended=time.time(),
                      message="cancelled before it started")
            self.store.finish(run_id, RunStatus.CANCELLED, message="cancelled before it started")
            return
        final: RunStatus | None = None
        message = ""
        final_metrics: dict[str, float] | None = None
        try:
            import torch

            torch.set_num_threads(self.torch_threads)
            self.store.mark_running(run_id)
            self._set(job, status=RunStatus.RUNNING, started=time.time())
            out_dir = self.store.artifact_dir(run_id)
            for ev in self._execute(job.snap.config, out_dir, stop=job.stop,
                                    full_eval=self.full_eval):
                self._on_event(job, ev)
                if ev.phase == "done":
                    final, final_metrics = RunStatus.FINISHED, dict(ev.metrics or {})
                    message = ev.message or "finished"
                elif ev.phase == "cancelled":
                    final, message = RunStatus.CANCELLED, ev.message or "stopped by the user"
            if final is None:
                final = RunStatus.CANCELLED if job.stop.is_set() else RunStatus.FAILED
                message = ("stopped by the user" if job.stop.is_set()
                           else "the trainer ended without a final 'done' event")
        except InputError as e:
            final, message = RunStatus.FAILED, str(e)
        except Exception as e:  # any crash is a failed run, with its trace kept on disk
            final, message = RunStatus.FAILED, f"{type(e).__name__}: {e}"
            try:
                (self.store.artifact_dir(run_id) / "error.txt").write_text(traceback.format_exc())
            except OSError:
                pass
        finally:
            if final is None:  # BaseException (e.g. interpreter exit): never success
                final, message = RunStatus.FAILED, message or "aborted"
            # Store first, then the in-memory status: whoever sees a terminal snapshot
            # (jm.wait, the pages) can rely on the store already saying the same.
            try:
                self.store.finish(run_id, final, message=message, metrics=final_metrics)
            except Exception:  # a broken store must not kill the worker thread
                traceback.print_exc()
            self._set(job, status=final, ended=time.time(), message=message)

    def _on_event(self, job: _Job, ev) -> None:
        values: dict[str, float] = {}
        eps = ev.epsilon_spent
        if eps is not None:
            values["epsilon_spent"] = float(eps)
        if ev.loss is not None:
            values["loss"] = float(ev.loss)
        for k, v in (ev.metrics or {}).items():
            if isinstance(v, (int, float)):
                values[k] = float(v)
        with job.lock:
            s = job.snap
            s.phase, s.step, s.total = ev.phase, int(ev.step), int(ev.total)
            if eps is not None:
                s.epsilon_spent = float(eps)
                s.eps_curve.append((s.step, float(eps)))
            if ev.loss is not None and ev.phase == "train":
                s.loss_curve.append((s.step, float(ev.loss)))
            if ev.metrics:
                numeric = {k: float(v) for k, v in ev.metrics.items()
                           if isinstance(v, (int, float))}
                s.metrics = {**s.metrics, **numeric}
                if ev.phase == "probe":
                    s.probe_curve.append((s.step, numeric))
            if ev.samples is not None:
                x, y = ev.samples
                s.samples = (np.asarray(x), np.asarray(y))
                s.samples_version += 1
                if s.first_samples_at is None:
                    s.first_samples_at = time.time()
            if ev.message:
                s.message = ev.message
            metrics = dict(s.metrics)
        self.store.record_progress(job.snap.run_id, step=ev.step, total=ev.total,
                                   epsilon_spent=eps, values=values,
                                   metrics=metrics if ev.metrics else None)

    def _heartbeat_loop(self) -> None:
        while not self._closed.wait(HEARTBEAT_S):
            try:
                self.store.heartbeat(self.active())
            except Exception:
                traceback.print_exc()

    def _forget_old(self) -> None:
        done = [rid for rid, j in self._jobs.items() if j.snap.status.terminal]
        for rid in done[:-KEEP_FINISHED] if len(done) > KEEP_FINISHED else []:
            self._jobs.pop(rid, None)
