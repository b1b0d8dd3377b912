"""Runs trained elsewhere (the precomputed gallery, engine/runs/gallery.py) registered as
FINISHED rows. Mixed into `engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
"""

from __future__ import annotations

import math
import time

from engine.core.jsonsafe import dumps
from engine.store import db as store_db
from engine.core.config import RunConfig
from engine.store.records import RunStatus, metrics_from_file
from engine.core.config import resolved_settings


class GalleryImportMixin:
    """Register a finished run from its files."""

    def import_finished(self, run_id: str, config: RunConfig, *, metrics: dict,
                        sweep: str, message: str) -> bool:
        """Register a run whose files were made elsewhere (engine/runs/gallery.py) as FINISHED,
        with its metrics.json figures. False, and nothing written, if the id exists.
        Its resolved settings are the params its trainer recorded (metrics.json
        "info" → "params", what it really trained with); a run without them is never
        reused."""
        trained = (metrics.get("info") or {}).get("params")
        settings = resolved_settings(config, trained) if isinstance(trained, dict) else None
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
                "epsilon_spent, summary, message, settings) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now - train_s, now - train_s, now, now, RunStatus.FINISHED.value,
                 config.method, config.dataset, eps, config.delta, int(config.seed), sweep,
                 config.to_json(), steps, steps, spent,
                 dumps(metrics_from_file(metrics)), message, settings))
            con.commit()
        return cur.rowcount == 1
