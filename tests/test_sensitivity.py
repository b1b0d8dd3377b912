"""Every statistic DP-MERF releases, attacked with neighbouring datasets (replace one
record, including extreme values and a different class): the change must never exceed
the sensitivity the accountant is told."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.privacy import dp_bounds
from engine.methods.dpmerf import features as fx

TOL = 1e-5
finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)
extreme = st.one_of(finite, st.sampled_from([0.0, 1.0, -1e6, 1e6, 1e-30]))


@settings(max_examples=60, deadline=None)
@given(x=arrays(np.float32, (7, 9), elements=extreme), seed=st.integers(0, 100),
       ls=st.floats(0.01, 100), d=st.sampled_from([2, 10, 64]))
def test_rff_has_unit_norm(x, seed, ls, d):
    w = fx.draw_frequencies(9, d, ls, generator=torch.Generator().manual_seed(seed))
    norms = fx.rff(torch.from_numpy(x), w).double().norm(dim=1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5)


def _neighbours(draw_x, draw_y, m, d, c):
    """A dataset and its replace-one neighbour (any index, any new record, any class)."""
    return st.tuples(arrays(np.float32, (m, d), elements=draw_x), arrays(np.int64, m, elements=draw_y),
                     st.integers(0, m - 1), arrays(np.float32, d, elements=draw_x), draw_y)


@settings(max_examples=80, deadline=None)
@given(case=_neighbours(extreme, st.integers(0, 3), 12, 5, 4), seed=st.integers(0, 50),
       chunk=st.sampled_from([3, 5, 100]))
def test_labelled_embedding_sensitivity(case, seed, chunk):
    x, y, i, x_new, y_new = case
    x2, y2 = x.copy(), y.copy()
    x2[i], y2[i] = x_new, y_new
    w = fx.draw_frequencies(5, 40, 1.0, generator=torch.Generator().manual_seed(seed))

    def emb(xx, yy):
        return fx.chunked_embedding(torch.from_numpy(xx), F.one_hot(torch.from_numpy(yy), 4).float(),
                                    lambda b: fx.rff(b, w), chunk=chunk)

    change = (emb(x, y) - emb(x2, y2)).double().norm()
    assert change <= fx.EMBEDDING_SENSITIVITY / len(x) + TOL


@settings(max_examples=50, deadline=None)
@given(case=_neighbours(extreme, st.integers(0, 2), 10, 3, 3), seed=st.integers(0, 50))
def test_unlabelled_embedding_sensitivity(case, seed):
    x, _, i, x_new, _ = case
    x2 = x.copy()
    x2[i] = x_new
    w = fx.draw_frequencies(3, 20, 0.5, generator=torch.Generator().manual_seed(seed))
    ones = torch.ones(len(x), 1)
    e1 = fx.chunked_embedding(torch.from_numpy(x), ones, lambda b: fx.rff(b, w))
    e2 = fx.chunked_embedding(torch.from_numpy(x2), ones, lambda b: fx.rff(b, w))
    assert (e1 - e2).double().norm() <= fx.EMBEDDING_SENSITIVITY / len(x) + TOL


@settings(max_examples=80, deadline=None)
@given(m=st.integers(2, 15), sizes=st.lists(st.integers(1, 5), min_size=1, max_size=4),
       data=st.data(), seed=st.integers(0, 50))
def test_heterogeneous_embedding_sensitivity(m, sizes, data, seed):
    d_num = data.draw(st.integers(0, 4))
    num = data.draw(arrays(np.float32, (m + 1, d_num), elements=extreme))
    codes = np.stack([data.draw(arrays(np.int64, m + 1, elements=st.integers(0, s - 1))) for s in sizes], 1)
    y = data.draw(arrays(np.int64, m + 1, elements=st.integers(0, 2)))
    i = data.draw(st.integers(0, m - 1))
    w = fx.draw_frequencies(d_num, 20, 1.0, generator=torch.Generator().manual_seed(seed))

    def onehot(c):
        return torch.cat([F.one_hot(torch.from_numpy(c[:, j]), s).float() for j, s in enumerate(sizes)], 1)

    def emb(rows):  # the dataset is rows[:m] with row i possibly swapped for row m
        # the product's path: numeric and one-hot columns side by side, features per chunk
        x = torch.cat([torch.from_numpy(num[rows]), onehot(codes[rows])], 1)
        return fx.chunked_embedding(x, F.one_hot(torch.from_numpy(y[rows]), 3).float(),
                                    lambda b: fx.heterogeneous_features(b[:, :d_num], b[:, d_num:], w),
                                    chunk=3)

    rows = np.arange(m)
    swapped = rows.copy()
    swapped[i] = m
    change = (emb(rows) - emb(swapped)).double().norm()
    assert change <= fx.HETEROGENEOUS_SENSITIVITY / m + TOL


@settings(max_examples=80, deadline=None)
@given(y=arrays(np.int64, st.integers(1, 30), elements=st.integers(0, 5)), data=st.data())
def test_class_counts_sensitivity(y, data):
    i = data.draw(st.integers(0, len(y) - 1))
    y2 = y.copy()
    y2[i] = data.draw(st.integers(0, 5))
    c1 = torch.bincount(torch.from_numpy(y), minlength=6).double()
    c2 = torch.bincount(torch.from_numpy(y2), minlength=6).double()
    assert (c1 - c2).norm() <= fx.COUNTS_SENSITIVITY + TOL


@settings(max_examples=80, deadline=None)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 20), st.integers(1, 4)),
                elements=st.one_of(st.floats(-1e12, 1e12), st.sampled_from([0.0, -0.0, 1e-300]))),
       data=st.data())
def test_bounds_histogram_sensitivity(x, data):
    i = data.draw(st.integers(0, len(x) - 1))
    x2 = x.copy()
    x2[i] = data.draw(arrays(np.float64, x.shape[1], elements=st.floats(-1e12, 1e12)))
    edges = dp_bounds.grid(data.draw(st.sampled_from([1, 2, 4])))  # every resolution used
    # a zero-inflated column's records at its point mass are binned nowhere
    masses = data.draw(st.lists(st.sampled_from([None, 0.0, 1e-300]), min_size=x.shape[1],
                                max_size=x.shape[1]))
    change = np.linalg.norm(dp_bounds.bucket_counts(x, edges, masses)
                            - dp_bounds.bucket_counts(x2, edges, masses))
    assert change <= dp_bounds.sensitivity(x.shape[1]) + TOL


def test_sensitivity_bound_is_attained():
    """The bound is tight: replacing a record by one with the opposite feature vector in
    the same class moves the embedding by exactly 2/m, so a smaller claim would be wrong."""
    w = torch.tensor([[math.pi]])  # D = 2: φ(0) = (1, 0), φ(1) = (-1, 0)
    x = torch.zeros(4, 1)
    y = F.one_hot(torch.zeros(4, dtype=torch.long), 2).float()
    x2 = x.clone()
    x2[0] = 1.0
    e1 = fx.chunked_embedding(x, y, lambda b: fx.rff(b, w))
    e2 = fx.chunked_embedding(x2, y, lambda b: fx.rff(b, w))
    assert abs(float((e1 - e2).norm()) - fx.EMBEDDING_SENSITIVITY / 4) < 1e-6


@settings(max_examples=60, deadline=None)
@given(case=_neighbours(extreme, st.integers(0, 3), 10, 6, 4), seed=st.integers(0, 50),
       a=st.sampled_from([0.0, 0.2, 0.5, 0.9]))
def test_rff_plus_pixels_embedding_sensitivity(case, seed, a):
    """The Gaussian + linear-pixel feature keeps norm ≤ 1 (pixels clipped to [0, 1]),
    so its labelled embedding keeps sensitivity 2/m — even for out-of-range inputs."""
    x, y, i, x_new, y_new = case
    x2, y2 = x.copy(), y.copy()
    x2[i], y2[i] = x_new, y_new
    w = fx.draw_frequencies(6, 30, 1.0, generator=torch.Generator().manual_seed(seed))

    def emb(xx, yy):
        feats = fx.rff_and_pixels(torch.from_numpy(xx), w, a)
        assert (feats.double().norm(dim=1) <= 1 + 1e-6).all()
        return fx.chunked_embedding(feats, F.one_hot(torch.from_numpy(yy), 4).float(), lambda f: f,
                                    chunk=3)

    assert (emb(x, y) - emb(x2, y2)).double().norm() <= fx.EMBEDDING_SENSITIVITY / len(x) + TOL
