"""Benchmark (not a test): how long Stop takes, from the press to a CANCELLED row.

The product promises Stop within 2 s (docs/architecture.md, "How the app runs jobs"). The tests check
what Stop does (the run ends CANCELLED, a trainer stuck in a long step is killed); this
measures how long it takes, on this machine as it is, for two kinds of run:

* a real DP-MERF run on digits, stopped between steps (the trainer sees the flag);
* a scripted run stuck in one 60 s step that ignores the flag, so the worker must kill
  its trainer after the grace period (engine.jobs.scheduling.STOP_GRACE_S).

    .venv/bin/python bench/stop.py [--repeats 5] [--tiny]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the scripted trainer lives beside the tests

from engine.core.config import RunConfig  # noqa: E402
from engine.jobs.manager import JobManager  # noqa: E402
from engine.store.runs import RunStatus, RunStore  # noqa: E402
from engine.jobs.scheduling import STOP_GRACE_S  # noqa: E402
from job_fakes import scripted  # noqa: E402

PROMISE_S = 2.0


def _stop_latency(jm: JobManager, config: RunConfig, *, started) -> float:
    """Submit, wait until `started(snapshot)`, press Stop; seconds until CANCELLED."""
    rid = jm.submit(config)
    deadline = time.time() + 300
    while not started(jm.snapshot(rid)):
        if time.time() > deadline:
            raise SystemExit(f"run {rid} never started: {jm.snapshot(rid)}")
        time.sleep(0.02)
    t0 = time.perf_counter()
    jm.cancel(rid)
    if jm.wait(rid, timeout=60) != RunStatus.CANCELLED:
        raise SystemExit(f"run {rid} did not end CANCELLED: {jm.status(rid)}")
    return time.perf_counter() - t0


def _report(name: str, seconds: list[float]) -> None:
    verdict = "within" if max(seconds) <= PROMISE_S else "OVER"
    print(f"{name:44s} n={len(seconds):2d}  p50 {statistics.median(seconds):5.2f} s  "
          f"max {max(seconds):5.2f} s  ({verdict} the {PROMISE_S:g} s promise)", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="stops measured per kind of run")
    ap.add_argument("--tiny", action="store_true", help="one stop of each kind (for the test)")
    args = ap.parse_args(argv)
    repeats = 1 if args.tiny else args.repeats
    print(f"Stop latency, {repeats} per kind; the worker kills a trainer that has not ended "
          f"{STOP_GRACE_S:g} s after Stop")
    with tempfile.TemporaryDirectory() as tmp:
        real = JobManager(RunStore(Path(tmp) / "real"), full_eval=False)
        fake = JobManager(RunStore(Path(tmp) / "fake"), execute=scripted, heartbeat_s=0.1)
        try:
            slow = [_stop_latency(real, RunConfig(dataset="digits", device="cpu", seed=i, params={
                "n_features": 500, "epochs": 400}), started=lambda s: s.step >= 2)
                for i in range(repeats)]
            _report("DP-MERF on digits, stopped between steps", slow)
            stuck = [_stop_latency(fake, RunConfig(device="cpu", seed=i, params={
                "do": "slow_step", "step_s": 60}), started=lambda s: s.step >= 1)
                for i in range(repeats)]
            _report("a step that ignores Stop (trainer killed)", stuck)
        finally:
            real.shutdown()
            fake.shutdown()


if __name__ == "__main__":
    main()
