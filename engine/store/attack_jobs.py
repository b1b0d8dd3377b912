"""Membership-attack jobs: Runs & Compare's "Measure membership attacks" is queued here
by the app, measured by the worker process (engine/jobs/attack_jobs.py), and its progress
and end are read back by the page, so the attacks' nearest neighbours and density
estimates (about 20 s) never run in the web server. One row per measured run, in its
own table (engine/store/db.py ATTACKS_SCHEMA, made on first use); the result itself is
the run's attack.json (engine/audit/membership_run.py). Mixed into
`engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.store import db as store_db

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


@dataclass(frozen=True)
class AttackJob:
    """One measuring as the page reads it: its state, progress and, if failed, why."""

    run_id: str
    state: str
    done: int
    total: int
    message: str
    error: str | None

    @property
    def active(self) -> bool:
        return self.state in (QUEUED, RUNNING)


class AttackJobsMixin:
    """Queued, running and ended attack jobs, one row per run."""

    def _attacks_table(self):
        con = self._con()
        return con if con.execute(
            "SELECT 1 FROM sqlite_master WHERE name='attack_jobs'").fetchone() else None

    def queue_attack(self, run_id: str) -> AttackJob:
        """Queue measuring `run_id`; a job already queued or running for it is returned
        instead (a run is measured once at a time, whoever asked)."""
        with self._write:
            con = self._con()
            con.execute(store_db.ATTACKS_SCHEMA)
            row = con.execute("SELECT state FROM attack_jobs WHERE run_id=?", (run_id,)).fetchone()
            if row is None or row["state"] not in (QUEUED, RUNNING):
                con.execute("INSERT OR REPLACE INTO attack_jobs VALUES (?,?,?,?,?,?,?,?)",
                            (run_id, QUEUED, 0, 1, "queued", None, time.time(), None))
            con.commit()
        return self.attack_job(run_id)

    def attack_job(self, run_id: str) -> AttackJob | None:
        con = self._attacks_table()
        row = con and con.execute("SELECT * FROM attack_jobs WHERE run_id=?", (run_id,)).fetchone()
        if not row:
            return None
        return AttackJob(row["run_id"], row["state"], row["done"], row["total"],
                         row["message"] or "", row["error"])

    def attacks_waiting(self) -> bool:
        """Is any attack job queued or running (the worker must not idle out)?"""
        con = self._attacks_table()
        return bool(con and con.execute("SELECT 1 FROM attack_jobs WHERE state IN (?,?)",
                                        (QUEUED, RUNNING)).fetchone())

    def claim_attack(self) -> str | None:
        """Take the oldest queued attack job for this worker; its run id or None. The
        update is conditional on the row still being queued, so two claimers never both win."""
        con = self._attacks_table()
        if con is None:
            return None
        for row in con.execute("SELECT run_id FROM attack_jobs WHERE state=? ORDER BY requested",
                               (QUEUED,)).fetchall():
            if self._exec("UPDATE attack_jobs SET state=?, message=? WHERE run_id=? AND state=?",
                          (RUNNING, "starting", row["run_id"], QUEUED)):
                return row["run_id"]
        return None

    def attack_progress(self, run_id: str, done: int, total: int, message: str) -> None:
        self._exec("UPDATE attack_jobs SET done=?, total=?, message=? WHERE run_id=? AND state=?",
                   (int(done), int(total), str(message), run_id, RUNNING))

    def end_attack(self, run_id: str, *, error: str | None = None) -> bool:
        """A running job is done (its attack.json written) or failed with `error`;
        False when it was not running (already ended)."""
        return bool(self._exec(
            "UPDATE attack_jobs SET state=?, error=?, ended=? WHERE run_id=? AND state=?",
            (FAILED if error else DONE, error, time.time(), run_id, RUNNING)))

    def fail_running_attacks(self, error: str) -> None:
        """Jobs left running by a worker that died: a new worker never measures them."""
        if self._attacks_table() is not None:
            self._exec("UPDATE attack_jobs SET state=?, error=?, ended=? WHERE state=?",
                       (FAILED, error, time.time(), RUNNING))

    def forget_attack(self, run_id: str) -> None:
        """The run was deleted: its job row goes too."""
        if self._attacks_table() is not None:
            self._exec("DELETE FROM attack_jobs WHERE run_id=?", (run_id,))
