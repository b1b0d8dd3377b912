"""Run store: every run as one SQLite row plus an artifact folder, kept across restarts.

Layout under the runs root (default ./runs, env DPSYNTH_RUNS overrides):

    runs.db              SQLite (WAL): table `runs` (one row a run) and `metrics`
                         ((run, key, step, value, time) rows, MLflow-style)
    <run_id>/            artifacts the runner writes: config.json, metrics.json,
                         synthetic.npz | synthetic.csv, samples.png

Status follows an explicit enum with a terminal set. A run is only ever marked
FINISHED by the code path that saw the trainer's "done" event; crashes become FAILED
and runs whose process died (stale heartbeat at start-up) become INTERRUPTED, keeping
the last metrics they logged.

Thread safety: one sqlite3 connection per thread (threading.local); WAL lets the page
threads read while a worker writes. Values are plain strings, numbers and JSON.
"""

from __future__ import annotations

import enum
import json
import math
import os
import sys
import shutil
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from engine.config import RunConfig
from engine.errors import InputError
from engine.jsonsafe import jsonable


class RunStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED,
                      RunStatus.INTERRUPTED})
ACTIVE = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})

# A run whose heartbeat is older than this when a store opens belongs to a dead process.
STALE_AFTER_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    heartbeat REAL,
    status TEXT NOT NULL,
    method TEXT NOT NULL,
    dataset TEXT NOT NULL,
    epsilon REAL,            -- NULL means inf (a non-private reference run)
    delta REAL,
    seed INTEGER,
    sweep TEXT,
    config TEXT NOT NULL,    -- RunConfig.to_json(), written once
    step INTEGER DEFAULT 0,
    total INTEGER DEFAULT 0,
    epsilon_spent REAL,
    accuracy REAL,           -- synthetic-trained classifier on real test data
    real_accuracy REAL,      -- same classifier trained on real data (not private)
    summary TEXT,            -- final metrics JSON (or last probe metrics)
    message TEXT,
    owner TEXT               -- "pid:start-time" of the process running it
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    step INTEGER NOT NULL,
    value REAL,
    time REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id, key, step);
"""

_COLUMNS = ("id", "created", "started", "ended", "heartbeat", "status", "method",
            "dataset", "epsilon", "delta", "seed", "sweep", "config", "step", "total",
            "epsilon_spent", "accuracy", "real_accuracy", "summary", "message", "owner")


def _process_token(pid: int) -> str | None:
    """"pid:start-time" names one process for good (a pid alone can be reused);
    None when no live process has that pid (a zombie counts as dead)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        if sys.platform.startswith("linux"):
            return None
        try:  # no /proc: fall back to "is some process with this pid alive"
            os.kill(pid, 0)
        except OSError:
            return None
        return f"{pid}:?"
    return None if fields[0] in ("Z", "X") else f"{pid}:{fields[19]}"


OWNER = _process_token(os.getpid())


def default_root() -> Path:
    return Path(os.environ.get("DPSYNTH_RUNS", "runs"))


def _finite_or_none(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def headline_accuracy(metrics: dict[str, float]) -> tuple[float | None, float | None]:
    """(synthetic-trained accuracy, real-trained accuracy) for one classifier.

    Prefers logistic regression (the classifier every run reports), falls back to the
    first `synthetic/<clf>` key, or a probe's accuracy while training is under way.
    """
    if not metrics:
        return None, None
    keys = [k for k in metrics if k.startswith("synthetic/")]
    clf = "logreg" if "synthetic/logreg" in metrics else (keys[0].split("/", 1)[1] if keys else None)
    if clf is not None:
        return (_finite_or_none(metrics.get(f"synthetic/{clf}")),
                _finite_or_none(metrics.get(f"real/{clf}")))
    for k in ("probe/logreg", "probe/accuracy", "accuracy"):
        if k in metrics:
            return _finite_or_none(metrics[k]), None
    probes = [k for k in metrics if k.startswith("probe")]
    return (_finite_or_none(metrics[probes[0]]) if probes else None), None


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
            con = self._con()
            con.executescript(_SCHEMA)
            if "owner" not in {r[1] for r in con.execute("PRAGMA table_info(runs)")}:
                con.execute("ALTER TABLE runs ADD COLUMN owner TEXT")  # stores from before
            con.commit()
        if recover:
            self.recover_stale(stale_after_s=stale_after_s)

    # ---------------------------------------------------------------- plumbing
    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.db_path, timeout=30, check_same_thread=True)
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def _exec(self, sql: str, args: tuple = ()) -> None:
        with self._write:
            con = self._con()
            con.execute(sql, args)
            con.commit()

    def artifact_dir(self, run_id: str) -> Path:
        if not run_id or "/" in run_id or ".." in run_id:
            raise InputError(f"not a run id: {run_id!r}.")
        return self.root / run_id

    # ------------------------------------------------------------------ writes
    def create_run(self, config: RunConfig, *, sweep: str | None = None) -> str:
        """Register a new run as QUEUED, save its config, make its artifact folder."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        now = time.time()
        eps = config.epsilon if math.isfinite(config.epsilon) else None
        self._exec(
            "INSERT INTO runs (id, created, heartbeat, status, method, dataset, epsilon, "
            "delta, seed, sweep, config, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, now, now, RunStatus.QUEUED.value, config.method, config.dataset, eps,
             config.delta, int(config.seed), sweep, config.to_json(), OWNER),
        )
        d = self.artifact_dir(run_id)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(config.to_json())
        return run_id

    def mark_running(self, run_id: str) -> None:
        now = time.time()
        self._exec("UPDATE runs SET status=?, started=?, heartbeat=?, owner=? WHERE id=?",
                   (RunStatus.RUNNING.value, now, now, OWNER, run_id))

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
                        metrics: dict[str, float] | None = None) -> None:
        """Append metric rows for one event and refresh the run's summary columns."""
        now = time.time()
        rows = [(run_id, k, int(step), _finite_or_none(v), now) for k, v in values.items()]
        acc, real = headline_accuracy(metrics or {})
        with self._write:
            con = self._con()
            if rows:
                con.executemany("INSERT INTO metrics VALUES (?,?,?,?,?)", rows)
            sets = ["step=?", "total=?", "heartbeat=?"]
            args: list[Any] = [int(step), int(total), now]
            if epsilon_spent is not None:
                sets.append("epsilon_spent=?")
                args.append(_finite_or_none(epsilon_spent))
            if metrics:
                sets.append("summary=?")
                args.append(json.dumps(jsonable(metrics)))
                if acc is not None:
                    sets.append("accuracy=?")
                    args.append(acc)
                if real is not None:
                    sets.append("real_accuracy=?")
                    args.append(real)
            con.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id=?", (*args, run_id))
            con.commit()

    def finish(self, run_id: str, status: RunStatus, *, message: str = "",
               metrics: dict[str, float] | None = None) -> None:
        """Move a run to a terminal status; keep earlier metrics unless new ones are given."""
        status = RunStatus(status)
        if not status.terminal:
            raise ValueError(f"finish() needs a terminal status, got {status}")
        acc, real = headline_accuracy(metrics or {})
        now = time.time()
        sets = ["status=?", "ended=?", "heartbeat=?", "message=?"]
        args: list[Any] = [status.value, now, now, message]
        if metrics:
            sets += ["summary=?", "accuracy=?", "real_accuracy=?"]
            args += [json.dumps(jsonable(metrics)), acc, real]
        self._exec(f"UPDATE runs SET {', '.join(sets)} WHERE id=?", (*args, run_id))

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
            owner_dead = r["owner"] is not None and _process_token(int(r["owner"].split(":")[0])) != r["owner"]
            if owner_dead or r["beat"] < cutoff:
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
        row = self.get_run(run_id)
        if row is None:
            return
        if RunStatus(row["status"]) in ACTIVE:
            raise InputError(f"run {run_id} is {row['status']}; stop it before deleting it.")
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
        acc, real = headline_accuracy(metrics.get("accuracy") or {})
        train_s = float((metrics.get("seconds") or {}).get("train", 0.0))
        steps = int((metrics.get("info") or {}).get("steps", 0))
        spent = metrics.get("epsilon_spent")  # a number, or "inf" for ε = ∞ runs
        spent = _finite_or_none(spent) if isinstance(spent, (int, float)) else None
        now = time.time()
        eps = config.epsilon if math.isfinite(config.epsilon) else None
        with self._write:
            con = self._con()
            cur = con.execute(
                "INSERT OR IGNORE INTO runs (id, created, started, ended, heartbeat, status, "
                "method, dataset, epsilon, delta, seed, sweep, config, step, total, "
                "epsilon_spent, accuracy, real_accuracy, summary, message) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now - train_s, now - train_s, now, now, RunStatus.FINISHED.value,
                 config.method, config.dataset, eps, config.delta, int(config.seed), sweep,
                 config.to_json(), steps, steps, spent, acc, real, json.dumps(jsonable(metrics.get("accuracy") or {})), message))
            con.commit()
        return cur.rowcount == 1

    # ------------------------------------------------- names and tags (Runs & Compare)
    # Their own table, created on first use: labels are the user's notes on a run and
    # change any time, unlike the run's row, whose config is written once.
    _LABELS_SCHEMA = ("CREATE TABLE IF NOT EXISTS run_labels ("
                      "run_id TEXT PRIMARY KEY, name TEXT NOT NULL, tags TEXT NOT NULL)")

    def set_label(self, run_id: str, *, name: str = "", tags: list[str] | tuple = ()) -> None:
        """Name a run and tag it (tags: short words; empty strings are dropped)."""
        if self.get_run(run_id) is None:
            raise InputError(f"no run {run_id!r} in the store.")
        name = " ".join(str(name).split())[:80]
        clean = list(dict.fromkeys(t for t in (" ".join(str(t).split())[:40] for t in tags) if t))
        with self._write:
            con = self._con()
            con.execute(self._LABELS_SCHEMA)
            con.execute("INSERT OR REPLACE INTO run_labels VALUES (?,?,?)",
                        (run_id, name, json.dumps(clean)))
            con.commit()

    def labels(self) -> dict[str, dict[str, Any]]:
        """{run_id: {"name": str, "tags": [str]}} for every labelled run."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='run_labels'").fetchone():
            return {}
        return {r["run_id"]: {"name": r["name"], "tags": json.loads(r["tags"])}
                for r in con.execute("SELECT * FROM run_labels")}

    # ------------------------------------------------------------------- reads
    def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._con().execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        return _row(row) if row is not None else None

    def list_runs(self, *, method: str | None = None, dataset: str | None = None,
                  status: str | None = None, sweep: str | None = None) -> list[dict[str, Any]]:
        """Runs, newest first, optionally filtered by exact method/dataset/status/sweep."""
        where, args = [], []
        for col, val in (("method", method), ("dataset", dataset), ("status", status),
                         ("sweep", sweep)):
            if val:
                where.append(f"{col}=?")
                args.append(val)
        sql = "SELECT * FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "")
        sql += " ORDER BY created DESC"
        return [_row(r) for r in self._con().execute(sql, args)]

    def metric_history(self, run_id: str) -> dict[str, list[tuple[int, float | None]]]:
        """{key: [(step, value), ...]} in logging order."""
        out: dict[str, list[tuple[int, float | None]]] = {}
        for r in self._con().execute(
                "SELECT key, step, value FROM metrics WHERE run_id=? ORDER BY rowid", (run_id,)):
            out.setdefault(r["key"], []).append((r["step"], r["value"]))
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


def _row(row: sqlite3.Row) -> dict[str, Any]:
    d = {k: row[k] for k in _COLUMNS}
    d["epsilon"] = math.inf if d["epsilon"] is None else d["epsilon"]
    d["summary"] = json.loads(d["summary"]) if d["summary"] else {}
    d["config"] = json.loads(d["config"])
    return d
