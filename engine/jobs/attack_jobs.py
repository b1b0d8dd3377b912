"""Membership attacks as jobs of the worker process, like training: the app queues one
(engine/store/attack_jobs.py), the worker's poll loop (engine/jobs/scheduling.PollLoop,
both backends) starts it here in a process of its own (engine/core/processes.start_child),
niced like a trainer, and the measuring writes its progress and its end into the store,
where the page reads them. The result is the run's attack.json (engine/audit/membership_run.py).

One job at a time: the attacks' nearest neighbours and density estimates use every core
their pools are given, and a second one beside them would only slow both.
"""

from __future__ import annotations

import os

from engine.core.errors import InputError
from engine.core.processes import TRAINER_NICE, start_child
from engine.store.runs import RunStore


class AttackJobs:
    """The worker's side: claim a queued job, measure it in its own process, and fail it
    when that process ends without saying so (killed, out of memory)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.run_id: str | None = None
        self.process = None
        # Only one worker serves a store (its lock): a job still "running" lost its worker.
        store.fail_running_attacks("interrupted: the worker measuring it stopped; measure again")

    @property
    def busy(self) -> bool:
        return self.process is not None

    def tick(self) -> None:
        """Reap an ended measuring process, then start the next queued job."""
        if self.process is not None:
            if self.process.is_alive():
                return
            self.process.join()
            self.store.end_attack(self.run_id, error="the measuring process ended without a "
                                  f"result (exit code {self.process.exitcode})")
            self.process = self.run_id = None
        run_id = self.store.claim_attack()
        if run_id is not None:
            self.run_id = run_id
            self.process = start_child(measure, (str(self.store.root), run_id),
                                       name=f"dpsynth-attack-{run_id}")

    def close(self, reason: str) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join(5)
            self.store.end_attack(self.run_id, error=f"interrupted: {reason}")
            self.process = self.run_id = None


def measure(root: str, run_id: str) -> None:
    """Entry point of a measuring process: attack the run's release, progress and end
    into the store (an error as the page shows it). It ends with the worker."""
    os.nice(TRAINER_NICE)  # pages first, as for training
    from engine.audit import membership_run

    store = RunStore(root, recover=False)

    def progress(done: int, total: int, message: str) -> None:
        store.attack_progress(run_id, done, total, message)

    error = None
    try:
        membership_run.attack_run(store.artifact_dir(run_id), progress=progress)
    except InputError as e:
        error = str(e)
    except Exception as e:  # shown on the page: a measuring must not fail silently
        error = f"{type(e).__name__}: {e}"
    store.end_attack(run_id, error=error)
