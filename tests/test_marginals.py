"""Independent marginals: the sensitivity it claims (attacked with replace-one neighbours,
extreme values, another class), the noise it adds matches the ε it reports, only the
histograms reach the output, and it runs end to end on tabular data and images."""

import math
import threading
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.data import column_kinds
from engine.methods.marginals import method as marginals
from engine.privacy import accountant as privacy
from engine.core.config import RunConfig
from engine.data.catalog import load
from engine.data.dataset import Column, Dataset
from engine.core.errors import InputError
from engine.methods.registry import make_params

TOL = 1e-9
values = st.one_of(st.floats(-1e12, 1e12), st.sampled_from([0.0, 1.0, -1e300, 1e300, math.nan,
                                                            math.inf, -math.inf]))


def _table(n: int, public: bool = True, mass: float | None = None) -> Dataset:
    """Three columns: numeric with public bounds (or none), a categorical, numeric (with a
    point mass at `mass` if given)."""
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.uniform(10, 20, n), rng.integers(0, 3, n), rng.normal(0, 1, n)])
    y = (x[:, 0] > 15).astype(np.int64)
    cols = [Column("a", "num", bounds=(10.0, 20.0) if public else None),
            Column("b", "cat", categories=["p", "q", "r"]),
            Column("c", "num", bounds=(-3.0, 3.0) if public else None, mass=mass)]
    return Dataset("t", "tabular", x, y, x[:10], y[:10], ["lo", "hi"], columns=cols)


def _run(config, data):
    params = make_params("marginals", data, config.params)
    return list(marginals.train(config, params, data, "cpu", threading.Event()))


# ------------------------------------------------------------------ sensitivity


@settings(max_examples=120, deadline=None)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 12), st.just(3)), elements=values),
       y=st.data(), bins=st.integers(2, 9), conditional=st.booleans(), public=st.booleans(),
       steps=st.sampled_from([1, 2, 4]), massed=st.booleans())
def test_histograms_move_at_most_sqrt2_per_column(x, y, bins, conditional, public, steps,
                                                  massed):
    """Replace any record by any values and any class: each column's histogram (all its
    class rows together) moves by at most √2, all of them by at most √(2d), and the
    class counts by at most √2; also with a zero-inflated column, whose value histogram
    skips the records at the mass."""
    n = len(x)
    labels = np.array(y.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int64)
    i = y.draw(st.integers(0, n - 1))
    x2, labels2 = x.copy(), labels.copy()
    x2[i] = y.draw(arrays(np.float64, 3, elements=values))
    labels2[i] = y.draw(st.integers(0, 2))
    table = replace(_table(20, public, mass=0.0 if massed else None), class_names=["a", "b", "c"])
    view = column_kinds.model_view(table)  # + the flag column when column c has a mass
    cols = marginals.public_columns(view, bins, steps_per_octave=steps)
    sizes = [c.size for c in cols]

    def hist(xx, yy):
        xv = column_kinds.model_view(replace(table, x_train=xx, y_train=yy)).x_train
        return marginals.column_counts(marginals.record_codes(xv, cols, view), yy, sizes, 3,
                                       conditional)

    change = hist(x, labels) - hist(x2, labels2)
    start = 0
    for size in sizes:
        assert np.linalg.norm(change[:, start:start + size]) <= marginals.HISTOGRAM_SENSITIVITY + TOL
        start += size
    assert np.linalg.norm(change) <= math.sqrt(2 * len(sizes)) + TOL
    counts = np.bincount(labels, minlength=3) - np.bincount(labels2, minlength=3)
    assert np.linalg.norm(counts) <= marginals.HISTOGRAM_SENSITIVITY + TOL


def test_the_sqrt2_bound_is_attained():
    """A record moved to another bin and another class changes two cells of every column:
    the bound is tight, so a smaller claim would be wrong."""
    data = _table(20)
    cols = marginals.public_columns(data, 4)
    sizes = [c.size for c in cols]
    x2, y2 = data.x_train.copy(), data.y_train.copy()
    x2[0] = [10.0 if data.x_train[0, 0] > 15 else 19.9, (data.x_train[0, 1] + 1) % 3,
             -2.9 if data.x_train[0, 2] > 0 else 2.9]
    y2[0] = 1 - y2[0]
    change = (marginals.column_counts(marginals.bin_codes(data.x_train, cols), data.y_train,
                                      sizes, 2, True)
              - marginals.column_counts(marginals.bin_codes(x2, cols), y2, sizes, 2, True))
    assert np.linalg.norm(change[:, :sizes[0]]) == pytest.approx(math.sqrt(2))


def test_binning_reads_each_record_alone():
    """Bins come from public metadata: changing one record changes its own codes only."""
    data = _table(50, public=False)
    cols = marginals.public_columns(data, 8, steps_per_octave=2)
    x2 = data.x_train.copy()
    x2[7] = [1e9, 2, -1e9]
    a, b = marginals.bin_codes(data.x_train, cols), marginals.bin_codes(x2, cols)
    assert (a != b).any(1).nonzero()[0].tolist() == [7]


def test_a_non_negative_column_is_binned_on_the_grid_at_or_above_zero():
    """A column declared non-negative (public) gets no cells below 0: noise alone in such a
    cell, drawn and then clipped by `enforce`, put exactly 0 into a zero-inflated column's
    continuous part (all synthetic gains at 0 in one run of five)."""
    data = _table(50, public=False)
    data.columns[2] = replace(data.columns[2], nonneg=True)
    signed, nonneg = marginals.public_columns(data, 8, steps_per_octave=2)[::2]
    assert signed.edges[0] < 0 and nonneg.edges[0] == 0.0
    assert nonneg.size == (signed.size - 1) // 2 + 1 and len(nonneg.edges) == nonneg.size + 1
    # a value below 0 still lands in exactly one cell, the first: [0, 2^-10)
    codes = marginals.bin_codes(np.array([[0.0, 0, -5.0], [1e12, 1, 3.0]]), [signed, signed, nonneg])
    assert codes[0, 2] == 0 and nonneg.edges[codes[1, 2]] <= 3.0 < nonneg.edges[codes[1, 2] + 1]


# ------------------------------------------------------------------ the budget


def test_the_noise_added_is_the_noise_accounted_and_stays_within_epsilon(drawn):
    data = load("breast_cancer")
    events = _run(RunConfig(method="marginals", dataset="breast_cancer", epsilon=1.0), data)
    report = events[-1].result.privacy
    counts, hist = (r.to_dict() for r in report.releases)
    d = len(data.columns)
    assert (counts["count"], hist["count"]) == (1, d)
    assert counts["sensitivity"] == hist["sensitivity"] == pytest.approx(math.sqrt(2))
    assert drawn == [counts["sigma"], hist["sigma"]]  # exactly the accounted noise, once each
    # Recompute ε from the reported multipliers, independently of the calibration.
    eps = privacy.composed_epsilon(((counts["noise_multiplier"], 1), (hist["noise_multiplier"], d)),
                                   delta=1e-5)
    assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-3)
    assert report.epsilon_spent <= 1.0
    from dp_accounting.pld import privacy_loss_distribution as pld

    # dp-accounting's PLD agrees: the composition is the single Gaussian with 1/z² summed.
    z = 1.0 / math.sqrt(counts["noise_multiplier"] ** -2 + d * hist["noise_multiplier"] ** -2)
    check = pld.from_gaussian_mechanism(z, value_discretization_interval=1e-4)
    assert check.get_epsilon_for_delta(1e-5) == pytest.approx(1.0, abs=0.01)


def test_only_the_histograms_reach_the_output(monkeypatch):
    """Two training sets with the same per-class column histograms (each column shuffled
    within its class) give the same synthetic data, with the same noise and seed."""
    monkeypatch.setattr(marginals, "gaussian_noise",
                        lambda shape, std, **kw: torch.zeros(shape, dtype=torch.float64))
    data = load("breast_cancer")
    rng = np.random.default_rng(1)
    x = data.x_train.copy()
    for c in range(data.n_classes):
        rows = np.flatnonzero(data.y_train == c)
        for j in range(x.shape[1]):
            x[rows, j] = x[rng.permutation(rows), j]
    assert not np.array_equal(x, data.x_train)
    config = RunConfig(method="marginals", dataset="breast_cancer", epsilon=1.0)
    a = _run(config, data)[-1].result
    b = _run(config, replace(data, x_train=x))[-1].result
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)


# ------------------------------------------------------------------ end to end


def test_non_private_marginals_match_the_data_per_class():
    data = _table(4000)
    config = RunConfig(method="marginals", dataset="t", epsilon=math.inf, n_synthetic=4000)
    r = _run(config, data)[-1].result
    assert r.privacy.epsilon_spent == math.inf and r.privacy.releases[1].sigma == 0
    for c in (0, 1):
        real, syn = data.x_train[data.y_train == c], r.x[r.y == c]
        assert abs(len(syn) / 4000 - len(real) / 4000) < 0.03
        assert np.abs(real[:, 0].mean() - syn[:, 0].mean()) < 0.3  # 8 bins of 1.25 on [10, 20]
        assert set(np.unique(syn[:, 1])) <= {0.0, 1.0, 2.0}


def test_columns_without_public_bounds_stay_where_the_data_is():
    """Without public bounds a column is binned on dp_bounds' geometric grid, as fine as
    n and σ allow, and counts under the noise floor are dropped: values are drawn from
    the cells the data fill, not from a power-of-two bucket reaching 32 for data that
    stops at 20 (the ladder drew about a third of them above 20). Noise alone clears the
    floor in some cell of a class row with probability 1 %, so a few values may land
    elsewhere."""
    data = _table(3000, public=False)
    config = RunConfig(method="marginals", dataset="t", epsilon=1.0, n_synthetic=3000)
    params = make_params("marginals", data)
    sigma = marginals._calibrate(config, params, data).releases[1].sigma
    assert marginals.grid_resolution(data, params, sigma) == 4  # 1,500 records a row, σ ≈ 9
    r = _run(config, data)[-1].result
    col_a = r.x[:, 0]  # real values uniform on [10, 20]: grid cells [2^3.25, 2^4.5)
    assert np.mean((col_a < 2 ** 3.25) | (col_a > 2 ** 4.5)) < 0.03
    assert np.mean(col_a > 20) < 0.1


def test_a_point_mass_is_drawn_as_often_as_the_data_has_it():
    """A zero-inflated column: the flag says how often a record sits at 0, and the
    value's histogram holds only the other records, so the synthetic share of zeros is
    the real one (not real + (1 − real)·real, the mass drawn twice) and the continuous
    part keeps its median."""
    rng = np.random.default_rng(0)
    n = 20_000
    gain = np.where(rng.random(n) < 0.9, 0.0, rng.uniform(100, 1000, n))
    x = np.column_stack([rng.uniform(10, 20, n), rng.integers(0, 3, n), gain])
    y = (x[:, 0] > 15).astype(np.int64)
    cols = [Column("a", "num", bounds=(10.0, 20.0)), Column("b", "cat", categories=["p", "q", "r"]),
            Column("c", "num", bounds=(0.0, 1000.0), mass=0.0)]
    data = Dataset("t", "tabular", x, y, x[:10], y[:10], ["lo", "hi"], columns=cols)
    r = _run(RunConfig(method="marginals", dataset="t", epsilon=3.0, n_synthetic=n), data)[-1].result
    syn = r.x[:, 2]
    assert abs(np.mean(syn == 0.0) - 0.9) < 0.02
    assert abs(np.median(syn[syn != 0]) - 550) < 60


def test_images_are_drawn_pixel_by_pixel(digits):
    events = _run(RunConfig(method="marginals", dataset="digits", epsilon=1.0, n_synthetic=50),
                  digits)
    assert [e.phase for e in events] == ["release", "train", "done"]
    r = events[-1].result
    assert r.x.shape == (50, 1, 8, 8) and r.x.dtype == np.float32
    assert 0 <= r.x.min() and r.x.max() <= 1
    assert r.info["histograms"] == 64 and 0.999 <= r.privacy.epsilon_spent <= 1.0


def test_defaults_follow_the_data_and_validation_names_the_fix(digits):
    assert marginals.Params.for_data(digits).bins == round((digits.n_train / 10) ** (1 / 3))
    big = replace(digits, y_train=np.zeros(10 ** 6, np.int64))
    assert marginals.Params.for_data(big).bins == 32
    with pytest.raises(InputError, match=r"^The 'bins' parameter of Independent marginals must "
                                         r"be an int >= 2. Got 1 instead.$"):
        make_params("marginals", digits, {"bins": 1})


def test_the_playground_offers_it_without_an_app_edit(runs_root):
    from apptest import open_app

    at = open_app({"method": "marginals", "dataset": "breast_cancer"})
    assert not at.exception
    assert "marginals" in at.selectbox(key="method").options
    assert at.number_input(key="marginals_bins").value == marginals.Params.for_data(
        load("breast_cancer")).bins
    assert any("Independent marginals keep" in i.value for i in at.info)
