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

    def set_shared(self, run_id: str, shared: bool) -> None:
        """Share (or stop sharing) a run's synthetic-data scores with everyone
        (engine/jobs/visibility.py); ownership is checked by the caller (JobManager)."""
        with self._write:
            con = self._con()
            con.execute(store_db.SHARES_SCHEMA)
            if shared:
                con.execute("INSERT OR REPLACE INTO run_shares VALUES (?)", (run_id,))
            else:
                con.execute("DELETE FROM run_shares WHERE run_id=?", (run_id,))
            con.commit()

    def shared_runs(self) -> set[str]:
        """Runs whose owner shares their synthetic-data scores."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='run_shares'").fetchone():
            return set()
        return {r["run_id"] for r in con.execute("SELECT run_id FROM run_shares")}

    def labels(self) -> dict[str, dict[str, Any]]:
        """{run_id: {"name": str, "tags": [str]}} for every labelled run."""
        con = self._con()
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='run_labels'").fetchone():
            return {}
        return {r["run_id"]: {"name": r["name"], "tags": json.loads(r["tags"])}
                for r in con.execute("SELECT * FROM run_labels")}
