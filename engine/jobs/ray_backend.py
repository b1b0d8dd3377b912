"""Ray as the execution backend: the worker hands each run to a Ray cluster instead of a
local trainer process, and writes back into the store what the run streams home.

    head machine (the app)                      any Ray node
    worker process `RayWorker`                  task `_train_on_node` (a streaming generator)
      claims QUEUED runs, books the ledger  ─►    gets the config, and the user's file as
      ray.put(the user's CSV/NPZ bytes)           bytes; runs engine.runs.runner.execute in a
      for each Event that comes back:       ◄─    temporary folder; yields every Event, the
        progress, live samples → the store        last one with the artifacts' bytes
        artifacts → the run's folder, then FINISHED

Chosen with DPSYNTH_RAY_ADDRESS (`auto`, `ray://host:10001`, a GCS address, or `local`
for a one-machine Ray started by the worker); with it unset nothing here is imported and
Ray never starts (engine/jobs/manager.py).

No shared filesystem is assumed. Privacy: the user's uploaded records leave the head
machine — they travel through Ray's object store to whichever node trains the run, and
live there (in memory and a temporary folder) until the run ends. The cluster must be one
the data owner trusts as much as the head machine; Ray's traffic is not encrypted unless
the cluster is set up with TLS. The ledger (engine/privacy/ledger.py) is charged on the head,
before the data is sent, exactly as a local run is; the node's own bookkeeping is thrown
away with its temporary folder.

Guarantees kept from the local worker (engine/jobs/scheduling.py `run` drives each run, so the
status rules are the same code): FINISHED only after the "done" event and its artifacts
are written on the head; a stop cancels the task (CANCELLED within STOP_GRACE_S); a node
that dies mid-run leaves the run FAILED with the reason — tasks are never retried, so a
run is never trained (and charged) twice behind the ledger's back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import ray
import ray.exceptions as rex

import engine
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.methods.events import Event
from engine.core.jsonsafe import dumps
from engine.store.records import RunStatus
from engine.store.runs import RunStore
from engine.core.processes import TRAINER_NICE
from engine.jobs.scheduling import (STOP_GRACE_S, PollLoop, WorkerSettings,
                                    publish_slots, run)

ENV = "DPSYNTH_RAY_ADDRESS"
CPUS_ENV = "DPSYNTH_RAY_CPUS"  # CPUs (and torch threads) per run on the cluster; default 1
FILE_OPTION = "path"  # the data option naming a user's file (csv, npz)
ENGINE_DIR = Path(engine.__file__).resolve().parent  # the whole package travels, not this folder
# The errors that mean "the machine under the run went away", not "the run failed".
NODE_LOST = (rex.NodeDiedError, rex.WorkerCrashedError, rex.ObjectLostError,
             rex.OwnerDiedError, rex.RaySystemError)


class NodeLost(RuntimeError):
    """The Ray node (or worker) training a run stopped before the run ended."""


def cpus_per_run(env=os.environ) -> int:
    raw = env.get(CPUS_ENV, "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(f"{CPUS_ENV} must be a whole number >= 1. Got {raw!r}.")
    return n


def connect(address: str) -> None:
    """Join the cluster at `address` ("local": start a one-machine Ray here). The engine
    package travels with the job (py_modules), so a node needs only the pinned packages."""
    if ray.is_initialized():
        return
    ray.init(address=None if address == "local" else address, include_dashboard=False,
             log_to_driver=False, runtime_env={"py_modules": [str(ENGINE_DIR)]})


# ------------------------------------------------------------------ what travels


def pack(config: RunConfig) -> tuple[RunConfig, dict[str, bytes]]:
    """A run's config as a node sees it, and the user's file as bytes. The node gets the
    file's name, never the head's path: it has no filesystem in common with the head."""
    path = (config.data_options or {}).get(FILE_OPTION)
    if not path:
        return config, {}
    try:
        blob = Path(str(path)).read_bytes()
    except OSError as e:
        raise InputError(f"cannot read the run's data file {str(path)!r}: {e.strerror}.") from e
    name = Path(str(path)).name
    options = {**config.data_options, FILE_OPTION: name}
    return dataclasses.replace(config, data_options=options), {name: blob}


def unpack(config: RunConfig, files: dict[str, bytes], folder: Path) -> RunConfig:
    """Write the files a run brought into `folder` and point its config at them."""
    if not files:
        return config
    folder.mkdir(parents=True, exist_ok=True)
    for name, blob in files.items():
        (folder / Path(name).name).write_bytes(blob)
    local = folder / Path(str(config.data_options[FILE_OPTION])).name
    return dataclasses.replace(config, data_options={**config.data_options,
                                                     FILE_OPTION: str(local)})


def _light(ev: Event) -> Event:
    """The final event without the synthetic arrays: they come home as files."""
    if ev.result is None:
        return ev
    empty = dataclasses.replace(ev.result, x=np.empty(0, np.float32), y=np.empty(0, np.int64))
    return dataclasses.replace(ev, result=empty)


def _artifacts(out: Path) -> dict[str, bytes]:
    # config.json is the node's view (its temporary path): the head keeps its own.
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())
            if p.is_file() and p.name != "config.json"}


# ----------------------------------------------------------------- on the node


@ray.remote(num_returns="streaming", max_retries=0)
def _train_on_node(config: dict, run_id: str, files: dict[str, bytes], full_eval: bool,
                   threads: int, execute=None):
    """One run on a Ray node: yields (Event, {}) per event, and (last Event, artifacts)."""
    import torch
    from threadpoolctl import threadpool_limits

    # The node may be the head that serves the app (`ray start --head` trains too): pages
    # first, as with local trainers. Absolute, since Ray reuses this process for more runs.
    now = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, max(now, TRAINER_NICE))
    torch.set_num_threads(threads)
    threadpool_limits(threads)
    if execute is None:
        from engine.runs.runner import execute
    with tempfile.TemporaryDirectory(prefix="dpsynth-ray-") as tmp:
        local = unpack(RunConfig.from_dict(config), files, Path(tmp) / "input")
        # A throwaway store around the run's folder: the runner's ledger charge lands
        # here and is deleted with it (the head's ledger was charged before sending).
        RunStore(tmp, recover=False).close()
        out = Path(tmp) / run_id
        for ev in execute(local, out, stop=threading.Event(), full_eval=full_eval):
            if ev.phase in ("done", "cancelled"):
                yield _light(ev), _artifacts(out)
            else:
                yield ev, {}


# ----------------------------------------------------------------- on the head


def task_options(config: RunConfig, device: str, cpus: int) -> dict[str, Any]:
    """Ray resources of one run from its cost preview: CPUs, a GPU when its queue is a
    GPU's, memory by the method's formula; InputError when no node could ever hold it
    (Ray would otherwise keep an infeasible task pending for good)."""
    from engine.runs import slots

    opts: dict[str, Any] = {"num_cpus": cpus}
    if device.startswith("cuda"):
        opts["num_gpus"] = 1
    gb = slots.run_memory_gb(config)
    if gb:
        largest = max((n["Resources"].get("memory", 0) for n in ray.nodes() if n["Alive"]),
                      default=0)
        if gb * 2**30 > largest:
            raise InputError(f"the run needs about {gb:.1f} GB and the largest Ray node "
                             f"offers {largest / 2**30:.1f} GB; choose a smaller run.")
        opts["memory"] = int(gb * 2**30)
    return opts


class _RemoteRun:
    """One run handed to Ray, driven by engine.jobs.scheduling.run in a thread of the worker."""

    def __init__(self, store: RunStore, run_id: str, device: str, settings: WorkerSettings,
                 cpus: int) -> None:
        self.store, self.run_id, self.device = store, run_id, device
        self.s, self.cpus = settings, cpus
        self.stop = threading.Event()
        self.gen: Any = None
        self.kill_at: float | None = None
        self.thread = threading.Thread(target=self._drive, name=f"dpsynth-ray-{run_id}",
                                       daemon=True)
        self.thread.start()

    def _drive(self) -> None:
        run(self.store, self.run_id, self._execute, stop=self.stop, full_eval=self.s.full_eval)

    def _execute(self, config: RunConfig, out_dir: Path, *, stop, full_eval: bool):
        """engine.runs.runner.execute's counterpart: the same Events, trained on a node."""
        from engine.privacy import ledger as ledger
        from engine.privacy.search_plan import SPEC

        if SPEC in config.params:
            raise InputError("a private search runs on the local worker only; start the "
                             f"app without {ENV} to run it.")
        options = task_options(config, self.device, self.cpus)
        node_config, files = pack(config)
        if stop.is_set():  # stopped while its resources were being worked out
            return
        book, charge = ledger.book_run(config, out_dir)  # charged from here on, as locally
        self.gen = _train_on_node.options(**options).remote(
            # Through the object store: a top-level ref arrives in the task as the dict.
            node_config.to_dict(), self.run_id, ray.put(files), full_eval, self.cpus,
            self.s.execute)
        if stop.is_set():  # stopped while it was being submitted
            ray.cancel(self.gen)
        try:
            for ref in self.gen:
                ev, artifacts = ray.get(ref)
                if artifacts:
                    _settle(book, charge, ev, artifacts)
                    _write(out_dir, artifacts)
                yield ev
        except rex.TaskCancelledError:
            if not stop.is_set():
                raise NodeLost("the Ray task was cancelled outside the app") from None
        except rex.RayTaskError as e:
            stopped = isinstance(e.cause, (KeyboardInterrupt, rex.TaskCancelledError))
            if stop.is_set() and stopped:
                return  # engine.jobs.scheduling.run records CANCELLED: the user stopped it
            raise (e.cause if isinstance(e.cause, Exception) else NodeLost(str(e))) from e
        except NODE_LOST as e:
            raise NodeLost(f"the Ray node training this run stopped mid-run "
                           f"({type(e).__name__}); nothing of it was kept") from e

    def request_stop(self, asked: float) -> None:
        self.stop.set()
        self.kill_at = asked + STOP_GRACE_S
        if self.gen is not None:
            ray.cancel(self.gen)  # KeyboardInterrupt in the task: it ends at once

    def force_stop(self) -> None:
        if self.gen is not None:
            ray.cancel(self.gen, force=True)  # the task's worker process is killed
        self.store.finish(self.run_id, RunStatus.CANCELLED, if_active=True,
                          message="stopped by the user (Ray task ended)")


def _settle(book, charge: str | None, ev: Event, artifacts: dict[str, bytes]) -> None:
    """Settle the head's ledger charge with the run's actual releases, and put the head's
    ledger total in metrics.json (the node's came from its throwaway ledger)."""
    if "metrics.json" not in artifacts:
        return
    metrics = json.loads(artifacts["metrics.json"])
    metrics.pop("ledger", None)
    if charge is not None and ev.result is not None:
        book.settle(charge, ev.result.privacy.to_dict())
        metrics["ledger"] = book.summary_for(charge)
    artifacts["metrics.json"] = dumps(metrics, indent=2, sort_keys=True).encode()


def _write(out: Path, artifacts: dict[str, bytes]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, blob in artifacts.items():
        tmp = out / f".{name}.part"
        tmp.write_bytes(blob)
        os.replace(tmp, out / name)  # readers never see half a file


class RayWorker(PollLoop):
    """engine.jobs.worker._Worker's counterpart: the same loop over the store, with Ray tasks
    in place of trainer processes. As many runs are handed over as the cluster has CPUs
    for (re-read every heartbeat, so nodes may join or leave); the rest stay QUEUED."""

    def __init__(self, settings: WorkerSettings, store: RunStore, closing) -> None:
        self.s, self.store, self.closing = settings, store, closing
        self.parent_pid = int(settings.parent.split(":")[0])
        self.running: dict[str, _RemoteRun] = {}
        self.error = ""
        try:
            self.cpus = cpus_per_run()
            connect(settings.ray_address or "local")
            self.capacity = self._capacity()
        except Exception as e:  # no cluster there: the queued runs say so, one line each
            self.error = f"cannot use the Ray cluster at {settings.ray_address!r}: {e}"

    def _capacity(self) -> int:
        capacity = max(1, int(ray.cluster_resources().get("CPU", 0)) // self.cpus)
        if capacity != getattr(self, "capacity", None):
            publish_slots(self.s.root, capacity)  # the pages' "N of M slots busy"
        return capacity

    def loop(self) -> str:
        if self.error:
            for r in self.store.active_runs():
                if r.status == RunStatus.QUEUED:
                    self.store.finish(r.run_id, RunStatus.FAILED, message=self.error,
                                      if_active=True)
            return self.error
        return super().loop()

    def _beat(self) -> None:
        super()._beat()
        self.capacity = self._capacity()  # nodes join and leave

    def _claim(self) -> None:
        while len(self.running) < self.capacity:
            claimed = self.store.claim_next()
            if claimed is None:
                return
            run_id, device = claimed
            self.running[run_id] = _RemoteRun(self.store, run_id, device, self.s, self.cpus)

    def _stops(self) -> None:
        now = time.time()
        for run_id, asked in self.store.stop_requests(self.running).items():
            r = self.running[run_id]
            if r.kill_at is None:
                r.request_stop(asked)
            elif now >= r.kill_at and r.thread.is_alive():
                r.force_stop()
                del self.running[run_id]

    def _reap(self) -> None:
        for run_id, r in list(self.running.items()):
            if not r.thread.is_alive():
                del self.running[run_id]

    def close(self, reason: str) -> None:
        for run_id, r in self.running.items():
            if r.gen is not None:
                ray.cancel(r.gen, force=True)
            self.store.finish(run_id, RunStatus.INTERRUPTED, if_active=True,
                              message=f"interrupted: {reason}")
        self.running.clear()
        if ray.is_initialized():
            ray.shutdown()
