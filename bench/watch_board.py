"""Benchmark (not a test): what watching a running study on the Tune board costs the
machine. A study of stand-in trials (tests/job_fakes.py: each sleeps, so they use no CPU
of their own) runs on a fresh store; the app serves it; the busy CPU seconds of the whole
machine are counted over a window with no browser, with Chromium showing /tune, and with
the page closed again, and split by process (the app server, Chromium, the rest).

    .venv/bin/python bench/watch_board.py [--window 20] [--trial-s 30] [--tiny]

`--tiny` is the configuration tests/test_bench_watch_board.py runs (2-second windows).
Linux only (it reads /proc). Needs Debian's chromium.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the stand-in trainer

from bench.app_server import serve  # noqa: E402
from bench.workshop import proc_stat  # noqa: E402
from bench.workshop_browser import ARGS, CHROMIUM  # noqa: E402


def busy() -> float:
    """Busy CPU seconds of the whole machine so far (/proc/stat, idle and iowait left out)."""
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def by_process() -> dict[str, tuple[str, float]]:
    """pid → (kind, CPU seconds so far) of every process alive now."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_text()
        except OSError:
            continue
        seen = proc_stat(int(pid))
        if seen is None:  # gone in between
            continue
        kind = "chromium" if "chromium" in cmd else "app server" if "streamlit" in cmd \
            else "rest"
        out[pid] = (kind, seen[0])
    return out


def window(seconds: float) -> dict[str, float]:
    """Busy CPU seconds over `seconds`, in all and per kind of process."""
    before, b0 = by_process(), busy()
    time.sleep(seconds)
    after, b1 = by_process(), busy()
    split: dict[str, float] = {}
    for pid, (kind, cpu) in after.items():
        split[kind] = split.get(kind, 0.0) + cpu - before.get(pid, (kind, 0.0))[1]
    return {"all": b1 - b0, **split}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--window", type=float, default=20.0, help="seconds per window")
    ap.add_argument("--trial-s", type=float, default=30.0, help="seconds a stand-in trial lasts")
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args(argv)
    if args.tiny:
        args.window, args.trial_s = 2.0, 10.0
    if not os.path.exists(CHROMIUM):
        print(f"{CHROMIUM} is absent (install the chromium package)", file=sys.stderr)
        return 2
    from playwright.sync_api import expect, sync_playwright

    from engine.core.config import RunConfig
    from engine.jobs.manager import JobManager
    from engine.jobs.study import Study
    from engine.runs.study_space import build_spec
    from engine.store.runs import RunStore
    from job_fakes import scripted

    root = Path(tempfile.mkdtemp(prefix="bench-watch-board-"))
    jm = JobManager(RunStore(root), execute=scripted, full_eval=False, slots_per_device=2,
                    heartbeat_s=0.5)
    steps = max(1, round(args.trial_s))
    spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                params={"do": "ok", "sleep": args.trial_s / steps,
                                        "steps": steps}),
                      ["lr=1e-3:1e-1:log", "n_features=500,1000"], trials=500,
                      sampler="random")
    stop = threading.Event()
    driver = threading.Thread(target=Study(spec, "watched", jm).run, kwargs={"stop": stop},
                              daemon=True)
    driver.start()
    rows = []
    try:
        with serve(root, timeout=300) as url, sync_playwright() as p:
            while not jm.store.list_runs():  # the study is under way
                time.sleep(0.2)
            rows.append(("no browser", window(args.window)))
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            page = browser.new_context(viewport={"width": 1400, "height": 2200}).new_page()
            page.goto(f"{url}/tune", wait_until="domcontentloaded")
            expect(page.get_by_text("watched", exact=False).first).to_be_visible(
                timeout=300_000)
            page.wait_for_timeout(1000)  # past the first load
            rows.append(("board open", window(args.window)))
            page.close()
            rows.append(("page closed", window(args.window)))
            browser.close()
    finally:
        stop.set()
        driver.join(timeout=120)
        jm.shutdown()
    print(f"busy CPU seconds per {args.window:g} s window while a study of {args.trial_s:g}-s "
          "stand-in trials runs (2 slots):")
    print("| watching | all | app server | Chromium | rest |")
    print("|---|---|---|---|---|")
    for what, w in rows:
        print(f"| {what} | {w['all']:.1f} | {w.get('app server', 0.0):.1f} | "
              f"{w.get('chromium', 0.0):.1f} | {w.get('rest', 0.0):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
