"""Private hyperparameter search (engine/runs/private_search.py): its accounting against an
independent implementation of Papernot & Steinke's bounds, the score's sensitivity, OS
entropy for K and the settings, one released candidate, and a killed search's charge."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.privacy import ledger as L
from engine.runs import private_search as T
from engine.privacy import accountant as P
from engine.privacy import search_plan as S
from engine.core.config import RunConfig
from engine.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
torch.set_num_threads(1)

GRID = {"bins": [4, 8, 16], "conditional": [True, False], "counts_share": [0.05, 0.2]}


# ------------------------------------------------------------------------ accounting


def _theorem_rdp(z: float, mean: float, shape: float):
    """RDP of repeat-and-select over a Gaussian candidate of multiplier z, written from
    the paper (Theorem 2 for the truncated negative binomial with η = 1, i.e. geometric;
    Theorem 6 for Poisson), on dp-accounting's orders."""
    from dp_accounting.rdp import rdp_privacy_accountant as R

    orders = np.asarray(R.RdpAccountant()._orders, dtype=float)
    rdp = orders / (2 * z * z)  # a Gaussian mechanism's RDP curve
    if math.isinf(shape):
        out = []
        for lam, eps in zip(orders, rdp):
            delta_hat, _ = R.compute_delta(orders, rdp, math.log1p(1 / (lam - 1)))
            out.append(eps + mean * delta_hat + math.log(mean) / (lam - 1))
        return orders, np.array(out)
    gamma = 1 / mean  # geometric: E[K] = 1/γ
    c = 2 * np.min((1 - 1 / orders) * rdp - math.log(gamma) / orders)  # (1 + η) = 2
    out = rdp + math.log(mean) / (orders - 1) + c
    return orders, np.array([out[orders >= lam].min() for lam in orders])


@pytest.mark.parametrize("z,mean,distribution", [(5.0, 10, "geometric"), (5.0, 10, "poisson"),
                                                 (5.0, 100, "geometric"), (2.0, 3, "poisson"),
                                                 (12.0, 30, "geometric")])
def test_repeat_and_select_matches_the_paper_to_1e6(z, mean, distribution):
    from dp_accounting.rdp import rdp_privacy_accountant as R

    shape = P.TUNING_SHAPES[distribution]
    orders, rdp = _theorem_rdp(z, mean, shape)
    ref, _ = R.compute_epsilon(orders, rdp, 1e-5)
    ours = P.repeat_and_select_epsilon([(((z, 1),), mean, shape)], delta=1e-5)
    assert ours == pytest.approx(ref, abs=1e-6)


def test_design_check_values_and_private_selection_beats_plain_composition():
    # DESIGN.md "Measured privacy": z = 5, δ = 1e-5, E[K] = 10 → 1.72 geometric, 1.86 Poisson.
    geo = P.repeat_and_select_epsilon([(((5.0, 1),), 10, 1.0)], delta=1e-5)
    poi = P.repeat_and_select_epsilon([(((5.0, 1),), 10, math.inf)], delta=1e-5)
    assert round(geo, 2) == 1.72 and round(poi, 2) == 1.86
    plan = S.plan_search(epsilon=2.0, delta=1e-5, mean=10, distribution="geometric",
                         grid=GRID)
    assert plan.epsilon <= 2.0 and plan.epsilon == pytest.approx(2.0, rel=1e-4)
    assert plan.plain_epsilon == pytest.approx(
        P.epsilon_for(plan.multiplier, delta=1e-5, compositions=10))
    assert plan.plain_epsilon > plan.epsilon > plan.candidate_epsilon
    with pytest.raises(InputError, match="finite epsilon"):
        S.plan_search(epsilon=math.inf, delta=1e-5, mean=10, distribution="geometric", grid=GRID)
    with pytest.raises(InputError, match="distribution"):
        S.plan_search(epsilon=1, delta=1e-5, mean=10, distribution="uniform", grid=GRID)


def test_the_ledger_takes_the_smaller_of_plain_and_private_selection(runs_root):
    led = L.Ledger(runs_root)
    led.book(RunConfig(epsilon=1.0), run_id="plain-run", source="test")
    plan = S.plan_search(epsilon=2.0, delta=1e-5, mean=10, distribution="geometric", grid=GRID)
    charge = led.book(RunConfig(epsilon=plan.epsilon), run_id="s", source="private-tuning",
                      charge_id="s", search=S.ledger_search(plan))
    z1 = L.planned(RunConfig(epsilon=1.0))[0][0]
    for k in range(1, 16):
        assert led.add_candidate(charge) == k
        (d,) = led.datasets()
        plain = P.composed_epsilon(((z1, 1), (plan.multiplier, k)), delta=1e-5)
        rs = P.repeat_and_select_epsilon([(((plan.multiplier, 1),), 10, 1.0)], delta=1e-5,
                                         others=[(z1, 1)])
        assert d["epsilon"] == pytest.approx(min(plain, rs), rel=1e-9)
    assert rs < plain  # 15 candidates: the search's own bound is the smaller


# ------------------------------------------------------------------------- the score


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40),
       st.integers(0, 39), st.integers(0, 3), st.integers(0, 3))
def test_the_score_moves_by_at_most_its_sensitivity(pairs, at, pred, label):
    """Replace any one validation record (its prediction and its label) by any other."""
    p, y = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    i = at % len(p)
    p2, y2 = p.copy(), y.copy()
    p2[i], y2[i] = pred, label
    assert abs(T.correct_count(p, y) - T.correct_count(p2, y2)) <= T.SCORE_SENSITIVITY


def test_the_score_noise_comes_from_the_accountants_generator(drawn):
    values = {T.noisy_accuracy(50, 100, 4.0) for _ in range(5)}
    assert drawn == [4.0 * T.SCORE_SENSITIVITY] * 5 and len(values) == 5  # never seeded


# ----------------------------------------------------------------- the random draws


def test_k_and_settings_are_drawn_from_os_entropy(monkeypatch):
    plan = S.plan_search(epsilon=2.0, delta=1e-5, mean=10, distribution="poisson", grid=GRID)
    big = {f"k{i}": list(range(10)) for i in range(8)}
    draws = [(T.draw_k(plan, g := T.os_rng()), T.draw_settings(big, g)) for _ in range(4)]
    assert len({json.dumps(d, sort_keys=True) for d in draws}) == 4  # not one fixed seed
    calls = []
    monkeypatch.setattr(T.secrets, "randbits", lambda n: calls.append(n) or 12345)
    fixed = [(T.draw_k(plan, g := T.os_rng()), T.draw_settings(big, g)) for _ in range(2)]
    assert calls == [128, 128] and fixed[0] == fixed[1]  # the OS entropy is the only seed


@pytest.fixture
def csv(tmp_path):
    from tuning import mixed_csv

    return mixed_csv(tmp_path / "mixed.csv", 300)


def _base(csv) -> RunConfig:
    return RunConfig(method="marginals", dataset="csv",
                     data_options={"path": str(csv), "label": "outcome"})


def test_only_the_best_candidates_outputs_survive(runs_root, csv, tmp_path, monkeypatch):
    import engine.runs.artifacts as artifacts

    monkeypatch.setattr(T, "draw_k", lambda plan, rng: 4)
    writes = []
    real_write = artifacts.write_synthetic
    monkeypatch.setattr(artifacts, "write_synthetic",
                        lambda out, result, data: writes.append(out) or real_write(out, result, data))
    trained = []
    real_train = T.noisy_accuracy
    monkeypatch.setattr(T, "noisy_accuracy", lambda *a: trained.append(a) or real_train(*a))
    out = tmp_path / "search"
    rep = T.search(_base(csv), GRID, epsilon=2.0, mean=10, out_dir=out, ledger_root=runs_root)
    assert len(trained) == 4 and len(writes) == 1  # four scored, one written
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "metrics.json",
                                                     "samples.png", "synthetic.csv"]
    metrics = json.loads(out.joinpath("metrics.json").read_text())
    assert metrics["search"]["K"] == metrics["search"]["candidates_run"] == 4
    released = metrics["released"]
    assert set(released["settings"]) == set(GRID)
    saved = RunConfig.from_dict(json.loads(out.joinpath("config.json").read_text()))
    assert {k: saved.params[k] for k in GRID} == released["settings"]
    text = out.joinpath("metrics.json").read_text()
    assert text.count('"counts_share"') == 2  # the grid and the released settings, no other
    assert metrics["epsilon_spent"] == pytest.approx(2.0, rel=1e-4) == rep["epsilon_spent"]
    assert "NOT private" in metrics["disclosures"]["not private"]["accuracy"]
    (d,) = L.Ledger(runs_root).datasets()
    assert d["runs"][0]["source"] == "private-tuning" and len(d["runs"][0]["mechanisms"]) == 4
    assert metrics["ledger"]["epsilon_total"] == pytest.approx(d["epsilon"])


def test_a_killed_search_stays_charged_for_every_candidate_that_started(runs_root, csv,
                                                                       tmp_path, monkeypatch):
    from engine.methods.marginals import method as marginals

    monkeypatch.setattr(T, "draw_k", lambda plan, rng: 6)
    started = []
    real = marginals.train

    def dies_third(*a, **k):
        started.append(1)
        if len(started) == 3:
            raise KeyboardInterrupt  # the process is killed mid-candidate
        yield from real(*a, **k)

    monkeypatch.setattr(marginals, "train", dies_third)
    out = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        T.search(_base(csv), GRID, epsilon=2.0, mean=10, out_dir=out, ledger_root=runs_root)
    (d,) = L.Ledger(runs_root).datasets()
    plan = S.plan_search(epsilon=2.0, delta=1e-5, mean=10, distribution="geometric", grid=GRID)
    assert d["runs"][0]["mechanisms"] == [[plan.multiplier, 1]] * 3
    assert d["epsilon"] == pytest.approx(P.epsilon_for(plan.multiplier, delta=1e-5,
                                                       compositions=3))
    assert not any(out.glob("synthetic*"))  # nothing was released


def test_a_search_is_refused_past_the_cap_before_reading_data(runs_root, csv, tmp_path,
                                                             monkeypatch):
    led = L.Ledger(runs_root)
    led.book(_base(csv), run_id="earlier", source="test")
    led.set_cap(L.dataset_id(_base(csv)).key, 2.0)
    monkeypatch.setattr("engine.data.catalog.load", lambda *a, **k: pytest.fail("data read"))
    with pytest.raises(InputError, match="past its cap"):
        T.search(_base(csv), GRID, epsilon=1.5, mean=10, out_dir=tmp_path / "s",
                 ledger_root=runs_root)


def test_bench_tiny_runs(capsys):
    from tuning import main

    rows = main(["--tiny"])
    assert {(r["data"], r["mode"]) for r in rows} == {
        (d, m) for d in ("digits", "csv") for m in ("private search", "defaults, one run")}
    assert all(r["epsilon"] <= 2.0 + 1e-9 for r in rows)
    assert "NON-private diagnostic" in capsys.readouterr().out


# ------------------------------------------------------------------ the app's job path


def test_a_search_job_runs_through_the_worker_and_stays_on_the_ledger(runs_root, csv,
                                                                     monkeypatch):
    import threading

    from engine.runs.runner import execute
    from engine.store.runs import RunStatus, RunStore
    from engine.jobs.scheduling import run

    monkeypatch.setattr(T, "draw_k", lambda plan, rng: 3)
    store = RunStore(runs_root)
    config = S.search_config(_base(csv), GRID, epsilon=2.0, mean=10)
    rid = store.create_run(config, sweep="my search")
    assert run(store, rid, execute, stop=threading.Event(), full_eval=False) == RunStatus.FINISHED
    rec = store.get_run(rid)
    assert 0 <= rec.metrics["private_search/noisy_validation_accuracy"] <= 1.2
    assert "synthetic/logreg" in rec.metrics
    assert {p.name for p in store.artifact_dir(rid).iterdir()} <= {
        "config.json", "metrics.json", "samples.png", "synthetic.csv", "live.npz"}
    (d,) = L.Ledger(runs_root).datasets()
    (row,) = d["runs"]
    assert row["run_id"] == rid and row["source"] == "private-tuning"
    assert d["sweeps"] == [{"sweep": "my search", "runs": 1, "epsilon": d["epsilon"]}]
    store.delete_run(rid)
    assert L.Ledger(runs_root).datasets()[0]["epsilon"] == d["epsilon"]


def test_runs_page_shows_both_epsilons_and_queues_a_private_search(runs_root):
    from apptest import open_app
    from engine.store.runs import RunStore

    at = open_app()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    plan = S.plan_search(epsilon=2.0, delta=1e-5, mean=10, distribution="geometric",
                         grid={"_": [0]})
    value = {m.label: m.value for m in at.metric}
    assert value["ε by private selection"] == f"{plan.epsilon:.3g}"
    assert value["ε by plain composition"] == f"{plan.plain_epsilon:.3g}"
    at.multiselect(key="pt_knobs").set_value(["lr", "epochs"]).run()
    at.text_input(key="pt_values_lr").set_value("0.003, 0.01, 0.03")
    at.text_input(key="pt_values_epochs").set_value("2, 4")
    at.text_input(key="pt_name").set_value("pt")
    at.button(key="pt_go").click().run()
    assert not at.exception and not at.error
    store = RunStore(runs_root)
    (rec,) = [r for r in store.list_runs() if r.sweep == "pt"]
    assert rec.config.params[S.SPEC]["grid"] == {"lr": [0.003, 0.01, 0.03], "epochs": [2, 4]}
    assert rec.config.epsilon == 2.0
    from engine.jobs.manager import JobManager

    jm = JobManager(store)
    jm.cancel(rec.run_id)
    assert jm.wait(rec.run_id, timeout=600).terminal
    jm.shutdown()
