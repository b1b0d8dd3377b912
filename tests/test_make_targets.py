"""Every bench target of the Makefile still starts: a bench nobody runs rots silently.

Each `make bench-*` recipe is read with `make -n` (so the test follows the Makefile as it
is) and run with `--help`, which parses the arguments and imports everything the bench
needs without training anything.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = re.findall(r"^(bench-[a-z-]+):", (ROOT / "Makefile").read_text(), re.M)


def test_the_makefile_has_bench_targets():
    assert {"bench-dpmerf", "bench-datalens", "bench-workshop"} <= set(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_bench_target_starts(target):
    recipe = subprocess.run(["make", "-s", "-n", target], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip().splitlines()[-1]
    out = subprocess.run(shlex.split(recipe) + ["--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, f"{recipe} --help failed:\n{out.stderr[-2000:]}"
    assert "usage" in out.stdout.lower()


def test_stop_bench_tiny_configuration_runs():
    """bench/stop.py (Stop's latency, which tests do not time) still runs end to end."""
    out = subprocess.run([sys.executable, "bench/stop.py", "--tiny"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [ln for ln in out.stdout.splitlines() if "p50" in ln]
    assert len(rows) == 2 and all("n= 1" in r for r in rows)


def test_workshop_bench_tiny_room_runs_and_every_page_sees_its_accuracy(tmp_path):
    """bench/workshop.py --tiny: two light sessions train, and both pages show the
    accuracy the store holds (the bench once waited on a heading the page had lost)."""
    env = dict(os.environ, DPSYNTH_RUNS=str(tmp_path / "runs"))
    out = subprocess.run([sys.executable, "bench/workshop.py", "--tiny"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-2000:]
    runs = next(ln for ln in out.stdout.splitlines() if ln.startswith("runs: "))
    assert "2 finished with metrics.json" in runs and "2 pages showed the accuracy" in runs
    assert "lost (missing or failed): 0" in runs
    # every run recorded the preview it was shown, so the bench states its error
    assert any(ln.startswith("preview error (predicted vs measured training s): ")
               and " of 2 within" in ln for ln in out.stdout.splitlines())
    assert (tmp_path / "runs" / "runs.db").exists()  # it used the store it was given
