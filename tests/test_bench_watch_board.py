"""bench/watch_board.py's tiny configuration runs end to end (a real app server, Chromium
on the Tune board of a running stand-in study) and prints its three windows; the figures
themselves are the bench's to report, not this test's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.workshop_browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"{CHROMIUM} is absent (install the chromium package)")
def test_tiny_watch_board_bench_prints_its_three_windows():
    proc = subprocess.run([sys.executable, "bench/watch_board.py", "--tiny"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [ln.split("|")[1:-1] for ln in proc.stdout.splitlines()
            if ln.startswith("| ") and "watching" not in ln]
    assert [r[0].strip() for r in rows] == ["no browser", "board open", "page closed"]
    for r in rows:
        assert all(float(c) >= 0 for c in r[1:]), r
