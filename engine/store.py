"""Run store: every run as one SQLite row plus an artifact folder, kept across restarts.

Layout under the runs root (see `default_root`: $DPSYNTH_RUNS, else $DPSYNTH_HOME/runs,
else ~/.local/share/dp-synth-lab/runs — outside the checkout, so no file watcher sees it):

    runs.db              SQLite (WAL): table `runs` (one row a run) and `metrics`
                         ((run, key, step, value, time) rows, MLflow-style)
    <run_id>/            artifacts the runner writes: config.json, metrics.json,
                         synthetic.npz | synthetic.csv, samples.png; live.npz (the latest
                         sample batch, for live views)
    worker.lock, .pid    the training worker of this store (engine/worker.py)

The store is also the job queue: QUEUED rows are claimed by the worker process
(`claim_next`), a stop is a request written into the row (`request_stop`), and the
pages read progress from it.

Status follows an explicit enum with a terminal set. A run is only ever marked
FINISHED by the code path that saw the trainer's "done" event; crashes become FAILED
and runs whose process died (stale heartbeat at start-up) become INTERRUPTED, keeping
the last metrics they logged.

The tables and the row → RunRecord conversion are in engine/store_db.py. Reads return
RunRecords (engine/records.py). A run's metrics are whatever the evaluator
returned, kept as one JSON dict in the `summary` column, so a new score needs no column;
stores from before that also hold `accuracy`/`real_accuracy` columns, now unused.

Thread safety: one sqlite3 connection per thread (threading.local); WAL lets the page
threads read while a worker writes. Values are plain strings, numbers and JSON.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from engine import store_db
from engine.config import RunConfig
from engine.errors import InputError
from engine.jsonsafe import dumps
from engine.processes import OWNER, process_token
from engine.records import (ACTIVE, TERMINAL, RunRecord, RunStatus, metrics_from_file,
                            numeric_metrics)

__all__ = ["ACTIVE", "TERMINAL", "RunStatus", "RunStore", "default_root"]

# A run whose heartbeat is older than this when a store opens belongs to a dead process.
STALE_AFTER_S = 30.0
_QUEUED, _RUNNING = "queued", "running"


def default_root() -> Path:
    """Where runs live: $DPSYNTH_RUNS, else $DPSYNTH_HOME/runs, else the user's data
    folder. Never inside the checkout by default: Streamlit's watcher and git stay out."""
    if os.environ.get("DPSYNTH_RUNS"):
        return Path(os.environ["DPSYNTH_RUNS"])
    home = os.environ.get("DPSYNTH_HOME") or Path(
        os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "dp-synth-lab"
    return Path(home) / "runs"


class RunStore:
    """SQLite-backed run registry plus one artifact folder per run."""

    def __init__(self, root: str | os.PathLike | None = None, *, recover: bool = True,
                 stale_after_s: float = STALE_AFTER_S) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "runs.db"
        self._local = threading.local()
        # Writes from several threads go through one lock; sqlite would serialise them
        # anyway, the lock just avoids "database is locked" retries.
        self._write = threading.Lock()
        with self._write:
            store_db.migrate(self._con())
        if recover:
            self.recover_stale(stale_after_s=stale_after_s)

    # ---------------------------------------------------------------- plumbing
    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = store_db.connect(self.db_path)
        return con

    def _exec(self, sql: str, args: tuple = ()) -> int:
        """Run one write; returns the number of rows it changed."""
        with self._write:
            con = self._con()
            n = con.execute(sql, args).rowcount
            con.commit()
        return n

    def artifact_dir(self, run_id: str) -> Path:
        if not run_id or "/" in run_id or ".." in run_id:
            raise InputError(f"not a run id: {run_id!r}.")
        return self.root / run_id

    # ------------------------------------------------------------------ writes
    def create_run(self, config: RunConfig, *, sweep: str | None = None,
                   session: str | None = None, device: str = "cpu") -> str:
        """Register a new run as QUEUED on `device`'s queue, save its config, make its
        artifact folder. `session` is the browser session that owns it (None: nobody's)."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        now = time.time()
        eps = config.epsilon if math.isfinite(config.epsilon) else None
        self._exec(
            "INSERT INTO runs (id, created, heartbeat, status, method, dataset, epsilon, "
            "delta, seed, sweep, config, owner, session, device) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, now, now, RunStatus.QUEUED.value, config.method, config.dataset, eps,
             config.delta, int(config.seed), sweep, config.to_json(), OWNER, session, device),
        )
        d = self.artifact_dir(run_id)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(config.to_json())
        return run_id

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
                             "WHERE status=? ORDER BY created, rowid", (_QUEUED,)).fetchall():
            if r["device"] in full:
                continue
            now = time.time()
            if self._exec("UPDATE runs SET status=?, started=?, heartbeat=?, owner=? "
                          "WHERE id=? AND status=?",
                          (_RUNNING, now, now, OWNER, r["id"], _QUEUED)):
                return r["id"], r["device"]
        return None

    def request_stop(self, run_id: str) -> RunStatus | None:
        """Stop a run: a QUEUED one is CANCELLED at once (it never starts); a RUNNING one
        gets a stop request its worker acts on. Returns the status it has now, None if
        it was already terminal or does not exist."""
        if self._exec("UPDATE runs SET status=?, ended=?, message=?, stop_requested=? "
                      "WHERE id=? AND status=?",
                      (RunStatus.CANCELLED.value, time.time(), "cancelled before it started",
                       time.time(), run_id, _QUEUED)):
            return RunStatus.CANCELLED
        if self._exec("UPDATE runs SET stop_requested=COALESCE(stop_requested, ?) "
                      "WHERE id=? AND status=?", (time.time(), run_id, _RUNNING)):
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

    def record_progress(self, run_id: str, *, step: int, total: int,
                        epsilon_spent: float | None, values: dict[str, float],
                        metrics: dict[str, float] | None = None,
                        phase: str | None = None) -> None:
        """Append metric rows for one event and refresh the run's progress and metrics."""
        now = time.time()
        rows = [(run_id, k, int(step), store_db.finite_or_none(v), now) for k, v in values.items()]
        with self._write:
            con = self._con()
            if rows:
                con.executemany("INSERT INTO metrics VALUES (?,?,?,?,?)", rows)
            sets = ["step=?", "total=?", "heartbeat=?"]
            args: list[Any] = [int(step), int(total), now]
            if phase is not None:
                sets.append("phase=?")
                args.append(phase)
                if phase == "evaluate":
                    sets.append("eval_started=COALESCE(eval_started, ?)")
                    args.append(now)
            if epsilon_spent is not None:
                sets.append("epsilon_spent=?")
                args.append(store_db.finite_or_none(epsilon_spent))
            if metrics:
                sets.append("summary=?")
                args.append(dumps(numeric_metrics(metrics)))
            con.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id=?", (*args, run_id))
            con.commit()

    def finish(self, run_id: str, status: RunStatus, *, message: str = "",
               metrics: dict[str, float] | None = None, if_active: bool = False) -> bool:
        """Move a run to a terminal status; keep earlier metrics unless new ones are given.

        With `if_active`, only a QUEUED or RUNNING row changes (whoever records the end
        first wins: the training process, or its worker after killing it). Returns
        whether the row changed."""
        status = RunStatus(status)
        if not status.terminal:
            raise ValueError(f"finish() needs a terminal status, got {status}")
        now = time.time()
        sets = ["status=?", "ended=?", "heartbeat=?", "message=?"]
        args: list[Any] = [status.value, now, now, message]
        if metrics:
            sets.append("summary=?")
            args.append(dumps(numeric_metrics(metrics)))
        where = "id=?" + (" AND status IN (?,?)" if if_active else "")
        extra = (_QUEUED, _RUNNING) if if_active else ()
        return self._exec(f"UPDATE runs SET {', '.join(sets)} WHERE {where}",
                          (*args, run_id, *extra)) > 0

    def recover_stale(self, *, stale_after_s: float = STALE_AFTER_S) -> list[str]:
        """Mark QUEUED/RUNNING runs as INTERRUPTED when the process that owned them is
        gone (checked at once, so a quick restart after a kill sees it) or, for rows
        without a known owner, when their heartbeat stopped.

        Called when a store opens (app start). Their last metrics stay; the message says
        what happened. Rows owned by this process or another live one are left alone.
        """
        cutoff = time.time() - stale_after_s
        con = self._con()
        ids = []
        for r in con.execute("SELECT id, owner, COALESCE(heartbeat, created) AS beat FROM runs "
                             "WHERE status IN (?,?)", (RunStatus.QUEUED.value, RunStatus.RUNNING.value)):
            if r["owner"] == OWNER:
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

    def delete_run(self, run_id: str) -> None:
        """Remove the row, its metrics and its artifact folder. Active runs refuse."""
        rec = self.get_run(run_id)
        if rec is None:
            return
        if rec.status in ACTIVE:
            raise InputError(f"run {run_id} is {rec.status.value}; stop it before deleting it.")
        with self._write:
            con = self._con()
            con.execute("DELETE FROM metrics WHERE run_id=?", (run_id,))
            con.execute("DELETE FROM runs WHERE id=?", (run_id,))
            con.commit()
        shutil.rmtree(self.artifact_dir(run_id), ignore_errors=True)

    # ------------------------------------------- runs trained elsewhere (the gallery)
    def import_finished(self, run_id: str, config: RunConfig, *, metrics: dict,
                        sweep: str, message: str) -> bool:
        """Register a run whose files were made elsewhere (engine/gallery.py) as FINISHED,
        with its metrics.json figures. False, and nothing written, if the id exists."""
        train_s = float((metrics.get("seconds") or {}).get("train", 0.0))
        steps = int((metrics.get("info") or {}).get("steps", 0))
        spent = metrics.get("epsilon_spent")  # a number, or "inf" for ε = ∞ runs
        spent = store_db.finite_or_none(spent) if isinstance(spent, (int, float)) else None
        now = time.time()
        eps = config.epsilon if math.isfinite(config.epsilon) else None
        with self._write:
            con = self._con()
            cur = con.execute(
                "INSERT OR IGNORE INTO runs (id, created, started, ended, heartbeat, status, "
                "method, dataset, epsilon, delta, seed, sweep, config, step, total, "
                "epsilon_spent, summary, message) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now - train_s, now - train_s, now, now, RunStatus.FINISHED.value,
                 config.method, config.dataset, eps, config.delta, int(config.seed), sweep,
                 config.to_json(), steps, steps, spent,
                 dumps(metrics_from_file(metrics)), message))
            con.commit()
        return cur.rowcount == 1

    # ------------------------------------------------- names and tags (Runs & Compare)
    def set_label(self, run_id: str, *, name: str = "", tags: list[str] | tuple = ()) -> None:
        """Name a run and tag it (tags: short words; empty strings are dropped)."""
        if self.get_run(run_id) is None:
            raise InputError(f"no run {run_id!r} in the store.")
        name = " ".join(str(name).split())[:80]
        clean = list(dict.fromkeys(t for t in (" ".join(str(t).split())[:40] for t in tags) if t))
        with self._write:
            con = self._con()
            con.execute(store_db.LABELS_SCHEMA)
            con.execute("INSERT OR REPLACE INTO run_labels VALUES (?,?,?)",
                        (run_id, name, dumps(clean)))
            con.commit()

    def labels(self) -> dict[str, dict[str, Any]]:
        """{run_id: {"name": str, "tags": [str]}} for every labelled run."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='run_labels'").fetchone():
            return {}
        return {r["run_id"]: {"name": r["name"], "tags": json.loads(r["tags"])}
                for r in con.execute("SELECT * FROM run_labels")}

    # ------------------------------------------------ the membership game (Learn page)
    def add_game_round(self, *, session: str, player: str, epsilon: float | None,
                       delta: float, member: bool, guess: bool, optimal: bool) -> None:
        """One played round (epsilon None = ∞), written once the guess is in."""
        with self._write:
            con = self._con()
            con.execute(store_db.GAME_SCHEMA)
            con.execute("INSERT INTO game_rounds VALUES (?,?,?,?,?,?,?,?)",
                        (session, " ".join(str(player).split())[:40], epsilon, delta,
                         int(member), int(guess), int(optimal), time.time()))
            con.commit()

    def game_rounds(self, *, epsilon: float | None, since: float = 0.0) -> list[dict]:
        """Rounds played at `epsilon` (None = ∞) since `since`, oldest first."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='game_rounds'").fetchone():
            return []
        return [dict(r) for r in con.execute(
            "SELECT * FROM game_rounds WHERE epsilon IS ? AND time >= ? ORDER BY time",
            (epsilon, since))]

    # ------------------------------------------------------------------- reads
    def get_run(self, run_id: str) -> RunRecord | None:
        row = self._con().execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        return store_db.to_record(row) if row is not None else None

    def list_runs(self, *, method: str | None = None, dataset: str | None = None,
                  status: str | None = None, sweep: str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally filtered by exact method/dataset/status/sweep."""
        where, args = [], []
        for col, val in (("method", method), ("dataset", dataset), ("status", status),
                         ("sweep", sweep)):
            if val:
                where.append(f"{col}=?")
                args.append(val)
        sql = "SELECT * FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "")
        sql += " ORDER BY created DESC"
        return [store_db.to_record(r) for r in self._con().execute(sql, args)]

    def metric_history(self, run_id: str) -> dict[str, list[tuple[int, float | None]]]:
        """{key: [(step, value), ...]} in logging order."""
        return self.metric_rows_after(run_id, 0)[0]

    def metric_rows_after(self, run_id: str, after: int
                          ) -> tuple[dict[str, list[tuple[int, float | None]]], int]:
        """Metric rows logged after row number `after`, as in `metric_history`, plus the
        last row number: live views read only what is new each second."""
        out: dict[str, list[tuple[int, float | None]]] = {}
        last = after
        for r in self._con().execute(
                "SELECT rowid, key, step, value FROM metrics WHERE run_id=? AND rowid>? "
                "ORDER BY rowid", (run_id, after)):
            out.setdefault(r["key"], []).append((r["step"], r["value"]))
            last = r["rowid"]
        return out, last

    def active_runs(self) -> list[RunRecord]:
        """QUEUED and RUNNING runs in queue order (oldest first)."""
        rows = self._con().execute("SELECT * FROM runs WHERE status IN (?,?) "
                                   "ORDER BY created, rowid", (_QUEUED, _RUNNING))
        return [store_db.to_record(r) for r in rows]

    def find_finished(self, config: RunConfig) -> str | None:
        """The newest FINISHED run with exactly this config, seed included, if any.

        Stored configs are compared after a round trip through RunConfig, so a config
        saved before a field was added (it takes the default) still matches."""
        want = config.to_json()
        for r in self._con().execute(
                "SELECT id, config FROM runs WHERE status=? AND method=? AND dataset=? "
                "AND seed=? ORDER BY ended DESC",
                (RunStatus.FINISHED.value, config.method, config.dataset, int(config.seed))):
            if RunConfig.from_dict(json.loads(r["config"])).to_json() == want:
                return r["id"]
        return None

    def last_finished(self) -> float | None:
        """When the newest FINISHED run ended (cheap: tells caches to refresh)."""
        return self._con().execute("SELECT MAX(ended) FROM runs WHERE status=?",
                                   (RunStatus.FINISHED.value,)).fetchone()[0]

    def finished_timings(self, *, method: str, dataset: str, limit: int = 20
                         ) -> list[dict[str, Any]]:
        """Measured durations of the newest finished runs of `method` on `dataset`:
        [{"config": dict, "train_s": float, "eval_s": float | None}] (for estimates)."""
        rows = self._con().execute(
            "SELECT config, started, ended, eval_started FROM runs WHERE status=? AND "
            "method=? AND dataset=? AND started IS NOT NULL AND ended IS NOT NULL "
            "ORDER BY ended DESC LIMIT ?",
            (RunStatus.FINISHED.value, method, dataset, int(limit)))
        out = []
        for r in rows:
            split = r["eval_started"] if r["eval_started"] is not None else r["ended"]
            out.append({"config": json.loads(r["config"]), "train_s": split - r["started"],
                        "eval_s": None if r["eval_started"] is None
                        else r["ended"] - r["eval_started"]})
        return out

    def artifacts(self, run_id: str) -> dict[str, Path]:
        """Existing artifact files of a run by name."""
        d = self.artifact_dir(run_id)
        return {p.name: p for p in sorted(d.iterdir())} if d.is_dir() else {}

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None


