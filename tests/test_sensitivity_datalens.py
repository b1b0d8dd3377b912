"""The DataLens vote vector under attack: replace one record of the private set (any
index, any new value including extremes, any class), recompute every teacher's vote with
the REAL `partition` and `topk_sto_sign`, and check that the sum of votes for every
synthetic record moves by at most 2√k in L2 — the sensitivity engine.privacy.accountant is told.

tests/test_datalens.py already checks the bound when one teacher's vote is replaced by an
arbitrary one; here the record → teacher map comes from the real partition, so a
partition that put a record in two teachers (the official code's defect) would fail.
"""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.methods.datalens import method as datalens
from engine.methods.datalens import accounting as datalens_accounting
from engine.methods.datalens import votes as datalens_votes

TOL = 1e-5
values = st.one_of(st.floats(-1e6, 1e6, allow_nan=False, width=32),
                   st.sampled_from([0.0, 1e-30, -1e-30, 1e6, -1e6]))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), data=st.data())
def test_a_record_reaches_exactly_one_teacher(n, data):
    teachers = data.draw(st.integers(1, n))
    size = data.draw(st.integers(1, n // teachers))
    parts = datalens.partition(n, teachers, data.draw(st.integers(0, 5)), size)
    holders = np.bincount(parts.ravel(), minlength=n)
    assert holders.max() == 1  # no record in two teachers
    assert holders.sum() == teachers * size


def _teacher_grads(x, y, parts, w):
    """A stand-in for teacher i's per-synthetic-record gradient that depends on every one
    of its records (features and label): mean over its part of tanh(x·W_y). Shape
    (teachers, batch, d). Any data dependence is allowed; only the partition matters."""
    xs, ys = x[torch.as_tensor(parts)], y[torch.as_tensor(parts)]  # (N, m, d), (N, m)
    proj = torch.tanh(xs.unsqueeze(2) * w[ys])  # (N, m, batch, d)
    return proj.mean(1)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 30), d=st.integers(1, 24), batch=st.integers(1, 3), data=st.data())
def test_replace_one_moves_the_vote_sum_by_at_most_2_sqrt_k(n, d, batch, data):
    k = data.draw(st.integers(1, d))
    teachers = data.draw(st.integers(1, n))
    parts = datalens.partition(n, teachers, data.draw(st.integers(0, 3)))
    x = torch.from_numpy(data.draw(arrays(np.float32, (n, d), elements=values)))
    y = torch.from_numpy(data.draw(arrays(np.int64, n, elements=st.integers(0, 2))))
    w = torch.from_numpy(data.draw(arrays(np.float32, (3, batch, d),
                                          elements=st.floats(-3, 3, width=32))))
    i = data.draw(st.integers(0, n - 1))
    x2, y2 = x.clone(), y.clone()
    x2[i] = torch.from_numpy(data.draw(arrays(np.float32, d, elements=values)))
    y2[i] = data.draw(st.integers(0, 2))  # possibly a different class
    clip = data.draw(st.sampled_from([1e-5, 1.0, 1e6]))

    # Same stochastic-sign randomness on both sides (it is not DP noise): a teacher whose
    # data did not change then casts exactly the same vote.
    def votes(xx, yy):
        g = torch.Generator().manual_seed(7)
        return datalens_votes.topk_sto_sign(_teacher_grads(xx, yy, parts, w), k, clip, gen=g)

    v1, v2 = votes(x, y), votes(x2, y2)
    changed = (v1 != v2).flatten(1).any(1)
    assert changed.sum() <= 1  # at most the one teacher holding record i
    if changed.any():
        assert i in parts[int(changed.nonzero()[0, 0])]
    diff = v1.sum(0, dtype=torch.float32) - v2.sum(0, dtype=torch.float32)  # (batch, d)
    bound = 2 * math.sqrt(k)
    assert (diff.norm(dim=-1) <= bound + TOL).all()
    # ... and the accountant is told exactly this bound.
    assert datalens_accounting.noise_multiplier(sigma=bound, top_k=k) == 1.0


def test_bound_is_attained_by_a_flipped_vote():
    """Tight: a teacher flipping all k signs moves the sum by exactly 2√k."""
    k, d = 5, 9
    g = torch.zeros(3, 1, d)
    g[:, :, :k] = 1.0
    a = datalens_votes.topk_sto_sign(g, k, 1.0)
    g2 = g.clone()
    g2[0] = -g2[0]
    b = datalens_votes.topk_sto_sign(g2, k, 1.0)
    diff = a.sum(0, dtype=torch.float32) - b.sum(0, dtype=torch.float32)
    assert abs(float(diff.double().norm()) - 2 * math.sqrt(k)) < 1e-9


@settings(max_examples=30, deadline=None)
@given(pool=st.sampled_from([1, 2, 4]), batch=st.integers(1, 3), data=st.data())
def test_votes_on_pixel_blocks_keep_the_2_sqrt_k_bound(pool, batch, data):
    """teacher_votes with vote_pool: one teacher's parameters (its data) changed, every
    other vote identical, and each record's vote sum moves by at most 2√k, where k counts
    blocks (at most d / pool²)."""
    from engine.methods.datalens.nets import MLPTeacherEnsemble
    from engine.methods.datalens.step import teacher_votes

    voted = 64 // pool ** 2
    k = data.draw(st.integers(1, voted))
    a = MLPTeacherEnsemble(5, (1, 8, 8), 3, hidden=4, seed=0)
    with torch.no_grad():
        a.fc2_w.normal_(generator=torch.Generator().manual_seed(1))
    b = MLPTeacherEnsemble(5, (1, 8, 8), 3, hidden=4, seed=0)
    b.load_state_dict(a.state_dict())
    i = data.draw(st.integers(0, 4))
    with torch.no_grad():  # teacher i trained on a different partition
        b.fc1_w[i] = torch.from_numpy(data.draw(arrays(np.float32, b.fc1_w[i].shape,
                                                       elements=st.floats(-10, 10, width=32))))
    x = torch.rand(batch, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    y = torch.arange(batch) % 3
    va, vb = (teacher_votes(t, x, y, k, 1e-5, torch.Generator().manual_seed(7), pool) for t in (a, b))
    assert va.shape == (5, batch, voted) and ((va != 0).sum(-1) == k).all()
    others = [j for j in range(5) if j != i]
    assert torch.equal(va[others], vb[others])
    diff = va.sum(0, dtype=torch.float32) - vb.sum(0, dtype=torch.float32)
    assert (diff.norm(dim=-1) <= 2 * math.sqrt(k) + TOL).all()
