"""Cost previews you can trust: timed rates that go stale, corrected by finished runs.

A preview's seconds come from a short timing on this machine (engine/methods/dpmerf/cost.py,
engine/methods/datalens/cost.py). Two things made that figure wrong on a busy day, and this
module fixes both:
- a timing taken once was kept for the life of the process: `TimedCache` re-times a
  shape when its timing is older than MAX_AGE_S or the machine's load average moved by
  more than LOAD_CHANGE per core since;
- a short timing misses what a real run meets (other runs beside it, the allocator,
  evaluation-free overheads): `correct` scales the timed figure by the median measured /
  timed ratio of the newest finished runs of the same method on the same dataset in this
  store (metrics.json "seconds": the trainer writes both), and says which it used:
  "from 3 finished runs" or "timed now, no finished run yet".
- a timing taken during a load spike (other processes took the CPU: this process got
  under SPIKE_CPU_SHARE of the wall time in CPU seconds, or the load average passed
  SPIKE_LOAD per core) is taken once more at once, and a spiked figure is kept as stale
  only: shown while nothing better exists, re-timed by the next preview, never served
  as fresh (a one-off spike once predicted 5 min 22 s for a 21.7 s run and stayed).
  A load that lasts is not a spike: when the five-minute load average is over SPIKE_LOAD
  per core too, a run started now meets that load as well, so the timing is kept (the
  load-change rule above re-times it when the load goes). Without this, every preview on
  a busy machine re-timed every 30 s, taking CPU from the runs that made it busy.
A cache with a name is also kept on disk (`timings_dir`), so a timing taken in one process
serves another: the web server never times training itself (engine/runs/cost_probe.py times
in a process of its own and the page reads the result from here).
Only durations are read (no record, no statistic of the data), so none of it costs privacy.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterator

MAX_AGE_S = 300.0  # a timing older than this is taken again
LOAD_CHANGE = 0.5  # per core: a load-average move this large re-times
NEWEST = 5  # finished runs a correction is taken over
SPIKE_CPU_SHARE = 0.5  # CPU seconds / wall seconds under this: the timing was starved
SPIKE_LOAD = 1.5  # per core: a load average over this during a timing is a spike
SPIKE_MIN_WALL = 0.2  # seconds: shorter timings are too short to judge by CPU share
TIMED_KEY = "estimated seconds (timed now)"
BASIS_KEY = "estimate basis"


def _clock() -> float:  # tests monkeypatch these two, never sleep
    return time.time()


def _loadavg() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def _load() -> float:
    return _loadavg()[0]


def _lasting_load() -> float:
    """The five-minute load average: what the machine has been doing, not a burst."""
    return _loadavg()[1]


def _cpu() -> float:  # this process's CPU seconds, all threads (tests pin it)
    return time.process_time()


def _wall() -> float:
    return time.perf_counter()


def spiked(cpu_s: float, wall_s: float, load: float, lasting: float = 0.0) -> bool:
    """Whether a timing of `wall_s` seconds, during which this process ran `cpu_s` CPU
    seconds and the load average reached `load`, met a load spike (module docstring).
    Never when `lasting`, the lowest five-minute load average seen around the timing, is
    over SPIKE_LOAD per core: that load is the machine's state, and a run meets it too."""
    limit = SPIKE_LOAD * _cores()
    if lasting > limit:
        return False
    starved = wall_s >= SPIKE_MIN_WALL and cpu_s < SPIKE_CPU_SHARE * wall_s
    return starved or load > limit


def _cores() -> int:
    from engine.core.processes import cores

    return cores()


_STORES: dict[Any, Any] = {}


def cache_root() -> Path:
    """Where what this machine measured once is kept (cost timings; the classifiers'
    scores on the real data, engine/evaluation/utility.real_reference): $DPSYNTH_CACHE,
    else beside this user's run store. Neither depends on the store, so stores on one
    machine may share them (the test suite does, instead of measuring them in every
    test's fresh store)."""
    if os.environ.get("DPSYNTH_CACHE"):
        return Path(os.environ["DPSYNTH_CACHE"])
    from engine.store.runs import default_root

    return default_root()


def timings_dir() -> Path:
    """Where named caches keep their timings."""
    return cache_root() / "cost-timings"


class TimedCache:
    """Results of timings by key, re-taken when old or when the load changed a lot.
    With a `name`, every timing is also written to a JSON file under `timings_dir()`
    (values must then be JSON), and a key this process has not timed is read from there."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self._d: dict[Any, tuple[Any, float, float, bool]] = {}

    def _path(self, key: Any) -> Path:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
        return timings_dir() / f"{self.name}-{digest}.json"

    def _memo(self, key: Any) -> Any:
        """The in-memory key: a named cache's timings belong to one store's folder, so a
        process that is pointed at another store (DPSYNTH_RUNS) never serves the first
        store's figures from memory."""
        return key if self.name is None else (str(timings_dir()), key)

    def _hit(self, key: Any) -> tuple[Any, float, float, bool] | None:
        hit = self._d.get(self._memo(key))
        if self.name is None:
            return hit
        try:
            saved = json.loads(self._path(key).read_text())
            disk = (saved["value"], float(saved["time"]), float(saved["load"]),
                    bool(saved.get("spiked", False)))
        except (OSError, ValueError, KeyError, TypeError):
            return hit
        return disk if hit is None or disk[1] > hit[1] else hit

    def peek(self, key: Any) -> tuple[Any, bool]:
        """(the newest timing of `key` or None, whether it is fresh); never times."""
        hit = self._hit(key)
        if hit is None:
            return None, False
        fresh = (not hit[3] and _clock() - hit[1] < MAX_AGE_S
                 and abs(_load() - hit[2]) < LOAD_CHANGE * _cores())
        return hit[0], fresh

    def fresh(self, key: Any) -> bool:
        return self.peek(key)[1]

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        value, fresh = self.peek(key)
        if not fresh:
            value, spike = _timed(compute)
            if spike:  # once more: a short spike may have passed
                value, spike = _timed(compute)
            self.put(key, value, spiked=spike)
        return value

    def put(self, key: Any, value: Any, *, spiked: bool = False) -> None:
        """Keep `value`; a `spiked` one is kept as stale (shown, never served as fresh)."""
        entry = (value, _clock(), _load(), spiked)
        self._d[self._memo(key)] = entry
        if self.name is not None:  # written whole, then renamed: readers never see half
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": repr(key), "value": value, "time": entry[1],
                                       "load": entry[2], "spiked": spiked}))
            tmp.replace(path)

    def clear(self) -> None:
        """Forget every timing of this cache, on disk too: the next `get` times again."""
        self._d.clear()
        if self.name is not None:
            for path in timings_dir().glob(f"{self.name}-*.json"):
                path.unlink(missing_ok=True)


def _timed(compute: Callable[[], Any]) -> tuple[Any, bool]:
    """(compute(), whether a load spike met it)."""
    load, lasting, cpu, wall = _load(), _lasting_load(), _cpu(), _wall()
    value = compute()
    return value, spiked(_cpu() - cpu, _wall() - wall, max(load, _load()),
                         min(lasting, _lasting_load()))


def default_store():
    """This user's run store, opened once per process for reading; None when there is none."""
    from engine.store.runs import RunStore, default_root

    root = default_root()
    if not (root / "runs.db").exists():
        return None
    return _STORES.get(root) or _STORES.setdefault(root, RunStore(root, recover=False))


def same_data(rec, data_options) -> bool:
    """Whether a stored run read the data a run with `data_options` reads: a CSV's or
    NPZ's dataset name is only "csv" or "npz", so its options (the uploaded file's path,
    label, schema) tell whose file, and which table, it was. A participant's preview
    never learns from another's upload, however alike their sizes."""
    return (rec.config.data_options or {}) == (data_options or {})


def finished_on(dataset: str, data_options: dict | None, store=None, *,
                method: str | None = None) -> Iterator[tuple[Any, dict]]:
    """(record, metrics.json) of this store's finished runs of `method` (any when None)
    on this data (`same_data`), newest first; a run whose metrics cannot be read is
    skipped. The store read is lazy: callers stop after the few they need."""
    store = store if store is not None else default_store()
    if store is None:  # no store yet: nothing finished
        return
    for rec in store.list_runs(method=method, dataset=dataset, status="finished"):
        if not same_data(rec, data_options):
            continue
        try:
            metrics = json.loads((store.artifact_dir(rec.run_id) / "metrics.json").read_text())
        except (OSError, ValueError):
            continue
        yield rec, metrics


def finished_runs(n: int) -> str:
    """The basis lines' "3 finished runs"."""
    return f"{n} finished run{'s' if n > 1 else ''}"


def finished_metrics(method: str, dataset: str, store=None, *, n_train: int | None = None,
                     data_options: dict | None = None) -> list[dict]:
    """metrics.json of the newest finished runs of `method` on `dataset` with these
    `data_options` (`finished_on`; NEWEST at most; only those with `n_train` training
    records when given)."""
    try:
        fitting = (m for _, m in finished_on(dataset, data_options, store, method=method)
                   if n_train is None or m.get("n_train") == n_train)
        return list(itertools.islice(fitting, NEWEST))
    except Exception:  # a store we cannot read: no correction, and the basis says so
        return []


def finished_ratios(method: str, dataset: str, store=None, *,
                    data_options: dict | None = None) -> list[float]:
    """measured / timed training seconds of the newest finished runs of `method` on
    `dataset` with these `data_options` that recorded both (metrics.json "seconds":
    "train" and "timed")."""
    out = []
    for metrics in finished_metrics(method, dataset, store, data_options=data_options):
        secs = metrics.get("seconds") or {}
        timed, train = secs.get("timed"), secs.get("train")
        if isinstance(timed, (int, float)) and isinstance(train, (int, float)) and timed > 0:
            out.append(float(train) / float(timed))
    return out


def correct(cost: dict[str, Any], method: str, dataset: str, store=None, *,
            data_options: dict | None = None) -> dict[str, Any]:
    """`cost` with "estimated seconds" corrected from finished runs on the same data
    (`same_data`), the timed figure kept under TIMED_KEY and the basis under BASIS_KEY."""
    if "estimated seconds" not in cost:
        return cost
    timed = float(cost["estimated seconds"])
    ratios = finished_ratios(method, dataset, store, data_options=data_options)
    out = dict(cost)
    out[TIMED_KEY] = timed
    if ratios:
        out["estimated seconds"] = timed * statistics.median(ratios)
        n = len(ratios)
        out[BASIS_KEY] = f"timed now, corrected from {finished_runs(n)}"
    else:
        out[BASIS_KEY] = "timed now, no finished run yet"
    return out
