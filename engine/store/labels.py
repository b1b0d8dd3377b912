"""Names and tags of runs (Runs & Compare), in their own table (engine/store/db.py
LABELS_SCHEMA, made on first use). Mixed into `engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.core.jsonsafe import dumps
from engine.store import db as store_db
from engine.core.errors import InputError


class LabelsMixin:
    """A run's name and tags."""

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
