"""Scoring after training in the cost preview (engine/methods/scoring_cost.py): measured by
finished runs when there are any, else timed on stand-in data; the whole wait in the
preview's line (issue 43: Fashion's 223 s of scoring were left out). No timing asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.methods import scoring_cost
from engine.methods.stand_in import design_matrix
from engine.core.config import RunConfig
from engine.methods.preview import MEASURING, Cost, cost_line
from engine.store.records import RunStatus
from engine.store.runs import RunStore


# what these tests measure is measured here, cold (tests/conftest.py: cold_cache)
pytestmark = pytest.mark.usefixtures("cold_cache")


def _finished(store, config, *, syn, real, n_train, n_syn, sweep=None, cnn=False):
    rid = store.create_run(config, sweep=sweep)
    acc = {"synthetic/logreg": 0.5, **({"synthetic/cnn": 0.5} if cnn else {})}
    (store.artifact_dir(rid) / "metrics.json").write_text(json.dumps({
        "n_train": n_train, "n_synthetic": n_syn, "accuracy": acc,
        "seconds": {"score_synthetic": syn, "score_real": real, "evaluate": syn + real}}))
    store.finish(rid, RunStatus.FINISHED)
    return rid


def test_finished_runs_on_the_same_data_give_the_scoring_time(tmp_path, digits):
    store = RunStore(tmp_path)
    cfg = RunConfig(method="dpmerf", dataset="digits")
    n = digits.n_train
    _finished(store, RunConfig(method="marginals", dataset="digits"), syn=4.0, real=6.0,
              n_train=n, n_syn=n)  # any method: scoring sees only the synthetic shape
    _finished(store, cfg, syn=2.0, real=0.0, n_train=n, n_syn=n)  # reference fitted before
    _finished(store, cfg, syn=99.0, real=99.0, n_train=n, n_syn=n, sweep="gallery")  # elsewhere
    _finished(store, cfg, syn=50.0, real=50.0, n_train=n, n_syn=500)  # another size
    _finished(store, cfg, syn=70.0, real=70.0, n_train=n, n_syn=n, cnn=True)  # with the CNN
    other_file = RunConfig(method="dpmerf", dataset="digits",
                           data_options={"path": "/uploads/b/x.csv", "label": "y"})
    _finished(store, other_file, syn=80.0, real=80.0, n_train=n, n_syn=n)  # another's file
    out = scoring_cost.estimate(cfg, digits, store=store,
                                away=lambda *a: pytest.fail("timed with measured runs"))
    assert out[scoring_cost.SECONDS_KEY] == pytest.approx(3.0 + 6.0)  # median syn + real
    assert "measured by 2 finished runs" in out[scoring_cost.BASIS_KEY]
    fitted = scoring_cost.estimate(cfg, digits, store=store, real_fitted=True)
    assert fitted[scoring_cost.SECONDS_KEY] == pytest.approx(3.0)
    store.close()


def test_without_finished_runs_it_is_timed_on_stand_in_data_or_measuring(tmp_path, digits,
                                                                         monkeypatch):
    store = RunStore(tmp_path)
    cfg = RunConfig(method="dpmerf", dataset="digits", n_synthetic=3000)
    out = scoring_cost.estimate(cfg, digits, store=store, away=lambda cache, key: None)
    assert out == {scoring_cost.BASIS_KEY: MEASURING}  # the probe's process times it

    rows = min(scoring_cost.PROBE_ROWS, 3000)
    monkeypatch.setattr(scoring_cost, "_calibrate",
                        lambda width, classes, tabular, models, n, target: {m: 1.0 for m in models})
    monkeypatch.setattr(scoring_cost, "_RATES", scoring_cost.cost_cache.TimedCache())
    out = scoring_cost.estimate(cfg, digits, store=store)
    # three classifiers, 1 s each on `rows` stand-in rows, scaled to the synthetic and real rows
    assert out[scoring_cost.SECONDS_KEY] == pytest.approx(
        3 * (scoring_cost.scaled(1.0, rows, 3000) + scoring_cost.scaled(1.0, rows, digits.n_train)))
    assert "stand-in" in out[scoring_cost.BASIS_KEY]
    store.close()


def test_the_stand_in_reads_no_record_and_has_learnable_labels():
    x, y = design_matrix(300, 64, 10)
    assert x.shape == (300, 64) and 0 <= x.min() and x.max() <= 1 and len(set(y)) > 2


def test_a_tables_stand_in_has_its_one_hot_blocks():
    """A table's categories reach the classifiers one-hot (utility.design_matrix): the
    stand-in's blocks are 0/1 with one 1 per row, its numeric columns stay continuous."""
    x, y = design_matrix(500, 1 + 3 + 1 + 4, 2, blocks=(1, 3, 1, 4))
    for lo, hi in ((1, 4), (5, 9)):
        assert set(np.unique(x[:, lo:hi])) == {0.0, 1.0}
        assert (x[:, lo:hi].sum(axis=1) == 1).all()
        assert (x[:, lo:hi].sum(axis=0) > 0).sum() >= 2  # not one category for every row
    assert len(np.unique(x[:, 0])) > 100 and len(np.unique(x[:, 4])) > 100
    with pytest.raises(ValueError, match="add up"):
        design_matrix(10, 5, 2, blocks=(1, 3))


def test_the_scoring_probe_times_a_table_on_its_own_layout():
    """The probe's stand-in has the blocks the classifiers will see: the utility's own
    design matrix of a mixed table has those widths."""
    from engine.data import catalog
    from engine.data.dataset import Column, Dataset
    from engine.evaluation.utility import design_matrix as classifier_inputs

    cols = [Column("age", "num"), Column("job", "cat", categories=["a", "b", "c"]),
            Column("sex", "cat", categories=["f", "m"])]
    x = np.array([[30.0, 2, 1], [41.0, 0, 0]])
    table = Dataset("t", "tabular", x, np.array([0, 1]), x, np.array([0, 1]), ["no", "yes"],
                    columns=cols)
    assert scoring_cost._layout(table) == (1, 3, 2)
    assert classifier_inputs(x, table).shape[1] == sum(scoring_cost._layout(table))
    assert scoring_cost._layout(catalog.load("digits", seed=0)) == 64


def test_a_cheap_timing_is_made_again_on_more_rows_up_to_the_runs(monkeypatch):
    """The probe times 4× the rows while that is expected to stay under PROBE_BUDGET_S,
    up to the run's rows, and says how many it timed; a costly first timing stays one."""
    timed = []

    def fits(layout, classes, tabular, models, rows):
        timed.append(rows)
        return {m: per_row * rows for m in models}

    monkeypatch.setattr(scoring_cost, "_time_fits", fits)
    models = ("logreg", "mlp", "rf")
    per_row = 2e-5  # 0.24 s for three fits on 4,000 rows: cheap
    out = scoring_cost._calibrate((1, 3), 2, True, models, 4000, 32_000)
    assert timed == [4000, 16_000, 32_000] and out["rows"] == 32_000
    timed.clear()
    per_row = 5e-4  # 6 s on 4,000 rows: 16,000 would take about 30 s
    out = scoring_cost._calibrate((1, 3), 2, True, models, 4000, 32_000)
    assert timed == [4000] and out["rows"] == 4000
    timed.clear()
    out = scoring_cost._calibrate((1, 3), 2, True, models, 4000, None)
    assert timed == [4000] and out["rows"] == 4000


def test_scaling_grows_a_little_faster_than_the_rows():
    assert scoring_cost.scaled(2.0, 4000, 4000) == pytest.approx(2.0)
    assert 15 * 2.0 < scoring_cost.scaled(2.0, 4000, 60000) < 30 * 2.0
    assert scoring_cost.scaled(2.0, 4000, 2000) < 1.0


def test_the_stand_in_is_learnable_like_real_records_not_noise():
    """A forest on uniform noise grows a leaf per row, 12x its time on real records: the
    stand-in must carry class structure that a classifier learns from few rows."""
    from sklearn.linear_model import LogisticRegression

    x, y = design_matrix(1200, 64, 10)
    model = LogisticRegression(max_iter=500).fit(x[:1000], y[:1000])
    assert model.score(x[1000:], y[1000:]) > 0.5  # chance is 0.1


def test_the_cost_line_gives_the_whole_wait():
    cost = Cost(seconds=70.0, scoring_seconds=150.0, scoring_basis="measured by 2 finished runs",
                steps=1078, per_step_s=0.064)
    line = cost_line(cost)
    assert "about 70 s of training" in line and "2 min 30 s of scoring" in line
    assert "3 min 40 s in all" in line and cost.whole_s == 220.0
    assert Cost(seconds=70.0, scoring_basis=MEASURING).measuring  # scoring still timed
    assert Cost(seconds=70.0, scoring_basis=MEASURING).whole_s is None

