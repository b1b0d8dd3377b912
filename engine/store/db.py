"""What runs.db holds (engine/store/runs.py's tables), how a connection is opened, how an older
store is brought up to date, and how one `runs` row becomes a RunRecord.

The store's behaviour lives in engine/store/runs.py; this module is its on-disk format.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from engine.core.config import RunConfig
from engine.store.records import RunRecord, RunStatus, numeric_metrics

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
    summary TEXT,            -- the metrics: JSON {key: float}, final or the last probe's
    message TEXT,
    owner TEXT,              -- "pid:start-time" of the process running it
    session TEXT,            -- the browser session that asked for it (NULL: CLI, gallery)
    device TEXT,             -- the queue it waits in: "cpu" or "cuda:N"
    phase TEXT,              -- last event phase: release, train, probe, evaluate, ...
    eval_started REAL,       -- when the final evaluation began (for estimates)
    stop_requested REAL,     -- when someone pressed Stop
    settings TEXT            -- engine/core/config.resolved_settings: what reuse matches on
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

# Columns added after the first release, with their types (older stores get them).
_ADDED = {"owner": "TEXT", "session": "TEXT", "device": "TEXT", "phase": "TEXT",
          "eval_started": "REAL", "stop_requested": "REAL", "settings": "TEXT"}

# Names and tags have their own table, created on first use: labels are the user's notes
# on a run and change any time, unlike the run's row, whose config is written once.
LABELS_SCHEMA = ("CREATE TABLE IF NOT EXISTS run_labels ("
                 "run_id TEXT PRIMARY KEY, name TEXT NOT NULL, tags TEXT NOT NULL)")

# Runs whose owner shares their synthetic-data scores with the room (engine/jobs/visibility.py):
# a run on an uploaded file shows them to its owner and an instructor only, unless listed.
SHARES_SCHEMA = "CREATE TABLE IF NOT EXISTS run_shares (run_id TEXT PRIMARY KEY)"

# The membership game's rounds (engine/teaching/game.py), created on first use: one row per round
# played, written after the guess, so the secret membership is stored only once revealed.
GAME_SCHEMA = ("CREATE TABLE IF NOT EXISTS game_rounds ("
               "session TEXT NOT NULL, player TEXT NOT NULL, "
               "epsilon REAL, "            # NULL means inf, as in runs
               "delta REAL NOT NULL, member INTEGER NOT NULL, guess INTEGER NOT NULL, "
               "optimal INTEGER NOT NULL, time REAL NOT NULL)")

# Membership-attack jobs (engine/store/attack_jobs.py), created on first use: queued by the
# app, measured by the worker; the result is the run's attack.json, never a column here.
ATTACKS_SCHEMA = ("CREATE TABLE IF NOT EXISTS attack_jobs ("
                  "run_id TEXT PRIMARY KEY, "
                  "state TEXT NOT NULL, "      # queued, running, done, failed
                  "done INTEGER NOT NULL, total INTEGER NOT NULL, message TEXT, "
                  "error TEXT, "               # why it failed, for the page
                  "requested REAL NOT NULL, ended REAL)")

# The privacy budget ledger (engine/privacy/ledger.py), created on first use. Its rows are never
# joined to `runs` and never deleted with a run: deleting a run's files does not un-spend
# the budget its releases used.
LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_charges (
    id TEXT PRIMARY KEY,     -- the run id (app), or "cli-..." for a command-line run
    dataset TEXT NOT NULL,   -- engine.privacy.ledger.dataset_id(config).key
    label TEXT NOT NULL,     -- the same in words
    public INTEGER NOT NULL, -- 1: a built-in public dataset, treated as private
    run_id TEXT,             -- the store's run id, or the CLI's --out folder
    source TEXT NOT NULL,    -- app, cli, private-tuning
    sweep TEXT,
    method TEXT NOT NULL,
    epsilon REAL,            -- the run's target; NULL means inf (no noise)
    delta REAL NOT NULL,
    state TEXT NOT NULL,     -- planned (charged at start) or final (its releases)
    mechanisms TEXT NOT NULL,-- JSON [[noise multiplier, count], ...]; multiplier 0 = no noise
    search TEXT,             -- private search: JSON {"candidate": [[z, n]], "mean", "shape"}
    created REAL NOT NULL,
    settled REAL
);
CREATE TABLE IF NOT EXISTS ledger_caps (
    dataset TEXT PRIMARY KEY,
    cap REAL,                -- NULL: no cap
    delta REAL NOT NULL,     -- the ledger's delta for this dataset
    set_by TEXT,
    time REAL NOT NULL
);
"""


def connect(db_path: Path) -> sqlite3.Connection:
    """A connection for one thread: rows by column name, WAL so readers never wait on
    the worker's writes."""
    con = sqlite3.connect(db_path, timeout=30, check_same_thread=True)
    con.row_factory = sqlite3.Row
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


def migrate(con: sqlite3.Connection) -> None:
    """Create the tables if missing and add the columns older stores lack."""
    con.executescript(_SCHEMA)
    have = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    for col, kind in _ADDED.items():
        if col not in have:  # stores written by an older version
            con.execute(f"ALTER TABLE runs ADD COLUMN {col} {kind}")
    con.commit()


def finite_or_none(x: Any) -> float | None:
    """A value for a REAL column: NaN and ±inf are stored as NULL (missing), not as text."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def to_record(row: sqlite3.Row) -> RunRecord:
    """One `runs` row as a RunRecord (method, dataset, ε, δ, seed come from its config;
    the columns that copy them are there for SQL filters)."""
    return RunRecord(
        run_id=row["id"], config=RunConfig.from_dict(json.loads(row["config"])),
        status=RunStatus(row["status"]), created=row["created"], started=row["started"],
        ended=row["ended"], heartbeat=row["heartbeat"], sweep=row["sweep"],
        session=row["session"], owner=row["owner"], device=row["device"] or "cpu",
        phase=row["phase"] or "", step=row["step"] or 0, total=row["total"] or 0,
        epsilon_spent=row["epsilon_spent"],
        metrics=numeric_metrics(json.loads(row["summary"])) if row["summary"] else {},
        message=row["message"] or "", eval_started=row["eval_started"],
        stop_requested=row["stop_requested"])
