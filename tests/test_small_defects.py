"""Issue 43's small defects: log axes that read 1, 2, 5, 10…; the privacy–utility chart's
references in its legend instead of overprinted labels, opening on a dataset with runs;
tables' sample grids not slivers; metric labels that fit; unknown query parameters out of
the URL; an unknown page path says so."""

from __future__ import annotations

import json

from apptest import open_app

from engine.core.config import RunConfig
from engine.store.records import RunRecord, RunStatus
from ui.common import log_ticks
from ui.runs_table import chart_dataset, grid_columns
from ui.url_check import unknown_page


def test_log_ticks_read_one_two_five_ten_in_order():
    ticks, labels = log_ticks([1, 1000])
    assert labels == ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1,000"]
    assert ticks == sorted(ticks)  # never "5, 2, 10, 5, 2, 1"
    _, labels = log_ticks([0.01, 1e6])  # many decades: powers of ten only
    assert labels == ["0.01", "0.1", "1", "10", "100", "1,000", "10,000", "1e5", "1e6"]


def _chart(at, key_part: str) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if key_part in json.dumps(spec.get("layout", {}).get("title", "")):
            return spec
    raise AssertionError(f"no chart titled {key_part!r}")


def test_the_accountants_log_axes_carry_their_own_ticks(runs_root):
    at = open_app()
    at.switch_page("pages/accountant.py").run()
    assert not at.exception
    spec = _chart(at, "Noise needed for one release")
    for axis in ("xaxis", "yaxis"):
        labels = spec["layout"][axis]["ticktext"]
        values = spec["layout"][axis]["tickvals"]
        assert values == sorted(values) and len(labels) == len(values) >= 3


def _run(run_id, dataset, status="finished", method="dpmerf", eps=1.0, metrics=None):
    return RunRecord(run_id=run_id, config=RunConfig(method=method, dataset=dataset, epsilon=eps),
                     status=RunStatus(status), created=0.0, metrics=metrics or {})


def test_the_privacy_utility_chart_names_its_references_in_the_legend():
    from ui.runs_view import pu_figure

    pu = {"metric": "synthetic/logreg",
          "lines": {("dpmerf", "defaults"): {"epsilon": [0.5, 1.0, 5.0], "mean": [.5, .6, .7],
                                              "lo": [.5, .6, .7], "hi": [.5, .6, .7], "n": [1, 1, 1]}},
          "nonprivate": {("dpmerf", "defaults"): .80, ("marginals", "defaults"): .81,
                         ("aim", "defaults"): .805},
          "real": .82}
    fig = pu_figure(pu)
    assert not fig.layout.annotations  # three labels at .80–.81 printed over each other
    names = [t.name for t in fig.data if t.name]
    assert sum("non-private" in n for n in names) == 3 and any("real data" in n for n in names)


def test_the_chart_opens_on_the_playgrounds_dataset_else_the_one_with_most_runs():
    runs = [_run("a", "breast_cancer"), _run("b", "digits"), _run("c", "digits"),
            _run("d", "fashion_mnist", status="failed")]
    assert chart_dataset(runs) == "digits"  # not the first name, breast_cancer
    assert chart_dataset(runs, "breast_cancer") == "breast_cancer"
    assert chart_dataset(runs, None, "breast_cancer") == "breast_cancer"
    assert chart_dataset(runs, "breast_cancer", "digits") == "breast_cancer"  # my run's first
    assert chart_dataset(runs, "fashion_mnist") == "digits"  # no finished run there
    assert chart_dataset([]) is None


def test_a_tables_sample_grids_are_two_a_row():
    assert grid_columns(5, "tabular") == 2 and grid_columns(1, "tabular") == 1
    assert grid_columns(5, "image") == 5 and grid_columns(9, "image") == 6


def test_metric_labels_fit_with_the_full_name_in_their_help(runs_root):
    from ui.train_gate import FITS_HALF, FITS_WHOLE

    at = open_app({"dataset": "breast_cancer", "method": "marginals"})
    assert not at.exception
    labels = {m.label: m.help for m in at.metric}
    long = "cells per doubling (columns without public bounds)"  # cut off before
    assert labels.get("cells per doubling") == long and long not in labels
    assert all(len(label) <= FITS_WHOLE for label in labels)
    # a label too long for half the column puts the figures one to a row
    assert any(len(label) > FITS_HALF for label in labels)
    rows = [b for b in _flat_blocks(at) if getattr(b, "type", None) == "horizontal"
            and any(getattr(e, "type", None) == "metric" for e in _walk(b))]
    assert all(len(r.children) == 1 for r in rows)


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _flat_blocks(at):
    return list(_walk(at.main))


def test_unknown_query_parameters_leave_the_url_and_are_named_once(runs_root):
    at = open_app({"foo": "1", "eps": "2"})
    assert not at.exception
    assert "foo" not in at.query_params and at.query_params["eps"] in ("2", ["2"])
    assert any("foo=1 (not a setting here)" in w.value for w in at.warning)


def test_an_unknown_page_path_is_named():
    pages = ["", "runs", "accountant", "learn"]
    assert unknown_page("http://localhost:8501/no_such_page", pages) == "no_such_page"
    assert unknown_page("http://localhost:8501", pages) is None
    assert unknown_page("http://localhost:8501/runs", pages) is None
    assert unknown_page("http://h/lab/learn", pages, "/lab/") is None
    assert unknown_page("http://h/lab/nope", pages, "lab") == "nope"
    assert unknown_page(None, pages) is None
