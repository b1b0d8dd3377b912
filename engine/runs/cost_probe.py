"""Cost timings away from the web server: `request(config)` starts a short-lived process
(engine/core/processes.start_child: forked with torch already imported) that times the run's
shape and leaves the rates in the shared cache (engine/store/cost_cache.py).

The web server never trains, and timing a few generator steps is training: so the
Playground's preview asks for the cost with `time_here=False` (engine/runs/runner.preview),
reads a cached figure when there is one, and otherwise says "measuring…" while this
module's process times it. The process runs like a trainer (engine/jobs/worker.py): niced,
with the torch threads a trainer slot gets (engine/runs/slots.py), so it times what the run
will meet. It loads the data the run would (the same loader), but the timing reads no
record (engine/methods/dpmerf/cost.py), so it costs no privacy.

    python -m engine.runs.cost_probe '<RunConfig JSON>'   (the same timing, by hand)
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

from engine.core.config import RunConfig
from engine.core.processes import TRAINER_NICE, start_child

RETRY_S = 30.0  # a key is not probed again sooner than this, even if its timing went stale

log = logging.getLogger(__name__)
_lock = threading.Lock()
_started: dict[object, tuple[float, "_Probe"]] = {}  # key: (when, its probe)


def away(config: RunConfig) -> dict:
    """The web server's timing arguments for engine/methods/registry.estimate_cost: the threads
    a trainer slot gets, and `away(cache, key)`, which reads the cached rates (stale
    ones too: better than none while the new ones come) and, when none is fresh, asks
    for a probe of `config`: once per preview, however many keys it reads (a DataLens
    preview reads the teachers', the student's and the CNN's), since one probe process
    times all of them."""
    from engine.runs.slots import plan

    asked = []

    def lookup(cache, key):
        rates, fresh = cache.peek(key)
        if not fresh and not asked:
            asked.append(request(key, config))
        return rates
    return {"threads": plan().threads, "away": lookup}


def request(key: object, config: RunConfig) -> bool:
    """Start timing `config`'s cost in a process of its own, unless one for `key` runs
    or ran less than RETRY_S ago. True when a process was started."""
    with _lock:
        last = _started.get(key)
        if last is not None and (last[1].is_alive() or time.time() - last[0] < RETRY_S):
            return False
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        _started[key] = (time.time(), _Probe(config.to_json(), path))
        return True


def wait_started(timeout: float | None = None) -> None:
    """Block until every probe this process started has ended: a caller that must show a
    timed figure before it goes on (the CLI's study preview) waits for it here."""
    with _lock:
        probes = [probe for _, probe in _started.values()]
    for probe in probes:
        probe.ended.wait(timeout)  # past it the preview says "measuring…", as the page does


def log_path() -> Path:
    """The probes' output (stdout and stderr), beside the timings they leave."""
    from engine.store.cost_cache import timings_dir

    return timings_dir() / "cost_probe.log"


class _Probe:
    """One probe process, started and watched from a thread of its own: a start soon after
    the app's own waits for the fork server's imports (about 5 s), which the page that
    asked must not. A probe that fails is said in the server's log: its timing will not
    come, and the preview would otherwise say "measuring…" until the next retry fails the
    same way."""

    def __init__(self, config_json: str, path: Path) -> None:
        self.ended = threading.Event()
        threading.Thread(target=self._run, args=(config_json, path), daemon=True,
                         name="dpsynth-cost-probe").start()

    def is_alive(self) -> bool:
        return not self.ended.is_set()

    def _run(self, config_json: str, path: Path) -> None:
        try:
            proc = start_child(_probe, (config_json, str(path)), name="dpsynth-cost-probe")
            proc.join()
            code = proc.exitcode
        except Exception as e:  # the fork server could not start one
            code = f"{type(e).__name__}: {e}"
        finally:
            self.ended.set()
        if code != 0:
            log.warning("cost probe exited with %s; its output is in %s", code, path)


def _probe(config_json: str, log_file: str) -> None:
    """The probe's process: its output goes to `log_file` (a probe that fails says why
    there, not in /dev/null), and a failure is its exit code."""
    with open(log_file, "ab", buffering=0) as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    main([config_json])  # an exception: its traceback to stderr, exit code 1 (multiprocessing)


def measure(config: RunConfig) -> dict:
    """Time `config`'s cost here (this process is the trainer's stand-in); the rates land
    in the shared cache. Returns the cost keys."""
    from engine.data import catalog as datasets
    from engine.methods.registry import estimate_cost, params_for

    data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
    params = params_for(config, data)
    return estimate_cost(config, data, params)


def main(argv: list[str]) -> int:
    import json

    import torch

    from engine.runs.slots import plan

    os.nice(TRAINER_NICE)  # pages first, as for training
    torch.set_num_threads(plan().threads)  # what a trainer slot gets
    # ... and its BLAS pools, as engine/jobs/worker.py sets them for scikit-learn's scoring
    # (unlimited, the scoring probe timed 10x slow on a busy machine)
    from threadpoolctl import threadpool_limits

    threadpool_limits(plan().threads)
    measure(RunConfig.from_dict(json.loads(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
