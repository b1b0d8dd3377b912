"""DataLens: Algorithms 2–3 as standalone functions, the partition, the sensitivity bound,
the budget stop, validation, and a tiny end-to-end digits run (CPU, seconds)."""

from __future__ import annotations

import math
import re
import threading
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.methods.datalens import method as datalens
from engine.methods.datalens import accounting as datalens_accounting
from engine.methods.datalens import votes as datalens_votes
from engine.privacy import accountant as privacy
from engine.core.config import RunConfig
from engine.methods.datalens.params import DIGITS_MEASURED
from engine.data.catalog import Dataset, load
from engine.core.errors import InputError
from engine.methods.registry import make_params

torch.set_num_threads(1)

# A tiny, quick digits setting: 60 teachers × 5 records, small nets.
TINY = dict(teachers=60, records_per_teacher=5, top_k=6, sigma=80.0, beta=0.3, latent=8,
            teacher_widths=[4, 8, 16], student_widths=[32, 8], first_teacher_steps=2,
            teacher_steps=1, sample_every=2, max_steps=1000)


@pytest.fixture(scope="module")
def digits():
    return load("digits")


def _run(data, epsilon=1.0, stop=None, **over):
    cfg = RunConfig(method="datalens", dataset="digits", epsilon=epsilon, n_synthetic=50,
                    params={**TINY, **over})
    return cfg, list(_train(cfg, data, stop or threading.Event()))


def _train(cfg, data, stop):
    return datalens.train(cfg, make_params("datalens", data, cfg.params), data, "cpu", stop)


def _preview(cfg, data):
    return datalens.privacy_preview(cfg, make_params("datalens", data, cfg.params), data)


# ------------------------------------------------------------------ Algorithm 2


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 6), d=st.integers(1, 40), data=st.data())
def test_topk_sto_sign_exactly_k_signs(rows, d, data):
    k = data.draw(st.integers(1, d))
    g = torch.randn(rows, d) * 1e-5
    v = datalens_votes.topk_sto_sign(g, k, 1e-5)
    assert v.dtype == torch.int8 and v.shape == g.shape
    assert ((v != 0).sum(-1) == k).all()
    assert set(v.unique().tolist()) <= {-1, 0, 1}
    # the kept coordinates are the k largest |g|
    if k < d:
        kept = v != 0
        smallest_kept = g.abs()[kept].view(rows, k).min(-1).values
        largest_dropped = g.abs()[~kept].view(rows, d - k).max(-1).values
        assert (smallest_kept >= largest_dropped).all()


def test_topk_sto_sign_is_unbiased_inside_the_clip():
    c = 2e-5
    g = torch.tensor([1.9e-5, -1.5e-5, 1.0e-5, -0.5e-5, 0.2e-5, 0.0])  # all |g| ≤ c, k = d
    reps = 40_000
    v = datalens_votes.topk_sto_sign(g.expand(reps, -1), 6, c).float()
    est = v.mean(0) * c  # E[vote]·c = g
    se = c / math.sqrt(reps)  # worst-case std error of the mean
    assert torch.allclose(est, g, atol=5 * se), (est, g)


def test_topk_sto_sign_clips_outside():
    g = torch.tensor([[5.0, -5.0, 0.1]])
    v = datalens_votes.topk_sto_sign(g.expand(500, -1), 2, 1.0)
    assert (v[:, 0] == 1).all() and (v[:, 1] == -1).all() and (v[:, 2] == 0).all()


# ------------------------------------------------------------------ Algorithm 3


def test_top_agg_threshold_rule():
    votes = torch.zeros(10, 1, 5, dtype=torch.int8)
    votes[:8, 0, 0] = 1  # +8
    votes[:6, 0, 1] = -1  # −6
    votes[:3, 0, 2] = 1  # +3
    votes[:7, 0, 3] = 1
    votes[7:, 0, 3] = -1  # +4
    out = datalens.top_agg(votes, sigma=1e-6, beta=0.5)  # threshold 5, noise negligible
    assert out.tolist() == [[1.0, -1.0, 0.0, 0.0, 0.0]]
    assert datalens.top_agg(votes, sigma=1e-6, beta=0.75).tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0]]


def test_top_agg_adds_noise_on_every_coordinate():
    votes = torch.zeros(4, 2000, dtype=torch.int8)
    a = datalens.top_agg(votes, sigma=10.0, beta=0.0)
    b = datalens.top_agg(votes, sigma=10.0, beta=0.0)
    assert not torch.equal(a, b)  # fresh, unseeded noise each call
    # every coordinate got noise, so almost every sign is ±1: the noise lives on a public
    # grid of step γ (engine/privacy/noise.py), where an exact 0 has probability ≈ γ/(σ√(2π))
    from engine.privacy.noise import grid

    p_zero = grid(10.0) / (10.0 * math.sqrt(2 * math.pi))
    assert int((a == 0).sum()) <= 2000 * p_zero + 6 * math.sqrt(2000 * p_zero) + 1
    assert 0.4 < (a > 0).float().mean() < 0.6
    # with a threshold of 2σ, about 4.6% of pure-noise coordinates survive
    c = datalens.top_agg(torch.zeros(100, 20000, dtype=torch.int8), sigma=100.0, beta=2.0)
    assert 0.03 < (c != 0).float().mean() < 0.065


# ---------------------------------------------------------------- partition, bound


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 600), data=st.data())
def test_partition_is_disjoint_and_covers(n, data):
    n_teachers = data.draw(st.integers(1, n))
    parts = datalens.partition(n, n_teachers, seed=data.draw(st.integers(0, 3)))
    flat = parts.ravel()
    assert parts.shape == (n_teachers, n // n_teachers)
    assert len(np.unique(flat)) == len(flat)  # every record at most once
    assert flat.min() >= 0 and flat.max() < n
    assert len(flat) == n - n % n_teachers  # only the remainder is left unused


def test_partition_rejects_impossible_split():
    with pytest.raises(InputError, match="cannot split"):
        datalens.partition(5, 6)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), d=st.integers(1, 50), data=st.data())
def test_one_record_moves_the_vote_sum_by_at_most_2_sqrt_k(n, d, data):
    """Replace-one: the record's teacher may vote anything; the others are unchanged."""
    k = data.draw(st.integers(1, d))
    scale = data.draw(st.sampled_from([1e-8, 1.0, 1e4]))
    votes = datalens_votes.topk_sto_sign(torch.randn(n, 3, d) * scale, k, scale)
    changed = votes.clone()
    i = data.draw(st.integers(0, n - 1))
    changed[i] = datalens_votes.topk_sto_sign(torch.randn(3, d) * data.draw(st.floats(1e-6, 1e6)), k, 1e-3)
    diff = (changed.sum(0, dtype=torch.float32) - votes.sum(0, dtype=torch.float32))  # (records, d)
    assert (diff.norm(dim=-1) <= 2 * math.sqrt(k) + 1e-5).all()


# ------------------------------------------------------------------ validation


def test_validate_errors(digits):
    base = datalens.Params.for_data(digits)
    cases = {"top_k": (65, "top_k"), "teachers": (digits.n_train + 1, "teachers"),
             "sigma": (0.0, "sigma"), "beta": (1.5, "beta"), "clip": (-1.0, "clip"),
             "gamma": (0.0, "gamma"), "accountant": ("pld", "accountant"),
             "teacher": ("huge", "teacher"), "teacher_hidden": (0, "teacher_hidden"),
             "records_per_teacher": (0, "records_per_teacher")}
    for field, (value, name) in cases.items():
        with pytest.raises(InputError, match=f"'{name}' parameter of DataLens"):
            replace(base, **{field: value}).validate(digits)
    tab = Dataset("wine", "tabular", np.zeros((10, 3)), np.zeros(10, int), np.zeros((2, 3)),
                  np.zeros(2, int), ["a"])
    with pytest.raises(InputError, match="supports image datasets"):
        base.validate(tab)
    assert base.validate(digits) is base


def test_preview_digits_has_hint_and_exact_steps(digits):
    cfg = RunConfig(method="datalens", dataset="digits", epsilon=1.0)
    prev = _preview(cfg, digits)
    p = datalens.Params.for_data(digits)
    want = datalens_accounting.affordable_steps(epsilon=1.0, delta=1e-5, top_k=p.top_k, sigma=p.sigma,
                                             batch=digits.n_train // p.teachers)
    assert prev["affordable steps"] == min(want, p.max_steps)
    # The small-data caution comes from the run's own numbers (95 teachers), not the name.
    assert "near chance" in prev["warning"] and f"{p.teachers} teachers" in prev["warning"]
    assert f"{DIGITS_MEASURED['CNN at epsilon=10']} at epsilon=10 (" in prev["warning"]
    assert prev["accountant"] == privacy.ACCOUNTANTS["exact"]
    rdp = _preview(replace(cfg, params={"accountant": "rdp"}), digits)
    assert rdp["accountant"] == privacy.ACCOUNTANTS["rdp"]


def test_the_step_cap_hint_shows_only_when_the_cap_leaves_budget_unspent(digits):
    """The defaults at ε = 10 spend the budget at max_steps: no advice to lower σ. A σ the
    user raises (with the same cap) leaves most of it unspent, and the hint says so."""
    from engine.methods.registry import params_for

    cfg = RunConfig(method="datalens", dataset="digits", epsilon=50.0)
    calibrated = datalens.privacy_preview(cfg, params_for(cfg, digits), digits)
    assert calibrated["affordable steps"] == datalens.Params.for_data(digits).max_steps
    assert "hint" not in calibrated
    capped = replace(cfg, params={"sigma": 2000.0, "max_steps": 5})
    hint = datalens.privacy_preview(capped, params_for(capped, digits), digits)["hint"]
    assert re.search(r"max_steps \(5\) stops the run at epsilon [0-9.]+, below the target", hint)


def test_preview_warns_when_delta_is_not_below_one_over_n(digits):
    """δ ≥ 1/n lets a mechanism publish one record outright; both methods' previews say so."""
    enough = {"teachers": 1000, "records_per_teacher": 1}  # no small-data caution
    from engine.runs.runner import preview

    weak = preview(RunConfig(method="datalens", dataset="digits", epsilon=1.0, delta=1e-3,
                             params=enough), digits)
    assert [w for w in weak.warnings if "1/n" in w] == list(weak.warnings)[:1]
    strong = preview(RunConfig(method="datalens", dataset="digits", epsilon=1.0, delta=1e-5,
                               params=enough), digits)
    assert strong.warnings == ()


# ------------------------------------------------------------------ training


def test_tiny_run_end_to_end_respects_the_budget(digits):
    cfg, events = _run(digits, epsilon=1.0)
    p = make_params("datalens", digits, cfg.params)
    afford = datalens_accounting.affordable_steps(epsilon=1.0, delta=1e-5, top_k=p.top_k, sigma=p.sigma, batch=5)
    assert 2 <= afford < 40  # the setting is sized so the budget, not max_steps, stops it
    train = [e for e in events if e.phase == "train"]
    assert [e.step for e in train] == list(range(1, afford + 1))
    eps = [e.epsilon_spent for e in train]
    assert all(a < b for a, b in zip(eps, eps[1:])) and eps[-1] <= 1.0
    # the next step would have exceeded the budget
    assert datalens_accounting.spent_epsilon(steps=afford + 1, top_k=p.top_k, sigma=p.sigma, batch=5, delta=1e-5) > 1.0
    assert all(e.total == afford for e in train)
    shown = [e.samples for e in train if e.samples is not None]
    assert shown and shown[0][0].shape == (100, 1, 8, 8) and shown[0][1].shape == (100,)
    done = events[-1]
    assert done.phase == "done" and done.result is not None
    r = done.result
    assert r.x.shape == (50, 1, 8, 8) and r.x.dtype == np.float32 and 0 <= r.x.min() and r.x.max() <= 1
    assert r.y.shape == (50,) and np.bincount(r.y, minlength=10).tolist() == [5] * 10
    assert r.privacy.steps == afford and r.privacy.epsilon_spent == pytest.approx(eps[-1])
    assert r.privacy.releases[0].count == afford * 5
    assert r.privacy.releases[0].sensitivity == pytest.approx(2 * math.sqrt(6))
    assert r.stopped is False and r.info["unused_records"] == digits.n_train - 300


def test_stop_is_honoured(digits):
    stop = threading.Event()
    cfg = RunConfig(method="datalens", dataset="digits", epsilon=10.0, n_synthetic=20, params=TINY)
    events = []
    for ev in _train(cfg, digits, stop):
        events.append(ev)
        if ev.phase == "train" and ev.step == 2:
            stop.set()
    assert [e.step for e in events if e.phase == "train"] == [1, 2]
    done = events[-1]
    assert done.phase == "done" and done.result.stopped is True
    assert done.result.privacy.steps == 2 and done.result.x.shape == (20, 1, 8, 8)


def test_non_private_run_uses_fixed_steps_and_no_noise(digits):
    cfg, events = _run(digits, epsilon=math.inf, max_steps=3)
    assert [e.step for e in events if e.phase == "train"] == [1, 2, 3]
    r = events[-1].result
    assert r.privacy.noise_multiplier == 0.0 and r.privacy.releases[0].sigma == 0.0
    assert math.isinf(r.privacy.epsilon_spent)


@pytest.mark.parametrize("student_steps", [1, 3])
def test_nothing_but_the_noisy_votes_reaches_the_output(digits, monkeypatch, student_steps):
    """Issue 11: the teachers' loss on the real partitions (or any other statistic of them)
    must not be released. Cut the one private path — the noisy vote aggregate — and train
    on two different private sets: every event (loss, metrics, samples) and the result
    (images, privacy report, info) must then be identical, because nothing else may depend
    on the private records — also when the student takes several steps per release."""
    monkeypatch.setattr(datalens, "top_agg", lambda votes, sigma, beta: torch.zeros(
        votes.shape[1:], dtype=torch.float32))
    other = replace(digits, x_train=1.0 - digits.x_train, y_train=(digits.y_train + 3) % 10)
    runs = []
    for data in (digits, other):
        cfg = RunConfig(method="datalens", dataset="digits", epsilon=math.inf, n_synthetic=30,
                        params={**TINY, "max_steps": 4, "student_steps": student_steps})
        runs.append(list(_train(cfg, data, threading.Event())))
    a, b = runs
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert (ea.phase, ea.step, ea.loss, ea.metrics) == (eb.phase, eb.step, eb.loss, eb.metrics)
        assert not any("teacher" in k for k in ea.metrics)
        if ea.samples is not None:
            assert np.array_equal(ea.samples[0], eb.samples[0])
    ra, rb = a[-1].result, b[-1].result
    assert np.array_equal(ra.x, rb.x) and ra.privacy == rb.privacy and ra.info == rb.info


def test_extra_student_steps_reuse_each_release(digits, monkeypatch):
    """student_steps > 1 is post-processing: the same number of noisy aggregates is
    released (one per iteration) and the privacy report is unchanged; only the student
    moves more often."""
    aggregates, student_updates = [], []
    real_agg = datalens.top_agg
    monkeypatch.setattr(datalens, "top_agg", lambda *a: (aggregates.append(1), real_agg(*a))[1])
    real_mse = datalens.F.mse_loss
    monkeypatch.setattr(datalens.F, "mse_loss", lambda *a, **k: (student_updates.append(1), real_mse(*a, **k))[1])
    reports = {}
    for steps in (1, 3):
        aggregates.clear(), student_updates.clear()
        _, events = _run(digits, epsilon=10.0, max_steps=4, student_steps=steps)
        report = events[-1].result.privacy
        assert len(aggregates) == report.steps == 4
        assert len(student_updates) == steps * 4
        reports[steps] = report
    assert reports[1] == reports[3]


@pytest.mark.parametrize("teacher", ["small", "official"])
def test_both_teacher_kinds_train(digits, teacher):
    cfg, events = _run(digits, epsilon=math.inf, max_steps=2, teacher=teacher)
    assert [e.step for e in events if e.phase == "train"] == [1, 2]
    r = events[-1].result
    assert r.x.shape == (50, 1, 8, 8) and np.isfinite(r.x).all()
    assert r.info["teacher"].startswith("MLP" if teacher == "small" else "official")


def test_sample_temperature_narrows_released_samples(digits):
    """A low temperature draws z nearer 0: samples of a class vary less (post-processing)."""
    def spread(temperature):
        _, events = _run(digits, epsilon=math.inf, max_steps=3, sample_temperature=temperature)
        r = events[-1].result
        return np.mean([r.x[r.y == c].std(0).mean() for c in range(10)])

    assert spread(0.05) < 0.5 * spread(1.0)


@pytest.mark.parametrize("average_from, averaged, models", [(0.0, 6, 1), (0.5, 3, 2), (0.99, 1, 2)])
def test_released_student_is_the_mean_over_the_later_steps(digits, monkeypatch, average_from, averaged,
                                                           models):
    """The weight average takes exactly the steps after average_from·total, and the
    released samples come from it, not from the last student."""
    from torch.optim.swa_utils import AveragedModel

    updates, sampled = [], []
    real_update, real_sample = AveragedModel.update_parameters, datalens._sample
    monkeypatch.setattr(AveragedModel, "update_parameters",
                        lambda self, model: (updates.append(1), real_update(self, model)))
    monkeypatch.setattr(datalens, "_sample", lambda model, *a, **kw: (sampled.append(model),
                                                                       real_sample(model, *a, **kw))[1])
    _, events = _run(digits, epsilon=math.inf, max_steps=6, average_from=average_from)
    assert len(updates) == averaged
    assert events[-1].result.x.shape == (50, 1, 8, 8)
    # grids at steps 2, 4, 6 and the release: the live student until the average begins
    assert len({id(m) for m in sampled}) == models
    assert sampled[-1] is sampled[-2] and type(sampled[-1]).__name__ == "Student"


def test_unpool_gives_every_pixel_its_blocks_vote():
    g = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).view(2, 12)  # 2 records, 3 channels of 2×2 blocks
    img = datalens.unpool(g, 2, (3, 4, 4))
    assert img.shape == (2, 3, 4, 4)
    for r, c, i, j in [(0, 0, 0, 0), (0, 0, 3, 1), (1, 2, 1, 2), (1, 1, 3, 3)]:
        assert img[r, c, i, j] == g[r].view(3, 2, 2)[c, i // 2, j // 2]


def test_vote_pool_trains_and_is_validated(digits):
    _, events = _run(digits, epsilon=1.0, vote_pool=2, top_k=4, sigma=40.0)
    r = events[-1].result
    assert r.privacy.steps > 0 and r.x.shape == (50, 1, 8, 8) and np.isfinite(r.x).all()
    base = replace(datalens.Params.for_data(digits), vote_pool=2)
    with pytest.raises(InputError, match="top_k=17 is above the 16"):
        replace(base, top_k=17).validate(digits)  # 8×8 in 2×2 blocks: 16 coordinates
    with pytest.raises(InputError, match="vote_pool=3 must divide"):
        replace(base, vote_pool=3, top_k=4).validate(digits)
    assert replace(base, top_k=16).validate(digits)


def test_an_untrained_small_teacher_has_no_opinion():
    """The small teachers' output layer starts at zero, so before any update every input
    gradient, hence every teacher's preference, is exactly zero."""
    from engine.methods.datalens.nets import MLPTeacherEnsemble

    teachers = MLPTeacherEnsemble(5, (1, 8, 8), 10, hidden=16)
    x = torch.rand(5, 3, 1, 8, 8, requires_grad=True)
    teachers(x, torch.randint(0, 10, (5, 3))).sum().backward()
    assert torch.count_nonzero(x.grad) == 0


@pytest.mark.parametrize("teacher", ["small", "official"])
def test_teachers_see_pixels_shifted_by_the_public_center(teacher):
    """teacher_center is a constant shift of every pixel before the first layer: a centred
    ensemble scores x exactly as the same uncentred ensemble scores x − center, for real
    records, fakes and votes alike (one forward path), and it is on by default."""
    from engine.methods.datalens.nets import make_teachers

    assert datalens.Params().teacher_center == 0.5
    p = replace(datalens.Params(), teacher=teacher, teacher_hidden=8, teacher_widths=(3, 4, 8))
    centred = make_teachers(p, (1, 8, 8), 10, n_teachers=3, seed=2)
    with torch.no_grad():  # a trained output layer, so the input matters
        for w in centred.parameters():
            w.add_(torch.randn(w.shape, generator=torch.Generator().manual_seed(w.numel())) * 0.1)
    plain = make_teachers(replace(p, teacher_center=0.0), (1, 8, 8), 10, n_teachers=3)
    plain.load_state_dict(centred.state_dict())
    x, y = torch.rand(3, 4, 1, 8, 8), torch.randint(0, 10, (3, 4))
    torch.testing.assert_close(centred(x, y), plain(x - 0.5, y))
    assert not torch.allclose(centred(x, y), plain(x, y))


@pytest.mark.parametrize("teacher", ["small", "official"])
def test_a_teacher_step_reads_only_that_teachers_records(teacher):
    """Real and fake records go through the ensemble in one pass, yet teacher i's update
    depends on its own part alone: changing every other teacher's records (real and fake)
    leaves teacher i's new weights bit-for-bit the same, and the step equals the two-pass
    loss (real and fake scored apart) — no statistic is shared across records."""
    import torch.nn.functional as F

    from engine.methods.datalens.nets import make_teachers
    from engine.methods.datalens.step import teacher_update

    p = replace(datalens.Params(), teacher=teacher, teacher_hidden=8, teacher_widths=(3, 4, 8))
    x_real, fake = torch.rand(4, 3, 1, 8, 8), torch.rand(4, 3, 1, 8, 8)
    y = torch.randint(0, 10, (4, 3))

    def updated(x_real, fake, one_pass=True):
        teachers = make_teachers(p, (1, 8, 8), 10, n_teachers=4, seed=1)
        with torch.no_grad():  # a trained output layer, so every input matters
            for w in teachers.parameters():
                w.add_(torch.randn(w.shape, generator=torch.Generator().manual_seed(w.numel())) * 0.1)
        opt = torch.optim.SGD(teachers.parameters(), lr=0.1)
        if one_pass:
            teacher_update(teachers, opt, x_real, y, fake)
        else:
            loss = F.softplus(-teachers(x_real, y)).mean(1) + F.softplus(teachers(fake, y)).mean(1)
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
        return [w.detach().clone() for w in teachers.parameters()]

    base = updated(x_real, fake)
    for a, b in zip(base, updated(x_real, fake, one_pass=False)):
        torch.testing.assert_close(a, b)
    others_real, others_fake = x_real.clone(), fake.clone()
    others_real[1:], others_fake[1:] = torch.rand(3, 3, 1, 8, 8), torch.rand(3, 3, 1, 8, 8)
    changed = updated(others_real, others_fake)
    moved = False
    for a, b in zip(base, changed):
        # parameters are stacked per teacher: teacher 0 owns the first slice of each
        rows = a.shape[0] // 4
        assert torch.equal(a[:rows], b[:rows])
        moved |= not torch.equal(a[rows:], b[rows:])
    assert moved  # the other teachers did see the change


def test_one_synthetic_record_per_step_trains(digits):
    """A batch of 1 (or teachers of 1 record) used to end in batch norm's ValueError
    traceback; the student now pairs a lone latent with its mirror for the batch
    statistics, and the accounting still counts one release per step."""
    _, events = _run(digits, epsilon=10.0, batch=1, max_steps=2)
    r = events[-1].result
    assert r.info["synthetic_batch"] == 1 and r.privacy.releases[0].count == r.privacy.steps
    assert r.privacy.steps >= 1 and np.isfinite(r.x).all()
    from engine.runs.runner import preview

    prev = preview(RunConfig(method="datalens", dataset="digits", epsilon=10.0,
                             params={"teachers": digits.n_train, "records_per_teacher": None}), digits)
    assert prev.figures["synthetic records per step"] == 1 and prev.cost.per_step_s > 0


def test_class_norm_gives_each_label_its_own_gain_and_shift(digits):
    """With class_norm the student's batch norms look up a gain and shift per class:
    changing class 3's gain moves the class-3 records only (running statistics, so each
    record is normalised alone), and such a student trains end to end."""
    from engine.methods.datalens.nets import Student

    torch.manual_seed(0)
    student = Student(8, 10, (1, 8, 8), (32, 8), class_norm=True).eval()
    z, y = torch.rand(20, 8) * 2 - 1, torch.arange(20) % 10
    before = student(z, y)
    with torch.no_grad():
        student.bn0.gain[3] += 1.0
    moved = (student(z, y) - before).abs().flatten(1).amax(1) > 0
    assert moved.tolist() == (y == 3).tolist()
    assert not any(n.endswith("norm.weight") for n, _ in student.named_parameters())  # no shared affine
    _, events = _run(digits, epsilon=math.inf, max_steps=2, class_norm=True)
    assert np.isfinite(events[-1].result.x).all()


def test_blur_smooths_the_released_images_and_keeps_their_range(digits):
    """blur is a Gaussian filter on the released images: 0 leaves them alone; σ > 0 keeps
    pixel values in [0, 1] and each image's mean (away from the border), removes a
    checkerboard's speckle, and still works when 3σ is wider than a small image."""
    checker = ((torch.arange(28)[:, None] + torch.arange(28)[None, :]) % 2).float()[None, None]
    assert torch.equal(datalens.blur(checker, 0.0), checker)
    smooth = datalens.blur(checker, 0.5)
    assert 0.0 <= smooth.min() and smooth.max() <= 1.0
    assert smooth[..., 4:-4, 4:-4].std() < 0.4 * checker.std()  # σ = .5 px: a third is left
    assert abs(float(smooth[..., 4:-4, 4:-4].mean()) - 0.5) < 0.01
    assert datalens.blur(torch.rand(3, 1, 4, 4), 2.0).shape == (3, 1, 4, 4)
    _, sharp = _run(digits, epsilon=math.inf, max_steps=2, blur=0.0)
    _, soft = _run(digits, epsilon=math.inf, max_steps=2, blur=1.0)

    def roughness(x):  # mean absolute difference between horizontal neighbours
        return float(np.abs(np.diff(x, axis=-1)).mean())
    assert roughness(soft[-1].result.x) < roughness(sharp[-1].result.x)
