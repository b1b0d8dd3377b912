"""What an independent-marginals run will cost on this machine, before it starts: seconds
and memory.

Measured, not a constant: the method's own `train` runs on a stand-in of the run's shape
(engine/methods/stand_in.py: the same columns, classes and knobs; public random numbers,
no record read, so no privacy cost) with PROBE_ROWS rows at most, read and drawn, timed
cold, and the seconds scale with the rows a run reads and draws (binning, counting and
drawing are one pass each). Cached on disk per machine and shape like every timing
(engine/store/cost_cache.py: re-timed when old or when the load moved, not kept when a
load spike met it) and corrected by this store's finished runs. Memory is a formula: the
run's arrays (the records, their codes, the synthetic table) over the process baseline.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace

from engine.core.processes import TORCH_BASELINE_GB
from engine.methods import stand_in
from engine.methods.marginals import method as marginals
from engine.methods.preview import MEASURING
from engine.store import cost_cache

_RATES = cost_cache.TimedCache("marginals")  # on disk: engine/runs/cost_probe.py fills it
PROBE_ROWS = 50_000


def _key(data, params, config, threads) -> tuple:
    shape = tuple((c.kind, len(c.categories or ()), c.bounds is None, c.mass is not None)
                  for c in data.columns or ()) or tuple(data.x_train.shape[1:])
    return (data.kind, shape, data.n_classes, min(data.n_train, PROBE_ROWS), params.bins,
            params.conditional, config.private, threads)


def _calibrate(config, data, params) -> dict[str, float]:
    """Seconds per row (read + drawn) of a stand-in run of `data`'s shape."""
    rows = min(data.n_train, PROBE_ROWS)
    fake = stand_in.like(data, rows)
    probe = replace(config, n_synthetic=rows, dataset=fake.name)
    # Timed cold, as a run meets it in a fresh process (first-use costs included).
    t = time.perf_counter()
    list(marginals.train(probe, params, fake, "cpu", threading.Event()))
    return {"per_row": (time.perf_counter() - t) / (2 * rows)}


def estimate(config, data, params, device, *, threads: int | None = None, away=None) -> dict:
    """The preview's cost keys: seconds (the rows read and drawn at the timed rate) and memory."""
    n_out = config.n_synthetic or data.n_train
    cost = {"estimated memory (GB)": run_memory_gb(config, data, params)}
    key = _key(data, params, config, threads)
    timed = (away(_RATES, key) if away is not None
             else _RATES.get(key, lambda: _calibrate(config, data, params)))
    if timed is None:
        return {**cost, cost_cache.BASIS_KEY: MEASURING}
    seconds = timed["per_row"] * (data.n_train + n_out)
    return cost_cache.correct({**cost, "estimated seconds": float(seconds)},
                              config.method, config.dataset,
                              data_options=config.data_options)


def run_memory_gb(config, data, params) -> float:
    """The records (float64), their bin codes (int64) and the synthetic table, twice
    (drawn, then restored), over the process baseline (GB)."""
    d = int(math.prod(data.x_train.shape[1:]))
    n_out = config.n_synthetic or data.n_train
    return TORCH_BASELINE_GB + (data.n_train * d * 16 + n_out * d * 16) / 1e9
