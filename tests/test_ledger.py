"""The privacy budget ledger (engine/privacy/ledger.py): totals equal an independent accountant's,
caps refuse before any data is read, nothing un-spends, the CLI lists it as strict JSON."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

from engine.privacy import ledger as L
from engine.cli.commands import main
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.runs.runner import execute, prepare
from engine.store.runs import RunStatus, RunStore

from conftest import TINY_DPMERF

torch.set_num_threads(1)

TINY_DATALENS = dict(teachers=60, records_per_teacher=5, top_k=6, sigma=80.0, beta=0.3,
                     latent=8, teacher_widths=[4, 8, 16], student_widths=[32, 8],
                     first_teacher_steps=2, teacher_steps=1, sample_every=2, max_steps=6)


def _strict(text: str):
    def refuse(token):
        raise ValueError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def _reference_epsilon(reports: list[dict], delta: float) -> tuple[float, float]:
    """dp-accounting on the runs' own release lists: the closed-form Gaussian of the
    composed μ, and the PLD accountant composing every release event."""
    from dp_accounting import dp_event, pld
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

    mu2 = 0.0
    acct = pld.PLDAccountant(value_discretization_interval=1e-3)
    for rep in reports:
        for r in rep["releases"]:
            z = r["sigma"] / r["sensitivity"]
            mu2 += r["count"] / z ** 2
            acct.compose(dp_event.GaussianDpEvent(z), r["count"])
    return get_epsilon_gaussian(1 / math.sqrt(mu2), delta), acct.get_epsilon(delta)


def _train(config: RunConfig, out) -> dict:
    for _ in execute(config, out, full_eval=False):
        pass
    return json.loads((out / "metrics.json").read_text())


@pytest.fixture
def store(runs_root):
    return RunStore(runs_root)


def _in_store(store: RunStore, config: RunConfig) -> tuple[str, dict]:
    """A run as the app's worker runs it: a store row, executed into its folder."""
    rid = store.create_run(config)
    metrics = _train(config, store.artifact_dir(rid))
    store.finish(rid, RunStatus.FINISHED)
    return rid, metrics


def test_mixed_methods_total_equals_dp_accounting_and_inf_is_said(store, tmp_path, capsys):
    runs = [RunConfig(method="dpmerf", epsilon=1.0, params=TINY_DPMERF),
            RunConfig(method="datalens", epsilon=2.0, n_synthetic=20, params=TINY_DATALENS),
            RunConfig(method="marginals", epsilon=0.5, seed=3),
            RunConfig(method="dpmerf", epsilon=0.3, delta=1e-6, seed=1, params=TINY_DPMERF)]
    reports = [_in_store(store, c)[1]["privacy"] for c in runs]
    (entry,) = L.Ledger(store.root).datasets()
    assert entry["dataset"] == "digits" and entry["public_treated_as_private"]
    assert len(entry["runs"]) == 4 and {r["state"] for r in entry["runs"]} == {"final"}
    closed, by_pld = _reference_epsilon(reports, L.DEFAULT_DELTA)
    assert entry["epsilon"] == pytest.approx(closed, rel=1e-4)
    assert entry["epsilon"] >= by_pld - 1e-4 and by_pld - entry["epsilon"] < 1e-3
    # Below the sum of the runs' ε's, above the largest alone (of those at the same δ).
    assert max(r["epsilon_spent"] for r in reports[:3]) < entry["epsilon"]
    assert entry["epsilon"] < sum(r["epsilon_spent"] for r in reports)
    # The metrics.json of the last run carries the ledger total after it.
    last = json.loads((store.artifact_dir(store.list_runs()[0].run_id) / "metrics.json").read_text())
    assert last["ledger"]["epsilon_total"] == pytest.approx(entry["epsilon"])

    _in_store(store, RunConfig(method="marginals", epsilon=math.inf))
    (entry,) = L.Ledger(store.root).datasets()
    assert math.isinf(entry["epsilon"]) and "no privacy guarantee left" in entry["in_words"]
    assert main(["ledger"]) == 0
    out = capsys.readouterr().out
    assert "ε = ∞" in out and "no privacy guarantee left" in out


def test_planned_charge_bounds_every_method_from_above(store):
    """The charge made before training (from the target ε, δ) is never below what the
    run's releases turn out to spend, so a killed run is never under-charged."""
    for config in (RunConfig(method="dpmerf", epsilon=1.0, params=TINY_DPMERF),
                   RunConfig(method="datalens", epsilon=1.0, n_synthetic=20,
                             params={**TINY_DATALENS, "accountant": "rdp"}),
                   RunConfig(method="marginals", epsilon=1.0, delta=1e-7)):
        _, metrics = _in_store(store, config)
        mu2 = lambda mechs: sum(n / z ** 2 for z, n in mechs)  # noqa: E731
        assert mu2(L.from_releases(metrics["privacy"])) <= mu2(L.planned(config)) * (1 + 1e-6)


def test_cap_refuses_before_any_data_is_read(store, monkeypatch, capsys):
    led = L.Ledger(store.root)
    led.set_cap("digits", 1.3)
    _in_store(store, RunConfig(epsilon=1.0, params=TINY_DPMERF))

    def no_data(*a, **k):
        raise AssertionError("the data was read")

    monkeypatch.setattr("engine.data.catalog.load", no_data)
    monkeypatch.setattr("engine.runs.runner.datasets.load", no_data)
    with pytest.raises(InputError, match=r"^Refused before reading the data: digits .* cap of 1.3"):
        prepare(RunConfig(epsilon=1.0), ledger_root=store.root)
    # The command line: exit 2, one line, no traceback.
    assert main(["train", "--epsilon", "1", "--out", str(store.root.parent / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: Refused before reading the data")
    # The app's submit path refuses before queueing; a small run still fits.
    from engine.jobs.manager import JobManager

    jm = JobManager(store, full_eval=False)
    try:
        with pytest.raises(InputError, match="past its cap"):
            jm.request(RunConfig(epsilon=1.0))
        assert not store.active_runs()
        f = led.forecast(RunConfig(epsilon=0.1))
        assert f.refused is None and f.spent < f.after <= 1.3
        assert "spent ε = 1 over 1 run(s)" in f.words() and "this run brings it to" in f.words()
    finally:
        jm.shutdown()


def test_cap_counts_queued_runs_and_booking_is_atomic(store):
    led = L.Ledger(store.root)
    led.set_cap("digits", 1.6)
    queued = [RunConfig(epsilon=1.0, seed=s) for s in range(2)]
    led.check(queued[0], pending=queued[1:])  # two fit together ...
    with pytest.raises(InputError, match="past its cap"):
        led.check(RunConfig(epsilon=1.0, seed=9), pending=queued)  # ... three do not
    led.book(queued[0], run_id="a", source="test")
    led.book(queued[1], run_id="b", source="test")
    with pytest.raises(InputError, match="past its cap"):
        led.book(RunConfig(epsilon=1.0, seed=5), run_id="c", source="test")
    assert [r["charge"] for r in led.datasets()[0]["runs"]] == ["a", "b"]


def test_a_claimed_run_not_yet_booked_still_counts_at_submit(store):
    """Between the worker's claim (RUNNING) and its trainer's booking, a run is neither
    queued nor charged: the cap check at submit must still count it, once."""
    led = L.Ledger(store.root)
    led.set_cap("digits", 1.2)  # one run of ε = 1 fits, two do not
    first = store.create_run(RunConfig(epsilon=1.0, seed=1))
    store.mark_running(first)
    pending = led.uncharged(store.active_runs())
    assert [c.seed for c in pending] == [1]
    with pytest.raises(InputError, match="past its cap"):
        led.check(RunConfig(epsilon=1.0, seed=2), pending=pending)
    led.book(RunConfig(epsilon=1.0, seed=1), run_id=first, source="test")
    assert led.uncharged(store.active_runs()) == []  # booked: counted by the ledger alone
    with pytest.raises(InputError, match="past its cap"):
        led.check(RunConfig(epsilon=1.0, seed=2), pending=led.uncharged(store.active_runs()))


def test_a_deleted_run_stays_charged_and_the_ledger_survives_a_restart(store):
    rid, metrics = _in_store(store, RunConfig(epsilon=1.0, params=TINY_DPMERF))
    before = L.Ledger(store.root).datasets()[0]["epsilon"]
    store.delete_run(rid)
    assert store.get_run(rid) is None and not store.artifact_dir(rid).exists()
    reopened = RunStore(store.root)  # a restart: a new store and ledger on the same folder
    (entry,) = L.Ledger(reopened.root).datasets()
    assert [r["run_id"] for r in entry["runs"]] == [rid]
    assert entry["epsilon"] == pytest.approx(before) == pytest.approx(metrics["epsilon_spent"])


def test_a_killed_run_keeps_its_planned_charge(store):
    config = RunConfig(epsilon=2.0, params=TINY_DPMERF)
    rid = store.create_run(config)
    events = execute(config, store.artifact_dir(rid), full_eval=False)
    next(events)  # training has begun ...
    events.close()  # ... and the run is abandoned, like a killed trainer
    (entry,) = L.Ledger(store.root).datasets()
    assert entry["runs"][0]["state"] == "planned"
    assert entry["epsilon"] == pytest.approx(2.0, rel=1e-5)


def test_cli_runs_are_charged_to_the_same_ledger_and_listed_as_json(store, tmp_path, capsys):
    _in_store(store, RunConfig(epsilon=1.0, params=TINY_DPMERF))
    csv = tmp_path / "people.csv"
    rng = __import__("numpy").random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=80), "y": rng.choice(["n", "y"], 80)}).to_csv(csv, index=False)
    assert main(["train", "--method", "marginals", "--csv", str(csv), "--label", "y",
                 "--epsilon", "0.5", "--out", str(tmp_path / "cli-run"), "--no-eval"]) == 0
    assert main(["train", "--epsilon", "inf", "--out", str(tmp_path / "np"), "--no-eval",
                 "--n-features", "50", "--epochs", "1"]) == 0
    capsys.readouterr()
    assert main(["ledger", "--json"]) == 0
    doc = _strict(capsys.readouterr().out)
    by_key = {d["dataset"]: d for d in doc["datasets"]}
    digits = by_key["digits"]
    assert [r["source"] for r in digits["runs"]] == ["app", "cli"] and digits["epsilon"] == "inf"
    (file_key,) = [k for k in by_key if k.startswith("csv:")]
    assert not by_key[file_key]["public_treated_as_private"]
    assert "people.csv" in by_key[file_key]["label"]
    assert by_key[file_key]["epsilon"] == pytest.approx(0.5, rel=1e-5)
    assert by_key[file_key]["delta"] == doc["default_delta"] == L.DEFAULT_DELTA
    # A cap set from the command line by fingerprint prefix, with the ledger's δ.
    assert main(["ledger", "--cap", file_key[:12] + "=0.6", "--delta", "1e-6"]) == 0
    capsys.readouterr()
    main(["ledger", "--json"])
    entry = {d["dataset"]: d for d in _strict(capsys.readouterr().out)["datasets"]}[file_key]
    assert entry["cap"] == 0.6 and entry["delta"] == 1e-6
    assert entry["epsilon"] > 0.5  # the same run, reported at a smaller δ
    assert main(["ledger", "--cap", "digits"]) == 2


def test_a_file_is_identified_by_its_bytes_whatever_its_name(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "0123456789ab-copy.csv"
    a.write_text("x,y\n1,0\n2,1\n")
    b.write_text(a.read_text())
    cfg = lambda p: RunConfig(method="marginals", dataset="csv", data_options={"path": str(p)})  # noqa: E731
    assert L.dataset_id(cfg(a)).key == L.dataset_id(cfg(b)).key
    assert "copy.csv" in L.dataset_id(cfg(b)).label and "0123456789ab" not in L.dataset_id(cfg(b)).label
    b.write_text("x,y\n1,0\n3,1\n")
    assert L.dataset_id(cfg(a)).key != L.dataset_id(cfg(b)).key
    assert L.dataset_id(cfg(tmp_path / "missing.csv")) is None


def test_gallery_imports_are_not_charged_to_the_store(store):
    from engine.runs.gallery import GALLERY_DIR, load_into

    if not GALLERY_DIR.is_dir():
        pytest.skip("no gallery in this checkout")
    assert load_into(store)
    assert L.Ledger(store.root).datasets() == []


# ------------------------------------------------------------------------------ the app


def test_playground_shows_the_ledger_before_train_and_a_cap_disables_it(runs_root, monkeypatch):
    from apptest import open_app

    at = open_app()
    note = next(i.value for i in at.info if "Privacy budget of this dataset" in i.value)
    assert "spent ε = 0 over 0 run(s)" in note and "brings it to ε = 1" in note
    assert PUBLIC in note
    led = L.Ledger(runs_root)
    led.book(RunConfig(epsilon=1.0), run_id="earlier", source="test")
    at.run()
    note = next(i.value for i in at.info if "Privacy budget of this dataset" in i.value)
    two = L.total_epsilon(L.planned(RunConfig(epsilon=1.0)) * 2, delta=L.DEFAULT_DELTA)
    assert "spent ε = 1 over 1 run(s)" in note and f"brings it to ε = {two:.3g}" in note
    assert not at.button(key="pg_train").disabled
    led.set_cap("digits", 1.2)
    at.run()
    # The defaults have a finished twin (the gallery's run): past the cap, Train hands it
    # back at no cost (issue 43) ...
    assert any(i.value.startswith("**Past this dataset's cap**, but run gallery-digits-dpmerf-"
                                  "eps1-seed0 has exactly these settings") for i in at.info)
    assert not at.button(key="pg_train").disabled
    # ... while a run that would spend more is refused.
    at.number_input(key="seed").set_value(5).run()
    assert any("past its cap of 1.2" in e.value for e in at.error)
    assert at.button(key="pg_train").disabled


def test_runs_page_lists_the_ledger_and_an_instructor_sets_a_cap(runs_root, monkeypatch):
    from apptest import open_app

    monkeypatch.setenv("DPSYNTH_INSTRUCTOR", "1")
    led = L.Ledger(runs_root)
    for s in range(2):
        led.book(RunConfig(epsilon=1.0, seed=s), run_id=f"r{s}", source="test", sweep="my sweep")
    at = open_app()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "ε spent" in d.value.columns)
    assert list(table["runs"]) == [2] and "my sweep: ε = 1.47 (2 runs)" in table["sweeps"][0]
    at.number_input(key="ledger_cap_eps").set_value(3.0)
    next(b for b in at.button if b.label == "Set cap").click().run()
    assert led.datasets()[0]["cap"] == 3.0


PUBLIC = L.PUBLIC_NOTE
