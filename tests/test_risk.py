"""engine/privacy/risk.py: the hypothesis-testing bound against closed forms and autodp's f-DP,
its figures, ε in words, and `python -m engine risk`."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from engine.privacy import accountant as privacy
from engine.privacy import risk
from engine.cli.commands import main
from engine.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GRID = np.linspace(0, 1, 200_001)


def test_epsilon_one_closed_forms():
    s = risk.summary(risk.for_epsilon(1.0, 0.0))
    assert round(s["max advantage"], 3) == 0.462
    assert round(s["best accuracy"], 3) == 0.731
    assert round(s["TPR at 1% FPR"], 3) == 0.027
    assert s["max advantage"] == pytest.approx((math.e - 1) / (math.e + 1))
    assert s["TPR at 1% FPR"] == pytest.approx(math.e * 0.01)
    assert s["TPR at 0.1% FPR"] == pytest.approx(math.e * 0.001)
    # From a 1 % prior the odds grow at most e-fold.
    assert s["posterior"] == pytest.approx(math.e * 0.01 / (math.e * 0.01 + 0.99))


def test_gaussian_mu_one_closed_forms():
    s = risk.summary(risk.for_gaussian(1.0))
    assert round(s["TPR at 1% FPR"], 3) == 0.092
    assert round(s["max advantage"], 3) == 0.383
    assert s["max advantage"] == pytest.approx(2 * norm.cdf(0.5) - 1)
    assert s["best accuracy"] == pytest.approx((1 + s["max advantage"]) / 2)


@pytest.mark.parametrize("eps, delta", [(0.1, 0.0), (1.0, 1e-5), (2.0, 0.01), (4.0, 0.1)])
def test_advantage_formula_is_the_curves_maximum(eps, delta):
    t = risk.for_epsilon(eps, delta)
    adv = risk.summary(t)["max advantage"]
    assert adv == pytest.approx((math.exp(eps) - 1 + 2 * delta) / (math.exp(eps) + 1))
    assert np.max(t.tpr(GRID) - GRID) == pytest.approx(adv, abs=1e-5)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
def test_gaussian_curve_matches_autodp_fdp_and_its_advantage(mu):
    from autodp.fdp_bank import fDP_gaussian

    t = risk.for_gaussian(mu)
    alphas = np.array([1e-4, 1e-3, 0.01, 0.1, 0.5, 0.9])
    autodp_tpr = np.array([1 - fDP_gaussian({"sigma": 1 / mu}, a) for a in alphas])
    np.testing.assert_allclose(t.tpr(alphas), autodp_tpr, rtol=1e-9)
    assert np.max(t.tpr(GRID) - GRID) == pytest.approx(risk.summary(t)["max advantage"], abs=1e-5)


DESIGN_ADVANTAGES = {0.1: 0.05, 1.0: 0.462, 2.0: 0.76, 4.0: 0.96}


@pytest.mark.parametrize("eps", DESIGN_ADVANTAGES)
def test_advantages_quoted_in_design(eps):
    adv = risk.summary(risk.for_epsilon(eps, 0.0))["max advantage"]
    assert adv == pytest.approx(DESIGN_ADVANTAGES[eps], abs=0.005)


def test_composed_releases_match_autodp_compose_gaussian():
    from autodp.mechanism_zoo import ExactGaussianMechanism
    from autodp.transformer_zoo import ComposeGaussian

    report = {"epsilon_spent": 1.0, "delta": 1e-5, "releases": [
        {"name": "a", "sensitivity": 2.0, "count": 3, "sigma": 4.0},     # z = 2
        {"name": "b", "sensitivity": 0.5, "count": 5, "sigma": 1.5}]}    # z = 3
    t = risk.for_report(report)
    assert t.mu == pytest.approx(math.sqrt(3 / 4 + 5 / 9))
    composed = ComposeGaussian()([ExactGaussianMechanism(2.0), ExactGaussianMechanism(3.0)], [3, 5])
    for a in (1e-3, 0.01, 0.2, 0.7):
        assert t.tpr(a) == pytest.approx(1 - composed.get_fDP(a), rel=1e-9)


@pytest.mark.parametrize("entry", ["digits-dpmerf-eps1-seed0", "digits-datalens-eps1-seed0",
                                   "digits-dpmerf-eps10-seed0"])
def test_a_runs_curve_agrees_with_its_epsilon_and_lies_under_its_bound(entry):
    report = json.loads((ROOT / "assets/gallery" / entry / "metrics.json").read_text())["privacy"]
    t = risk.for_report(report)
    # The accountant's ε for this μ at the run's δ is the ε the run reports.
    assert privacy.epsilon_for(1 / t.mu, delta=t.delta) == pytest.approx(t.epsilon, rel=1e-4)
    bound = risk.for_epsilon(t.epsilon, t.delta)
    assert np.all(t.tpr(GRID) <= bound.tpr(GRID) + 1e-9)


def test_non_private_releases_allow_certainty():
    report = json.loads((ROOT / "assets/gallery/digits-datalens-epsinf-seed0/metrics.json")
                        .read_text())["privacy"]
    t = risk.for_report(report)
    assert t.mu == math.inf and math.isinf(t.epsilon)
    np.testing.assert_array_equal(t.tpr([0.0, 0.01, 1.0]), 1.0)
    s = risk.summary(risk.for_epsilon(math.inf, 0.0))
    assert s["max advantage"] == s["best accuracy"] == s["TPR at 0.1% FPR"] == s["posterior"] == 1


def test_gaussian_posterior_uses_the_accountants_epsilon():
    z = 3.0
    t = risk.for_gaussian(1 / z, delta=1e-5)
    eps = privacy.epsilon_for(z, delta=1e-5)
    assert risk.summary(t)["posterior"] == pytest.approx(risk.posterior(0.01, eps))
    assert risk.summary(risk.for_gaussian(1.0))["posterior"] == 1.0  # no finite ε at δ = 0


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(0, 20), delta=st.floats(0, 0.5), mu=st.floats(0, 10))
def test_curves_are_monotone_and_between_guessing_and_certainty(eps, delta, mu):
    for t in (risk.for_epsilon(eps, delta), risk.for_gaussian(mu)):
        y = t.tpr(np.linspace(0, 1, 1001))
        assert np.all(np.diff(y) >= -1e-12)
        assert np.all(y >= np.linspace(0, 1, 1001) - 1e-12) and np.all(y <= 1)
        s = risk.summary(t)
        assert 0 <= s["max advantage"] <= 1 and 0.5 <= s["best accuracy"] <= 1


def test_epsilon_in_words():
    assert risk.in_words(1.0, 0.0) == ("at ε = 1, no one can tell whether your record was used "
                                       "better than 73 % of the time, from a 50/50 guess")
    assert "52 %" in risk.in_words(0.1, 1e-5)
    assert "100 %" not in risk.in_words(10.0, 1e-5)  # 99.995 %, not a rounded certainty
    assert "every time" in risk.in_words(math.inf, 1e-5)


@pytest.mark.parametrize("call,match", [
    (lambda: risk.for_epsilon(-1, 0), r"epsilon must be a number >= 0"),
    (lambda: risk.for_epsilon(1, 1), r"delta must be in \[0, 1\)"),
    (lambda: risk.for_gaussian(-0.5), r"mu must be a number >= 0"),
    (lambda: risk.for_report({}), r"no privacy report"),
    (lambda: risk.for_epsilon(1, 0).tpr([0.5, 1.5]), r"false-positive rate must be in \[0, 1\]"),
    (lambda: risk.summary(risk.for_epsilon(1, 0), prior=0), r"prior must be in \(0, 1\)")])
def test_bad_input_is_an_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_cli_prints_three_decimals_and_strict_json(capsys):
    assert main(["risk", "--epsilon", "1", "--delta", "0"]) == 0
    text = capsys.readouterr().out
    for figure in ("0.462", "0.731", "0.027"):
        assert figure in text
    assert main(["risk", "--epsilon", "1", "--delta", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert round(out["max advantage"], 3) == 0.462 and out["delta"] == 0
    assert main(["risk", "--mu", "1", "--json"]) == 0
    assert round(json.loads(capsys.readouterr().out)["TPR at 1% FPR"], 3) == 0.092


def test_cli_reads_a_run(capsys):
    assert main(["risk", "--run", str(ROOT / "assets/gallery/digits-dpmerf-epsinf-seed0"),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert out["mu"] == "inf" and out["max advantage"] == 1.0


@pytest.mark.parametrize("args", [["risk"], ["risk", "--epsilon", "x"],
                                  ["risk", "--epsilon", "1", "--delta", "2"],
                                  ["risk", "--run", "/nonexistent"]])
def test_cli_bad_input_is_one_line(args):
    proc = subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_plays_the_game_inside_the_bound(capsys):
    assert main(["risk", "--epsilon", "2", "--delta", "1e-5", "--game", "2000", "--json"]) == 0
    g = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))["game"]
    assert g["rounds"] == 2000 and g["fpr_ci"][0] <= g["fpr"] <= g["fpr_ci"][1]
    assert g["curve_tpr"] <= g["bound_tpr"]
    assert main(["risk", "--epsilon", "inf", "--game", "50"]) == 0
    assert "FPR 0.000" in capsys.readouterr().out
