"""engine/teaching/game.py: the membership game's release is the real calibrated mechanism, its
optimal attacker reaches the mechanism's curve (and no further) within its
Clopper–Pearson interval, ε = ∞ is won every round, and the store keeps the rounds."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from engine.teaching import game
from engine.privacy import accountant as privacy
from engine.privacy import risk
from engine.core.errors import InputError
from engine.store.runs import RunStore

# Intervals this wide fail by chance about once in a million runs, not one in twenty.
SURE = 1 - 1e-6


def test_release_is_calibrated_by_the_accountant():
    g = game.Game(1.0)
    z = privacy.calibrate_noise_multiplier(epsilon=1.0, delta=game.GAME_DELTA)
    assert g.sigma == pytest.approx(z * game.SENSITIVITY)
    assert g.curve.mu == pytest.approx(game.SENSITIVITY / g.sigma)
    assert privacy.composed_epsilon(((g.sigma / game.SENSITIVITY, 1),),
                                    delta=game.GAME_DELTA) <= 1.0


def test_neighbours_differ_by_the_stated_sensitivity():
    # Without noise the count is exact: "in" and "out" differ by exactly Δ, never more.
    dealt = game.Game(math.inf).deal(2000)
    assert set(dealt.release - dealt.others) <= {0.0, game.SENSITIVITY}
    np.testing.assert_array_equal(dealt.release - dealt.others, dealt.member * game.SENSITIVITY)
    assert dealt.member.any() and (~dealt.member).any()
    assert dealt.others.min() >= 0 and dealt.others.max() <= game.PEOPLE - 1


def test_noise_is_fresh_and_has_the_calibrated_spread():
    g = game.Game(2.0)
    a, b = g.deal(4000), g.deal(4000)
    noise = a.release - a.others - a.member
    assert not np.array_equal(a.release, b.release)
    # The sample std of 4,000 normals is within 5 % of σ (about 4.5 standard errors).
    assert np.std(noise) == pytest.approx(g.sigma, rel=0.05)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_optimal_attacker_reaches_the_curve_and_stays_under_it(eps):
    g = game.Game(eps)
    p = game.simulate(eps, 20_000, confidence=SURE)
    mu = g.curve.mu
    # The likelihood-ratio test's expected point is on the curve, at max advantage.
    expected = (norm.cdf(-mu / 2), norm.cdf(mu / 2))
    assert float(g.curve.tpr(expected[0])) == pytest.approx(expected[1])
    assert p.fpr_ci[0] <= expected[0] <= p.fpr_ci[1]
    assert p.tpr_ci[0] <= expected[1] <= p.tpr_ci[1]
    # Reaches: the interval box touches the curve; never beyond it, nor beyond (ε, δ).
    assert p.tpr_ci[1] >= float(g.curve.tpr(p.fpr_ci[0]))
    assert p.inside(g.curve) and p.inside(g.bound)


def test_at_infinite_epsilon_the_optimal_attacker_wins_every_round():
    p = game.simulate(math.inf, 500)
    assert (p.fpr, p.tpr) == (0.0, 1.0)
    assert game.Game(math.inf).curve.mu == math.inf


def test_a_point_above_the_bound_is_flagged():
    bound = risk.for_epsilon(0.1, 0.0)
    member = np.array([True] * 500 + [False] * 500)
    assert not game.point(member, member).inside(bound)  # a perfect score at ε = 0.1
    assert game.point(member[:500], member[:500]) is None  # no "out" round yet


def test_bad_epsilon_is_an_input_error():
    with pytest.raises(InputError, match=r"epsilon must be > 0"):
        game.Game(0.0)


def test_store_keeps_rounds_per_epsilon_and_the_room_sees_every_session(tmp_path):
    store = RunStore(tmp_path / "runs")
    assert store.game_rounds(epsilon=1.0) == []
    for session, player in (("s1", "Ada"), ("s2", "")):
        dealt = game.Game(1.0).deal(12)
        for m, o in zip(dealt.member, dealt.optimal_guess()):
            store.add_game_round(session=session, player=player, epsilon=1.0,
                                 delta=game.GAME_DELTA, member=bool(m), guess=True,
                                 optimal=bool(o))
    store.add_game_round(session="s3", player="x", epsilon=game.epsilon_key(math.inf),
                         delta=game.GAME_DELTA, member=True, guess=True, optimal=True)
    rows = store.game_rounds(epsilon=1.0)
    assert len(rows) == 24 and len(store.game_rounds(epsilon=None)) == 1
    view = game.room(rows)
    # A player without a name is "anonymous <tag>", never their stored session key.
    assert [p["player"] for p in view["players"]] == ["Ada", "anonymous player 2"]
    assert [p["tag"] for p in game.room(rows, alias=lambda s: f"al-{s[-1]}")["players"]] \
        == ["al-1", "al-2"]
    assert "s2" not in repr(view)
    for p in view["players"]:
        if p["point"] is not None:  # always guessing "in": TPR = FPR = 1
            assert (p["point"].fpr, p["point"].tpr) == (1.0, 1.0)
    assert view["rounds"] == 24
