"""The run store's queue: QUEUED rows claimed by the worker, stop requests, heartbeats,
and the recovery of runs whose process died.

Mixed into `engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
A claim and a stop are conditional UPDATEs on the row's status, so two claimers (or a
Stop pressed at the same moment) can never both win.
"""

from __future__ import annotations

import time

from engine.store import db as store_db
from engine.core.processes import OWNER, process_token
from engine.store.records import RunRecord, RunStatus

# A run whose heartbeat is older than this when a store opens belongs to a dead process.
STALE_AFTER_S = 30.0
QUEUED, RUNNING = RunStatus.QUEUED.value, RunStatus.RUNNING.value


class QueueMixin:
    """Claiming, stopping and keeping alive the runs of one store."""

    def mark_running(self, run_id: str) -> None:
        """This process now runs `run_id` (a dead owner makes the row stale)."""
        now = time.time()
        self._exec("UPDATE runs SET status=?, started=?, heartbeat=?, owner=? WHERE id=?",
                   (RunStatus.RUNNING.value, now, now, OWNER, run_id))

    def claim_next(self, *, full: set[str] | frozenset[str] = frozenset()
                   ) -> tuple[str, str] | None:
        """Take the oldest QUEUED run whose device is not in `full` (devices without a
        free slot) and mark it RUNNING for this process; (run_id, device) or None.

        The update is conditional on the row still being QUEUED, so two claimers (or a
        Stop pressed at the same moment) can never both win."""
        con = self._con()
        for r in con.execute("SELECT id, COALESCE(device, 'cpu') AS device FROM runs "
                             "WHERE status=? ORDER BY created, rowid", (QUEUED,)).fetchall():
            if r["device"] in full:
                continue
            now = time.time()
            if self._exec("UPDATE runs SET status=?, started=?, heartbeat=?, owner=? "
                          "WHERE id=? AND status=?",
                          (RUNNING, now, now, OWNER, r["id"], QUEUED)):
                return r["id"], r["device"]
        return None

    def request_stop(self, run_id: str) -> RunStatus | None:
        """Stop a run: a QUEUED one is CANCELLED at once (it never starts); a RUNNING one
        gets a stop request its worker acts on. Returns the status it has now, None if
        it was already terminal or does not exist."""
        if self._exec("UPDATE runs SET status=?, ended=?, message=?, stop_requested=? "
                      "WHERE id=? AND status=?",
                      (RunStatus.CANCELLED.value, time.time(), "cancelled before it started",
                       time.time(), run_id, QUEUED)):
            return RunStatus.CANCELLED
        if self._exec("UPDATE runs SET stop_requested=COALESCE(stop_requested, ?) "
                      "WHERE id=? AND status=?", (time.time(), run_id, RUNNING)):
            return RunStatus.RUNNING
        return None

    def stop_requests(self, run_ids) -> dict[str, float]:
        """{run_id: time Stop was pressed} for those of `run_ids` that have one."""
        ids = list(run_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._con().execute(f"SELECT id, stop_requested FROM runs WHERE id IN ({marks}) "
                                   "AND stop_requested IS NOT NULL", ids)
        return {r["id"]: r["stop_requested"] for r in rows}

    def heartbeat(self, run_ids) -> None:
        ids = list(run_ids)
        if not ids:
            return
        now = time.time()
        with self._write:
            con = self._con()
            con.executemany("UPDATE runs SET heartbeat=? WHERE id=?", [(now, i) for i in ids])
            con.commit()

    def recover_stale(self, *, stale_after_s: float = STALE_AFTER_S,
                      mine=()) -> list[str]:
        """Mark QUEUED/RUNNING runs as INTERRUPTED when the process that owned them is
        gone (checked at once, so a quick restart after a kill sees it) or, for rows
        without a known owner, when their heartbeat stopped.

        Called when a store opens (app start). Their last metrics stay; the message says
        what happened. Rows owned by this process or another live one are left alone, and
        so are the run ids in `mine`: a worker's own trainers, whose end it reads itself
        (a trainer killed mid-run is FAILED with its exit code, not INTERRUPTED).
        """
        cutoff = time.time() - stale_after_s
        con = self._con()
        ids = []
        for r in con.execute("SELECT id, owner, COALESCE(heartbeat, created) AS beat FROM runs "
                             "WHERE status IN (?,?)", (RunStatus.QUEUED.value, RunStatus.RUNNING.value)):
            if r["owner"] == OWNER or r["id"] in mine:
                continue
            if r["owner"] is not None:  # a known owner decides alone: alive means active
                stale = process_token(int(r["owner"].split(":")[0])) != r["owner"]
            else:
                stale = r["beat"] < cutoff
            if stale:
                ids.append(r["id"])
        for run_id in ids:
            self._exec(
                "UPDATE runs SET status=?, ended=COALESCE(ended, heartbeat), message=? "
                "WHERE id=? AND status IN (?,?)",
                (RunStatus.INTERRUPTED.value,
                 "interrupted: the process running it stopped (last heartbeat kept)",
                 run_id, RunStatus.QUEUED.value, RunStatus.RUNNING.value))
        return ids

    def active_runs(self) -> list[RunRecord]:
        """QUEUED and RUNNING runs in queue order (oldest first)."""
        rows = self._con().execute("SELECT * FROM runs WHERE status IN (?,?) "
                                   "ORDER BY created, rowid", (QUEUED, RUNNING))
        return [store_db.to_record(r) for r in rows]
