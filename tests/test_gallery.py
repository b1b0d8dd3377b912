"""The gallery: built with the project's own runner, only small files kept, loaded into
the run store once however often the app starts."""

import json
import math

import pytest

from conftest import TINY_DPMERF
from engine.runs import gallery
from engine.cli.commands import main
from engine.core.config import RunConfig
from engine.methods.registry import METHODS, get_method
from engine.store.runs import RunStore


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("gallery")
    configs = [RunConfig(epsilon=1.0, params={**TINY_DPMERF, "epochs": 2}),
               RunConfig(epsilon=math.inf, params={**TINY_DPMERF, "epochs": 2})]
    written = gallery.build(configs, out, log=lambda _: None)
    return out, configs, written


def test_build_keeps_only_the_small_files(built):
    out, configs, written = built
    assert [p.name for p in written] == [gallery.entry_name(c) for c in configs]
    for folder in written:
        assert sorted(p.name for p in folder.iterdir()) == sorted(gallery.KEEP)
        assert json.loads((folder / "metrics.json").read_text())["status"] == "finished"
    # A second build keeps what is there instead of retraining.
    assert gallery.build(configs, out, log=lambda _: None) == []


def test_loader_adds_each_run_once(built, tmp_path):
    out, configs, _ = built
    store = RunStore(tmp_path / "runs")
    added = gallery.load_into(store, out)
    assert sorted(added) == sorted(gallery.ID_PREFIX + gallery.entry_name(c) for c in configs)
    assert gallery.load_into(store, out) == []
    # A restart opens a new store on the same folder: still nothing twice.
    again = RunStore(tmp_path / "runs")
    assert gallery.load_into(again, out) == []
    rows = again.list_runs()
    assert len(rows) == len(configs) and {r.sweep for r in rows} == {gallery.SWEEP}
    for r in rows:
        metrics = json.loads((out / r.run_id[len(gallery.ID_PREFIX):] / "metrics.json").read_text())
        assert r.status == "finished"
        # Every score of metrics.json, not one fixed column.
        assert r.metrics == pytest.approx(metrics["accuracy"])
        assert r.headline == metrics["accuracy"]["synthetic/logreg"]
        assert set(again.artifacts(r.run_id)) == set(gallery.KEEP)
    private = next(r for r in rows if math.isfinite(r.epsilon))
    assert 0.99 < private.epsilon_spent <= 1.0


def test_plan_covers_each_method_and_epsilon_on_digits():
    """On digits, or on breast_cancer for a method that models tables only (AIM); and
    every method that models tables on breast_cancer too, for one chart of them all."""
    names = [gallery.entry_name(c) for c in gallery.plan(more=False)]
    tables = [m for m in METHODS if "tabular" in getattr(get_method(m), "DATA_KINDS",
                                                         ("image", "tabular"))]
    for method in METHODS:
        for eps in ("0.1", "0.3", "1", "3", "10", "inf"):
            assert f"{gallery.dataset_for(method)}-{method}-eps{eps}-seed0" in names
            if method in tables:
                assert f"breast_cancer-{method}-eps{eps}-seed0" in names
    assert set(tables) >= {"dpmerf", "marginals", "aim"} and "datalens" not in tables
    pairs = {(gallery.dataset_for(m), m) for m in METHODS} | {("breast_cancer", m) for m in tables}
    assert len(names) == len(set(names)) == 6 * len(pairs)


def test_committed_gallery_loads(tmp_path):
    entries = list(gallery.entries())
    # Every entry is in the plan, whichever datasets this machine has.
    planned = {gallery.entry_name(c) for c in gallery.plan(slow=True,
                                                          only_available=False)}
    assert entries, "build it: python -m engine gallery"
    assert {name for name, *_ in entries} <= planned
    # Every registered method is there for a newcomer to compare.
    assert {config.method for _, config, _, _ in entries} == set(METHODS)
    # Both papers' methods on Fashion-MNIST, so nobody waits ten minutes to compare them.
    for method in ("dpmerf", "datalens"):
        assert {1.0, 10.0} <= {config.epsilon for _, config, _, _ in entries
                               if (config.dataset, config.method) == ("fashion_mnist", method)}
    store = RunStore(tmp_path / "runs")
    assert len(gallery.load_into(store)) == len(entries)
    for name, config, metrics, folder in entries:
        assert metrics["status"] == "finished" and (folder / "samples.png").exists()
        assert not (folder / "synthetic.npz").exists()


def test_cli_gallery_with_a_bad_flag_says_so_in_one_line(capsys):
    assert main(["gallery", "--nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
