"""Run store: status lifecycle, metrics, restart recovery, deletion, thread safety."""

import json
import math
import sqlite3
import threading
import time

import pytest

from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.store.records import RunRecord, headline_key
from engine.store.runs import TERMINAL, RunStatus, RunStore


def test_create_list_get_roundtrip(tmp_path):
    store = RunStore(tmp_path)
    a = store.create_run(RunConfig(epsilon=1.0, seed=3))
    b = store.create_run(RunConfig(method="datalens", epsilon=math.inf), sweep="s1")
    rows = store.list_runs()
    assert [r.run_id for r in rows] == [b, a]  # newest first
    ra = store.get_run(a)
    assert isinstance(ra, RunRecord) and ra.config == RunConfig(epsilon=1.0, seed=3)
    assert ra.status == "queued" and ra.seed == 3 and ra.epsilon == 1.0 and ra.metrics == {}
    assert math.isinf(store.get_run(b).epsilon)  # inf survives SQLite (stored as NULL)
    assert [r.run_id for r in store.list_runs(method="datalens")] == [b]
    assert [r.run_id for r in store.list_runs(sweep="s1")] == [b]
    assert (tmp_path / a / "config.json").read_text() == RunConfig(epsilon=1.0, seed=3).to_json()


def test_progress_and_finish_keep_metrics(tmp_path):
    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    store.mark_running(rid)
    store.record_progress(rid, step=1, total=10, epsilon_spent=1.0, values={"loss": 0.5})
    store.record_progress(rid, step=5, total=10, epsilon_spent=1.0,
                          values={"loss": 0.2, "probe/logreg": 0.4},
                          metrics={"probe/logreg": 0.4})
    row = store.get_run(rid)
    assert (row.step, row.total, row.metrics, row.headline) == (5, 10, {"probe/logreg": 0.4}, 0.4)
    hist = store.metric_history(rid)
    assert hist["loss"] == [(1, 0.5), (5, 0.2)]
    store.finish(rid, RunStatus.FINISHED,
                 metrics={"synthetic/logreg": 0.75, "real/logreg": 0.96,
                          "synthetic/logreg/roc_auc": 0.81, "synthetic/rf/roc_auc": math.nan,
                          "note": "x"})
    row = store.get_run(rid)
    assert row.status == "finished" and row.ended >= row.started
    # Every numeric score the evaluator returned, no fixed columns; notes and NaN left out.
    assert row.metrics == {"synthetic/logreg": 0.75, "real/logreg": 0.96,
                           "synthetic/logreg/roc_auc": 0.81}
    assert row.headline == 0.75


def test_finish_needs_terminal_status(tmp_path):
    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    with pytest.raises(ValueError, match="terminal"):
        store.finish(rid, RunStatus.RUNNING)
    assert {s.value for s in TERMINAL} == {"finished", "failed", "cancelled", "interrupted"}


def test_restart_marks_stale_runs_interrupted_and_keeps_finished(tmp_path):
    store = RunStore(tmp_path)
    done = store.create_run(RunConfig())
    store.mark_running(done)
    store.finish(done, RunStatus.FINISHED, metrics={"synthetic/logreg": 0.7})
    dead = store.create_run(RunConfig())
    store.mark_running(dead)
    store.record_progress(dead, step=3, total=9, epsilon_spent=1.0, values={"loss": 1.0},
                          metrics={"probe/logreg": 0.33})
    queued = store.create_run(RunConfig())
    # A process that just heartbeat is alive: a new store must leave its runs alone.
    assert RunStore(tmp_path).get_run(dead).status == "running"
    # "The old process died": its rows now name an owner that no longer exists.
    con = sqlite3.connect(tmp_path / "runs.db")
    con.execute("UPDATE runs SET owner='999999999:0' WHERE id IN (?, ?)", (dead, queued))
    con.commit()
    con.close()
    reopened = RunStore(tmp_path)  # at once: no need to wait for the heartbeat to go stale
    assert reopened.get_run(dead).status == "interrupted"
    assert reopened.get_run(dead).metrics == {"probe/logreg": 0.33}  # last metrics kept
    assert "interrupted" in reopened.get_run(dead).message
    assert reopened.get_run(queued).status == "interrupted"
    assert reopened.get_run(done).status == "finished"
    assert reopened.metric_history(dead)["loss"] == [(3, 1.0)]


def test_a_workers_own_dead_trainer_is_left_for_it_to_reap(tmp_path):
    """A worker's heartbeat recovers rows of dead owners, but not its own running runs:
    it reads their trainer's end itself, so a trainer killed mid-run is FAILED with its
    exit code (CI once saw it INTERRUPTED: the heartbeat came between the kill and the
    reap)."""
    store = RunStore(tmp_path)
    mine, other = store.create_run(RunConfig()), store.create_run(RunConfig())
    for rid in (mine, other):
        store.mark_running(rid)
    con = sqlite3.connect(tmp_path / "runs.db")
    con.execute("UPDATE runs SET owner='999999999:0' WHERE id IN (?, ?)", (mine, other))
    con.commit()
    con.close()
    assert store.recover_stale(mine={mine: object()}) == [other]
    assert store.get_run(mine).status == "running" and store.get_run(other).status == "interrupted"


def test_rows_without_owner_fall_back_to_the_heartbeat(tmp_path):
    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    con = sqlite3.connect(tmp_path / "runs.db")
    con.execute("UPDATE runs SET owner=NULL WHERE id=?", (rid,))
    con.commit()
    con.close()
    assert RunStore(tmp_path).get_run(rid).status == "queued"  # fresh heartbeat
    time.sleep(0.05)
    assert RunStore(tmp_path, stale_after_s=0.01).get_run(rid).status == "interrupted"


def test_rows_of_a_live_owner_stay_active_however_old_their_heartbeat(tmp_path):
    """A run queued for long by a live app is not interrupted by another process opening
    the store (the CLI, a second page): only a dead owner or no owner at all counts."""
    import subprocess

    from engine.core.processes import process_token

    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    other = subprocess.Popen(["sleep", "60"])
    try:
        con = sqlite3.connect(tmp_path / "runs.db")
        con.execute("UPDATE runs SET owner=?, heartbeat=0, created=0 WHERE id=?",
                    (process_token(other.pid), rid))
        con.commit()
        con.close()
        assert RunStore(tmp_path, stale_after_s=0.01).get_run(rid).status == "queued"
    finally:
        other.kill()
        other.wait()
    assert RunStore(tmp_path, stale_after_s=0.01).get_run(rid).status == "interrupted"


def test_delete_removes_row_metrics_and_folder(tmp_path):
    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    with pytest.raises(InputError, match="stop it before deleting"):
        store.delete_run(rid)
    store.finish(rid, RunStatus.CANCELLED)
    store.delete_run(rid)
    assert store.get_run(rid) is None and not (tmp_path / rid).exists()
    assert store.metric_history(rid) == {}
    with pytest.raises(InputError, match="not a run id"):
        store.artifact_dir("../etc")


def test_concurrent_writers(tmp_path):
    store = RunStore(tmp_path)
    ids = [store.create_run(RunConfig(seed=i)) for i in range(4)]
    errors = []

    def work(rid):
        try:
            for step in range(50):
                store.record_progress(rid, step=step, total=50, epsilon_spent=0.5,
                                      values={"loss": 1.0 / (step + 1)})
                store.list_runs()
            store.finish(rid, RunStatus.FINISHED)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(len(store.metric_history(i)["loss"]) == 50 for i in ids)
    assert {r.status for r in store.list_runs()} == {RunStatus.FINISHED}


def test_headline_prefers_logreg_accuracy_then_other_classifiers_then_probes():
    assert headline_key({"synthetic/mlp": 0.8, "synthetic/logreg": 0.7, "real/logreg": 0.9,
                         "synthetic/logreg/f1_macro": 0.1}) == "synthetic/logreg"
    assert headline_key({"synthetic/mlp/roc_auc": 0.9, "synthetic/mlp": 0.8}) == "synthetic/mlp"
    assert headline_key({"probe/logreg": 0.3, "loss": 2.0}) == "probe/logreg"
    assert headline_key({"real/logreg": 0.9}) is None


def test_claim_takes_the_oldest_queued_run_of_a_free_device_once(tmp_path):
    store = RunStore(tmp_path)
    a = store.create_run(RunConfig(seed=1), device="cpu")
    g = store.create_run(RunConfig(seed=2), device="cuda:0")
    b = store.create_run(RunConfig(seed=3), device="cpu")
    assert store.claim_next(full={"cpu"}) == (g, "cuda:0")  # cpu busy: skip its queue
    assert store.claim_next() == (a, "cpu")  # FIFO within a queue
    assert store.get_run(a).status == "running"
    assert store.request_stop(b) == RunStatus.CANCELLED  # queued: cancelled at once
    assert store.claim_next() is None  # nothing left: b never starts
    assert store.get_run(b).message == "cancelled before it started"


def test_stop_request_of_a_running_run_is_left_for_its_worker(tmp_path):
    store = RunStore(tmp_path)
    rid = store.create_run(RunConfig())
    assert store.claim_next() == (rid, "cpu")
    assert store.stop_requests([rid]) == {}
    assert store.request_stop(rid) == RunStatus.RUNNING  # still running until it ends
    assert set(store.stop_requests([rid])) == {rid}
    assert store.finish(rid, RunStatus.CANCELLED, if_active=True)
    # Whoever records the end first wins; a later finish(if_active) changes nothing.
    assert not store.finish(rid, RunStatus.FAILED, if_active=True)
    assert store.get_run(rid).status == "cancelled"
    assert store.request_stop(rid) is None  # already over


def test_find_finished_matches_the_resolved_settings_seed_included(tmp_path):
    from engine.methods.registry import settings_for

    def find(**kw):
        cfg = RunConfig(**{"epsilon": 2.0, "seed": 4, "params": {"epochs": 3}, **kw})
        return store.find_finished(cfg, settings_for(cfg))

    store = RunStore(tmp_path)
    cfg = RunConfig(epsilon=2.0, seed=4, params={"epochs": 3})
    rid = store.create_run(cfg, settings=settings_for(cfg))
    assert find() is None  # queued is not finished
    store.finish(rid, RunStatus.FINISHED)
    assert find() == rid
    assert find(seed=5) is None and find(params={"epochs": 4}) is None
    assert find(delta=1e-6) is None
    # An override equal to the default is the same run: the settings are resolved.
    assert find(params={"epochs": 3, "n_features": settings_of(rid, store)["n_features"]}) == rid


def settings_of(rid, store) -> dict:
    row = store._con().execute("SELECT settings FROM runs WHERE id=?", (rid,)).fetchone()
    return json.loads(row["settings"])["params"]


def test_a_changed_default_is_never_answered_by_the_old_run(tmp_path, monkeypatch, digits):
    """Train after a default changed must train anew, not hand back the run made with
    the old default (config.json alone keeps only the overrides, equal in both)."""
    from dataclasses import replace

    from engine.methods.dpmerf import method as dpmerf
    from engine.methods.registry import settings_for

    store = RunStore(tmp_path)
    cfg = RunConfig(epsilon=2.0, seed=4)  # defaults only
    rid = store.create_run(cfg, settings=settings_for(cfg))
    store.finish(rid, RunStatus.FINISHED)
    assert store.find_finished(cfg, settings_for(cfg)) == rid
    for_data = dpmerf.Params.for_data.__func__
    monkeypatch.setattr(dpmerf.Params, "for_data", classmethod(
        lambda cls, data: replace(for_data(cls, data), epochs=for_data(cls, data).epochs + 1)))
    assert store.find_finished(cfg, settings_for(cfg)) is None
    assert store.find_finished(cfg, None) is None  # unresolved settings: never reused


def test_a_store_from_an_older_version_gains_the_new_columns(tmp_path):
    con = sqlite3.connect(tmp_path / "runs.db")
    con.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, created REAL NOT NULL, started REAL, "
                "ended REAL, heartbeat REAL, status TEXT NOT NULL, method TEXT NOT NULL, "
                "dataset TEXT NOT NULL, epsilon REAL, delta REAL, seed INTEGER, sweep TEXT, "
                "config TEXT NOT NULL, step INTEGER DEFAULT 0, total INTEGER DEFAULT 0, "
                "epsilon_spent REAL, accuracy REAL, real_accuracy REAL, summary TEXT, "
                "message TEXT)")
    # An old row: hard-wired accuracy columns, the same figures in its summary JSON, and
    # a config saved before any later RunConfig field existed.
    old_config = {k: v for k, v in RunConfig(seed=2).to_dict().items()
                  if k in ("method", "dataset", "epsilon", "delta", "seed", "device",
                           "n_synthetic", "data_options", "params")}
    con.execute("INSERT INTO runs (id, created, ended, status, method, dataset, seed, config, "
                "accuracy, real_accuracy, summary) VALUES "
                "('old', 1.0, 2.0, 'finished', 'dpmerf', 'digits', 2, ?, 0.7, 0.9, ?)",
                (json.dumps(old_config), json.dumps({"synthetic/logreg": 0.7,
                                                     "real/logreg": 0.9, "note": "kept?"})))
    con.commit()
    con.close()
    store = RunStore(tmp_path)
    row = store.get_run("old")
    assert row.status == "finished" and row.session is None and row.device == "cpu"
    assert row.metrics == {"synthetic/logreg": 0.7, "real/logreg": 0.9}
    assert store.claim_next() is None
    # Stored without resolved settings: never reused (a default may have changed since).
    from engine.methods.registry import settings_for

    assert store.find_finished(RunConfig(seed=2), settings_for(RunConfig(seed=2))) is None
    # New runs are written without the old columns and read back the same way.
    rid = store.create_run(RunConfig(seed=5))
    store.finish(rid, RunStatus.FINISHED, metrics={"synthetic/logreg": 0.6})
    assert store.get_run(rid).metrics == {"synthetic/logreg": 0.6}


def test_runs_live_outside_the_checkout_by_default(monkeypatch, tmp_path):
    from engine.store.runs import default_root

    monkeypatch.delenv("DPSYNTH_RUNS", raising=False)
    monkeypatch.delenv("DPSYNTH_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_root() == tmp_path / "data" / "dp-synth-lab" / "runs"
    monkeypatch.setenv("DPSYNTH_HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / "runs"
    monkeypatch.setenv("DPSYNTH_RUNS", str(tmp_path / "r"))
    assert default_root() == tmp_path / "r"
