"""What every registered method must do (engine/methods/registry.py's contract), checked for each
method in `engine.methods.registry.METHODS` — a method added later is covered without a line
here — and for the toy method of tests/toy_method.py, registered here only, which proves
that a method is one module plus one registry line.

A tiny run on the first tiny dataset the method accepts: it ends with a TrainResult and
a PrivacyReport within budget, its noise is the noise accounted; a stop before (or at)
the first step ends it cleanly; ε = ∞ draws no noise and reports ∞; the preview
announces the noise the run then reports; the method has an audit through its run path
(run by tests/test_audit.py).
"""

import math
import threading
from dataclasses import replace

import pytest

import toy_method
from engine.audit import lower_bound as audit
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.methods import registry
from engine.methods.events import TrainResult
from engine.privacy.accountant import NON_PRIVATE, PrivacyReport, releases_epsilon
from engine.methods.registry import METHODS, get_method, make_params, part

N_SYNTHETIC = 30
EPSILON = 1.0


@pytest.fixture(params=[*METHODS, toy_method.NAME])
def method(request, monkeypatch):
    """Each registered method, and the toy, registered by its one line for the test."""
    if request.param == toy_method.NAME:
        monkeypatch.setitem(registry.METHODS, toy_method.NAME, toy_method.__name__)
    return request.param


def _tiny(method: str) -> dict:
    """The method's own settings for a run of seconds (TINY_PARAMS; else its defaults)."""
    return dict(part(method, "TINY_PARAMS", {}))


@pytest.fixture
def setup(method, digits, breast_cancer):
    """(config at ε = 1, validated params, data) on the first dataset the method takes.
    A table's first 8 columns: the contract does not depend on the width, and AIM's
    candidate filter builds a junction tree per pair and triple of columns (on all 31,
    its three runs here took 45 s of the suite; tests/test_aim.py uses 4 columns)."""
    over = _tiny(method)
    table = replace(breast_cancer, x_train=breast_cancer.x_train[:, :8],
                    x_test=breast_cancer.x_test[:, :8], columns=breast_cancer.columns[:8])
    for data in (digits, table):
        try:
            params = make_params(method, data, over)
        except InputError:
            continue
        config = RunConfig(method=method, dataset=data.name, epsilon=EPSILON,
                           n_synthetic=N_SYNTHETIC, params=over)
        return config, params, data
    pytest.fail(f"{method} accepts neither digits nor breast_cancer")


def _run(config, params, data, stop=None, stop_at_first_event=False):
    stop = stop or threading.Event()
    events = []
    for event in get_method(config.method).train(config, params, data, "cpu", stop):
        events.append(event)
        if stop_at_first_event:
            stop.set()
    return events


def _result(events) -> TrainResult:
    last = events[-1]
    assert last.phase == "done" and isinstance(last.result, TrainResult), last
    assert isinstance(last.result.privacy, PrivacyReport)
    return last.result


def _assert_noise_accounted(report, drawn):
    sigmas = {r.sigma for r in report.releases}
    gaussian = {r.sigma for r in report.releases if r.details.get("kind", "gaussian") == "gaussian"}
    assert drawn and all(any(math.isclose(s, t, rel_tol=1e-12) for t in sigmas) for s in drawn)
    assert all(any(math.isclose(s, t, rel_tol=1e-12) for s in drawn) for t in gaussian)


def test_every_other_dataset_it_takes_draws_only_the_noise_it_reports(method, digits,
                                                                      breast_cancer, drawn):
    """The tiny run's noise check on each further dataset the method takes: a table
    without public bounds (breast_cancer) adds a private bounds release, whose σ at the
    call site must be the reported one too."""
    taken = []
    for data in (digits, breast_cancer):
        try:
            taken.append((data, make_params(method, data, _tiny(method))))
        except InputError:
            continue
    for data, params in taken[1:]:  # the first: the tiny run's test above
        drawn.clear()
        config = RunConfig(method=method, dataset=data.name, epsilon=EPSILON,
                           n_synthetic=N_SYNTHETIC, params=_tiny(method))
        _assert_noise_accounted(_result(_run(config, params, data)).privacy, drawn)


def test_a_tiny_run_ends_with_a_result_within_budget_and_its_noise_accounted(setup, drawn):
    config, params, data = setup
    events = _run(config, params, data)
    result = _result(events)
    report = result.privacy
    assert result.stopped is False
    assert len(result.x) == len(result.y) == N_SYNTHETIC
    assert 0 < report.epsilon_spent <= EPSILON
    assert all(e.epsilon_spent <= EPSILON for e in events)
    # The accountant's ε of the releases as recorded, composed at the δ the run targets
    # (not at the δ a run says it used): a σ calibrated for another δ shows here. A
    # calibrated plan spends its target (AIM's, planned in zCDP, within 5 % by exact
    # Gaussian DP); DataLens stops at the last affordable step.
    recorded = releases_epsilon(report.releases, delta=config.delta)
    assert report.delta == config.delta
    assert recorded <= EPSILON * (1 + 1e-6), recorded
    if config.method != "datalens":
        assert recorded >= EPSILON * 0.95, recorded
    assert report.releases and all(r.sigma > 0 and r.count > 0 for r in report.releases)
    # every draw is one of the reported releases' noise, and every Gaussian release was
    # drawn (an exponential-mechanism selection, AIM's, is reported by the Gaussian that
    # dominates it: no Gaussian noise of that σ is drawn)
    _assert_noise_accounted(report, drawn)
    assert set(report.to_dict()) >= {"epsilon_target", "epsilon_spent", "delta", "accountant",
                                     "releases"}


def test_a_stop_set_before_the_first_step_ends_the_run_stopped(setup):
    config, params, data = setup
    stop = threading.Event()
    stop.set()
    result = _result(_run(config, params, data, stop))
    assert result.stopped is True
    assert result.privacy.epsilon_spent <= EPSILON


def test_a_stop_at_the_first_event_ends_the_run_cleanly(setup):
    config, params, data = setup
    events = _run(config, params, data, stop_at_first_event=True)
    result = _result(events)
    assert result.privacy.epsilon_spent <= EPSILON
    # It ends at once: at most its last samples and the "done" event after the stop (a
    # method that ignores stop trains on, event after event).
    assert len(events) <= 3, [(e.phase, e.step) for e in events]
    if not result.stopped:  # only a run with nothing left after its first event may finish
        assert events[-1].step == events[-1].total


def test_epsilon_infinity_draws_no_noise_and_reports_infinity(setup, drawn):
    config, params, data = setup
    config = RunConfig(method=config.method, dataset=config.dataset, epsilon=math.inf,
                       n_synthetic=N_SYNTHETIC, params=config.params)
    report = _result(_run(config, params, data)).privacy
    assert math.isinf(report.epsilon_spent) and report.accountant == NON_PRIVATE
    assert all(r.sigma == 0 for r in report.releases)
    assert all(s == 0 for s in drawn)


def test_the_preview_announces_the_noise_the_run_reports(setup):
    config, params, data = setup
    preview = get_method(config.method).privacy_preview(config, params, data)
    report = _result(_run(config, params, data)).privacy
    multipliers = {r.multiplier for r in report.releases} | {report.noise_multiplier}
    stds = {r.sigma for r in report.releases}
    announced = 0
    for key, value in preview.items():
        if "noise multiplier" in key:
            assert any(math.isclose(value, z, rel_tol=1e-12) for z in multipliers if z), key
            announced += 1
        elif "noise std" in key:
            assert any(math.isclose(value, s, rel_tol=1e-12) for s in stds), key
            announced += 1
    assert announced, f"{config.method}'s preview states no noise"
    assert preview["accountant"] == report.accountant
    if "affordable steps" in preview:
        assert preview["affordable steps"] == report.steps


def test_the_method_has_an_audit_through_its_run_path(method):
    """Its AUDIT module declares audits (tests/test_audit.py runs them, the toy's too)."""
    names = audit.method_audits().get(method, ())
    assert names, f"{method} has no audit (its AUDIT module's RELEASES)"
    assert all(n in audit.releases() for n in names)
