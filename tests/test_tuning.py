"""Tuning helpers behind Runs & Compare: settings that differ from defaults, their
label, knob values typed in by hand, sweep grids, run names and tags."""

import math

import pytest

from engine.core.config import RunConfig
from engine.methods.dpmerf.method import Params
from engine.core.errors import InputError
from engine.store.runs import RunStore
from engine.methods.knobs import knob_specs
from engine.runs.sweeps import differing_settings, parse_values, settings_label, sweep_configs


def cfg(**kw):
    return RunConfig(**kw).to_dict()


def test_only_settings_that_differ_from_the_datasets_defaults_are_shown(digits):
    d = Params.for_data(digits)
    assert differing_settings(cfg()) == {}
    # The CLI may spell out a default; it is still the default.
    assert differing_settings(cfg(params={"epochs": d.epochs, "lr": d.lr})) == {}
    assert differing_settings(cfg(params={"epochs": 7, "lr": d.lr})) == {"epochs": 7}
    # Defaults follow the data: breast_cancer's epochs=300 differs on digits, not there.
    assert differing_settings(cfg(params={"epochs": 300})) == {"epochs": 300}
    assert differing_settings(cfg(dataset="breast_cancer", params={"epochs": 300})) == {}
    # Tuples come back from JSON as lists.
    assert differing_settings(cfg(params={"gen_channels": [16, 8]})) == {}
    assert differing_settings(cfg(delta=1e-6, n_synthetic=100)) == {"delta": 1e-6,
                                                                    "n_synthetic": 100}
    # ε and seed have their own columns.
    assert differing_settings(cfg(epsilon=math.inf, seed=4)) == {}
    # A method this install lacks: every knob counts as a setting.
    assert differing_settings({"method": "gone", "dataset": "digits",
                               "params": {"x": 1}}) == {"x": 1}


def test_settings_label():
    assert settings_label({}) == "defaults"
    assert settings_label({"epochs": 7, "lr": 0.02, "gen_channels": [32, 16]}) == \
        "epochs=7, lr=0.02, gen_channels=32·16"


def test_values_typed_by_hand_are_typed_and_checked(digits):
    ks = {k.name: k for k in knob_specs(Params.for_data(digits))}
    assert parse_values(ks["epochs"], "10, 20,10") == [10, 20]
    assert parse_values(ks["lr"], "1e-3, 0.02") == [0.001, 0.02]
    assert parse_values(ks["labels"], "counts, balanced") == ["counts", "balanced"]
    with pytest.raises(InputError, match="epochs values must each be an integer. Got '1.5'"):
        parse_values(ks["epochs"], "1.5")
    with pytest.raises(InputError, match=r"labels values must each be one of balanced"):
        parse_values(ks["labels"], "maybe")
    # The bounds are the method's own declaration, the same rule validate() applies.
    with pytest.raises(InputError, match=r"epochs values must each be an int >= 1. Got 0"):
        parse_values(ks["epochs"], "0")
    with pytest.raises(InputError, match=r"n_features values must each be an even int >= 2"):
        parse_values(ks["n_features"], "301")
    with pytest.raises(InputError, match="one or more values"):
        parse_values(ks["epochs"], " , ")


def test_sweep_grid_covers_values_epsilons_and_seeds(digits):
    configs = sweep_configs(method="dpmerf", dataset="digits", epsilons=[1.0, math.inf],
                            seeds=2, data=digits, knob="n_features", values=[200, 400])
    assert len(configs) == 8
    assert {(c.params["n_features"], c.epsilon, c.seed) for c in configs} == {
        (n, e, s) for n in (200, 400) for e in (1.0, math.inf) for s in (0, 1)}
    plain = sweep_configs(method="dpmerf", dataset="digits", epsilons=[1.0], seeds=1,
                          data=digits)
    assert [c.params for c in plain] == [{}]
    # The method's own validation runs before anything is queued.
    with pytest.raises(InputError, match="'n_features' parameter of DP-MERF must be an even"):
        sweep_configs(method="dpmerf", dataset="digits", epsilons=[1.0], seeds=1,
                      data=digits, knob="n_features", values=[301])
    with pytest.raises(InputError, match="at least one ε"):
        sweep_configs(method="dpmerf", dataset="digits", epsilons=[], seeds=1, data=digits)


def test_runs_can_be_named_and_tagged(tmp_path):
    store = RunStore(tmp_path)
    assert store.labels() == {}
    rid = store.create_run(RunConfig())
    store.set_label(rid, name="  my   baseline ", tags=["lr-study", " ", "lr-study", "a b"])
    assert store.labels() == {rid: {"name": "my baseline", "tags": ["lr-study", "a b"]}}
    store.set_label(rid, name="renamed")
    assert RunStore(tmp_path).labels()[rid] == {"name": "renamed", "tags": []}
    with pytest.raises(InputError, match="no run 'nope'"):
        store.set_label("nope", name="x")
