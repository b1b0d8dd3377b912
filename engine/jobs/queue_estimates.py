"""The queue's estimates as the app shows them: each active run's position, start and
finish with their ±, and the wait a new run would have before Train. A mixin of
JobManager (engine/jobs/manager.py), which holds the state it reads; the arithmetic is
engine/store/eta.py's. One plan serves every snapshot of a poll."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from engine.core.config import RunConfig
from engine.store import eta
from engine.store.records import RunRecord, RunStatus

PLAN_REUSE_S = 0.5  # snapshots within this of each other share one queue plan


def device_key(config: RunConfig) -> str:
    """The queue a run waits in: one per physical device."""
    if config.device == "cpu":
        return "cpu"
    from engine.core.device import resolve_device  # imports torch; only when a run is queued

    dev = resolve_device(config.device)
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"


class QueueEstimates:
    """JobManager's estimates. It reads the manager's `store`, `slots`, `_lock`,
    `_smooth` (eta.Smoother), `_timings` and `_plan_cache`."""

    def _usual(self, config: RunConfig, newest: float | None) -> eta.Typical:
        """Typical durations of runs like `config`; re-read when a run has finished
        since (`newest`: the store's latest finish time)."""
        key = (config.method, config.dataset)
        cached = self._timings.get(key)
        if cached is None or cached[0] != newest:
            cached = (newest, self.store.finished_timings(method=key[0], dataset=key[1]))
            self._timings[key] = cached
        return eta.typical(cached[1], config.to_dict())

    def _plan(self, now: float) -> dict[str, eta.Slot]:
        """One queue plan for every snapshot of a poll (kept PLAN_REUSE_S, or until the
        queue changes), so the positions a page lists are estimated together: only the
        running runs' time left is smoothed, queued runs follow from it in order."""
        active = self.store.active_runs()
        state = tuple((r.run_id, r.status, r.step, r.phase) for r in active)
        with self._lock:
            cached = self._plan_cache
            if cached is not None and cached[1] == state and now - cached[0] < PLAN_REUSE_S:
                return cached[2]
        newest = self.store.last_finished()

        rates = {r.run_id: eta.measured_rate(self.store.step_times(r.run_id))
                 for r in active if r.status == RunStatus.RUNNING and r.phase != "evaluate"}

        def left(r: RunRecord) -> float | None:
            raw = eta.remaining_s(r, self._usual(r.config, newest), now, rates.get(r.run_id))
            return self._smooth(r.run_id, "finish", raw, now)

        def error(r: RunRecord) -> float | None:
            usual, rate = self._usual(r.config, newest), rates.get(r.run_id)
            if rate is None:
                return eta.error_of(usual, left_cache.get(r.run_id))
            own = eta.rate_error(r, rate)  # the run's own spread, and the scoring's
            return eta._rss(own, eta.error_of(usual, eta.scoring_s(r, usual))) or own

        left_cache: dict[str, float | None] = {
            r.run_id: left(r) for r in active if r.status == RunStatus.RUNNING}
        plan = eta.queue_plan(
            active, slots_per_device=self.slots,
            remaining=lambda r: left_cache.get(r.run_id),
            duration=lambda r: self._usual(r.config, newest).total_s,
            error=error,
            spread=lambda r: self._usual(r.config, newest).spread_s)
        with self._lock:
            self._plan_cache = (now, state, plan)
        return plan

    def queue_wait(self, config: RunConfig) -> tuple[float | None, float | None, int]:
        """Before Train: (seconds until a run of `config` submitted now would start, its ±,
        runs ahead of it) on its device's queue; (0, None, 0) with a free slot; seconds
        None when a run ahead has no estimate yet."""
        now = time.time()
        device = device_key(config)
        ahead = [r for r in self.store.active_runs() if r.device == device]
        if not ahead:
            return 0.0, None, 0
        plan = self._plan(now)
        if sum(r.status == RunStatus.RUNNING for r in ahead) < self.slots and all(
                r.status == RunStatus.RUNNING for r in ahead):
            return 0.0, None, len(ahead)
        newest = self.store.last_finished()
        phantom = replace(ahead[-1], run_id="\0new", status=RunStatus.QUEUED, config=config)
        slot = eta.queue_plan(
            ahead + [phantom], slots_per_device=self.slots,
            remaining=lambda r: plan[r.run_id].finish_in_s if r.run_id in plan else None,
            error=lambda r: plan[r.run_id].finish_error_s if r.run_id in plan else None,
            duration=lambda r: self._usual(r.config, newest).total_s,
            spread=lambda r: self._usual(r.config, newest).spread_s)[phantom.run_id]
        return slot.start_in_s, slot.start_error_s, len(ahead)

    def _estimates(self, rec: RunRecord) -> dict[str, Any]:
        """Queue position, start and finish estimates of an active run, with their ±
        (JobSnapshot's estimate fields); empty when the run is not in the plan."""
        now = time.time()
        slot = self._plan(now).get(rec.run_id)
        if slot is None:
            return {}
        out = {"position": slot.position, "start_in_s": slot.start_in_s,
               "eta_s": slot.finish_in_s, "start_error_s": slot.start_error_s,
               "eta_error_s": slot.finish_error_s}
        if rec.evaluating:
            out["eval_elapsed_s"], out["eval_fraction"] = eta.evaluation_progress(
                rec, self._usual(rec.config, self.store.last_finished()), now)
        return out
