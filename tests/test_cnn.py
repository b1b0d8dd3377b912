"""The DataLens evaluation CNN: learns real digits, never looks at the test set to choose
epochs, and works for 8×8 and 28×28 images."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.evaluation.cnn import cnn_accuracy, estimate_seconds, fit_batches, run_to_end, scored_epochs
from engine.data.catalog import load
from engine.core.errors import InputError

torch.set_num_threads(1)


def test_cnn_learns_real_digits():
    d = load("digits")
    out = cnn_accuracy(d.x_train, d.y_train, d.x_test, d.y_test, device="cpu", max_epochs=4)
    assert set(out) == {"accuracy", "epochs_chosen", "val_accuracy", "epochs_run"}
    assert out["accuracy"] > 0.85 and 1 <= out["epochs_chosen"] <= 4


def test_epochs_are_chosen_on_synthetic_validation_not_test():
    """Test labels that are pure noise must not change which epoch is chosen."""
    d = load("digits")
    x, y = d.x_train[:400], d.y_train[:400]
    noisy_test = np.random.default_rng(0).integers(0, 10, len(d.y_test))
    a = cnn_accuracy(x, y, d.x_test, d.y_test, max_epochs=3, seed=1)
    b = cnn_accuracy(x, y, d.x_test, noisy_test, max_epochs=3, seed=1)
    assert a["epochs_chosen"] == b["epochs_chosen"] and a["val_accuracy"] == b["val_accuracy"]


def test_28x28_shapes_and_random_labels_near_chance():
    """Labels that carry no information about the images cannot be learned: on unseen
    noise images the CNN must stay near chance (0.1), not above it."""
    rng = np.random.default_rng(0)
    x = rng.random((200, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, 200)
    x_test = rng.random((600, 1, 28, 28), dtype=np.float32)
    y_test = rng.integers(0, 10, 600)
    out = cnn_accuracy(x, y, x_test, y_test, max_epochs=1, n_classes=10)
    # chance is .1; with 600 test records its standard error is about .012
    assert out["accuracy"] < 0.2 and out["epochs_chosen"] == 1


def test_bad_shapes_raise():
    with pytest.raises(InputError, match="images shaped"):
        cnn_accuracy(np.zeros((5, 64)), np.zeros(5), np.zeros((5, 64)), np.zeros(5))


def test_progress_per_epoch_and_early_stop_after_patience():
    """Labels that carry no information: validation accuracy stops improving, so the fit
    ends `patience` epochs after its best one, and every epoch run was reported."""
    rng = np.random.default_rng(1)
    x = rng.random((300, 1, 8, 8), dtype=np.float32)
    y = rng.integers(0, 10, 300)
    fit = scored_epochs(x, y, x[:50], y[:50], max_epochs=30, patience=2, n_classes=10)
    epochs = []
    while True:
        try:
            epochs.append(next(fit))
        except StopIteration as done:
            out = done.value
            break
    assert [e.epoch for e in epochs] == list(range(1, out["epochs_run"] + 1))
    assert all(e.max_epochs == 30 and e.fit == "synthetic" for e in epochs)
    assert out["epochs_run"] == out["epochs_chosen"] + 2 < 30
    assert out["val_accuracy"] == max(e.val_accuracy for e in epochs)


def test_run_to_end_gives_the_same_scores_as_cnn_accuracy():
    d = load("digits")
    x, y = d.x_train[:300], d.y_train[:300]
    a = cnn_accuracy(x, y, d.x_test, d.y_test, max_epochs=2, seed=3)
    b = run_to_end(scored_epochs(x, y, d.x_test, d.y_test, max_epochs=2, seed=3))
    assert a == b


def test_cost_bound_counts_every_epoch_and_the_forward_passes():
    """The preview's CNN cost: a timed batch × the batches a fit may run (all epochs)."""
    assert fit_batches(1000, 10) == pytest.approx(10 * (8 + 1 / 3))  # 1000/128 → 8; val 100 → 1/3
    assert fit_batches(60000, 10) == pytest.approx(10 * (469 + 47 / 3))
    assert estimate_seconds(1000, (1, 28, 28), 10, max_epochs=1) > 0
