"""Downstream scoring (engine/evaluation/utility.py): the real-data reference fitted once
per machine, and a synthetic set too small for the MLP's held-out part still scored."""

import numpy as np
import pytest

from engine.evaluation import utility

# the reference is fitted here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


def test_the_real_reference_is_fitted_once_per_machine_and_kept_for_the_next_process(
        runs_root, breast_cancer, monkeypatch):
    """A new trainer process (here: the in-process memo emptied) reads the real-data
    reference from the file the first fit wrote, fits nothing, and scores alike; other
    data or another seed is fitted anew."""
    from dataclasses import replace

    monkeypatch.setattr(utility, "_REAL_SCORES", {})
    assert not utility.real_reference_fitted(breast_cancer)
    first = utility.real_reference(breast_cancer, utility.MODELS)
    assert utility.real_reference_fitted(breast_cancer)
    assert list((runs_root / "real-references").glob("*.json"))  # beside this store

    monkeypatch.setattr(utility, "_REAL_SCORES", {})  # the next process
    fits = []
    real_fit = utility.fit_and_score
    monkeypatch.setattr(utility, "fit_and_score", lambda *a, **k: fits.append(a[0]) or real_fit(*a, **k))
    assert utility.real_reference_fitted(breast_cancer)
    assert utility.real_reference(breast_cancer, utility.MODELS) == first and fits == []
    secs = {}
    utility.full_evaluation(breast_cancer.x_train, breast_cancer.y_train, breast_cancer, seconds=secs)
    assert fits == list(utility.MODELS) and secs["score_real"] < secs["score_synthetic"]

    flipped = replace(breast_cancer, y_test=1 - breast_cancer.y_test)  # another test split
    assert not utility.real_reference_fitted(flipped)
    assert not utility.real_reference_fitted(breast_cancer, seed=1)


def test_one_record_of_a_class_is_scored_without_the_mlps_held_out_part(breast_cancer):
    """A tiny run's synthetic labels may hold a class once: the MLP's stratified
    early-stopping split cannot take it, so the MLP trains on all of it instead of the
    run failing (seen: a 96-row upload, 10 epochs, in tests/test_browser.py)."""
    y = np.zeros(96, dtype=np.int64)
    y[0] = 1
    x = breast_cancer.x_train[:96]
    assert not utility.can_hold_out(y) and utility.can_hold_out(breast_cancer.y_train)
    assert not utility.can_hold_out(np.arange(12) % 6)  # 2 held out of 12, 6 classes
    scores = utility.fit_and_score("mlp", x, y, breast_cancer)
    assert 0 <= scores["accuracy"] <= 1
