"""DataLens's cost before training: the memory estimate against a measured peak, defaults
that fit for small and large data, and a run that cannot fit refused with one line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.methods.datalens import method as datalens
from engine.methods.datalens import memory as datalens_memory
from engine.core.config import RunConfig
from engine.data.catalog import Dataset, load
from engine.core.errors import InputError
from engine.methods.registry import make_params
from engine.runs.runner import prepare

# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


ROOT = Path(__file__).resolve().parents[1]

# Runs a few DataLens iterations on random 28×28 images in a fresh process and prints the
# estimate and the measured peak: the growth of the resident set's high-water mark (VmHWM,
# reset through /proc/self/clear_refs) over the resident set before the run. A 2-teacher
# run first pays the one-off costs (libraries' code pages, thread pools), which the
# estimate does not model because they do not grow with the ensemble.
_MEASURE = textwrap.dedent("""
    import json, threading
    import numpy as np, torch
    torch.set_num_threads(1)
    from engine.methods.datalens import method as datalens
    from engine.core.config import RunConfig
    from engine.data.catalog import Dataset
    from engine.methods.datalens.memory import memory_bytes
    from engine.methods.registry import make_params
    n = 12000
    rng = np.random.default_rng(0)
    x = rng.random((n, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, n)
    data = Dataset("rand", "image", x, y, x[:10], y[:10], [str(i) for i in range(10)], (1, 28, 28))

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    def run(teachers):
        params = dict(teachers=teachers, max_steps=3, first_teacher_steps=1, sample_every=1000)
        cfg = RunConfig(method="datalens", dataset="rand", epsilon=float("inf"), n_synthetic=20, params=params)
        before = status("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the high-water mark to the current resident set
        p = make_params("datalens", data, cfg.params)
        for _ in datalens.train(cfg, p, data, "cpu", threading.Event()):
            pass
        return memory_bytes(p, (1, 28, 28), 10, n), status("VmHWM") - before

    run(2)
    estimate, measured = run(800)
    print(json.dumps({"estimate": estimate, "measured": measured}))
""")


def test_memory_estimate_is_within_30_percent_of_the_measured_peak():
    out = subprocess.run([sys.executable, "-c", _MEASURE], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    est, measured = got["estimate"]["total"], got["measured"]
    assert got["estimate"]["teacher state"] > 0.5 * est  # the measured run is dominated by what scales
    assert 0.7 * measured <= est <= 1.3 * measured, (est, measured)


@pytest.mark.parametrize("n", [1000, 5000, 60000])
def test_derived_defaults_fit_under_the_memory_limit(n):
    p = datalens.Params.derived(n, (1, 28, 28))
    need = datalens_memory.memory_bytes(p, (1, 28, 28), 10, n)["total"]
    assert need <= 8e9  # the defaults' budget, under this 24 GB machine and most laptops
    assert p.partition_size(n) == 15 and p.teachers == min(4000, n // 15)
    # the paper's noise-to-teachers ratio and noise multiplier, voting on 2×2 blocks
    assert p.vote_pool == 2 and p.top_k == 50 and p.beta == 0.35
    assert p.sigma == pytest.approx(1.25 * p.teachers / 2, abs=1)
    x = np.zeros((n, 1, 28, 28), np.float32)
    y = np.arange(n) % 10
    data = Dataset("npz", "image", x, y, x[:5], y[:5], [str(i) for i in range(10)], (1, 28, 28))
    assert datalens.Params.for_data(data) == p
    assert p.validate(data) is p


def test_defaults_follow_the_data_not_the_name():
    digits = load("digits")
    assert datalens.Params.for_data(digits) == datalens.Params.derived(1437, (1, 8, 8))
    renamed = replace(digits, name="someone_elses_digits")
    assert datalens.Params.for_data(renamed) == datalens.Params.for_data(digits)
    p = datalens.Params.for_data(digits)
    assert p.top_k == 16 and p.teachers == digits.n_train // 15  # a quarter of 64 pixels
    assert p.vote_pool == 1 and p.sigma == round(1.25 * p.teachers)  # small images


def test_a_large_image_set_gets_fewer_teachers_not_more_memory():
    p = datalens.Params.derived(60000, (3, 64, 64))
    assert datalens_memory.memory_bytes(p, (3, 64, 64), 10, 60000)["total"] <= 8e9
    assert 1 < p.teachers < 4000 and p.partition_size(60000) == 15


def _too_big():
    # 1,437 official conv teachers with a 4,096-wide FC layer: ~100 GB of teacher state.
    return RunConfig(method="datalens", dataset="digits", epsilon=1.0,
                     params={"teacher": "official", "teachers": 1437, "teacher_widths": [64, 256, 4096]})


def test_a_run_that_cannot_fit_is_refused_with_one_line():
    cfg = _too_big()
    digits = load("digits")
    prev = datalens.privacy_preview(cfg, make_params("datalens", digits, cfg.params), digits)
    assert prev["estimated memory (GB)"] > 50
    assert "\n" not in prev["refuse"] and "use fewer teachers" in prev["refuse"]
    assert "GB" in prev["refuse"]
    with pytest.raises(InputError, match=r"DataLens needs ~\d+\.\d GB, this machine has \d+ GB"):
        prepare(cfg)


def test_cli_refuses_with_status_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "engine", "train", "--method", "datalens", "--dataset", "digits",
                          "--teacher", "official", "--teachers", "1437", "--teacher_widths", "[64, 256, 4096]",
                          "--out", str(tmp_path / "run")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr[-1500:]
    assert "DataLens needs" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_preview_states_cost_before_training():
    from engine.runs.runner import preview

    digits = load("digits")
    cfg = RunConfig(method="datalens", dataset="digits", epsilon=10.0)
    prev = preview(cfg, digits)  # the CLI's and the trainer's preview: timed in this process
    cost = prev.cost
    for value in (cost.memory_gb, cost.per_step_s, cost.seconds):
        assert isinstance(value, float) and value > 0
    assert prev.refuse is None and cost.unit == "iteration"
    # Both figures are rounded for display (0.1 s and 1 ms), so allow each its half-unit of rounding.
    lowest_per_iteration = cost.per_step_s - 0.0005
    assert cost.timed_seconds + 0.05 >= (prev.figures["affordable steps"] - 1) * lowest_per_iteration


def test_the_web_server_never_times_datalens_it_asks_the_probe(monkeypatch, tmp_path):
    """time_here=False (the Playground): no teacher step is timed in the server's process;
    the cost says "measuring…" until the probe's timings are in the shared cache."""
    from engine.store import cost_cache
    from engine.runs import cost_probe
    from engine.methods.datalens import cost as datalens_cost
    from engine.runs.runner import preview
    from engine.runs.slots import plan

    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    monkeypatch.setattr(datalens_cost, "_TIMINGS", cost_cache.TimedCache("datalens"))  # nothing timed yet
    monkeypatch.setattr(datalens_cost, "_probe", lambda *a: pytest.fail("timed in the server"))
    monkeypatch.setattr(datalens_cost, "_probe_student", lambda *a: pytest.fail("timed in the server"))
    asked = []
    monkeypatch.setattr(cost_probe, "request", lambda key, config: asked.append(config))
    digits = load("digits")
    cfg = RunConfig(method="datalens", dataset="digits", epsilon=10.0, params={"max_steps": 5})
    before = preview(cfg, digits, time_here=False)
    assert before.cost.measuring and asked and before.cost.memory_gb > 0

    monkeypatch.setattr(datalens_cost, "_probe", lambda *a: (0.01, 0.002))  # the probe's process
    monkeypatch.setattr(datalens_cost, "_probe_student", lambda *a: (0.001, 0.003))
    # The probe's process runs with a trainer slot's threads (cost_probe.main).
    monkeypatch.setattr(datalens_cost.torch, "get_num_threads", lambda: plan().threads)
    cost_probe.measure(cfg)
    after = preview(cfg, digits, time_here=False).cost
    assert not after.measuring and after.seconds > 0 and after.per_step_s > 0


def test_refusal_compares_with_the_device_memory(monkeypatch):
    monkeypatch.setattr(datalens_memory, "machine_memory", lambda device: 10e9)
    assert datalens_memory.refusal(8e9, torch.device("cpu")) is None
    line = datalens_memory.refusal(36e9, torch.device("cpu"))
    assert line.startswith("DataLens needs ~36.0 GB, this machine has 10 GB")
