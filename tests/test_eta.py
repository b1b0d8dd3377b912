"""Queue and progress estimates (engine/store/eta.py): similar runs, queue simulation, smoothing."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.store import eta
from engine.core.config import RunConfig
from engine.store.records import RunRecord, RunStatus


# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


def _cfg(seed=0, eps=1.0, epochs=5):
    return {"method": "dpmerf", "dataset": "digits", "seed": seed, "epsilon": eps,
            "delta": 1e-5, "params": {"epochs": epochs}}


def test_typical_prefers_the_same_config_then_any_epsilon():
    timings = [{"config": _cfg(seed=1, eps=2.0), "train_s": 50.0, "eval_s": None},
               {"config": _cfg(seed=2), "train_s": 10.0, "eval_s": 4.0},
               {"config": _cfg(seed=3), "train_s": 14.0, "eval_s": 6.0},
               {"config": _cfg(epochs=9), "train_s": 99.0, "eval_s": 9.0}]
    same = eta.typical(timings, _cfg(seed=7))
    assert (same.train_s, same.eval_s, same.total_s) == (12.0, 5.0, 17.0)  # medians
    other_eps = eta.typical(timings[:1], _cfg(seed=7))
    assert other_eps == eta.Typical(50.0, None) and other_eps.total_s == 50.0
    assert eta.typical(timings, _cfg(epochs=3)) == eta.Typical()  # nothing similar
    assert eta.Typical().total_s is None


def _rec(run_id="r", status="running", **kw):
    return RunRecord(run_id=run_id, config=RunConfig(), status=RunStatus(status), created=0.0,
                     **kw)


def _events(start=30.0, per_step=0.1, steps=range(1, 26), slow=(30.0, 31.0)):
    """(step, time) of step events: a slow warm-up (`slow`: the first events' times,
    data loading and the first steps), then `per_step` seconds a step."""
    out = []
    for i, s in enumerate(steps):
        out.append((s, slow[i] if i < len(slow) else slow[-1] + (s - len(slow)) * per_step))
    return out


def test_remaining_uses_the_runs_own_rate_then_the_evaluation():
    usual = eta.Typical(train_s=100.0, eval_s=10.0)
    row = _rec(phase="train", step=25, total=100, started=0.0)
    rate = eta.measured_rate([(s, s * 0.8) for s in range(1, 26)])  # 0.8 s a step
    assert rate.per_step == pytest.approx(0.8)
    assert eta.remaining_s(row, usual, now=20.0, rate=rate) == pytest.approx(60.0 + 10.0)
    # without a measured rate: the usual duration of similar finished runs, never a cold start
    assert eta.remaining_s(row, usual, now=20.0) == pytest.approx(80.0 + 10.0)
    row = _rec(phase="evaluate", step=25, total=100, started=0.0, eval_started=30.0)
    assert eta.remaining_s(row, usual, now=34.0) == pytest.approx(6.0)
    assert eta.remaining_s(row, eta.Typical(100.0, None), now=34.0) is None
    assert eta.remaining_s(_rec(status="queued"), usual) == 110.0
    assert eta.evaluation_progress(row, usual, now=34.0) == (4.0, pytest.approx(0.4))
    assert eta.evaluation_progress(row, usual, now=99.0)[1] == 0.99  # never "done" early


def test_queue_plan_chains_runs_per_device():
    active = [_rec("r", "running", device="cpu"), _rec("q1", "queued", device="cpu"),
              _rec("g", "queued", device="cuda:0"), _rec("q2", "queued", device="cpu")]
    plan = eta.queue_plan(active, slots_per_device=1, remaining=lambda r: 30.0,
                          duration=lambda r: 20.0)
    assert plan["r"] == eta.Slot(None, 0.0, 30.0)
    assert plan["q1"] == eta.Slot(1, 30.0, 50.0)
    assert plan["q2"] == eta.Slot(2, 50.0, 70.0)
    assert plan["g"] == eta.Slot(1, 0.0, 20.0, 0.0)  # its own device is free: starts now, ± 0
    unknown = eta.queue_plan(active, slots_per_device=1, remaining=lambda r: None,
                             duration=lambda r: 20.0)
    assert unknown["q1"] == eta.Slot(1, None, None)  # no made-up numbers
    two = eta.queue_plan(active, slots_per_device=2, remaining=lambda r: 30.0,
                         duration=lambda r: 20.0)
    assert two["q1"] == eta.Slot(1, 0.0, 20.0, 0.0) and two["q2"] == eta.Slot(2, 20.0, 40.0)


def test_smoother_counts_down_instead_of_jumping():
    s = eta.Smoother(weight=0.2)
    assert s("r", "finish", 100.0, now=0.0) == 100.0
    # A noisy new estimate (finish at 51 instead of 100) moves it only a fifth of the way.
    assert s("r", "finish", 50.0, now=1.0) == pytest.approx(100.0 - 0.2 * 49.0 - 1.0)
    assert s("r", "finish", None, now=2.0) is None
    assert s("r", "finish", 10.0, now=3.0) == 10.0  # forgotten: starts afresh


def test_overdue_estimates_grow_with_the_time_taken():
    usual = eta.Typical(train_s=10.0, eval_s=4.0)
    row = _rec(phase="train", step=0, total=100, started=0.0)
    lefts = [eta.remaining_s(row, usual, now=t) for t in (2.0, 12.0, 20.0, 40.0)]
    assert lefts[0] == pytest.approx(8.0 + 4.0)
    assert lefts[1] < lefts[2] < lefts[3]  # past the usual 10 s: grows, never sits at ~0
    assert lefts[3] == pytest.approx(eta.OVERDUE * 40.0 + 4.0)
    evaluating = _rec(phase="evaluate", step=5, total=5, started=0.0, eval_started=10.0)
    assert eta.remaining_s(evaluating, usual, now=30.0) == pytest.approx(eta.OVERDUE * 20.0)


def test_typical_states_its_spread_and_the_plan_carries_it():
    timings = [{"config": _cfg(seed=s), "train_s": t, "eval_s": None}
               for s, t in ((1, 10.0), (2, 14.0), (3, 18.0))]
    usual = eta.typical(timings, _cfg(seed=9))
    assert usual == eta.Typical(14.0, None, 4.0)  # median; half the range 10..18
    assert eta.typical(timings[:1], _cfg(seed=9)).spread_s is None  # one run: unknown
    active = [_rec("r", "running", device="cpu"), _rec("q1", "queued", device="cpu"),
              _rec("q2", "queued", device="cpu")]
    plan = eta.queue_plan(active, slots_per_device=1, remaining=lambda r: 30.0,
                          duration=lambda r: 20.0, error=lambda r: 3.0, spread=lambda r: 4.0)
    assert plan["q1"].start_error_s == 3.0 and plan["q1"].finish_error_s == pytest.approx(5.0)
    assert plan["q2"].start_error_s == pytest.approx(5.0)
    assert plan["q2"].finish_error_s == pytest.approx((9 + 16 + 16) ** 0.5)
    assert eta.about(65.0, 5.0) == "about 65 s ± 5 s" and eta.about(None) == ""
    assert eta.about(125.0) == "about 2 min 05 s"


_durations = st.one_of(st.none(), st.floats(0.0, 1e4))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["running", "queued"]), st.sampled_from(["cpu", "cuda:0"]),
                          _durations), max_size=12),
       st.integers(1, 4))
def test_queue_order_is_respected(rows, n_slots):
    active = [_rec(f"r{i}", status, device=dev) for i, (status, dev, _) in enumerate(rows)]
    value = {f"r{i}": v for i, (_, _, v) in enumerate(rows)}
    plan = eta.queue_plan(active, slots_per_device=n_slots, remaining=lambda r: value[r.run_id],
                          duration=lambda r: value[r.run_id])
    for dev in ("cpu", "cuda:0"):
        starts = [plan[r.run_id].start_in_s for r in active
                  if r.device == dev and r.status == RunStatus.QUEUED]
        for a, b in zip(starts, starts[1:]):
            # Position k never starts after k + 1; once unknown, unknown for the rest.
            assert b is None or (a is not None and a <= b)


def test_the_live_view_states_each_estimate_with_its_spread():
    from ui.live_view import _about

    assert _about(40, 10) == "about 40 s ± 10 s"
    assert _about(40, None) == "about 40 s"  # one measured run: no spread to state
    assert _about(600, 120) == "about 10 min ± 2 min"


def test_the_live_view_shows_the_cnn_epochs_while_it_scores():
    """engine/runs/runner.py reports the CNN's epochs as "eval/cnn_*" metrics; the bar counts
    both fits (synthetic, then the real reference) at their most epochs."""
    from ui.live_view import _cnn_progress

    assert _cnn_progress({}) is None  # classifiers other than the CNN: the usual bar
    text, frac = _cnn_progress({"eval/cnn_epoch": 3, "eval/cnn_max_epochs": 10})
    assert text == "CNN on the synthetic data: epoch 3 of at most 10" and frac == 0.15
    text, frac = _cnn_progress({"eval/cnn_epoch": 10, "eval/cnn_max_epochs": 10,
                                "eval/cnn_real_fit": 1.0})
    assert text.startswith("CNN on the real (reference) data") and frac == 0.99


def test_the_rate_leaves_the_warm_up_out_and_says_measuring_before_it_has_one():
    """Issue 43: "about 1 h" at step 2 of 1,078 for a run of minutes. The warm-up (30 s
    of loading before step 1, a slow second step) never stands for the rate."""
    events = _events(per_step=0.1, steps=range(1, 1079))
    row = _rec(phase="train", step=2, total=1078, started=0.0)
    assert eta.measured_rate(events[:2]) is None
    assert eta.remaining_s(row, eta.Typical(), now=31.0, rate=eta.measured_rate(events[:2])) is None
    assert eta.measured_rate(events[:eta.WARMUP_EVENTS + eta.MIN_MEASURED - 1]) is None
    rate = eta.measured_rate(events[:eta.WARMUP_EVENTS + eta.MIN_MEASURED])
    assert rate.per_step == pytest.approx(0.1)  # the steady rate, not (31 s / 2 steps)
    row = _rec(phase="train", step=rate.last_step, total=1078, started=0.0)
    left = eta.remaining_s(row, eta.Typical(), now=rate.last_time, rate=rate)
    assert left == pytest.approx(0.1 * (1078 - rate.last_step))  # about 107 s, not an hour
    # the scoring the trainer predicted is added until a finished run has measured one
    row = _rec(phase="train", step=rate.last_step, total=1078, started=0.0,
               metrics={eta.PREDICTED_SCORING: 200.0})
    assert eta.remaining_s(row, eta.Typical(), now=rate.last_time, rate=rate) == pytest.approx(
        left + 200.0)
    assert eta.remaining_s(row, eta.Typical(eval_s=50.0), now=rate.last_time,
                           rate=rate) == pytest.approx(left + 50.0)
    # time since the last event counts down
    assert eta.remaining_s(row, eta.Typical(), now=rate.last_time + 5, rate=rate) == pytest.approx(
        left - 5 + 200.0)


def test_the_range_comes_from_the_spread_of_the_runs_own_rate():
    """Steps alternately 0.1 s and 0.3 s apart in halves: the range spans both rates,
    and the ± shrinks with the steps left."""
    pts, t = [(1, 0.0), (2, 5.0)], 5.0
    for s in range(3, 43):
        t += 0.1 if s < 23 else 0.3
        pts.append((s, t))
    rate = eta.measured_rate(pts)
    assert rate.low == pytest.approx(0.1) and rate.high == pytest.approx(0.3)
    assert rate.low < rate.per_step < rate.high
    far = _rec(phase="train", step=42, total=1042)
    near = _rec(phase="train", step=42, total=52)
    assert eta.rate_error(far, rate) == pytest.approx(0.1 * 1000)
    assert eta.rate_error(near, rate) == pytest.approx(0.1 * 10)
    assert eta.rate_error(far, None) is None
