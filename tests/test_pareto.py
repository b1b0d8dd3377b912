"""The Pareto front (engine/runs/pareto.py): non-dominated points against a brute-force
check, ties, directions, and runs from the store placed with the reasons others are
left out and the caption when they span several ε."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.config import RunConfig
from engine.runs.pareto import front, non_dominated, points
from engine.store.records import RunRecord, RunStatus


def _brute(xs, ys, y_direction):
    """Point i is kept when no j is at least as good on both axes and better on one."""
    sy = 1 if y_direction == "maximize" else -1
    keep = []
    for i in range(len(xs)):
        beaten = any(xs[j] <= xs[i] and sy * ys[j] >= sy * ys[i]
                     and (xs[j] < xs[i] or sy * ys[j] > sy * ys[i]) for j in range(len(xs)))
        keep.append(not beaten)
    return keep


def test_a_small_front_by_hand():
    # (ε, accuracy): (1, .8) beats (2, .7); (3, .9) is the only one above .8
    xs, ys = [1, 2, 3, 0.5, 1], [0.8, 0.7, 0.9, 0.6, 0.8]
    assert non_dominated(xs, ys) == [True, False, True, True, True]  # twin (1, .8) both kept
    # minimising the y turns it round: (0.5, .6) beats every other point
    assert non_dominated(xs, ys, y_direction="minimize") == [False, False, False, True, False]
    assert non_dominated([], []) == []
    with pytest.raises(ValueError):
        non_dominated([1], [1, 2])
    with pytest.raises(ValueError):
        non_dominated([1], [1], y_direction="up")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=30),
       st.sampled_from(["maximize", "minimize"]))
def test_the_sweep_agrees_with_brute_force(pts, direction):
    xs, ys = [float(p[0]) for p in pts], [float(p[1]) for p in pts]
    assert non_dominated(xs, ys, y_direction=direction) == _brute(xs, ys, direction)


def _run(rid, eps, score, *, status=RunStatus.FINISHED, spent=None, seconds=10.0,
         sweep=None, params=None):
    cfg = RunConfig(method="dpmerf", dataset="digits", epsilon=eps, params=params or {})
    return RunRecord(run_id=rid, config=cfg, status=status, created=0.0, started=100.0,
                     ended=100.0 + seconds, sweep=sweep,
                     epsilon_spent=spent if spent is not None else
                     (None if math.isinf(eps) else eps),
                     metrics={} if score is None else {"synthetic/logreg": score})


def test_runs_of_the_store_are_placed_and_the_rest_said():
    runs = [_run("a", 1.0, 0.80, sweep="study:s"), _run("b", 2.0, 0.78),
            _run("c", 3.0, 0.85, seconds=50.0), _run("d", 0.5, 0.70, seconds=5.0),
            _run("e", math.inf, 0.95), _run("f", 1.0, None),
            _run("g", 1.0, 0.99, status=RunStatus.FAILED)]
    f = front(runs, "synthetic/logreg", axis="epsilon")
    assert [p.run_id for p in f.points] == ["a", "b", "c", "d"]  # finished, private, scored
    assert [p.run_id for p in f.on_front] == ["d", "a", "c"]  # b: a costs less, scores more
    assert f.points[0].group == "study:s" and f.points[1].group == "single run"
    notes = " ".join(f.notes())
    assert "4 different ε (0.5 to 3)" in notes and "not like for like" in notes
    assert "3 of 4 run(s) on the front" in notes
    assert "1 finished run(s) left out: trained without noise" in notes
    assert "1 finished run(s) left out: no synthetic/logreg score" in notes
    # against seconds: d (5 s) and a (10 s) on the front; c scores best but took 50 s
    s = front(runs, "synthetic/logreg", axis="seconds")
    assert [p.run_id for p in s.on_front] == ["d", "a", "c"]
    assert [p.x for p in s.on_front] == [5.0, 10.0, 50.0]


def test_eps_axis_reads_the_spent_epsilon_and_one_eps_needs_no_caveat():
    runs = [_run("a", 1.0, 0.8, spent=0.97), _run("b", 1.0, 0.7)]
    f = front(runs, "synthetic/logreg")
    assert [p.x for p in f.points] == [0.97, 1.0]
    assert not any("different ε" in n for n in f.notes())
    with pytest.raises(ValueError):
        points(runs, "synthetic/logreg", axis="memory")
