"""What finished runs measured, for the ETA and cost estimates (engine/store/eta.py,
engine/store/cost_cache.py). Mixed into `engine.store.runs.RunStore`, which holds the connection (`_con`, `_exec`, `_write`).
"""

from __future__ import annotations

import json
from typing import Any

from engine.store.records import RunStatus


class TimingsMixin:
    """Durations of finished runs."""

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

    def step_times(self, run_id: str) -> list[tuple[int, float]]:
        """(step, time of its first event) of a run's steps after step 0, in step order
        (engine/store/eta.measured_rate). Every event logs the ε spent, whatever the method, so
        those rows time the steps."""
        return [(r["step"], r["t"]) for r in self._con().execute(
            "SELECT step, MIN(time) AS t FROM metrics WHERE run_id=? AND key='epsilon_spent' "
            "AND step > 0 GROUP BY step ORDER BY step", (run_id,))]
