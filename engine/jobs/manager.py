"""Jobs as the app sees them: submit, stop, delete, and read progress — all through the
run store. Training itself happens in other processes (engine/jobs/worker.py).

`JobManager.submit(config)` reuses a FINISHED run with exactly the same resolved settings
(every knob after the dataset's defaults, seed included: engine/methods/registry.settings_for)
when the store has one; otherwise it writes a QUEUED row on its device's
queue ("cpu" or "cuda:N") and makes sure a worker process serves the store. The worker
trains one run per device slot: by default one slot per core, each with `cores // slots`
threads, a second run starting only when memory allows (engine/runs/slots.py; DPSYNTH_SLOTS
overrides), so the machine is used while the queue is non-empty.

Every run carries the browser session that asked for it; only that session, or an
instructor, may stop or delete it. Snapshots are built from the store: one row read
plus the metric rows logged since the last read, so a page polling each second stays
cheap. Queue positions, start and finish times are estimates (engine/store/eta.py).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from engine.store import eta
from engine.runs import slots
from engine.core.config import RunConfig, resolved_settings
from engine.core.errors import InputError
from engine.core.processes import OWNER
from engine.store.attack_jobs import AttackJob
from engine.store.records import ACTIVE, RunRecord, RunStatus, record_fields
from engine.methods.registry import params_for, settings_for
from engine.store.runs import RunStore
from engine.jobs.scheduling import HEARTBEAT_S, LIVE_SAMPLES, WorkerSettings, published_slots
from engine.core.processes import CTX, start_child, warm
from engine.jobs.worker import serve, worker_alive
from engine.jobs.queue_estimates import QueueEstimates, device_key

SUPERVISE_S = 1.0  # how often the app checks that queued runs have a live worker
KEEP_CURVES = 64  # runs whose curves stay cached; older ones are re-read when asked

Execute = Callable[..., Iterator[Any]]


class NotOwner(InputError):
    """Someone other than a run's session (and not an instructor) tried to change it."""


class Submission(NamedTuple):
    run_id: str
    reused: bool  # True: an identical finished run was returned, nothing was queued


@dataclass(frozen=True)
class JobSnapshot(RunRecord):
    """A run's record plus what only a live view needs: its curves, the latest sample
    batch, and estimates (engine/store/eta.py, smoothed between polls; None = no estimate)."""

    eps_curve: list[tuple[int, float]] = field(default_factory=list)
    loss_curve: list[tuple[int, float]] = field(default_factory=list)
    probe_curve: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    samples: tuple[np.ndarray, np.ndarray] | None = None
    samples_version: int = 0  # changes when new samples arrive, so pages redraw only then
    position: int | None = None  # in its device's queue, 1 = next
    start_in_s: float | None = None
    eta_s: float | None = None  # until the run ends, evaluation included
    start_error_s: float | None = None  # ± of start_in_s (engine/store/eta.py: measured spread)
    eta_error_s: float | None = None  # ± of eta_s
    eval_elapsed_s: float | None = None  # while evaluating: time spent so far
    eval_fraction: float | None = None  # ...and the share done, by the usual duration


class _Curves:
    """The metric rows of one run read so far (only new rows are read each poll)."""

    def __init__(self) -> None:
        self.after = 0
        self.eps: list[tuple[int, float]] = []
        self.loss: list[tuple[int, float]] = []
        self.probe: list[tuple[int, dict[str, float]]] = []
        self.samples: tuple[np.ndarray, np.ndarray] | None = None
        self.samples_version = 0


def may_control(owner: str | None, *, session: str | None, instructor: bool) -> bool:
    """May `session` stop or delete a run owned by `owner`?

    A browser session may control its own runs; an instructor any run. `session=None`
    is a caller outside any browser session (the command line, a script, a test), which
    is trusted like an instructor: the app always passes its session (ui/common.py)."""
    return instructor or session is None or owner == session


def _settings(config: RunConfig, data) -> str | None:
    """`resolved_settings` of `config`, as engine/methods/registry.settings_for gives them.
    With `data` (the dataset the web server already holds for the preview) nothing is
    loaded: a method's defaults read only the data's public sizes and shapes, the same
    for every seed's split. Without it (the command line, scripts), loaded there."""
    if data is None:
        return settings_for(config)
    try:
        return resolved_settings(config, params_for(config, data))
    except InputError:  # as settings_for: never answered with an older run
        return None


class JobManager(QueueEstimates):
    """The app's handle on the run queue of one store; safe to share between sessions."""

    def __init__(self, store: RunStore, *, slots_per_device: int | None = None,
                 execute: Execute | None = None, full_eval: bool = True,
                 torch_threads: int | None = None, idle_exit_s: float = 600.0,
                 heartbeat_s: float = HEARTBEAT_S, ray_address: str | None = None) -> None:
        if slots_per_device is not None and slots_per_device < 1:
            raise InputError(f"slots_per_device must be >= 1. Got {slots_per_device!r}.")
        self.store = store
        use = slots.plan(slots=slots_per_device)
        self.slots_per_device = use.slots
        # Threads of all slots together fit the cores; trainers run niced, so the server's
        # pages still come first (engine/core/processes.py TRAINER_NICE).
        self.settings = WorkerSettings(
            root=str(store.root), parent=OWNER or "", slots_per_device=use.slots,
            full_eval=full_eval, execute=execute, idle_exit_s=idle_exit_s,
            heartbeat_s=heartbeat_s,
            torch_threads=torch_threads or use.threads,
            # $DPSYNTH_RAY_ADDRESS: runs train on a Ray cluster (engine/jobs/ray_backend.py);
            # unset, Ray is never imported.
            ray_address=ray_address or os.environ.get("DPSYNTH_RAY_ADDRESS") or None)
        self._worker: Any = None
        warm()  # the fork server's imports run now, not when the first Train waits on them
        self._closing = CTX.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._curves: dict[str, _Curves] = {}
        self._timings: dict[tuple[str, str], tuple[float | None, list]] = {}
        self._smooth = eta.Smoother()
        self._plan_cache: tuple[float, tuple, dict[str, eta.Slot]] | None = None
        self._hb = threading.Thread(target=self._supervise, name="dpsynth-jobs", daemon=True)
        self._hb.start()
        atexit.register(self._stop_worker)  # runs before multiprocessing joins its children

    # ------------------------------------------------------------------ public
    def request(self, config: RunConfig, *, sweep: str | None = None,
                session: str | None = None, reuse: bool = True, data=None) -> Submission:
        """Validate; return an identical finished run (same config and seed) when there
        is one, else register a QUEUED run for the worker. `data`: the config's dataset
        as the caller already holds it (the Playground's preview), so the settings are
        resolved without loading it again here (`_settings`)."""
        if self._closed.is_set():
            raise RuntimeError("JobManager is shut down")
        config.validate()
        # Past its dataset's budget cap (queued runs included): refused before queueing, and
        # before the data is read (resolving the settings below loads it).
        from engine.privacy.ledger import Ledger

        try:
            Ledger(self.store.root).check(config, pending=self.uncharged())
        except InputError:
            # Past the cap, a finished run asked for with exactly this config is still
            # handed back: it releases nothing new and costs nothing. It is looked up by
            # its config alone (no data read), so "Refused before reading the data" stays
            # true; a run with the same resolved settings but another spelling of them
            # would need the data to be found, and is not looked for past the cap.
            found = self.store.find_same_config(config) if reuse else None
            if found is None:
                raise
            return Submission(found, True)
        settings = _settings(config, data)  # reuse matches the resolved settings, not overrides
        if reuse:
            found = self.store.find_finished(config, settings)
            if found is not None:
                return Submission(found, True)
        run_id = self.store.create_run(config, sweep=sweep, session=session,
                                       device=device_key(config), settings=settings)
        self._ensure_worker()
        return Submission(run_id, False)

    def uncharged(self) -> list[RunConfig]:
        """Queued and running runs not charged yet: what a cap check counts as pending."""
        from engine.privacy.ledger import Ledger

        return Ledger(self.store.root).uncharged(self.store.active_runs())

    def reusable_past_cap(self, config: RunConfig) -> str | None:
        """The finished run `request(config)` hands back even past the dataset's cap
        (same config; found without reading data)."""
        return self.store.find_same_config(config)

    def reusable(self, config: RunConfig, *, data=None) -> str | None:
        """The finished run `request(config)` would hand back, if any (`data` as in
        `request`)."""
        return self.store.find_finished(config, _settings(config, data))

    def submit(self, config: RunConfig, *, sweep: str | None = None,
               session: str | None = None, reuse: bool = True, data=None) -> str:
        """`request` for callers that only need the run id."""
        return self.request(config, sweep=sweep, session=session, reuse=reuse, data=data).run_id

    def cancel(self, run_id: str, *, session: str | None = None,
               instructor: bool = False) -> bool:
        """Stop a run: queued ones never start; running ones end within about a second
        (engine.jobs.scheduling.STOP_GRACE_S). False when the run is already over."""
        row = self._owned(run_id, session=session, instructor=instructor, verb="stop")
        return row is not None and self.store.request_stop(run_id) is not None

    def delete(self, run_id: str, *, session: str | None = None,
               instructor: bool = False) -> None:
        """Remove a finished run and its files (owner or instructor only)."""
        if self._owned(run_id, session=session, instructor=instructor, verb="delete"):
            self.store.delete_run(run_id)
            self._curves.pop(run_id, None)

    def set_label(self, run_id: str, *, name: str = "", tags=(), session: str | None = None,
                  instructor: bool = False) -> None:
        """Name and tag a run (owner or instructor only)."""
        if self._owned(run_id, session=session, instructor=instructor, verb="rename or tag"):
            self.store.set_label(run_id, name=name, tags=tags)

    def set_shared(self, run_id: str, shared: bool, *, session: str | None = None,
                   instructor: bool = False) -> None:
        """Share a run's synthetic-data scores with everyone (owner or instructor only;
        engine/jobs/visibility.py)."""
        if self._owned(run_id, session=session, instructor=instructor, verb="share"):
            self.store.set_shared(run_id, shared)

    def measure_attacks(self, run_id: str, *, session: str | None = None,
                        instructor: bool = False) -> AttackJob:
        """Queue membership attacks on a finished run for the worker (engine/jobs/attack_jobs.py);
        owner or instructor only, since they read the run's private training records. A
        job already queued or running for the run is returned instead."""
        if self._owned(run_id, session=session, instructor=instructor,
                       verb="measure attacks on") is None:
            raise InputError(f"no run {run_id!r} in the store.")
        job = self.store.queue_attack(run_id)
        self._ensure_worker()
        return job

    def may_control(self, run_id: str, *, session: str | None, instructor: bool) -> bool:
        rec = self.store.get_run(run_id)
        return rec is not None and may_control(rec.session, session=session,
                                               instructor=instructor)

    def status(self, run_id: str) -> RunStatus | None:
        rec = self.store.get_run(run_id)
        return rec.status if rec else None

    def active(self) -> list[str]:
        """Queued and running runs of the store, in queue order."""
        return [r.run_id for r in self.store.active_runs()]

    def snapshot(self, run_id: str, *, curves: bool = True) -> JobSnapshot | None:
        """The run's state now; `curves=False` skips curves and samples (queue lists)."""
        rec = self.store.get_run(run_id)
        if rec is None:
            return None
        live: dict[str, Any] = self._curves_of(run_id) if curves else {}
        if rec.status in ACTIVE:
            live.update(self._estimates(rec))
        else:
            self._smooth.forget(run_id)
        return JobSnapshot(**record_fields(rec), **live)

    @property
    def slots(self) -> int:
        """Runs that train at once: the local slots, or on Ray what the worker last
        found the cluster offers (nodes join and leave)."""
        if self.settings.ray_address:
            return published_slots(self.store.root) or self.slots_per_device
        return self.slots_per_device

    def occupancy(self) -> tuple[int, int]:
        """(runs training now, slots) of the CPU queue, for "N of M slots busy"."""
        busy = sum(1 for r in self.store.active_runs()
                   if r.status == RunStatus.RUNNING and r.device == "cpu")
        return busy, self.slots

    def occupancy_line(self) -> str:
        return slots.occupancy_line(*self.occupancy())

    def queue(self) -> list[JobSnapshot]:
        """Snapshots of every queued and running run, in queue order (no curves)."""
        snaps = (self.snapshot(rid, curves=False) for rid in self.active())
        return [s for s in snaps if s is not None]

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
        """Stop the worker (runs in progress end INTERRUPTED) and drop this app's queue."""
        self._closed.set()
        self._stop_worker(timeout=timeout if wait else 0.5)
        for r in self.store.active_runs():
            if r.owner == OWNER:  # queued by this process, never claimed
                self.store.finish(r.run_id, RunStatus.INTERRUPTED, if_active=True,
                                  message="interrupted: the app stopped before it started")

    # --------------------------------------------------------------- internals
    def _owned(self, run_id: str, *, session: str | None, instructor: bool,
               verb: str) -> RunRecord | None:
        rec = self.store.get_run(run_id)
        if rec is not None and not may_control(rec.session, session=session,
                                               instructor=instructor):
            # Never the owner's id itself: it is what grants control (ui/participant.py).
            owner = "another participant" if rec.session else "no session"
            raise NotOwner(f"Run {run_id} belongs to {owner}; only its owner or an "
                           f"instructor can {verb} it.")
        return rec

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._closed.is_set() or (self._worker is not None and self._worker.is_alive()):
                return
            if worker_alive(self.store.root):  # another app process serves this store
                return
            if self._worker is not None:
                self._worker.join(0)
            # not dying with this process: it watches the app itself, and on its own
            # ending marks the runs it had INTERRUPTED
            self._worker = start_child(serve, (self.settings, self._closing),
                                       name="dpsynth-worker", dies_with_me=False)

    def _stop_worker(self, timeout: float = 5.0) -> None:
        self._closing.set()
        w = self._worker
        if w is not None and w.pid is not None:
            w.join(timeout)
            if w.is_alive():
                w.kill()
                w.join(5)

    def _supervise(self) -> None:
        """Heartbeat this app's queued rows; restart the worker if queued runs or attack
        jobs lack one."""
        last_beat = 0.0
        while not self._closed.wait(SUPERVISE_S):
            try:
                active = self.store.active_runs()
                if (any(r.status == RunStatus.QUEUED for r in active)
                        or self.store.attacks_waiting()):
                    self._ensure_worker()
                if time.time() - last_beat >= self.settings.heartbeat_s:
                    self.store.heartbeat(r.run_id for r in active if r.owner == OWNER)
                    last_beat = time.time()
            except Exception:  # a hiccup in the store must not end supervision
                import traceback

                traceback.print_exc()

    def _curves_of(self, run_id: str) -> dict[str, Any]:
        """The run's curves and latest samples, reading only the rows logged since the
        last poll (JobSnapshot's live fields)."""
        with self._lock:
            c = self._curves.pop(run_id, None) or _Curves()
            self._curves[run_id] = c  # most recently read last
            while len(self._curves) > KEEP_CURVES:
                del self._curves[next(iter(self._curves))]
            new, c.after = self.store.metric_rows_after(run_id, c.after)
            c.eps += [(s, v) for s, v in new.get("epsilon_spent", []) if v is not None]
            c.loss += [(s, v) for s, v in new.get("loss", []) if v is not None]
            for key, points in new.items():
                if key.startswith("probe"):
                    c.probe += [(s, {key: v}) for s, v in points if v is not None]
            path = self.store.artifact_dir(run_id) / LIVE_SAMPLES
            try:
                version = path.stat().st_mtime_ns
            except OSError:
                version = c.samples_version
            if version != c.samples_version:
                try:
                    with np.load(path) as z:
                        c.samples = (z["x"], z["y"])
                    c.samples_version = version
                except (OSError, ValueError, KeyError):
                    pass  # replaced while reading: the next poll gets it
            # Copies: a snapshot must not change when a later poll extends the cache.
            return {"eps_curve": list(c.eps), "loss_curve": list(c.loss),
                    "probe_curve": list(c.probe), "samples": c.samples,
                    "samples_version": c.samples_version}
