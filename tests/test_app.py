"""The Streamlit app through streamlit.testing (AppTest), plus the pure helpers its pages
use (ui/*.py, engine/teaching/demos.py). The training test drives the real engine."""

import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from engine.methods.datalens import method as datalens
from engine.methods.datalens import accounting as datalens_accounting
from engine.teaching import demos
from engine.privacy import accountant as privacy
from engine.runs import slots
from engine.core.errors import InputError
from engine.core.config import RunConfig
from engine.methods.datalens.params import DIGITS_MEASURED
from engine.store.records import RunRecord, RunStatus
from engine.data.render import class_rows
from engine.store.runs import RunStore
from ui.choices import EPSILON_CHOICES, privacy_in_words
from ui.knobs import config_from_settings, widgets
from ui.marginals import marginal_bins
from ui.runs_table import privacy_utility

from apptest import APP, open_app
from conftest import HANG_S


def app(query: dict | None = None) -> AppTest:
    return open_app(query)


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_playground_has_its_widgets_and_derived_sigma(runs_root):
    at = app()
    assert not at.exception and not at.error
    assert at.selectbox(key="dataset").value == "digits"
    assert at.selectbox(key="method").value == "dpmerf"
    assert at.select_slider(key="eps").value == "1"
    assert at.select_slider(key="delta").value == "1e-5"
    for name in ("n_features", "length_scale", "epochs", "lr"):
        at.number_input(key=f"dpmerf_{name}")
    assert not at.button(key="pg_train").disabled
    z1 = float(metric(at, "noise multiplier"))
    assert z1 == pytest.approx(privacy.calibrate_noise_multiplier(epsilon=1.0, delta=1e-5),
                               rel=1e-3)
    at.select_slider(key="eps").set_value("10").run()
    z10 = float(metric(at, "noise multiplier"))
    assert z10 < z1
    assert z10 == pytest.approx(privacy.calibrate_noise_multiplier(epsilon=10.0, delta=1e-5),
                                rel=1e-3)


def test_datalens_knobs_and_digits_hint(runs_root):
    at = app({"method": "datalens"})
    assert not at.exception
    for name in ("teachers", "top_k", "sigma", "beta", "clip"):
        at.number_input(key=f"datalens_{name}")
    assert at.number_input(key="datalens_teachers").max == 1437  # capped at the records
    assert any("near chance" in w.value for w in at.warning)
    from engine.data.catalog import load
    from engine.methods.registry import make_params

    digits = load("digits")
    preview = datalens.privacy_preview(RunConfig(method="datalens"),
                                       make_params("datalens", digits), digits)
    assert int(metric(at, "affordable steps").replace(",", "")) == preview["affordable steps"]


def test_settings_come_back_from_the_url(runs_root):
    at = app({"eps": "0.5", "delta": "1e-6", "seed": "3", "dpmerf_epochs": "7"})
    assert at.select_slider(key="eps").value == "0.5"
    assert at.select_slider(key="delta").value == "1e-6"
    assert at.number_input(key="seed").value == 3
    assert at.number_input(key="dpmerf_epochs").value == 7
    assert float(metric(at, "noise multiplier")) == pytest.approx(
        privacy.calibrate_noise_multiplier(epsilon=0.5, delta=1e-6), rel=1e-3)


def _knob_values(at, method: str) -> dict:
    return {n.key[len(method) + 1:]: n.value for n in at.number_input
            if n.key and n.key.startswith(f"{method}_")}


def _defaults(method: str, dataset: str) -> dict:
    from engine.data.catalog import load
    from engine.methods.registry import default_params

    return {w.name: w.spec.default for w in widgets(default_params(method, load(dataset)))
            if w.spec.kind in ("int", "float")}


def test_switching_dataset_resets_knobs_even_when_the_url_holds_them(runs_root):
    # A shared link carries digits' values; the switch must not keep them (the bug:
    # digits → Fashion kept 45,000 steps under "defaults for fashion_mnist").
    at = app({"dpmerf_epochs": "45", "dpmerf_n_features": "600"})
    assert at.number_input(key="dpmerf_epochs").value == 45
    at.selectbox(key="dataset").set_value("breast_cancer").run()
    assert not at.exception
    assert _knob_values(at, "dpmerf") == _defaults("dpmerf", "breast_cancer")
    assert "dpmerf_epochs" not in at.query_params  # the URL follows the widgets
    assert any("defaults for breast_cancer" in m.value for m in at.markdown)
    at.number_input(key="dpmerf_epochs").set_value(7).run()
    at.selectbox(key="dataset").set_value("digits").run()
    assert _knob_values(at, "dpmerf") == _defaults("dpmerf", "digits")


def test_switching_method_resets_knobs_to_that_methods_defaults(runs_root):
    at = app({"dpmerf_epochs": "45"})
    at.selectbox(key="method").set_value("datalens").run()
    assert not at.exception
    at.number_input(key="datalens_teachers").set_value(50).run()
    assert at.number_input(key="datalens_teachers").value == 50
    at.selectbox(key="method").set_value("dpmerf").run()
    assert _knob_values(at, "dpmerf") == _defaults("dpmerf", "digits")
    at.selectbox(key="method").set_value("datalens").run()
    assert _knob_values(at, "datalens") == _defaults("datalens", "digits")


def _jobs(runs_root):
    from ui.common import _jobs_for

    return _jobs_for(str(Path(runs_root).resolve()))


def test_tiny_run_from_the_playground_completes_and_is_listed(runs_root):
    at = app({"dpmerf_n_features": "500", "dpmerf_epochs": "1"})
    at.button(key="pg_train").click().run()
    rid = at.session_state["pg_run"]
    # Waits for the run to end; the timeout only guards against a hang (speed: bench/).
    assert _jobs(runs_root).wait(rid, timeout=HANG_S).terminal, f"run {rid} hung"
    row = RunStore(runs_root, recover=False).get_run(rid)
    assert row.status == "finished", row.message
    assert row.config.params == {"n_features": 500, "epochs": 1}
    metrics = json.loads((runs_root / rid / "metrics.json").read_text())
    assert row.metrics == pytest.approx(metrics["accuracy"])  # the store holds every score
    assert row.metrics["real/logreg"] > 0.8
    # Chance is .1; one epoch at these settings measured LogReg .49–.51 (3 runs, ε = 1).
    assert row.metrics["synthetic/logreg"] > 0.2
    at.run()
    assert not at.exception
    shown = float(metric(at, "accuracy on real test data"))
    assert shown == pytest.approx(row.metrics["synthetic/logreg"], abs=5e-4)
    assert len(at.get("imgs")) or len(at.get("image"))  # the sample grid is drawn
    summary = at.table[0].value
    assert list(summary["score"]) == ["LogReg accuracy", "MLP accuracy", "RF accuracy"]
    assert list(summary["trained on synthetic → real test"]) == pytest.approx(
        [row.metrics[k] for k in ("synthetic/logreg", "synthetic/mlp", "synthetic/rf")], abs=5e-5)

    at.switch_page("pages/runs.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert rid in set(table["run"]) and table.loc[table["run"] == rid, "status"].item() == "finished"
    assert at.multiselect(key="runs_pick").value == [rid]  # the user's runs, not the gallery's
    labels = {b.label for b in at.get("download_button")}
    assert {"⬇ synthetic.npz", "⬇ samples.png", "⬇ config.json", "⬇ metrics.json"} <= labels
    assert any(c.key == "runs_pu_chart" for c in at.get("plotly_chart"))


def _finished_tabular_run(runs_root) -> tuple[str, dict]:
    """A finished breast_cancer run whose metrics come from the real evaluator (scored on
    a slice of the real training records: only the display is under test here)."""
    from engine.data.catalog import load
    from engine.evaluation.utility import full_evaluation

    data = load("breast_cancer")
    scores = full_evaluation(data.x_train[:200], data.y_train[:200], data, models=("logreg",))
    store = RunStore(runs_root)
    rid = store.create_run(RunConfig(dataset="breast_cancer", epsilon=2.0))
    store.mark_running(rid)
    store.finish(rid, RunStatus.FINISHED, metrics=scores)
    store.close()
    return rid, scores


def test_tabular_scores_show_in_the_playground_and_the_runs_table(runs_root):
    rid, scores = _finished_tabular_run(runs_root)
    assert {"synthetic/logreg/roc_auc", "synthetic/logreg/f1_macro"} <= set(scores)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["pg_run"] = rid
    at.run()
    assert not at.exception
    summary = at.table[0].value.set_index("score")
    assert summary.loc["LogReg ROC-AUC", "trained on synthetic → real test"] == pytest.approx(
        scores["synthetic/logreg/roc_auc"], abs=5e-5)
    assert summary.loc["LogReg F1 (macro)", "trained on synthetic → real test"] == pytest.approx(
        scores["synthetic/logreg/f1_macro"], abs=5e-5)

    at.switch_page("pages/runs.py").run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("run")
    assert table.loc[rid, "LogReg ROC-AUC"] == pytest.approx(scores["synthetic/logreg/roc_auc"])
    assert table.loc[rid, "LogReg F1 (macro)"] == pytest.approx(scores["synthetic/logreg/f1_macro"])
    at.selectbox(key="runs_metric").set_value("synthetic/logreg/roc_auc").run()
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if c.key == "runs_pu_chart")
    assert "ROC-AUC" in chart.proto.spec


def test_cnn_score_can_be_asked_for_on_image_data(runs_root):
    at = app({"dpmerf_n_features": "100", "dpmerf_epochs": "1"})
    at.checkbox(key="cnn").check().run()
    at.button(key="pg_train").click().run()
    assert not at.exception
    (row,) = _queued(runs_root)
    assert row.config.cnn_eval is True
    with pytest.raises(InputError, match="cnn_eval must be true or false. Got 'yes'"):
        RunConfig(cnn_eval="yes").validate()
    at.selectbox(key="dataset").set_value("breast_cancer").run()
    assert not [c for c in at.checkbox if c.key == "cnn"]  # images only


def _csv(rows):
    return ("a,b,label\n" + "\n".join(",".join(map(str, r)) for r in rows)).encode()


def test_bad_uploads_give_one_clear_error(runs_root):
    at = app({"dataset": "csv"})
    assert not at.exception
    at.file_uploader[0].set_value(("one.csv", _csv([(i, i * 2, "x") for i in range(40)]),
                                   "text/csv")).run()
    assert not at.exception
    assert any("one class only" in e.value for e in at.error)
    assert at.button(key="pg_train").disabled

    at = app({"dataset": "npz"})
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros((30, 8, 8), np.uint8))  # no labels
    at.file_uploader[0].set_value(("imgs.npz", buf.getvalue(), "application/octet-stream")).run()
    assert not at.exception
    assert any("lacks array" in e.value and "y" in e.value for e in at.error)


def test_good_csv_upload_is_ready_to_train(runs_root):
    rng = np.random.default_rng(0)
    rows = [(round(v, 3), round(2 * v + rng.normal(), 3), "yes" if v > 0 else "no")
            for v in rng.normal(size=60)]
    at = app({"dataset": "csv"})
    at.file_uploader[0].set_value(("ok.csv", _csv(rows), "text/csv")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="pg_csv_label").value == "label"
    assert not at.button(key="pg_train").disabled


def test_accountant_numbers_come_from_engine_privacy(runs_root):
    at = app()
    at.switch_page("pages/accountant.py").run()
    assert not at.exception
    z = privacy.calibrate_noise_multiplier(epsilon=1.0, delta=1e-5)
    assert float(metric(at, "noise multiplier σ/Δ")) == pytest.approx(z, rel=1e-3)
    at.radio(key="acc_mode").set_value("σ → find ε").run()
    assert float(metric(at, "ε (exact)")) == pytest.approx(
        privacy.epsilon_for(5.0, delta=1e-5), rel=1e-3)
    steps = datalens_accounting.affordable_steps(epsilon=1.0, delta=1e-5, top_k=200,
                                              sigma=5000.0, batch=15)
    assert int(metric(at, "steps affordable (exact)").replace(",", "")) == steps
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"acc_sigma_chart", "acc_comp_chart", "acc_dl_chart"} <= keys


def test_learn_page_demos_move_with_their_sliders(runs_root):
    at = app()
    at.switch_page("pages/learn.py").run()
    assert not at.exception
    before = next(c.value for c in at.caption if c.value.startswith("σ ="))
    at.select_slider(key="learn_eps").set_value(5.0).run()
    after = next(c.value for c in at.caption if c.value.startswith("σ ="))
    assert before != after
    # The digits figures are the engine's measured ones, not a second copy in the page.
    cnn10 = DIGITS_MEASURED["CNN at epsilon=10"]
    assert any("DataLens stays near chance" in m.value and f"CNN reaches about {cnn10}" in m.value
               for m in at.markdown)


def _queued(runs_root):
    """The runs a test queued (not the gallery's), cancelled so nothing keeps training."""
    from ui.common import _jobs_for

    jm = _jobs_for(str(Path(runs_root).resolve()))
    rows = [r for r in RunStore(runs_root, recover=False).list_runs() if r.sweep != "gallery"]
    for r in rows:
        jm.cancel(r.run_id)
    for r in rows:
        assert jm.wait(r.run_id, timeout=HANG_S).terminal
    return rows


def test_sweep_queues_one_run_per_epsilon_and_seed(runs_root):
    at = app()
    at.switch_page("pages/runs.py").run()
    at.multiselect(key="sweep_eps").set_value(["0.5", "2"])
    at.number_input(key="sweep_seeds").set_value(2)
    at.text_input(key="sweep_name").set_value("my sweep")
    at.button(key="sweep_go").click().run()
    assert not at.exception
    rows = _queued(runs_root)
    assert len(rows) == 4 and {r.sweep for r in rows} == {"my sweep"}
    assert sorted((r.epsilon, r.seed) for r in rows) == [(0.5, 0), (0.5, 1), (2.0, 0), (2.0, 1)]


def test_sweep_may_vary_any_knob_and_rejects_bad_values(runs_root):
    at = app()
    at.switch_page("pages/runs.py").run()
    at.multiselect(key="sweep_eps").set_value(["1"])
    at.number_input(key="sweep_seeds").set_value(1)
    at.selectbox(key="sweep_knob").set_value("lr").run()
    at.text_input(key="sweep_values").set_value("0.01, banana")
    at.button(key="sweep_go").click().run()
    assert any("lr values must each be a number" in e.value for e in at.error)
    assert _queued(runs_root) == []
    at.text_input(key="sweep_values").set_value("0.005, 0.02")
    at.button(key="sweep_go").click().run()
    assert not at.exception
    rows = _queued(runs_root)
    assert sorted(r.config.params["lr"] for r in rows) == [0.005, 0.02]


# ------------------------------------------------------------ helpers behind the pages


def test_config_from_settings_and_knob_bounds():
    cfg = config_from_settings(dataset="digits", method="dpmerf", eps="inf", delta="1e-5",
                               seed=1, params={"epochs": 2})
    assert math.isinf(cfg.epsilon) and cfg.params == {"epochs": 2}
    with pytest.raises(InputError, match="epsilon"):
        config_from_settings(dataset="digits", method="dpmerf", eps="-1", delta="1e-5",
                             seed=0, params={})
    from engine.data.catalog import load
    from engine.methods.datalens.method import Params

    digits = load("digits")
    ks = {w.name: w for w in widgets(Params.for_data(digits), digits)}
    # Data-named bounds resolve against the data: as many teachers as records, top-k up
    # to the pixels; the open bound sigma > 0 becomes the smallest float above 0.
    assert ks["teachers"].hi == digits.n_train and ks["top_k"].hi == 64
    assert 0 < ks["sigma"].lo < 1e-300 and ks["accountant"].spec.choices == tuple(privacy.ACCOUNTANTS)
    assert "teacher_widths" not in ks  # structural tuples are not knobs
    assert all(w.lo is None or w.hi is None or w.lo <= w.spec.default <= w.hi
               for w in ks.values() if w.spec.kind in ("int", "float"))
    assert EPSILON_CHOICES[-1] == "inf"


def test_class_rows_and_marginals():
    x = np.random.default_rng(0).random((12, 1, 8, 8)).astype(np.float32)
    y = np.arange(12) % 3
    g = class_rows(x, y, 3, per_class=5, scale=2)
    # 3 rows of 16-pixel images, 5 columns, 1-pixel white padding around each.
    assert g.dtype == np.uint8 and g.shape == (3 * 17 + 1, 5 * 17 + 1)
    # Row k holds class k's images in order (4 of them), each upscaled 2×; the rest is white.
    for k in range(3):
        for j, idx in enumerate(np.flatnonzero(y == k)):
            cell = g[1 + 17 * k: 17 * (k + 1), 1 + 17 * j: 17 * (j + 1)]
            assert np.array_equal(cell[::2, ::2], (x[idx, 0] * 255).round().astype(np.uint8))
        assert (g[1 + 17 * k: 17 * (k + 1), 1 + 17 * 4: 17 * 5] == 255).all()
    b = marginal_bins(np.array([0, 1, 1]), np.array([1, 1, 1]), categories=["a", "b"])
    assert list(b["real"]) == pytest.approx([1 / 3, 2 / 3]) and list(b["synthetic"]) == [0, 1]


def test_privacy_utility_means_over_seeds():
    def row(m, e, acc, real=0.95, status="finished", params=None, seed=0):
        return RunRecord(run_id=f"{m}-{e}-{seed}", status=RunStatus(status), created=0.0,
                         config=RunConfig(method=m, epsilon=e, seed=seed, params=params or {}),
                         metrics={"synthetic/logreg": acc, "real/logreg": real,
                                  "synthetic/mlp": 1 - acc})

    pu = privacy_utility([row("dpmerf", 1.0, 0.7), row("dpmerf", 1.0, 0.8, seed=1),
                          row("dpmerf", 10.0, 0.85), row("dpmerf", math.inf, 0.9),
                          # same as the defaults: the same configuration
                          row("dpmerf", 10.0, 0.95, params={"lr": 0.01}),
                          row("dpmerf", 1.0, 0.3, params={"epochs": 3}),
                          row("datalens", 1.0, 0.1), row("dpmerf", 1.0, 0.0, status="failed")])
    d = pu["lines"][("dpmerf", "defaults")]
    assert d["epsilon"] == [1.0, 10.0] and d["mean"] == pytest.approx([0.75, 0.9])
    assert (d["lo"][0], d["hi"][0], d["n"][0]) == (0.7, 0.8, 2)
    assert pu["lines"][("dpmerf", "epochs=3")]["mean"] == [0.3]
    assert set(pu["lines"]) == {("dpmerf", "defaults"), ("dpmerf", "epochs=3"),
                                ("datalens", "defaults")}
    assert pu["nonprivate"] == {("dpmerf", "defaults"): 0.9} and pu["real"] == pytest.approx(0.95)
    # Any score the runs have can be the y-axis; a score with no real reference has none.
    mlp = privacy_utility([row("dpmerf", 1.0, 0.7), row("dpmerf", 1.0, 0.8, seed=1)],
                          "synthetic/mlp")
    assert mlp["lines"][("dpmerf", "defaults")]["mean"] == pytest.approx([0.25])
    assert mlp["real"] is None and mlp["metric"] == "synthetic/mlp"


def test_demos_behave():
    tight, loose = demos.gaussian_mechanism(10.0, 1e-5), demos.gaussian_mechanism(0.1, 1e-5)
    assert tight["tv_distance"] > loose["tv_distance"]  # more ε, less overlap
    assert loose["sigma"] == pytest.approx(
        privacy.calibrate_noise_multiplier(epsilon=0.1, delta=1e-5) / 10)
    errs = [np.mean([demos.kernel_approximation(d, seed=s)["max_error"] for s in range(3)])
            for d in (10, 1000)]
    assert errs[1] < errs[0] / 3
    v = demos.top_k_voting(n_teachers=100, sigma=0.0, beta=0.3, seed=0)
    assert v["n_released"] > 0 and v["n_agree"] >= 0.8 * v["n_released"]
    c = demos.composition_curve(noise_multiplier=5.0, delta=1e-5, max_compositions=100)
    assert all(e <= r + 1e-9 for e, r in zip(c["exact"], c["rdp"]))
    assert c["exact"] == sorted(c["exact"])


def test_gaussian_picture_uses_the_worst_case_neighbour_on_fixed_axes():
    pics = [demos.gaussian_mechanism(e, 1e-5) for e in (0.1, 1.0, 10.0)]
    for g in pics:
        # The neighbours differ by the full sensitivity: the pair the noise must cover.
        assert g["mean_d2"] - g["mean_d"] == pytest.approx(g["sensitivity"])
        assert np.sum(g["scores"] != g["scores_neighbour"]) == 1
        assert g["x_range"] == pics[0]["x_range"] and g["y_max"] == pics[0]["y_max"]
        assert g["p"].max() <= g["y_max"]  # the tallest curve fits under the fixed top
    assert pics[0]["sigma"] > pics[1]["sigma"] > pics[2]["sigma"]


def test_epsilon_and_delta_in_plain_words():
    words = privacy_in_words(1.0, 1e-5)
    assert f"{math.exp(1):.3g}×" in words and "δ = 1e-05" in words
    assert "1:1 to 1.11:1" in privacy_in_words(0.1, 1e-5)
    assert "no privacy" in privacy_in_words(math.inf, 1e-5)


def test_plain_words_on_playground_and_learn(runs_root):
    at = app({"eps": "2"})
    assert any("e^ε ≈ 7.39×" in c.value for c in at.caption)
    at.switch_page("pages/learn.py").run()
    assert any("e^ε ≈ 2.72×" in i.value for i in at.info)


def test_newcomer_sees_the_gallery_without_training(runs_root):
    from engine.runs import gallery

    names = [name for name, *_ in gallery.entries()]
    at = app()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["run"]) == {gallery.ID_PREFIX + n for n in names}
    assert set(table["sweep"]) == {"gallery"} and set(table["status"]) == {"finished"}
    assert any(c.key == "runs_pu_chart" for c in at.get("plotly_chart"))
    assert len(at.get("imgs")) or len(at.get("image"))  # sample grids across ε
    assert at.multiselect(key="runs_pick").value == []  # nothing of the user's yet
    # A restart loads the gallery into the same store again: nothing is added twice.
    assert gallery.load_into(RunStore(runs_root, recover=False)) == []
    assert len(RunStore(runs_root, recover=False).list_runs()) == len(names)


def test_defaults_show_the_gallery_then_train_says_reused_and_train_anew_trains(runs_root):
    at = app()
    assert not at.exception
    # Before Train: the gallery's run for these settings, labelled as precomputed.
    shown = [m for m in at.markdown if "precomputed gallery run" in m.value]
    assert shown, "no gallery answer before Train"
    store = RunStore(runs_root, recover=False)
    (gal,) = [r for r in store.list_runs(sweep="gallery")
              if r.run_id in " ".join(m.value for m in at.markdown)
              and r.config.epsilon == 1.0 and r.config.method == "dpmerf"]
    assert float(metric(at, "accuracy on real test data")) == pytest.approx(
        gal.metrics["synthetic/logreg"], abs=5e-4)
    assert len(at.get("imgs")) or len(at.get("image"))  # its sample grid

    at.button(key="pg_train").click().run()
    assert at.session_state["pg_run"] == gal.run_id and at.session_state["pg_reused"]
    assert any("nothing was retrained; no budget spent" in i.value for i in at.info)
    assert len(store.list_runs()) == len(store.list_runs(sweep="gallery"))  # nothing queued

    at.button(key="pg_train_anew").click().run()
    assert not at.exception
    fresh = at.session_state["pg_run"]
    assert fresh != gal.run_id and not at.session_state["pg_reused"]
    row = store.get_run(fresh)
    assert row.config == gal.config and row.sweep is None and row.session  # mine, same settings
    _jobs(runs_root).cancel(fresh)  # the display is under test, not the training
    _jobs(runs_root).wait(fresh, timeout=HANG_S)


def _playground_on(rid: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["pg_run"] = rid
    return at.run()


def _bars(at) -> list[tuple[int, str]]:
    return [(b.proto.value, b.proto.text) for b in at.get("progress")]


def test_a_stopped_run_shows_where_it_stopped_and_datalens_says_it_is_starting(runs_root):
    store = RunStore(runs_root)
    stopped = store.create_run(RunConfig(dataset="digits", epsilon=1.0))
    store.mark_running(stopped)
    store.record_progress(stopped, step=40, total=300, epsilon_spent=0.2, values={},
                          phase="train")
    store.finish(stopped, RunStatus.CANCELLED, message="stopped by the user")
    never = store.create_run(RunConfig(dataset="digits", epsilon=1.0, seed=3))
    store.finish(never, RunStatus.CANCELLED, message="stopped by the user")
    starting = store.create_run(RunConfig(dataset="digits", method="datalens", epsilon=1.0))
    store.mark_running(starting)  # no event yet: the teachers' first updates

    (bar,) = _bars(_playground_on(stopped))
    assert bar[0] == round(100 * 40 / 300) and "stopped at step 40 of 300" in bar[1]
    (bar,) = _bars(_playground_on(never))
    assert bar[0] == 0 and "before its first step" in bar[1]
    at = _playground_on(starting)
    assert not at.exception
    (bar,) = _bars(at)
    from engine.data.catalog import load
    from engine.methods.registry import make_params

    teachers = make_params("datalens", load("digits"), {}).teachers
    assert bar[0] == 0 and f"building {teachers:,} teachers" in bar[1] and "ε spent 0" in bar[1]
    store.finish(starting, RunStatus.CANCELLED)
    store.close()


def test_a_link_with_bad_values_says_which_were_ignored(runs_root):
    at = app({"eps": "abc", "seed": "-5", "dpmerf_epochs": "3"})
    assert not at.exception
    (warn,) = [w.value for w in at.warning if w.value.startswith("Ignored in the link")]
    assert "eps=abc" in warn and "seed=-5" in warn and "dpmerf_epochs" not in warn
    assert at.number_input(key="dpmerf_epochs").value == 3  # the good value was kept
    at.run()  # still said on the next rerun, and judged only once
    assert [w for w in at.warning if w.value.startswith("Ignored in the link")]
    assert not [w for w in app({"dpmerf_epochs": "3"}).warning
                if w.value.startswith("Ignored in the link")]


def test_learn_has_delta_composition_the_baseline_and_the_epsilon_range(runs_root):
    at = app()
    at.switch_page("pages/learn.py").run()
    assert not at.exception
    sigma = next(c.value for c in at.caption if c.value.startswith("σ ="))
    at.select_slider(key="learn_delta").set_value("1e-3").run()
    after = next(c.value for c in at.caption if c.value.startswith("σ ="))
    assert sigma != after and "δ = 0.001" in after  # a looser δ needs less noise
    at.select_slider(key="learn_compose_t").set_value(100).run()
    shown = float(metric(at, "ε after 100 releases"))
    z = demos.gaussian_mechanism(1.0, 1e-3)["noise_multiplier"]
    assert shown == pytest.approx(privacy.epsilon_for(z, delta=1e-3, compositions=100),
                                  rel=1e-2)  # the accountant's figure, as displayed (3 digits)
    assert shown > 1.0  # composition spends more than one release
    text = " ".join(m.value for m in at.markdown)
    assert "Independent marginals (the baseline)" in text
    assert f"runs from {EPSILON_CHOICES[0]}" in text and f"to {EPSILON_CHOICES[-2]}" in text


def test_the_playground_never_times_its_cost_it_shows_measuring_then_the_figure(
        runs_root, monkeypatch, cold_cache):
    """The web server never trains: the DP-MERF cost is timed by engine/runs/cost_probe.py's
    process (here the test stands in for it), the page says "measuring…" until then."""
    from engine.runs import cost_probe
    from engine.methods.dpmerf import cost as dpmerf_cost
    from engine.methods.preview import MEASURING

    monkeypatch.setattr(dpmerf_cost, "_calibrate", lambda *a: pytest.fail("timed in the server"))
    asked = []
    monkeypatch.setattr(cost_probe, "request", lambda key, config: asked.append(config))

    def cost_line(at):
        (line,) = [m.value for m in at.markdown if m.value.startswith("**Cost on this machine:**")]
        return line

    at = app({"dpmerf_epochs": "2"})
    assert not at.exception and MEASURING in cost_line(at) and len(asked) >= 1
    monkeypatch.setattr(dpmerf_cost, "_calibrate", lambda *a: {
        "step": 0.01, "release_per_record": 0.0, "sample_per_record": 0.0})
    monkeypatch.setattr(dpmerf_cost.torch, "get_num_threads", lambda: slots.plan().threads)
    cost_probe.measure(asked[-1])  # what the probe's process does
    at.run()
    assert not at.exception and MEASURING not in cost_line(at) and "10 ms each" in cost_line(at)


def test_the_live_time_left_says_measuring_then_uses_the_runs_own_rate(runs_root, cold_cache):
    """Issue 43: "about 1 h" at step 2 of 1,078. Before the rate is measured the bar says
    "measuring…"; then the time left is the measured rate (synthetic event times written
    into the store, no sleeping) times the steps left, plus the run's predicted scoring."""
    import time as _time

    from engine.store import eta
    from engine.jobs.manager import JobManager

    store = RunStore(runs_root)  # settings no finished (gallery) run has: no usual duration
    rid = store.create_run(RunConfig(dataset="digits", epsilon=1.0, params={"epochs": 7}))
    store.mark_running(rid)
    store.record_progress(rid, step=2, total=1078, epsilon_spent=1.0,
                          values={"loss": 1.0, eta.PREDICTED_SCORING: 60.0},
                          metrics={eta.PREDICTED_SCORING: 60.0}, phase="train")
    (bar,) = _bars(_playground_on(rid))
    assert "measuring…" in bar[1] and " h" not in bar[1]

    now = _time.time()
    con = store._con()  # ten more step events, 0.2 s apart, the last one just now
    con.executemany("INSERT INTO metrics VALUES (?,?,?,?,?)",
                    [(rid, "epsilon_spent", s, 1.0, now - (12 - s) * 0.2) for s in range(3, 13)])
    con.commit()
    store.record_progress(rid, step=12, total=1078, epsilon_spent=1.0, values={}, phase="train")
    snap = JobManager(store).snapshot(rid, curves=False)
    assert snap.eta_s == pytest.approx(0.2 * (1078 - 12) + 60.0, rel=0.05)
    # the preview's queue part: a new run waits for that one when it holds the only slot
    one_slot = JobManager(store, slots_per_device=1)
    start, _, ahead = one_slot.queue_wait(RunConfig(dataset="digits"))
    assert ahead == 1 and start == pytest.approx(snap.eta_s, rel=0.05)
    assert JobManager(store, slots_per_device=2).queue_wait(RunConfig(dataset="digits"))[:2] == (
        0.0, None)  # a free slot: no wait
    from ui.cost import queue_words

    assert "1 run(s) ahead" in queue_words((start, None, ahead))
    assert queue_words((0.0, None, 1)) is None and queue_words(None) is None
    store.finish(rid, RunStatus.CANCELLED)
    store.close()


def test_datalens_sigma_box_follows_max_steps_and_epsilon(runs_root):
    # The σ shown was the one for the default 300 steps whatever max_steps the user set.
    from engine.data.catalog import load
    from engine.facade import default_params

    digits = load("digits")

    def calibrated(eps: float, steps: int) -> float:
        return default_params("datalens", digits, eps, 1e-5, {"max_steps": steps}).sigma

    at = app({"method": "datalens", "eps": "10"})
    at.number_input(key="datalens_max_steps").set_value(20).run()
    assert not at.exception
    shown = at.number_input(key="datalens_sigma").value
    assert shown == pytest.approx(calibrated(10.0, 20))
    assert shown < default_params("datalens", digits, 10.0, 1e-5).sigma  # it did move
    at.number_input(key="datalens_max_steps").set_value(50).run()
    assert at.number_input(key="datalens_sigma").value == pytest.approx(calibrated(10.0, 50))
    at.select_slider(key="eps").set_value("5").run()
    assert at.number_input(key="datalens_sigma").value == pytest.approx(calibrated(5.0, 50))
    assert at.number_input(key="datalens_max_steps").value == 50  # the user's, kept
    linked = app({"method": "datalens", "eps": "10", "datalens_max_steps": "20"})
    assert linked.number_input(key="datalens_sigma").value == pytest.approx(calibrated(10.0, 20))
