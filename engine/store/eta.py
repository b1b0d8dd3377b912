"""Estimates for the queue and the live view: when a queued run should start and end, and
how long a running one has left.

Every figure here is an estimate, and the pages say so. Sources, best first: the run's
own step rate while it trains, measured between its step events once the first
`WARMUP_EVENTS` are past (a cold start, data loading and the first slow steps, never
stands for the rate: at step 2 of 1,078 that said "about 1 h" for a 4-minute run);
otherwise the median measured duration of the newest finished runs with the same config
except the seed, else the same config except seed, ε and δ. Scoring after training is
the finished runs' measured scoring time, else the run's own preview of it (the trainer
logs it as `PREDICTED_SCORING`). Without any of these there is no estimate (None: the
page says "measuring…"), never a made-up number.

Three rules keep the figures trustworthy on a busy day:
- order: only the running runs' time left is smoothed between polls; queued runs' start
  and finish follow from it by simulating the queue, so position k never starts later
  than position k + 1;
- overdue: a run past its usual duration is expected to need at least `OVERDUE` of the
  time it has taken so far, so its estimate grows instead of sitting at "about 1 s";
- error: every figure carries "± x", half the range of the measured durations it was
  taken from (None from a single measured run), accumulated along the queue.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from engine.store.records import RunRecord, RunStatus

# Config keys that barely change a run's duration, dropped in turn to find similar runs.
_LOOSER = (("seed",), ("seed", "epsilon", "delta"))
_NEWEST = 5  # finished runs a median is taken over
SMOOTHING = 0.2  # weight of a new finish estimate against the previous (per poll)
OVERDUE = 0.25  # an overdue run still needs at least this share of the time it has taken
WARMUP_EVENTS = 3  # step events left out of a run's rate: start-up and the first slow steps
MIN_MEASURED = 4  # step events after the warm-up before a rate is trusted
RATE_CHUNKS = 4  # the measured steps are cut in this many parts; their rates give the range
PREDICTED_SCORING = "cost/scoring_s"  # the run's preview of its scoring seconds (a metric row)


@dataclass(frozen=True)
class Typical:
    """Measured seconds of similar finished runs (None: nothing similar measured)."""

    train_s: float | None = None
    eval_s: float | None = None
    spread_s: float | None = None  # half the range of the total durations used (≥ 2 runs)

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
            totals = [t["train_s"] + (t["eval_s"] or 0.0) for t in same]
            return Typical(statistics.median(t["train_s"] for t in same),
                           statistics.median(evals) if evals else None,
                           (max(totals) - min(totals)) / 2 if len(totals) > 1 else None)
    return Typical()


def _without(config: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in keys}


@dataclass(frozen=True)
class Rate:
    """A run's measured seconds per step after its warm-up: the mean, and the slowest
    and fastest of its parts (the range a time left is given with)."""

    per_step: float
    low: float
    high: float
    last_step: int
    last_time: float


def measured_rate(points: list[tuple[int, float]]) -> Rate | None:
    """The step rate from (step, time) of a run's step events, in order. Timing starts
    at event WARMUP_EVENTS (the intervals before it are the warm-up, left out); None
    until MIN_MEASURED intervals after it have come."""
    pts = [(s, t) for s, t in points if s is not None and t is not None]
    pts = pts[WARMUP_EVENTS - 1:] if len(pts) >= WARMUP_EVENTS else []
    # the rate starts at the last warm-up event: the measured intervals are all later
    if len(pts) < MIN_MEASURED + 1 or pts[-1][0] <= pts[0][0]:
        return None
    (s0, t0), (s1, t1) = pts[0], pts[-1]
    mean = (t1 - t0) / (s1 - s0)
    parts = []
    k = max(1, (len(pts) - 1) // RATE_CHUNKS)
    for i in range(0, len(pts) - 1, k):
        (a, ta), (b, tb) = pts[i], pts[min(i + k, len(pts) - 1)]
        if b > a:
            parts.append((tb - ta) / (b - a))
    return Rate(mean, min(parts + [mean]), max(parts + [mean]), s1, t1)


def scoring_s(rec: RunRecord, usual: Typical) -> float | None:
    """Seconds of scoring after training: what similar finished runs measured, else
    the run's own preview of it (logged by the trainer), else None."""
    if usual.eval_s is not None:
        return usual.eval_s
    predicted = (rec.metrics or {}).get(PREDICTED_SCORING)
    return float(predicted) if predicted is not None else None


def remaining_s(rec: RunRecord, usual: Typical, now: float | None = None,
                rate: Rate | None = None) -> float | None:
    """Seconds until the run ends: its whole usual duration while queued; while
    training, its own measured step rate (`rate`, engine/store/eta.measured_rate) times the
    steps left, or before that the usual training time of similar finished runs, plus
    the scoring (`scoring_s`); while scoring, the scoring time less what has passed."""
    now = time.time() if now is None else now
    if rec.status == RunStatus.QUEUED:
        return usual.total_s
    if rec.status != RunStatus.RUNNING:
        return 0.0
    score = scoring_s(rec, usual)
    if rec.phase == "evaluate" and rec.eval_started is not None:
        if score is None:
            return None
        return left_of(score, now - rec.eval_started)
    total, started = rec.total, rec.started
    if rate is not None and total:
        train_left = max(0.0, rate.per_step * max(0, total - rate.last_step)
                         - max(0.0, now - rate.last_time))
    elif started is not None and usual.train_s is not None:
        train_left = left_of(usual.train_s, now - started)
    else:
        return None  # measuring: never extrapolated from a cold start
    return train_left + (score or 0.0)


def rate_error(rec: RunRecord, rate: Rate | None) -> float | None:
    """± seconds of the training time left from the spread of the run's own rate."""
    if rate is None or not rec.total:
        return None
    return (rate.high - rate.low) / 2 * max(0, rec.total - rate.last_step)


def left_of(usual_s: float, elapsed_s: float) -> float:
    """Seconds left of something that usually takes `usual_s` and has run `elapsed_s`:
    the usual rest, but never under OVERDUE × elapsed (an overdue run's estimate grows
    with its elapsed time instead of sitting near zero)."""
    elapsed_s = max(0.0, elapsed_s)
    return max(usual_s - elapsed_s, OVERDUE * elapsed_s)


def error_of(usual: Typical, left_s: float | None) -> float | None:
    """± seconds of a running run's time left: the usual spread, in proportion to the
    share of the run still to come."""
    if left_s is None or usual.spread_s is None or not usual.total_s:
        return None
    return usual.spread_s * min(1.0, left_s / usual.total_s)


def about(seconds: float | None, error_s: float | None = None) -> str:
    """"about 40 s ± 10 s" ("" without an estimate)."""
    if seconds is None:
        return ""
    text = f"about {duration(seconds)}"
    return text + (f" ± {duration(error_s)}" if error_s is not None and error_s >= 0.5 else "")


def duration(s: float) -> str:
    """12 → '12 s', 125 → '2 min 05 s', 7300 → '2 h 01 min': every duration the app and
    the CLI print (queue estimates here, the cost preview in engine/methods/preview.py)."""
    s = max(0.0, float(s))
    if s < 90:
        return f"{s:.0f} s"
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def evaluation_progress(rec: RunRecord, usual: Typical,
                        now: float | None = None) -> tuple[float, float | None]:
    """(seconds spent evaluating, fraction done by the usual duration or None)."""
    now = time.time() if now is None else now
    spent = max(0.0, now - (rec.eval_started or now))
    score = scoring_s(rec, usual)
    if score is None or score <= 0:
        return spent, None
    return spent, min(0.99, spent / score)  # never "done" before it is


@dataclass(frozen=True)
class Slot:
    """Where a run stands: queue position (1 = next; None when running) and seconds
    from now until it should start and end (None: no estimate)."""

    position: int | None
    start_in_s: float | None
    finish_in_s: float | None
    start_error_s: float | None = None  # ± seconds (None: not known)
    finish_error_s: float | None = None


def _rss(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else math.hypot(a, b)


def queue_plan(active: list[RunRecord], *, slots_per_device: int,
               remaining: Callable[[RunRecord], float | None],
               duration: Callable[[RunRecord], float | None],
               error: Callable[[RunRecord], float | None] = lambda r: None,
               spread: Callable[[RunRecord], float | None] = lambda r: None,
               ) -> dict[str, Slot]:
    """Simulate each device's FIFO queue: runs start as slots free up, so starts never
    decrease along the queue.

    `active` are QUEUED and RUNNING runs in queue order; `remaining(rec)` is a running
    run's time left and `error(rec)` its ±; `duration(rec)` a queued run's whole usual
    duration and `spread(rec)` its ±. Errors add in quadrature along a slot's chain."""
    plan: dict[str, Slot] = {}
    by_device: dict[str, list[RunRecord]] = {}
    for rec in active:
        by_device.setdefault(rec.device, []).append(rec)
    for recs in by_device.values():
        free: list[float | None] = []  # when each slot frees up (None: unknown)
        err: list[float | None] = []  # ... and the ± of that
        for rec in recs:
            if rec.status == RunStatus.RUNNING:
                left = remaining(rec)
                e = error(rec) if left is not None else None
                free.append(left)
                err.append(e)
                plan[rec.run_id] = Slot(None, 0.0, left, None, e)
        free += [0.0] * max(0, slots_per_device - len(free))
        err += [0.0] * max(0, len(free) - len(err))
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
            start_err = err[i] if known else None
            finish_err = _rss(start_err, spread(rec)) if finish is not None else None
            plan[rec.run_id] = Slot(position, start, finish, start_err, finish_err)
            free[i], err[i] = finish, finish_err
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
