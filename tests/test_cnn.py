"""The DataLens evaluation CNN: learns real digits, never looks at the test set to choose
epochs, and works for 8×8 and 28×28 images."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.cnn import cnn_accuracy
from engine.data import load
from engine.errors import InputError

torch.set_num_threads(1)


def test_cnn_learns_real_digits():
    d = load("digits")
    out = cnn_accuracy(d.x_train, d.y_train, d.x_test, d.y_test, device="cpu", max_epochs=4)
    assert set(out) == {"accuracy", "epochs_chosen", "val_accuracy"}
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
