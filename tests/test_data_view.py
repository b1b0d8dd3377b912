"""The web server's view of a dataset (engine/data/view.py): the real shapes and public
metadata, zero arrays, and the peek; read in a child process."""

import numpy as np
import pytest

from engine.core.errors import InputError
from engine.data import view
from engine.methods.registry import default_params, params_for
from engine.core.config import RunConfig


def test_the_shape_matches_the_data_and_holds_no_record(digits):
    shape, peek = view.shape_of(digits)
    for k in ("x_train", "y_train", "x_test", "y_test"):
        real, zero = getattr(digits, k), getattr(shape, k)
        assert zero.shape == real.shape and zero.dtype == real.dtype
        assert not zero.any() and not zero.flags.writeable
        assert zero.nbytes == real.nbytes and zero.base.size == 1  # one zero, broadcast
    assert (shape.n_train, shape.n_classes, shape.image_shape) == (
        digits.n_train, digits.n_classes, digits.image_shape)
    np.testing.assert_array_equal(peek.x, digits.x_train[:view.PEEK_IMAGES])
    np.testing.assert_array_equal(peek.y, digits.y_train[:view.PEEK_IMAGES])


@pytest.mark.parametrize("method", ["dpmerf", "datalens", "marginals"])
def test_defaults_from_the_shape_equal_those_from_the_records(digits, method):
    """Defaults read only sizes and shapes: zeros in place of the records change nothing."""
    shape, _ = view.shape_of(digits)
    assert default_params(method, shape) == default_params(method, digits)
    cfg = RunConfig(method=method, dataset="digits", epsilon=1.0)
    assert params_for(cfg, shape) == params_for(cfg, digits)


def test_described_in_a_child_process(breast_cancer):
    shape, peek = view.describe("breast_cancer")
    assert shape.kind == "tabular" and shape.n_train == breast_cancer.n_train
    assert [c.name for c in shape.columns] == [c.name for c in breast_cancer.columns]
    assert not shape.x_train.any()
    np.testing.assert_array_equal(peek.x, breast_cancer.x_train[:view.PEEK_ROWS])


def test_a_loader_error_keeps_its_message():
    with pytest.raises(InputError, match="unknown dataset 'no_such_set'"):
        view.describe("no_such_set")
