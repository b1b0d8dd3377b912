"""Cost previews you can trust: timed rates that go stale, corrected by finished runs.

A preview's seconds come from a short timing on this machine (engine/dpmerf_cost.py,
engine/datalens_cost.py). Two things made that figure wrong on a busy day, and this
module fixes both:
- a timing taken once was kept for the life of the process: `TimedCache` re-times a
  shape when its timing is older than MAX_AGE_S or the machine's load average moved by
  more than LOAD_CHANGE per core since;
- a short timing misses what a real run meets (other runs beside it, the allocator,
  evaluation-free overheads): `correct` scales the timed figure by the median measured /
  timed ratio of the newest finished runs of the same method on the same dataset in this
  store (metrics.json "seconds": the trainer writes both), and says which it used:
  "from 3 finished runs" or "timed now, no finished run yet".
Only durations are read (no record, no statistic of the data), so none of it costs privacy.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any, Callable

MAX_AGE_S = 300.0  # a timing older than this is taken again
LOAD_CHANGE = 0.5  # per core: a load-average move this large re-times
NEWEST = 5  # finished runs a correction is taken over
TIMED_KEY = "estimated seconds (timed now)"
BASIS_KEY = "estimate basis"


def _clock() -> float:  # tests monkeypatch these two, never sleep
    return time.time()


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _cores() -> int:
    from engine.slots import cores

    return cores()


_STORES: dict[Any, Any] = {}


class TimedCache:
    """Results of timings by key, re-taken when old or when the load changed a lot."""

    def __init__(self) -> None:
        self._d: dict[Any, tuple[Any, float, float]] = {}

    def fresh(self, key: Any) -> bool:
        hit = self._d.get(key)
        return (hit is not None and _clock() - hit[1] < MAX_AGE_S
                and abs(_load() - hit[2]) < LOAD_CHANGE * _cores())

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        if not self.fresh(key):
            value = compute()
            self._d[key] = (value, _clock(), _load())
        return self._d[key][0]

    def clear(self) -> None:
        self._d.clear()


def finished_ratios(method: str, dataset: str, store=None) -> list[float]:
    """measured / timed training seconds of the newest finished runs of `method` on
    `dataset` that recorded both (metrics.json "seconds": "train" and "timed")."""
    try:
        if store is None:
            from engine.store import RunStore, default_root

            root = default_root()
            if not (root / "runs.db").exists():  # no store yet: nothing finished
                return []
            store = _STORES.get(root) or _STORES.setdefault(root, RunStore(root, recover=False))
        out: list[float] = []
        for rec in store.list_runs(method=method, dataset=dataset, status="finished"):
            try:
                secs = json.loads((store.artifact_dir(rec.run_id) / "metrics.json")
                                  .read_text()).get("seconds", {})
            except (OSError, ValueError):
                continue
            timed, train = secs.get("timed"), secs.get("train")
            if isinstance(timed, (int, float)) and isinstance(train, (int, float)) and timed > 0:
                out.append(float(train) / float(timed))
            if len(out) >= NEWEST:
                break
        return out
    except Exception:  # a store we cannot read: no correction, and the basis says so
        return []


def correct(cost: dict[str, Any], method: str, dataset: str, store=None) -> dict[str, Any]:
    """`cost` with "estimated seconds" corrected from finished runs, the timed figure kept
    under TIMED_KEY and the basis under BASIS_KEY."""
    if "estimated seconds" not in cost:
        return cost
    timed = float(cost["estimated seconds"])
    ratios = finished_ratios(method, dataset, store)
    out = dict(cost)
    out[TIMED_KEY] = timed
    if ratios:
        out["estimated seconds"] = timed * statistics.median(ratios)
        n = len(ratios)
        out[BASIS_KEY] = f"timed now, corrected from {n} finished run{'s' if n > 1 else ''}"
    else:
        out[BASIS_KEY] = "timed now, no finished run yet"
    return out
