"""AIM's workload and rounds as the paper (and issue 41) has them: the label's marginals
first (engine/methods/aim/plan.py), T = 16·d rounds, the one-way budget of the paper's
first round, and the rounds' budget split summing to the accountant's target."""

import itertools
import math
from dataclasses import replace

import pytest

from engine.core.config import RunConfig
from engine.data import column_kinds
from engine.data.catalog import load
from engine.methods.aim import method as aim
from engine.methods.aim import plan as aim_plan
from engine.methods.registry import make_params
from engine.privacy import accountant as privacy
from engine.privacy import zcdp

NAMES = ["a", "b", "c", "d", aim_plan.LABEL]
SIZES = [2, 3, 4, 5, 2]


def test_label_cliques_weigh_one_and_other_pairs_other_weight():
    work = dict(aim_plan.workload(NAMES, SIZES, 3, 0.1, 10_000))
    label = [cl for cl in work if aim_plan.LABEL in cl]
    assert len(label) == math.comb(4, 2) and all(len(cl) == 3 for cl in label)
    assert all(work[cl] == 1.0 for cl in label)
    other = [cl for cl in work if aim_plan.LABEL not in cl]
    assert sorted(other) == sorted(itertools.combinations("abcd", 2))
    assert all(work[cl] == 0.1 for cl in other)


def test_degree_two_and_zero_other_weight_leave_the_label_pairs_only():
    work = dict(aim_plan.workload(NAMES, SIZES, 2, 0.0, 10_000))
    assert sorted(work) == [(f, aim_plan.LABEL) for f in "abcd"]


def test_max_cells_drops_large_cliques():
    work = dict(aim_plan.workload(NAMES, SIZES, 3, 0.1, 30))
    assert ("c", "d", aim_plan.LABEL) not in work  # 4·5·2 = 40 cells
    assert ("c", "d") in work and ("a", "b", aim_plan.LABEL) in work


def test_candidates_are_the_closure_scored_by_weighted_coverage():
    work = aim_plan.workload(NAMES, SIZES, 3, 0.1, 10_000)
    cand = aim_plan.candidates(work)
    assert set(cand) == {sub for cl, _ in work for r in range(1, len(cl) + 1)
                         for sub in itertools.combinations(cl, r)}
    # The label sits in 6 label cliques (weight 1 each): score 6.
    assert cand[(aim_plan.LABEL,)] == pytest.approx(6.0)
    # "a" sits in 3 label cliques and 3 other pairs: 3 + 0.3.
    assert cand[("a",)] == pytest.approx(3.3)
    # A pair with the label outscores the same-size pair without it.
    assert cand[("a", aim_plan.LABEL)] > cand[("a", "b")]
    assert [len(c) for c in cand] == sorted(len(c) for c in cand)  # smallest first


def _cancer(columns: int):
    data = load("breast_cancer")
    return replace(data, x_train=data.x_train[:, :columns], x_test=data.x_test[:, :columns],
                   columns=data.columns[:columns])


def test_default_rounds_are_sixteen_per_attribute():
    for data in (_cancer(4), load("breast_cancer")):
        d = len(column_kinds.model_view(data).columns) + 1
        params = make_params("aim", data)
        assert d + params.rounds == 16 * d
        assert params.degree == 3 and params.other_weight == 0.1


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_first_round_is_the_papers_and_the_split_sums_to_the_target(epsilon):
    """σ = Δ·√(T/(2·0.9·ρ)) for the one-way marginals and the first rounds; spending ρ
    over the rounds meets the accountant's calibrated multiplier exactly."""
    cfg = RunConfig(method="aim", epsilon=epsilon, delta=1e-5)
    data = _cancer(4)
    params = make_params("aim", data)
    d = len(column_kinds.model_view(data).columns) + 1
    budget, sigma, eps_t, rho_oneway = aim._plan(cfg, params, data)
    T = 16 * d
    assert sigma == pytest.approx(math.sqrt(2) * math.sqrt(T / (2 * 0.9 * budget.rho)))
    assert eps_t == pytest.approx(math.sqrt(8 * 0.1 * budget.rho / T))
    assert rho_oneway == pytest.approx(d * 0.9 * budget.rho / T)
    z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=1e-5)
    mu2_b = (budget.bounds_sensitivity / budget.bounds_sigma) ** 2 if budget.bounds_sigma else 0
    # The whole ρ spent (measurements 0.9, selections 0.1): μ² of the run = the target's.
    mu2 = 2 * 0.9 * budget.rho + 8 * zcdp.BR_MU2_PER_EPS2 * 0.1 * budget.rho + mu2_b
    assert mu2 == pytest.approx(1 / z ** 2, rel=1e-6) and mu2 <= 1 / z ** 2


def test_a_run_measures_the_label_first_and_reports_its_workload():
    """A tiny run with the default workload selects label cliques (weight 1 beats 0.1),
    and the preview counts the workload the run uses. Without noise the selections are
    the qualities' argmax, so the claim is the workload's, not a draw's: at ε = 3 the
    exponential mechanism picked label cliques in 2 of 5 rounds of one run of this size."""
    data = _cancer(4)
    cfg = RunConfig(method="aim", dataset=data.name, epsilon=math.inf, delta=1e-5, seed=0)
    params = make_params("aim", data, {"bins": 2, "iters": 5, "final_iters": 5, "rounds": 6})
    events = list(aim.train(cfg, params, data, "cpu", None))
    info = events[-1].result.info
    picked = [cl for cl in info["measured"] if len(cl) > 1]
    assert picked and sum(aim_plan.LABEL in cl for cl in picked) > len(picked) / 2
    preview = aim.privacy_preview(cfg, params, data)
    assert preview["workload marginals"] == math.comb(4, 2) + math.comb(4, 2)
