"""The accountant: calibration never overshoots, tight vs RDP ordering, golden values,
and an independent cross-check with Google's dp-accounting."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.methods.datalens import accounting as datalens_accounting
from engine.privacy import accountant as P
from engine.core.errors import InputError


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.05, 20), log_delta=st.floats(-9, -2), t=st.integers(1, 500),
       acc=st.sampled_from(sorted(P.ACCOUNTANTS)))
def test_calibrated_sigma_never_exceeds_target(eps, log_delta, t, acc):
    delta = 10 ** log_delta
    z = P.calibrate_noise_multiplier(epsilon=eps, delta=delta, compositions=t, accountant=acc)
    assert P.epsilon_for(z, delta=delta, compositions=t, accountant=acc) <= eps
    # ... and is tight: 1% less noise would overshoot.
    assert P.epsilon_for(z * 0.99, delta=delta, compositions=t, accountant=acc) > eps


def test_golden_values_of_the_two_papers_settings():
    # One release at eps=1, delta=1e-5: σ ≈ 3.73 with the exact (analytic) Gaussian
    # (Balle & Wang 2018), ≈ 5 with the RDP call of the official DP-MERF code.
    assert P.calibrate_noise_multiplier(epsilon=1, delta=1e-5) == pytest.approx(3.7306, abs=1e-3)
    assert P.calibrate_noise_multiplier(epsilon=1, delta=1e-5, accountant="rdp-classic") == \
        pytest.approx(4.90, abs=0.02)
    # DataLens paper setting: k=200, σ=5000, 15 records/step → 149 exact vs 86 classic RDP.
    kw = dict(epsilon=1.0, delta=1e-5, top_k=200, sigma=5000, batch=15)
    assert datalens_accounting.affordable_steps(**kw) == 149
    assert datalens_accounting.affordable_steps(**kw, accountant="rdp-classic") == 86
    assert 86 <= datalens_accounting.affordable_steps(**kw, accountant="rdp") <= 149


def test_exact_is_tighter_than_rdp():
    for z, t in [(1.0, 1), (3.0, 10), (50.0, 2000)]:
        exact = P.epsilon_for(z, delta=1e-5, compositions=t)
        assert exact <= P.epsilon_for(z, delta=1e-5, compositions=t, accountant="rdp") + 1e-9
        assert exact <= P.epsilon_for(z, delta=1e-5, compositions=t, accountant="rdp-classic") + 1e-9


@pytest.mark.parametrize("z,t,delta", [(1.0, 1, 1e-5), (3.73, 1, 1e-5), (5.0, 4, 1e-6),
                                       (20.0, 100, 1e-5), (176.8, 2235, 1e-5)])
def test_exact_matches_dp_accounting(z, t, delta):
    """Independent check: dp-accounting's exact Gaussian formula on the equivalent single
    Gaussian (T compositions of multiplier z = one with z/√T), and its PLD accountant."""
    from dp_accounting import dp_event, pld
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian  # noqa: F401

    ours = P.epsilon_for(z, delta=delta, compositions=t)
    ref = get_epsilon_gaussian(z / math.sqrt(t), delta)
    assert ours == pytest.approx(ref, rel=1e-3)
    acct = pld.PLDAccountant()  # add/remove Gaussian: N(0,z²) vs N(1,z²), as ours
    acct.compose(dp_event.GaussianDpEvent(z), t)
    pld_eps = acct.get_epsilon(delta)
    # PLD discretisation is pessimistic: it may report a little more, never much less.
    assert pld_eps >= ours * (1 - 1e-3)
    assert pld_eps == pytest.approx(ours, rel=0.03)


@pytest.mark.parametrize("z,t", [(1.0, 1), (4.0, 10), (100.0, 1000)])
def test_rdp_matches_dp_accounting(z, t):
    from dp_accounting import dp_event, rdp

    ours = P.epsilon_for(z, delta=1e-5, compositions=t, accountant="rdp")
    acct = rdp.RdpAccountant()
    acct.compose(dp_event.GaussianDpEvent(z), t)
    assert ours == pytest.approx(acct.get_epsilon(1e-5), rel=0.05)


def test_heterogeneous_releases_meet_budget_and_shares():
    rel = [P.Release("bounds", 7.7, share=0.1), P.Release("counts", math.sqrt(2), share=0.05),
           P.Release("embedding", 2 / 1000, share=0.85)]
    for acc in P.ACCOUNTANTS:
        rep = P.calibrate_releases(epsilon=1.0, delta=1e-5, releases=rel, accountant=acc)
        assert rep.epsilon_spent <= 1.0
        assert rep.epsilon_spent > 0.999
        zs = [r.noise_multiplier for r in rep.releases]
        # The smaller a release's share, the more noise it gets.
        assert zs[2] < zs[0] < zs[1]
        assert all(r.sigma == pytest.approx(r.noise_multiplier * r.sensitivity)
                   for r in rep.releases)


def test_non_private_run_reports_infinite_epsilon():
    rep = P.calibrate_releases(epsilon=math.inf, delta=1e-5, releases=[P.Release("e", 0.1)])
    assert rep.epsilon_spent == math.inf and rep.releases[0].sigma == 0
    assert "non-private" in rep.accountant


def test_calibration_is_computed_once_per_budget(monkeypatch):
    """The Playground asks for σ on every rerun: a repeated budget is answered from the
    cache, without a single call to the accountant."""
    P.calibrate_noise_multiplier.cache_clear()
    first = P.calibrate_noise_multiplier(epsilon=0.7, delta=1e-6, compositions=3)
    calls = []
    real = P.epsilon_for
    monkeypatch.setattr(P, "epsilon_for", lambda *a, **k: calls.append(a) or real(*a, **k))
    for _ in range(100):
        assert P.calibrate_noise_multiplier(epsilon=0.7, delta=1e-6, compositions=3) == first
    assert calls == []
    P.calibrate_noise_multiplier(epsilon=0.71, delta=1e-6, compositions=3)
    assert calls  # a new budget does reach the accountant (the probe above can see it)


def test_bad_inputs_raise_input_error():
    with pytest.raises(InputError, match="delta"):
        P.epsilon_for(1.0, delta=1.5)
    with pytest.raises(InputError, match="accountant"):
        P.epsilon_for(1.0, delta=1e-5, accountant="moments")
    with pytest.raises(InputError, match="epsilon"):
        P.calibrate_noise_multiplier(epsilon=0, delta=1e-5)


def test_datalens_budget_stop_is_exact():
    kw = dict(delta=1e-5, top_k=10, sigma=60.0, batch=8)
    steps = datalens_accounting.affordable_steps(epsilon=2.0, **kw)
    assert steps > 0
    assert datalens_accounting.spent_epsilon(steps=steps, **kw) <= 2.0 < datalens_accounting.spent_epsilon(steps=steps + 1, **kw)
