"""Cost previews (engine/store/cost_cache.py): timings re-taken when old or when the load moved,
and seconds corrected by the measured / timed ratio of the store's finished runs."""

import json
from types import SimpleNamespace

import pytest

from conftest import HANG_S
from engine.store import cost_cache


# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


class FakeStore:
    """list_runs + artifact_dir, as engine.store.runs.RunStore answers them."""

    def __init__(self, root, seconds, options=None):
        self.root = root
        self.runs = []
        for i, secs in enumerate(seconds):
            rid = f"run{i}"
            (root / rid).mkdir()
            (root / rid / "metrics.json").write_text(json.dumps({"seconds": secs}))
            data_options = options[i] if options else None
            self.runs.append(SimpleNamespace(run_id=rid,
                                             config=SimpleNamespace(data_options=data_options)))

    def list_runs(self, *, method, dataset, status):
        assert (method, dataset, status) == ("dpmerf", "digits", "finished")
        return self.runs

    def artifact_dir(self, run_id):
        return self.root / run_id


def test_the_timed_figure_is_corrected_by_finished_runs(tmp_path):
    # Three runs took 2x, 3x and 4x what was timed; one predates the "timed" record.
    store = FakeStore(tmp_path, [{"train": 20.0, "timed": 10.0}, {"train": 30.0, "timed": 10.0},
                                 {"train": 8.0, "timed": 2.0}, {"train": 5.0}])
    assert cost_cache.finished_ratios("dpmerf", "digits", store) == [2.0, 3.0, 4.0]
    out = cost_cache.correct({"estimated seconds": 5.0, "estimated steps": 9}, "dpmerf",
                             "digits", store)
    assert out["estimated seconds"] == pytest.approx(15.0)  # 5 s timed × median ratio 3
    assert out[cost_cache.TIMED_KEY] == 5.0 and out["estimated steps"] == 9
    assert out[cost_cache.BASIS_KEY] == "timed now, corrected from 3 finished runs"


def test_only_runs_on_the_same_file_correct_a_preview(tmp_path):
    """A CSV's dataset name is only "csv": another participant's upload (another path) of
    any size never corrects this file's preview, nor is it shown to have run."""
    mine, theirs = {"path": "/uploads/a/mine.csv", "label": "y"}, {"path": "/uploads/b/x.csv",
                                                                   "label": "y"}
    store = FakeStore(tmp_path, [{"train": 20.0, "timed": 10.0}, {"train": 90.0, "timed": 10.0}],
                      options=[mine, theirs])
    assert cost_cache.finished_ratios("dpmerf", "digits", store, data_options=mine) == [2.0]
    out = cost_cache.correct({"estimated seconds": 5.0}, "dpmerf", "digits", store,
                             data_options={"path": "/uploads/c/new.csv", "label": "y"})
    assert out["estimated seconds"] == 5.0
    assert out[cost_cache.BASIS_KEY] == "timed now, no finished run yet"


def test_without_finished_runs_the_basis_says_so(tmp_path):
    out = cost_cache.correct({"estimated seconds": 5.0}, "dpmerf", "digits",
                             FakeStore(tmp_path, []))
    assert out["estimated seconds"] == 5.0
    assert out[cost_cache.BASIS_KEY] == "timed now, no finished run yet"
    assert cost_cache.correct({"teachers": 3}, "dpmerf", "digits") == {"teachers": 3}


def test_a_timing_is_retaken_when_old_or_when_the_load_moved(monkeypatch):
    clock, load = [1000.0], [0.5]
    monkeypatch.setattr(cost_cache, "_clock", lambda: clock[0])
    monkeypatch.setattr(cost_cache, "_load", lambda: load[0])
    monkeypatch.setattr(cost_cache, "_cores", lambda: 2)
    calls = []
    cache = cost_cache.TimedCache()

    def timed():
        calls.append(1)
        return len(calls)

    assert cache.get("shape", timed) == 1
    clock[0] += 10
    assert cache.get("shape", timed) == 1  # fresh: no new timing
    load[0] = 2.0  # the load average rose by 1.5 on 2 cores (over 0.5 per core)
    assert cache.get("shape", timed) == 2
    clock[0] += cost_cache.MAX_AGE_S + 1  # old
    assert cache.get("shape", timed) == 3
    assert cache.get("other shape", timed) == 4 and cache.get("shape", timed) == 3


def test_dpmerf_preview_states_its_basis(monkeypatch, digits):
    from engine.methods.dpmerf import method as dpmerf
    from engine.methods.dpmerf import cost as dpmerf_cost
    from engine.core.config import RunConfig

    monkeypatch.setattr(cost_cache, "finished_ratios", lambda *a, **k: [2.0])
    cfg = RunConfig(method="dpmerf", dataset="digits", params={"n_features": 300})
    p = dpmerf.Params.for_data(digits)
    monkeypatch.setattr(dpmerf_cost, "measured_rates", lambda *a, **k: {
        "step": 0.01, "release_per_record": 0.0, "sample_per_record": 0.0})
    est = dpmerf_cost.estimate(cfg, digits, p, "cpu")
    assert est[cost_cache.TIMED_KEY] == pytest.approx(est["estimated steps"] * 0.01)
    assert est["estimated seconds"] == pytest.approx(2 * est[cost_cache.TIMED_KEY])
    assert est[cost_cache.BASIS_KEY] == "timed now, corrected from 1 finished run"


def test_a_named_cache_is_shared_through_its_files(tmp_path, monkeypatch):
    """A timing taken in one process (here: one cache object) serves another."""
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    writer, reader = cost_cache.TimedCache("probe"), cost_cache.TimedCache("probe")
    assert reader.peek(("shape", 1)) == (None, False)
    writer.put(("shape", 1), {"step": 0.25})
    assert reader.peek(("shape", 1)) == ({"step": 0.25}, True)
    assert reader.get(("shape", 1), lambda: pytest.fail("timed again")) == {"step": 0.25}
    reader.clear()
    assert writer.peek(("shape", 1))[0] in (None, {"step": 0.25})  # its own memory only
    assert cost_cache.TimedCache("probe").peek(("shape", 1)) == (None, False)


def test_the_web_server_never_times_it_asks_the_probe(monkeypatch, tmp_path, digits):
    """time_here=False: no training step in this process; a probe is asked for instead,
    the cost says "measuring…" until the probe's rates are in the shared cache."""
    from engine.runs import cost_probe
    from engine.methods.dpmerf import cost as dpmerf_cost
    from engine.core.config import RunConfig
    from engine.runs.runner import preview
    from engine.runs.slots import plan

    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    monkeypatch.setattr(dpmerf_cost, "_calibrate", lambda *a: pytest.fail("timed in the server"))
    asked = []
    monkeypatch.setattr(cost_probe, "request", lambda key, config: asked.append(config))
    cfg = RunConfig(method="dpmerf", dataset="digits", params={"n_features": 200, "epochs": 1})
    before = preview(cfg, digits, time_here=False)
    assert before.cost.measuring and before.cost.seconds is None and asked == [cfg]
    assert before.cost.memory_gb > 0 and before.cost.steps > 0  # formulas, not timings

    monkeypatch.setattr(dpmerf_cost, "_calibrate", lambda *a: {
        "step": 0.5, "release_per_record": 0.0, "sample_per_record": 0.0})
    # The probe's process runs with a trainer slot's threads (cost_probe.main).
    monkeypatch.setattr(dpmerf_cost.torch, "get_num_threads", lambda: plan().threads)
    cost_probe.measure(cfg)  # what the probe's process does
    after = preview(cfg, digits, time_here=False)
    assert not after.cost.measuring and after.cost.seconds == pytest.approx(0.5 * after.cost.steps)
    assert len(asked) == 1  # fresh rates: no second probe


def test_the_cnn_scoring_cost_is_previewed_and_timed_by_the_probe(monkeypatch, tmp_path, digits):
    """With "also score with a CNN", the preview bounds the CNN's time (every epoch, the
    synthetic fit and the real reference); the web server asks the probe for it too."""
    from engine.evaluation import cnn
    from engine.runs import cost_probe
    from engine.core.config import RunConfig
    from engine.methods.preview import cost_line
    from engine.runs.runner import preview

    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    monkeypatch.setattr(cnn, "_BATCH_SECONDS", None)
    monkeypatch.setattr(cnn, "_time_batch", lambda *a: pytest.fail("timed in the server"))
    monkeypatch.setattr(cost_probe, "request", lambda key, config: None)
    cfg = RunConfig(method="marginals", dataset="digits", cnn_eval=True, n_synthetic=500)
    assert preview(cfg, digits, time_here=False).cost.cnn_seconds is None  # being timed

    monkeypatch.setattr(cnn, "_time_batch", lambda *a: 0.01)  # the probe's process times
    from engine.runs.slots import plan
    # The probe's process runs with a trainer slot's threads (cost_probe.main).
    monkeypatch.setattr(cnn.torch, "get_num_threads", lambda: plan().threads)
    cost_probe.measure(cfg)
    cost = preview(cfg, digits, time_here=False).cost
    both = cnn.fit_batches(500) + cnn.fit_batches(digits.n_train)
    assert cost.cnn_seconds == pytest.approx(0.01 * both)
    assert "to score with the CNN" in cost_line(cost)
    assert preview(RunConfig(method="marginals", dataset="digits"), digits).cost is None \
        or preview(RunConfig(method="marginals", dataset="digits"), digits).cost.cnn_seconds is None


def test_a_probe_that_fails_says_so_in_its_log_and_the_servers(monkeypatch, tmp_path, caplog):
    """A probe that fails leaves its traceback in cost_probe.log and a warning in the
    server's log, not in /dev/null. Its process is a real child (no monkeypatch reaches
    it), so the failure is a real one: a dataset that does not exist."""
    import logging
    import time

    from engine.core.config import RunConfig
    from engine.runs import cost_probe

    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    monkeypatch.setattr(cost_probe, "_started", {})
    with caplog.at_level(logging.WARNING, logger=cost_probe.__name__):
        assert cost_probe.request(("failing probe",),
                                  RunConfig(method="marginals", dataset="no_such_dataset"))
        deadline = time.time() + HANG_S  # a hang guard: under load the probe starts slowly
        while not any("exited with 1" in r.getMessage() for r in caplog.records):
            assert time.time() < deadline, "no warning for a failed probe"
            time.sleep(0.05)
    logged = cost_probe.log_path().read_text()
    assert "Traceback" in logged and "no_such_dataset" in logged


def _spiky(monkeypatch, load: float, *cpu_shares: float):
    """A machine whose load average reads `load` (2 cores) and where the i-th timing gets
    `cpu_shares[i]` (the last one after that) of its wall time in CPU seconds; the clocks
    advance only in `compute`."""
    clock = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(cost_cache, "_load", lambda: load)
    monkeypatch.setattr(cost_cache, "_cores", lambda: 2)
    monkeypatch.setattr(cost_cache, "_wall", lambda: clock["wall"])
    monkeypatch.setattr(cost_cache, "_cpu", lambda: clock["cpu"])
    calls = []

    def compute():
        clock["wall"] += 1.0
        clock["cpu"] += cpu_shares[min(len(calls), len(cpu_shares) - 1)]
        calls.append(1)
        return {"step": float(len(calls))}
    return compute, calls


@pytest.mark.parametrize("load,cpu_share", [(4.0, 1.0), (0.5, 0.2)])
def test_a_timing_a_load_spike_met_is_retimed_and_never_served_fresh(monkeypatch, tmp_path,
                                                                      load, cpu_share):
    """By the load average (2 per core) or by the CPU share (a fifth of the wall time):
    timed twice at once, kept as stale only, and timed again by the next preview."""
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    compute, calls = _spiky(monkeypatch, load, cpu_share)
    cache = cost_cache.TimedCache("spiky")
    assert cache.get("shape", compute) == {"step": 2.0} and len(calls) == 2
    assert cache.peek("shape") == ({"step": 2.0}, False)  # shown, not fresh
    assert cost_cache.TimedCache("spiky").peek("shape") == ({"step": 2.0}, False)  # on disk too
    cache.get("shape", compute)
    assert len(calls) == 4


def test_a_quiet_timing_is_cached_and_a_spike_that_passed_is_not_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    compute, calls = _spiky(monkeypatch, 0.5, 0.9)
    cache = cost_cache.TimedCache("quiet")
    assert cache.get("shape", compute) == {"step": 1.0}
    assert cache.get("shape", compute) == {"step": 1.0} and len(calls) == 1
    assert cost_cache.TimedCache("quiet").peek("shape") == ({"step": 1.0}, True)


def test_a_spike_during_the_first_timing_only_keeps_the_second(monkeypatch, tmp_path):
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    compute, calls = _spiky(monkeypatch, 0.5, 0.1, 0.9)  # starved, then quiet
    cache = cost_cache.TimedCache("passed")
    assert cache.get("shape", compute) == {"step": 2.0} and len(calls) == 2
    assert cache.peek("shape") == ({"step": 2.0}, True)
    assert cache.get("shape", compute) == {"step": 2.0} and len(calls) == 2


def test_the_spike_rule():
    cores = cost_cache._cores()
    assert not cost_cache.spiked(0.1, 0.1, 0.0)  # too short to judge by CPU share
    assert cost_cache.spiked(0.1, 1.0, 0.0)  # starved
    assert cost_cache.spiked(1.0, 1.0, 1.6 * cores)  # loaded
    assert not cost_cache.spiked(0.6, 1.0, 1.4 * cores)
    # a load that has lasted five minutes is the machine's state, starved or loaded
    assert not cost_cache.spiked(0.1, 1.0, 1.6 * cores, lasting=1.6 * cores)
    assert cost_cache.spiked(1.0, 1.0, 1.6 * cores, lasting=1.4 * cores)  # a burst on top


def test_a_timing_under_a_lasting_load_is_kept_fresh(monkeypatch, tmp_path):
    """A busy machine (four runs on two cores for five minutes and more): the timing is
    what a run meets, so it is served fresh, not re-timed by every preview."""
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path))
    compute, calls = _spiky(monkeypatch, 4.0, 0.3)
    monkeypatch.setattr(cost_cache, "_lasting_load", lambda: 3.5)
    cache = cost_cache.TimedCache("busy")
    assert cache.get("shape", compute) == {"step": 1.0} and len(calls) == 1
    assert cost_cache.TimedCache("busy").peek("shape") == ({"step": 1.0}, True)
