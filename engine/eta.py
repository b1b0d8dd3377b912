"""Estimates for the queue and the live view: when a queued run should start and end, and
how long a running one has left.

Every figure here is an estimate, and the pages say so. Sources, best first: the run's
own step rate while it trains; otherwise the median measured duration of the newest
finished runs with the same config except the seed, else the same config except seed,
ε and δ. Without either there is no estimate (None), never a made-up number.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from engine.records import RunRecord, RunStatus

# Config keys that barely change a run's duration, dropped in turn to find similar runs.
_LOOSER = (("seed",), ("seed", "epsilon", "delta"))
_NEWEST = 5  # finished runs a median is taken over
SMOOTHING = 0.2  # weight of a new finish estimate against the previous (per poll)


@dataclass(frozen=True)
class Typical:
    """Measured seconds of similar finished runs (None: nothing similar measured)."""

    train_s: float | None = None
    eval_s: float | None = None

    @property
    def total_s(self) -> float | None:
        return None if self.train_s is None else self.train_s + (self.eval_s or 0.0)


def typical(timings: list[dict[str, Any]], config: dict[str, Any]) -> Typical:
    """Median train and evaluation seconds of the runs in `timings` (newest first, as
    `RunStore.finished_timings` gives them) most similar to `config`."""
    for drop in _LOOSER:
        same = [t for t in timings if _without(t["config"], drop) == _without(config, drop)]
        if same:
            same = same[:_NEWEST]
            evals = [t["eval_s"] for t in same if t["eval_s"] is not None]
            return Typical(statistics.median(t["train_s"] for t in same),
                           statistics.median(evals) if evals else None)
    return Typical()


def _without(config: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in keys}


def remaining_s(rec: RunRecord, usual: Typical, now: float | None = None) -> float | None:
    """Seconds until the run ends: its whole usual duration while queued, its own step
    rate while training (plus the usual evaluation), the usual evaluation time less what
    has passed while evaluating."""
    now = time.time() if now is None else now
    if rec.status == RunStatus.QUEUED:
        return usual.total_s
    if rec.status != RunStatus.RUNNING:
        return 0.0
    if rec.phase == "evaluate" and rec.eval_started is not None:
        if usual.eval_s is None:
            return None
        return max(0.0, usual.eval_s - (now - rec.eval_started))
    step, total, started = rec.step, rec.total, rec.started
    if started is not None and step > 0 and total:
        train_left = (now - started) / step * max(0, total - step)
    elif started is not None and usual.train_s is not None:
        train_left = max(0.0, usual.train_s - (now - started))
    else:
        return None
    return train_left + (usual.eval_s or 0.0)


def evaluation_progress(rec: RunRecord, usual: Typical,
                        now: float | None = None) -> tuple[float, float | None]:
    """(seconds spent evaluating, fraction done by the usual duration or None)."""
    now = time.time() if now is None else now
    spent = max(0.0, now - (rec.eval_started or now))
    if usual.eval_s is None or usual.eval_s <= 0:
        return spent, None
    return spent, min(0.99, spent / usual.eval_s)  # never "done" before it is


@dataclass(frozen=True)
class Slot:
    """Where a run stands: queue position (1 = next; None when running) and seconds
    from now until it should start and end (None: no estimate)."""

    position: int | None
    start_in_s: float | None
    finish_in_s: float | None


def queue_plan(active: list[RunRecord], *, slots_per_device: int,
               remaining: Callable[[RunRecord], float | None],
               duration: Callable[[RunRecord], float | None]) -> dict[str, Slot]:
    """Simulate each device's FIFO queue: runs start as slots free up.

    `active` are QUEUED and RUNNING runs in queue order; `remaining(rec)` is a running
    run's time left, `duration(rec)` a queued run's whole usual duration."""
    plan: dict[str, Slot] = {}
    by_device: dict[str, list[RunRecord]] = {}
    for rec in active:
        by_device.setdefault(rec.device, []).append(rec)
    for recs in by_device.values():
        free: list[float | None] = []  # when each slot frees up (None: unknown)
        for rec in recs:
            if rec.status == RunStatus.RUNNING:
                left = remaining(rec)
                free.append(left)
                plan[rec.run_id] = Slot(None, 0.0, left)
        free += [0.0] * max(0, slots_per_device - len(free))
        position = 0
        for rec in recs:
            if rec.status != RunStatus.QUEUED:
                continue
            position += 1
            known = [i for i, t in enumerate(free) if t is not None]
            # The earliest slot with a known end; unknown ends make "no estimate".
            i = min(known, key=free.__getitem__) if known else 0
            start = free[i] if known else None
            dur = duration(rec)
            finish = None if start is None or dur is None else start + dur
            plan[rec.run_id] = Slot(position, start, finish)
            free[i] = finish
    return plan


class Smoother:
    """Keeps each run's predicted finish time steady between polls: a new estimate moves
    the shown one only part of the way, so "s left" counts down instead of jumping."""

    def __init__(self, weight: float = SMOOTHING) -> None:
        self.weight = weight
        self._at: dict[tuple[str, str], float] = {}

    def __call__(self, run_id: str, kind: str, left_s: float | None,
                 now: float | None = None) -> float | None:
        """Smoothed seconds left of `kind` ("finish", "start", "eval") for `run_id`."""
        now = time.time() if now is None else now
        key = (run_id, kind)
        if left_s is None:
            self._at.pop(key, None)
            return None
        new_at = now + left_s
        old_at = self._at.get(key)
        at = new_at if old_at is None else old_at + self.weight * (new_at - old_at)
        self._at[key] = at
        return max(0.0, at - now)

    def forget(self, run_id: str) -> None:
        for key in [k for k in self._at if k[0] == run_id]:
            del self._at[key]
