"""What the two training backends share: the local one (engine/jobs/worker.py, a trainer
process per slot) and Ray (engine/jobs/ray_backend.py, a task per run). Their settings, the
poll loop that watches the store, and `run`, which drives one run to its terminal status,
so the status rules are one piece of code whichever backend trains.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from engine.core.errors import InputError
from engine.core.processes import process_token
from engine.jobs.attack_jobs import AttackJobs
from engine.store.runs import RunStatus, RunStore

POLL_S = 0.1  # how often the worker looks at the store (stop requests, new runs)
STOP_GRACE_S = 1.0  # a stopped trainer gets this long to end cleanly, then it is killed
HEARTBEAT_S = 5.0
LIVE_SAMPLES = "live.npz"  # the latest sample batch of a running run, in its artifact dir


@dataclass(frozen=True)
class WorkerSettings:
    """What the worker needs; picklable, so it travels to the processes it starts."""

    root: str
    parent: str  # process token ("pid:start") of the app; the worker ends when it does
    slots_per_device: int = 1
    full_eval: bool = True
    torch_threads: int = 1
    # A module-level stand-in for engine.runs.runner.execute (tests); None = the real runner.
    execute: Callable[..., Iterator[Any]] | None = None
    idle_exit_s: float = 600.0  # no queued or running run for this long: the worker ends
    heartbeat_s: float = HEARTBEAT_S
    # A Ray cluster to train on (engine/jobs/ray_backend.py); None = local trainer processes.
    ray_address: str | None = None


SLOTS_FILE = "worker.slots"  # the runs a Ray worker trains at once, for the app's pages


def publish_slots(root, slots: int) -> None:
    """Where the worker, not the app, knows how many runs train at once (Ray: the
    cluster's CPUs), it writes the number here; `published_slots` reads it."""
    tmp = Path(root) / f".{SLOTS_FILE}.tmp"
    tmp.write_text(str(int(slots)))
    os.replace(tmp, Path(root) / SLOTS_FILE)  # readers never see half a file


def published_slots(root) -> int | None:
    try:
        return int((Path(root) / SLOTS_FILE).read_text())
    except (OSError, ValueError):
        return None


class PollLoop:
    """The worker's loop over the store, every POLL_S: end runs whose trainer ended
    (`_reap`), act on stop requests (`_stops`), start queued runs where there is room
    (`_claim`), and run queued membership-attack jobs (engine/jobs/attack_jobs.py, the
    same for both backends: on the worker's machine, one at a time); every heartbeat, mark the running rows alive and recover rows whose
    owner died (`_beat`). Ends when `closing` is set, when the app that started it dies,
    or after `idle_exit_s` with nothing queued or running.

    Subclasses set `s` (WorkerSettings), `store`, `closing`, `parent_pid` and `running`
    (run id → what trains it), and give `_reap`, `_stops` and `_claim`."""

    s: WorkerSettings
    store: RunStore
    closing: Any
    parent_pid: int
    running: dict

    def loop(self) -> str:
        attacks = AttackJobs(self.store)
        reason = "the app stopped"
        try:
            reason = self._poll(attacks)
        finally:
            attacks.close(reason)
        return reason

    def _poll(self, attacks) -> str:
        last_beat = idle_since = time.time()
        while not self.closing.wait(POLL_S):
            if process_token(self.parent_pid) != self.s.parent:
                return "the app that started it stopped"
            self._reap()
            self._stops()
            self._claim()
            attacks.tick()
            now = time.time()
            if now - last_beat >= self.s.heartbeat_s:
                self._beat()
                last_beat = now
            if (self.running or attacks.busy or self.store.active_runs()
                    or self.store.attacks_waiting()):
                idle_since = now
            elif now - idle_since > self.s.idle_exit_s:
                return "idle"
        return "the app stopped"

    def _beat(self) -> None:
        self.store.heartbeat(self.running)
        # rows of trainers that died with a worker; this worker's own are reaped by _reap
        self.store.recover_stale(mine=self.running)

    def _reap(self) -> None:
        raise NotImplementedError

    def _stops(self) -> None:
        raise NotImplementedError

    def _claim(self) -> None:
        raise NotImplementedError


def run(store: RunStore, run_id: str, execute: Callable[..., Iterator[Any]], *, stop,
        full_eval: bool) -> RunStatus:
    """Drive one run to a terminal status in the store (in the calling process).

    FINISHED only after the trainer's "done" event; a crash is FAILED with its trace in
    error.txt; an iterator that just stops is FAILED (or CANCELLED when stop was set)."""
    final: RunStatus | None = None
    message = ""
    final_metrics: dict[str, float] | None = None
    try:
        store.mark_running(run_id)  # the row now names this process as its owner
        config = store.get_run(run_id).config
        live = _Live(store, run_id)
        for ev in execute(config, store.artifact_dir(run_id), stop=stop, full_eval=full_eval):
            live.on_event(ev)
            if ev.phase == "done":
                final, final_metrics = RunStatus.FINISHED, dict(ev.metrics or {})
                message = ev.message or "finished"
            elif ev.phase == "cancelled":
                final, message = RunStatus.CANCELLED, ev.message or "stopped by the user"
        if final is None:
            final = RunStatus.CANCELLED if stop.is_set() else RunStatus.FAILED
            message = ("stopped by the user" if stop.is_set()
                       else "the trainer ended without a final 'done' event")
    except InputError as e:
        final, message = RunStatus.FAILED, str(e)
    except Exception as e:  # any crash is a failed run, with its trace kept on disk
        final, message = RunStatus.FAILED, f"{type(e).__name__}: {e}"
        try:
            (store.artifact_dir(run_id) / "error.txt").write_text(traceback.format_exc())
        except OSError:
            pass
    finally:
        if final is None:  # BaseException (e.g. interpreter exit): never success
            final, message = RunStatus.FAILED, message or "aborted"
        store.finish(run_id, final, message=message, metrics=final_metrics, if_active=True)
    return final


class _Live:
    """Mirrors a trainer's Events into the store, and its sample batches into live.npz."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.metrics: dict[str, float] = {}
        self.path = store.artifact_dir(run_id) / LIVE_SAMPLES

    def on_event(self, ev) -> None:
        values: dict[str, float] = {}
        if ev.epsilon_spent is not None:
            values["epsilon_spent"] = float(ev.epsilon_spent)
        if ev.loss is not None and ev.phase == "train":
            values["loss"] = float(ev.loss)
        numeric = {k: float(v) for k, v in (ev.metrics or {}).items()
                   if isinstance(v, (int, float))}
        values.update(numeric)
        self.metrics.update(numeric)
        if ev.samples is not None:
            x, y = ev.samples
            tmp = self.path.with_suffix(".tmp.npz")
            np.savez(tmp, x=np.asarray(x), y=np.asarray(y), step=int(ev.step))
            os.replace(tmp, self.path)  # readers never see half a file
        self.store.record_progress(self.run_id, step=ev.step, total=ev.total,
                                   epsilon_spent=ev.epsilon_spent, values=values,
                                   metrics=dict(self.metrics) if numeric else None,
                                   phase=ev.phase)
