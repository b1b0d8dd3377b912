"""Declarative knobs (engine/methods/knobs.py): one declaration per field serves validation and
the Playground's widgets, so the two cannot disagree; defaults follow the data's shape."""

import math
from dataclasses import dataclass, fields, replace

import numpy as np
import pytest

from engine.privacy import accountant as privacy
from engine.data.catalog import load
from engine.data.dataset import Column, Dataset
from engine.core.errors import InputError
from engine.methods.knobs import check_knobs, knob, knob_specs
from engine.methods.registry import available_methods, default_params, get_method, make_params
from ui.knobs import widgets


@dataclass(frozen=True)
class Toy:
    sigma: float = knob(1.0, lo=0.0, lo_open=True)
    share: float = knob(0.5, lo=0.0, hi=1.0, hi_open=True)
    steps: int = knob(3, lo=1, hi="n_train")
    width: int | None = knob(None, kind="int", lo=1, none="automatic")
    pick: str = knob("a", choices=("a", "b"))
    flag: bool = knob(False)
    layers: tuple = knob((4, 8), lo=1)
    even: int = knob(2, lo=2, multiple_of=2)


STEPS = r"an int in \[1, 10\] \(the number of training records\)"  # hi="n_train" resolved


@pytest.mark.parametrize("name, value, rule", [
    ("sigma", -1, "a float > 0"), ("sigma", 0.0, "a float > 0"), ("sigma", math.nan, "a float > 0"),
    ("sigma", "1", "a float > 0"), ("sigma", True, "a float > 0"),
    ("share", 1.0, r"a float in \[0, 1\)"), ("steps", 0, STEPS), ("steps", 11, STEPS),
    ("steps", 2.0, STEPS),
    ("width", 0, r"an int >= 1 or None \(= automatic\)"), ("pick", "c", "one of a, b"),
    ("flag", 1, "true or false"), ("layers", (4,), "a tuple of 2 ints >= 1"),
    ("layers", (4, 0), "a tuple of 2 ints >= 1"), ("even", 3, "an even int >= 2"),
])
def test_the_house_message_from_the_declaration(name, value, rule):
    data = Dataset("d", "tabular", np.zeros((10, 2)), np.zeros(10, np.int64), np.zeros((2, 2)),
                   np.zeros(2, np.int64), ["a"])
    with pytest.raises(InputError, match=rf"^The '{name}' parameter of Toy must be {rule}\. "
                                         rf"Got .* instead\.$"):
        check_knobs(replace(Toy(), **{name: value}), "Toy", data)


def test_valid_values_pass_and_data_bounds_wait_for_data():
    check_knobs(replace(Toy(), width=5, layers=[1, 2], steps=10**6), "Toy")  # no data: no cap
    with pytest.raises(ValueError, match="none="):
        knob(None, kind="float")


def test_the_docs_message_example():
    with pytest.raises(InputError, match=r"^The 'sigma' parameter of DataLens must be a float > 0\. "
                                         r"Got -1 instead\.$"):
        make_params("datalens", load("digits"), {"sigma": -1})


@pytest.mark.parametrize("method", available_methods())
def test_every_field_is_a_declared_knob_and_class_defaults_are_valid(method):
    params = get_method(method).Params
    assert {f.name for f in fields(params)} == {s.name for s in knob_specs(params)}
    check_knobs(params(), "x")  # the declared defaults obey their own declaration
    for spec in knob_specs(params):
        if spec.name == "accountant":  # choices come from the accountant module itself
            assert spec.choices == tuple(privacy.ACCOUNTANTS)


def _datasets():
    return [load("digits"), load("breast_cancer")]


@pytest.mark.parametrize("method", available_methods())
def test_every_value_a_widget_allows_at_its_ends_validates(method):
    """The widgets' ends are the declaration's (open bounds moved just inside), so the
    Playground cannot offer a value validate() refuses; this is where DataLens sigma's
    widget once allowed 0 while validation wanted > 0."""
    tried = 0
    for data in _datasets():
        try:
            defaults = make_params(method, data)
        except InputError:  # the method does not take this kind of data
            continue
        for w in widgets(defaults, data):
            ends = [v for v in (w.lo, w.hi) if v is not None]
            ends += list(w.spec.choices)
            if w.spec.optional:
                ends.append(None)
            for v in ends:
                if w.spec.kind == "int" and v is not None:
                    v = int(v)
                replace(defaults, **{w.name: v}).validate(data)
                tried += 1
            if w.lo is not None and w.spec.kind in ("int", "float"):
                below = w.lo - 1 if w.spec.kind == "int" else math.nextafter(w.lo, -math.inf)
                with pytest.raises(InputError, match=f"'{w.name}' parameter"):
                    replace(defaults, **{w.name: below}).validate(data)
    assert tried > 0


def _image(n, shape):
    x = np.broadcast_to(np.float32(0), (n, *shape))  # shape only: no memory
    return Dataset("npz", "image", x, np.arange(n) % 10, x[:5], np.arange(5), [str(i) for i in range(10)],
                   shape)


def _tabular(n, d):
    x = np.zeros((n, d))
    return Dataset("csv", "tabular", x, np.arange(n) % 2, x[:5], np.arange(5) % 2, ["a", "b"],
                   columns=[Column(f"c{j}", "num", bounds=(0.0, 1.0)) for j in range(d)])


@pytest.mark.parametrize("data", [_image(500, (1, 16, 16)), _image(50_000, (3, 32, 32)),
                                  _image(200_000, (1, 28, 28)), _tabular(60, 4),
                                  _tabular(30_000, 12)], ids=lambda d: f"{d.kind}-{d.n_train}")
def test_dpmerf_defaults_fit_an_unseen_dataset(data):
    """A user's NPZ or CSV of a size no built-in has: the derived defaults validate, train
    for a sensible number of generator steps and fit in memory."""
    from engine.methods.dpmerf import cost as dpmerf_cost
    from engine.methods.dpmerf.method import Params

    p = Params.for_data(data).validate(data)
    steps = math.ceil(p.epochs * data.n_train / p.batch_size)
    assert 200 <= steps <= 2000, steps
    assert 1_000 <= p.n_features <= 10_000
    assert dpmerf_cost.memory_gb(data, p, data.n_train) < 8
    assert Params.for_data(replace(data, name="digits")) == Params.for_data(data)  # not the name


def test_dpmerf_keeps_the_measured_built_in_defaults():
    from engine.methods.dpmerf.method import Params

    digits, cancer = load("digits"), load("breast_cancer")
    assert Params.for_data(digits) == Params(n_features=1_000, epochs=150, batch_size=200,
                                             sample_every=10)
    assert Params.for_data(cancer) == Params(n_features=1_000, epochs=300, batch_size=200,
                                             latent=10, labels="counts")
    fashion_sized = _image(60_000, (1, 28, 28))
    assert Params.for_data(fashion_sized) == Params(epochs=2, projection="auto",
                                                    sample_temperature=0.5, gen_hidden=400,
                                                    gen_channels=(32, 16))


def test_registry_defaults_are_the_methods_for_data():
    digits = load("digits")
    for method in available_methods():
        assert default_params(method, digits) == get_method(method).Params.for_data(digits)


def test_a_default_that_does_not_fit_the_data_stays_reachable():
    """DataLens's class defaults on a 455-record table: the widget keeps 4,000 teachers
    reachable (Streamlit would fail on a default above its max); validate() explains."""
    from engine.methods.datalens.method import Params

    cancer = load("breast_cancer")
    teachers = {w.name: w for w in widgets(Params(), cancer)}["teachers"]
    assert teachers.hi == Params().teachers > cancer.n_train
    with pytest.raises(InputError, match="image datasets only"):
        Params().validate(cancer)
