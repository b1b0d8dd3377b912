"""Run store: every run as one SQLite row plus an artifact folder, kept across restarts.

Layout under the runs root (see `default_root`: $DPSYNTH_RUNS, else $DPSYNTH_HOME/runs,
else ~/.local/share/dp-synth-lab/runs — outside the checkout, so no file watcher sees it):

    runs.db              SQLite (WAL): table `runs` (one row a run) and `metrics`
                         ((run, key, step, value, time) rows, MLflow-style)
    <run_id>/            artifacts the runner writes: config.json, metrics.json,
                         synthetic.npz | synthetic.csv, samples.png; live.npz (the latest
                         sample batch, for live views)
    worker.lock, .pid    the training worker of this store (engine/jobs/worker.py)

The store is also the job queue: QUEUED rows are claimed by the worker process
(`claim_next`), a stop is a request written into the row (`request_stop`), and the
pages read progress from it.

Status follows an explicit enum with a terminal set. A run is only ever marked
FINISHED by the code path that saw the trainer's "done" event; crashes become FAILED
and runs whose process died (stale heartbeat at start-up) become INTERRUPTED, keeping
the last metrics they logged.

The tables and the row → RunRecord conversion are in engine/store/db.py. `RunStore` is
the run registry (rows, metrics, artifact folders); each other job is a mixin in its own
module: the queue (queue.py), labels (labels.py), the gallery import
(gallery.py), the timing queries for estimates (timings.py) and the
membership game's rounds (game.py), the membership-attack jobs (attack_jobs.py). Reads return
RunRecords (engine/store/records.py). A run's metrics are whatever the evaluator
returned, kept as one JSON dict in the `summary` column, so a new score needs no column;
stores from before that also hold `accuracy`/`real_accuracy` columns, now unused.

Thread safety: one sqlite3 connection per thread (threading.local); WAL lets the page
threads read while a worker writes. Values are plain strings, numbers and JSON.
"""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from engine.store import db as store_db
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps
from engine.core.processes import OWNER
from engine.store.records import ACTIVE, TERMINAL, RunRecord, RunStatus, numeric_metrics
from engine.store.attack_jobs import AttackJobsMixin
from engine.store.gallery import GalleryImportMixin
from engine.store.game import GameRoundsMixin
from engine.store.labels import LabelsMixin
from engine.store.queue import QUEUED, RUNNING, STALE_AFTER_S, QueueMixin
from engine.store.timings import TimingsMixin

__all__ = ["ACTIVE", "TERMINAL", "RunStatus", "RunStore", "default_root"]



def default_root() -> Path:
    """Where runs live: $DPSYNTH_RUNS, else $DPSYNTH_HOME/runs, else the user's data
    folder. Never inside the checkout by default: Streamlit's watcher and git stay out."""
    if os.environ.get("DPSYNTH_RUNS"):
        return Path(os.environ["DPSYNTH_RUNS"])
    home = os.environ.get("DPSYNTH_HOME") or Path(
        os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "dp-synth-lab"
    return Path(home) / "runs"


class RunStore(QueueMixin, LabelsMixin, GalleryImportMixin, TimingsMixin, GameRoundsMixin,
               AttackJobsMixin):
    """SQLite-backed run registry plus one artifact folder per run (and, through its
    mixins, the queue, labels, gallery import, timings, game rounds and attack jobs)."""

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
                   session: str | None = None, device: str = "cpu",
                   settings: str | None = None) -> str:
        """Register a new run as QUEUED on `device`'s queue, save its config, make its
        artifact folder. `session` is the browser session that owns it (None: nobody's);
        `settings` its resolved settings (engine/methods/registry.settings_for), which reuse
        matches on (None: never reused)."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
        now = time.time()
        eps = config.epsilon if math.isfinite(config.epsilon) else None
        self._exec(
            "INSERT INTO runs (id, created, heartbeat, status, method, dataset, epsilon, "
            "delta, seed, sweep, config, owner, session, device, settings) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, now, now, RunStatus.QUEUED.value, config.method, config.dataset, eps,
             config.delta, int(config.seed), sweep, config.to_json(), OWNER, session, device,
             settings),
        )
        d = self.artifact_dir(run_id)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(config.to_json())
        return run_id

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
        extra = (QUEUED, RUNNING) if if_active else ()
        return self._exec(f"UPDATE runs SET {', '.join(sets)} WHERE {where}",
                          (*args, run_id, *extra)) > 0

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
        self.forget_attack(run_id)
        shutil.rmtree(self.artifact_dir(run_id), ignore_errors=True)
        # Its uploaded file goes with the last run that uses it (engine/store/uploads.py).
        from engine.store import uploads

        uploads.forget_if_unused(self.root, (rec.config.data_options or {}).get("path"),
                                 (r.config for r in self.list_runs()))

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

    def find_finished(self, config: RunConfig, settings: str | None) -> str | None:
        """The newest FINISHED run of `config`'s method, dataset and seed whose resolved
        settings (engine/methods/registry.settings_for) are exactly `settings`. Runs stored
        without them (stores from before) are never reused: their defaults may differ."""
        if settings is None:
            return None
        row = self._con().execute(
            "SELECT id FROM runs WHERE status=? AND method=? AND dataset=? AND seed=? "
            "AND settings=? ORDER BY ended DESC LIMIT 1",
            (RunStatus.FINISHED.value, config.method, config.dataset, int(config.seed),
             settings)).fetchone()
        return row["id"] if row else None

    def find_same_config(self, config: RunConfig) -> str | None:
        """The newest FINISHED run asked for with exactly this config (same JSON: dataset,
        file path, ε, δ, seed, every knob given), found without reading any data. Only
        where the data behind the config cannot have changed: a built-in dataset, or an
        upload (its file name carries a hash of its bytes, engine/store/uploads.py)."""
        from engine.store import uploads
        from engine.core.config import FILE_DATASETS

        path = (config.data_options or {}).get("path")
        if config.dataset in FILE_DATASETS and not uploads.is_upload(self.root, path):
            return None
        row = self._con().execute(
            "SELECT id FROM runs WHERE status=? AND method=? AND dataset=? AND seed=? "
            "AND config=? AND settings IS NOT NULL ORDER BY ended DESC LIMIT 1",
            (RunStatus.FINISHED.value, config.method, config.dataset, int(config.seed),
             config.to_json())).fetchone()
        return row["id"] if row else None

    def artifacts(self, run_id: str) -> dict[str, Path]:
        """Existing artifact files of a run by name."""
        d = self.artifact_dir(run_id)
        return {p.name: p for p in sorted(d.iterdir())} if d.is_dir() else {}

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
