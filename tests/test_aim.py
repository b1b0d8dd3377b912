"""AIM (engine/methods/aim/method.py): its accounting (engine/privacy/zcdp.py) against dp-accounting and an
independent recomputation from the run's recorded releases, the sensitivities it claims
attacked, the Gaussian-DP charge the ledger composes checked against the exact trade-off
curve of a real selection, and tiny runs (breast_cancer columns, a mixed CSV; stop; ε = ∞;
the preview equals the run; the run path with its ledger charge)."""

import json
import math
import threading
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import expit, softmax
from scipy.stats import norm

from engine.methods.aim import method as aim
from engine.methods.aim import plan as aim_plan
from engine.privacy import zcdp
from engine.core.config import RunConfig
from engine.data.catalog import load
from engine.data.dataset import Dataset
from engine.core.errors import InputError
from engine.methods.registry import make_params

pytest.importorskip("mbi")

TINY = {"bins": 2, "iters": 5, "final_iters": 5, "rounds": 3}


def _rdp_eps(rho: float, delta: float) -> float:
    """dp-accounting's RDP accountant on a ρ-zCDP event, on a dense order grid."""
    from dp_accounting import dp_event, rdp

    orders = np.concatenate([1 + np.logspace(-3, 0, 400), np.linspace(2.01, 2000, 4000)])
    acct = rdp.RdpAccountant(orders=list(orders))
    acct.compose(dp_event.ZCDpEvent(rho))
    return float(acct.get_epsilon(delta))


# ------------------------------------------------------------------ accounting


@pytest.mark.parametrize("rho,delta", [(1e-4, 1e-5), (0.03, 1e-5), (0.2, 1e-6), (1.5, 1e-7),
                                       (10.0, 1e-3)])
def test_zcdp_conversion_agrees_with_dp_accounting_and_is_never_optimistic(rho, delta):
    ours, ref = zcdp.epsilon(rho, delta), _rdp_eps(rho, delta)
    assert ours == pytest.approx(ref, rel=2e-3)
    assert ours <= ref + 1e-9  # the continuous optimum is at most the grid's
    # Bun–Steinke's simpler bound is valid and never tighter.
    assert ours <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12


@pytest.mark.parametrize("eps,delta", [(0.3, 1e-5), (1.0, 1e-5), (3.0, 1e-7)])
def test_rho_calibration_never_overshoots(eps, delta):
    rho = zcdp.rho_for(eps, delta)
    assert _rdp_eps(rho, delta) <= eps * (1 + 2e-3)
    assert zcdp.epsilon(rho, delta) <= eps
    assert zcdp.epsilon(rho * 1.001, delta) > eps  # and not wasted


@pytest.mark.parametrize("eps", [1e-3, 0.02, 0.3, 1.0, 4.0, 12.0])
def test_bounded_range_mu_is_the_worst_two_point_pair(eps):
    """The closed form (t = ε/2) is the maximum over every split of the ε range, and is
    under √(π/8)·ε, the constant the budget plan uses."""
    grid = max(zcdp.two_point_mu(eps, t) for t in np.linspace(eps * 1e-4, eps * (1 - 1e-4), 2001))
    mu = zcdp.bounded_range_mu(eps)
    assert grid <= mu * (1 + 1e-9)
    assert mu == pytest.approx(2 * norm.ppf(expit(eps / 2)))
    assert mu <= math.sqrt(zcdp.BR_MU2_PER_EPS2) * eps


def _tradeoff(p: np.ndarray, q: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """The exact trade-off curve T(P, Q) of two discrete distributions (Neyman–Pearson:
    reject P where Q/P is largest, randomising on the boundary)."""
    order = np.argsort(-(q / np.maximum(p, 1e-300)))
    cp, cq = np.concatenate([[0], np.cumsum(p[order])]), np.concatenate([[0], np.cumsum(q[order])])
    return 1 - np.interp(alphas, cp, cq)


def test_a_real_selection_is_dominated_by_its_gaussian_charge():
    """The exponential mechanism as `train` runs it, on qualities of a dataset and a
    neighbour (every score moved by up to Δ_q in either direction): its exact trade-off
    curve lies above the Gaussian-DP curve the ledger is charged with."""
    rng = np.random.default_rng(0)
    alphas = np.linspace(0, 1, 2001)
    for eps in (0.05, 0.5, 2.0):
        mu = zcdp.bounded_range_mu(eps)
        for _ in range(50):
            sens = 2.0 * rng.uniform(1, 5)
            q0 = rng.normal(0, 3 * sens, rng.integers(2, 30))
            q1 = q0 + rng.uniform(-sens, sens, len(q0)) * rng.integers(0, 2, len(q0))
            i = rng.integers(len(q0))
            q1[i] = q0[i] + sens  # and one extreme move
            p0, p1 = (softmax(eps * q / (2 * sens)) for q in (q0, q1))
            gauss = norm.cdf(norm.isf(alphas) - mu)
            for a, b in ((p0, p1), (p1, p0)):
                assert (_tradeoff(a, b, alphas) >= gauss - 1e-9).all()


def _quality_gap(rng, d=3, size=3, n=30):
    """|q(D) − q(D')| / w for a random table, a replaced record and a fixed model."""
    x = rng.integers(0, size, (n, d))
    x2 = x.copy()
    x2[rng.integers(n)] = rng.integers(0, size, d)
    cl = tuple(sorted(rng.choice(d, 2, replace=False)))
    est = rng.uniform(0, n / size ** 2, size ** 2)

    def marginal(v):
        return np.bincount(v[:, cl[0]] * size + v[:, cl[1]], minlength=size ** 2)

    l1 = [np.abs(marginal(v) - est).sum() for v in (x, x2)]
    l2 = np.linalg.norm(marginal(x) - marginal(x2))
    return abs(l1[0] - l1[1]), l2


def test_sensitivities_hold_under_replace_one():
    """A replaced record moves a marginal by at most √2 (L2) and the quality score by at
    most 2 per unit of weight, the paper's add/remove values doubled in L1."""
    rng = np.random.default_rng(1)
    gaps = [_quality_gap(rng) for _ in range(3000)]
    assert max(g for g, _ in gaps) <= aim_plan.MARGINAL_L1_SENSITIVITY + 1e-9
    assert max(l2 for _, l2 in gaps) <= aim_plan.MARGINAL_SENSITIVITY + 1e-9
    assert max(l2 for _, l2 in gaps) == pytest.approx(math.sqrt(2))  # attained


def test_the_budget_meets_the_ledgers_plan_for_any_split():
    """Whatever share the selections take, c·ρ stays within the planned 1/z²."""
    from engine.privacy import accountant as privacy

    cfg = RunConfig(method="aim", epsilon=1.0, delta=1e-5)
    for a in (0.1, 0.5, 0.9, 0.99):
        b = aim_plan.plan_budget(cfg, measure_share=a, bounds_share=0.1, n_private_bounds=3)
        z = privacy.calibrate_noise_multiplier(epsilon=1.0, delta=1e-5)
        rho_m, eps_s = a * b.rho, math.sqrt(8 * (1 - a) * b.rho)
        mu2 = 2 * rho_m + zcdp.bounded_range_mu(eps_s) ** 2 + (b.bounds_sensitivity / b.bounds_sigma) ** 2
        assert mu2 <= 1 / z ** 2


# ------------------------------------------------------------------ runs


def _cancer(columns: int = 4) -> Dataset:
    data = load("breast_cancer")
    return replace(data, x_train=data.x_train[:, :columns], x_test=data.x_test[:, :columns],
                   columns=data.columns[:columns])


def _run(data, epsilon=1.0, stop=None, **over):
    config = RunConfig(method="aim", dataset=data.name, epsilon=epsilon, delta=1e-5, seed=0)
    params = make_params("aim", data, {**TINY, **over})
    return config, params, list(aim.train(config, params, data, "cpu", stop or threading.Event()))


def _independent_epsilons(report: dict, delta: float) -> tuple[float, float]:
    """(Gaussian-DP ε, zCDP ε) from the recorded σ's and selection ε's only, by
    dp-accounting: μ² = Σ Δ²/σ² + Σ (2Φ⁻¹(sigmoid(ε_t/2)))², ρ = Σ Δ²/(2σ²) + Σ ε_t²/8."""
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

    gauss = [r for r in report["releases"] if r["kind"] == "gaussian"]
    sel = [r for r in report["releases"] if r["kind"] == "exponential"]
    mu2 = sum((r["sensitivity"] / r["sigma"]) ** 2 for r in gauss) + \
        sum((2 * norm.ppf(expit(r["epsilon"] / 2))) ** 2 for r in sel)
    rho = sum(r["sensitivity"] ** 2 / (2 * r["sigma"] ** 2) for r in gauss) + \
        sum(r["epsilon"] ** 2 / 8 for r in sel)
    return get_epsilon_gaussian(mu2 ** -0.5, delta), _rdp_eps(rho, delta)


def test_tiny_run_on_breast_cancer_reports_an_epsilon_recomputed_independently():
    data = _cancer()
    config, params, events = _run(data, epsilon=1.0)
    res = events[-1].result
    rep = res.privacy.to_dict()
    assert res.x.shape == (data.n_train, 4) and set(np.unique(res.y)) <= {0, 1}
    assert rep["selections"] == res.info["selections"] >= 1
    assert rep["measurements"] == len(res.info["measured"]) + 1  # + the bounds histogram
    gdp, z = _independent_epsilons(rep, config.delta)
    assert rep["epsilon_gaussian_dp"] == pytest.approx(gdp, abs=1e-6)
    assert rep["epsilon_zcdp"] == pytest.approx(z, rel=2e-3)
    assert rep["epsilon_spent"] == min(rep["epsilon_gaussian_dp"], rep["epsilon_zcdp"])
    assert rep["epsilon_spent"] <= config.epsilon
    assert rep["epsilon_gaussian_dp"] > 0.9 * config.epsilon  # the budget is used
    # Synthetic values stay inside the bins (released bounds): post-processing only.
    for j, (lo, hi) in enumerate(res.info["numeric_bounds"].values()):
        assert lo <= res.x[:, j].min() and res.x[:, j].max() <= hi


def test_preview_equals_run():
    data = _cancer()
    config, params, events = _run(data)
    preview = aim.privacy_preview(config, params, data)
    res = events[-1].result
    rep = res.privacy.to_dict()
    assert preview["zCDP budget of the rounds (rho)"] == rep["rho_budget"]
    assert preview["first rounds: noise std per count"] == res.info["first_sigma"]
    first = next(r for r in rep["releases"] if r["name"].startswith("marginal"))
    assert first["sigma"] == res.info["first_sigma"]
    bounds = rep["releases"][0]
    assert bounds["name"] == "numeric bounds histogram"
    assert preview["numeric bounds: noise std per count"] == bounds["sigma"]


def test_stop_ends_after_the_current_round_with_what_it_spent():
    data = _cancer()
    stop = threading.Event()
    config = RunConfig(method="aim", dataset=data.name, epsilon=1.0, seed=0)
    params = make_params("aim", data, TINY)
    run = aim.train(config, params, data, "cpu", stop)
    assert next(run).phase == "release"
    stop.set()
    events = list(run)
    res = events[-1].result
    rep = res.privacy.to_dict()
    assert res.stopped and res.info["selections"] == 0
    assert rep["selections"] == 0 and rep["epsilon_spent"] < config.epsilon
    assert len(res.y) == data.n_train


def test_infinite_epsilon_runs_without_noise():
    data = _cancer(3)
    config, params, events = _run(data, epsilon=math.inf, rounds=4)
    rep = events[-1].result.privacy.to_dict()
    assert math.isinf(rep["epsilon_spent"]) and rep["accountant"].startswith("none")
    assert all(r["sigma"] == 0 for r in rep["releases"] if r["kind"] == "gaussian")
    assert rep["selections"] == 4  # `rounds` rounds after the one-way marginals


def _mixed_csv(tmp_path, n=200):
    rng = np.random.default_rng(0)
    colour = rng.choice(["red", "green", "blue"], n)
    age = rng.integers(18, 90, n)
    label = np.where((colour == "red") ^ (age > 50), "yes", "no")
    path = tmp_path / "mixed.csv"
    path.write_text("age,colour,label\n" + "\n".join(f"{a},{c},{y}" for a, c, y in
                                                      zip(age, colour, label)) + "\n")
    return {"path": str(path), "label": "label", "bounds": {"age": [0, 100]}}


def test_mixed_csv_runs_and_keeps_categories(tmp_path):
    data = load("csv", options=_mixed_csv(tmp_path))
    config, params, events = _run(data, epsilon=3.0, bins=4)
    res = events[-1].result
    cat = [j for j, c in enumerate(data.columns) if c.kind == "cat"][0]
    assert set(np.unique(res.x[:, cat])) <= set(range(len(data.columns[cat].categories)))
    num = 1 - cat
    assert 0 <= res.x[:, num].min() and res.x[:, num].max() <= 100  # public bounds
    rep = res.privacy.to_dict()
    assert rep["epsilon_spent"] <= 3.0
    assert not any(r["name"] == "numeric bounds histogram" for r in rep["releases"])


def test_images_and_bad_knobs_are_refused(digits):
    with pytest.raises(InputError, match="models tables"):
        make_params("aim", digits)
    with pytest.raises(InputError, match="'rounds' parameter"):
        make_params("aim", _cancer(), {"rounds": 0})


def test_run_path_charges_the_ledger_within_its_plan(tmp_path):
    """Through the runner: metrics.json carries the report, and the ledger's settled
    charge (exact Gaussian-DP composition of the releases) is the run's own ε, no more
    than the planned one it replaced."""
    from engine.privacy import ledger as ledger
    from engine.runs import runner

    data_cfg = RunConfig(method="aim", dataset="csv", epsilon=1.0, delta=1e-5,
                         data_options=_mixed_csv(tmp_path), params=TINY)
    out = tmp_path / "run"
    *_, done = runner.execute(data_cfg, out, full_eval=False)
    metrics = json.loads((out / "metrics.json").read_text())
    rep = metrics["privacy"]
    assert metrics["status"] == "finished" and rep["selections"] >= 1
    led = ledger.Ledger()
    row = next(r for d in led.datasets() for r in d["runs"] if r["run_id"] == str(out))
    assert row["state"] == "final"
    settled = ledger.total_epsilon(row["mechanisms"], delta=1e-5)
    assert settled == pytest.approx(rep["epsilon_gaussian_dp"], rel=1e-9)
    assert settled <= ledger.total_epsilon(ledger.planned(data_cfg), delta=1e-5) * (1 + 1e-9)
    assert metrics["ledger"]["epsilon_total"] <= 1.0 + 1e-9


def test_bench_tiny_configuration_runs(capsys):
    from bench.aim import main

    main(["--seeds", "1", "--datasets", "mixed", "--n", "300",
          "--aim", "{'bins': 2, 'iters': 5, 'final_iters': 5}"])
    out = capsys.readouterr().out
    assert "mixed" in out and "aim" in out and "marginals" in out and "peak resident" in out
