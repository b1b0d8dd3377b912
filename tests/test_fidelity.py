"""engine/evaluation/fidelity.py against figures computed by hand on a four-record table."""

import math

import numpy as np
import pytest

from engine.data.dataset import Column
from engine.evaluation.fidelity import fidelity

COLS = [Column("a", "num", bounds=(0.0, 4.0)), Column("b", "num", bounds=(-10.0, 10.0)),
        Column("c", "cat", categories=["x", "y"])]
REAL = np.array([[0, 0, 0], [1, 2, 0], [2, 4, 1], [3, 6, 1]], float)  # b = 2a
SYN = np.array([[1, -1, 0], [1, -1, 1], [2, -2, 1], [4, -4, 1]], float)  # b = -a


def test_column_distances_match_a_hand_computation():
    out = fidelity(REAL, None, SYN, None, COLS)
    cols = out["columns"]
    # c: real shares (.5, .5), synthetic (.25, .75): TV = ½(.25 + .25)
    assert cols["c"]["tv"] == pytest.approx(0.25)
    # a: sorted real 0 1 2 3 vs synthetic 1 1 2 4: W1 = (1+0+0+1)/4 = .5, over range 4
    assert cols["a"]["wasserstein_normalised"] == pytest.approx(0.125)
    assert cols["a"]["ks"] == pytest.approx(0.25)  # CDFs differ by ¼ at 0 and at 3
    # b: sorted real 0 2 4 6 vs -4 -2 -1 -1: W1 = (4+4+5+7)/4 = 5, over range 20
    assert cols["b"]["wasserstein_normalised"] == pytest.approx(0.25)
    assert cols["b"]["ks"] == pytest.approx(1.0)  # every synthetic b below every real one
    assert out["mean_column_distance"] == pytest.approx((0.25 + 1.0 + 0.25) / 3)  # KS, KS, TV
    hist = cols["c"]["histogram"]
    assert hist["real"] == [0.5, 0.5] and hist["synthetic"] == [0.25, 0.75]


def test_dependence_errors_match_a_hand_computation():
    out = fidelity(REAL, None, SYN, None, COLS)
    diff = np.array(out["dependence"]["abs_difference"])
    # a-b: Pearson r is 1 on the real table, -1 on the synthetic one
    assert diff[0, 1] == pytest.approx(2.0)
    # a-c: real a falls in 4 distinct bins (of 10 on [0, 4]), each with one c: V = 1.
    # synthetic bins 2,2,5,9 against c 0,1,1,1: chi² = 4/3, V = √(4/3 / 4) = √(1/3)
    assert diff[0, 2] == pytest.approx(1 - math.sqrt(1 / 3))
    # b-c: synthetic bins 4,4,4,3 against c 0,1,1,1: chi² = 4/9, V = √(4/9 / 4) = 1/3
    assert diff[1, 2] == pytest.approx(2 / 3)
    assert np.allclose(diff, diff.T) and np.all(np.diag(diff) == 0)
    assert out["mean_dependence_error"] == pytest.approx((2 + 1 - math.sqrt(1 / 3) + 2 / 3) / 3)


def test_the_label_joins_as_a_categorical_column():
    y = np.array([0, 0, 1, 1])
    out = fidelity(REAL, y, SYN, np.array([0, 1, 1, 1]), COLS, ["n", "p"], label="y")
    assert out["dependence"]["names"] == ["a", "b", "c", "y"]
    assert out["columns"]["y"]["tv"] == pytest.approx(0.25)
    # c and y are the same vector in each table: V = 1 on both sides
    assert out["dependence"]["abs_difference"][2][3] == pytest.approx(0.0)


def test_runs_page_figures_draw_the_measured_figures():
    from ui.fidelity_view import dependence_figure, histogram_figure

    out = fidelity(REAL, None, SYN, None, COLS)
    bars = histogram_figure("c", out["columns"]["c"]["histogram"]).data
    assert list(bars[0].y) == [0.5, 0.5] and list(bars[1].y) == [0.25, 0.75]
    heat = dependence_figure(out["dependence"]).data[0]
    assert np.allclose(heat.z, out["dependence"]["abs_difference"]) and list(heat.x) == ["a", "b", "c"]
