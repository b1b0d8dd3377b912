"""Issue 43 in the engine: identities that grant nothing when copied (engine/core/identity.py),
who sees what of a run on an uploaded file (engine/jobs/visibility.py), uploads kept per owner
(engine/store/uploads.py), owner-only labels and sharing, and a budget cap below what is spent.
"""

from __future__ import annotations

import json
import stat

import pytest

from engine.core import identity
from engine.jobs import visibility
from engine.store import uploads
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.jobs.manager import JobManager, NotOwner
from engine.privacy.ledger import Ledger
from engine.store.records import RunStatus
from engine.methods.registry import settings_for
from engine.store.runs import RunStore

COOKIE = "Zq3v0hV4mN1xYk2w8Tb6Rc9e"


# ------------------------------------------------------------------ identity


def test_the_server_secret_is_private_and_stable(tmp_path):
    s = identity.server_secret(tmp_path)
    path = tmp_path / identity.SECRET_FILE
    assert len(s) == 32 and identity.server_secret(tmp_path) == s
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_owner_key_and_alias_reveal_nothing_of_the_cookie(tmp_path):
    key = identity.owner_key(tmp_path, COOKIE)
    assert COOKIE not in key and key != identity.owner_key(tmp_path, COOKIE + "x")
    assert key == identity.owner_key(tmp_path, COOKIE)  # stable: it is what runs carry
    al = identity.alias(tmp_path, key)
    assert len(al) == identity.ALIAS_LEN and al not in key and al not in COOKIE
    # Another server (another secret) gives other keys: nothing is a plain hash.
    assert identity.owner_key(tmp_path / "other", COOKIE) != key


def test_instructor_token_signed_expiring_and_tied_to_the_passphrase(tmp_path):
    tok = identity.instructor_token(tmp_path, "open sesame", now=1000.0)
    assert "open sesame" not in tok
    assert identity.instructor_token_valid(tmp_path, tok, "open sesame", now=1000.0)
    assert not identity.instructor_token_valid(tmp_path, tok, "changed", now=1000.0)
    late = 1000.0 + identity.INSTRUCTOR_TTL_S + 1
    assert not identity.instructor_token_valid(tmp_path, tok, "open sesame", now=late)
    forged = tok.split(".")[0] + "." + "0" * 64
    assert not identity.instructor_token_valid(tmp_path, forged, "open sesame", now=1000.0)
    longer = str(int(tok.split(".")[0]) + 10**6) + "." + tok.split(".")[1]
    assert not identity.instructor_token_valid(tmp_path, longer, "open sesame", now=1000.0)
    assert not identity.instructor_token_valid(tmp_path, None, "open sesame")
    assert identity.passphrase_ok("open sesame", "open sesame")
    assert not identity.passphrase_ok("open", "open sesame")
    assert not identity.passphrase_ok("", "")


# ------------------------------------------------------------------ visibility

METRICS = {
    "status": "finished", "method": "dpmerf", "dataset": "csv", "private": True,
    "epsilon_target": 1.0, "epsilon_spent": 0.99, "delta": 1e-5, "accountant": "exact",
    "privacy": {"releases": []}, "n_train": 60, "n_test": 15, "n_synthetic": 60,
    "accuracy": {"synthetic/logreg": 0.7, "real/logreg": 0.9},
    "fidelity": {"columns": {"a": {"histogram": {"real": [0.5, 0.5]}}}},
    "info": {"length_scale": 1.23}, "ledger": {"dataset": "mine.csv (csv file)"},
    "disclosures": {"not private": {"category_domain": "colour: red, green"}},
}


def test_redacted_metrics_keep_only_the_release():
    out = visibility.redact_metrics(METRICS)
    assert out["epsilon_spent"] == 0.99 and out["privacy"] == {"releases": []}
    for gone in ("fidelity", "accuracy", "info", "ledger", "disclosures"):
        assert gone not in out
    assert "redacted" in out
    shared = visibility.redact_metrics(METRICS, share_scores=True)
    assert shared["accuracy"] == {"synthetic/logreg": 0.7}  # never real/*


def _record(store, *, dataset="csv", session="p-alice", path="/srv/runs/uploads/x/ab-mine.csv"):
    cfg = RunConfig(dataset=dataset, device="cpu",
                    data_options={"path": path, "label": "y"} if dataset == "csv" else {})
    rid = store.create_run(cfg, session=session)
    store.finish(rid, RunStatus.FINISHED, metrics={"synthetic/logreg": 0.7,
                                                   "real/logreg": 0.9}, message="finished")
    return store.get_run(rid)


def test_only_the_owner_and_an_instructor_see_an_uploads_real_data(tmp_path):
    store = RunStore(tmp_path / "runs")
    rec = _record(store)
    assert visibility.may_see_real(rec, session="p-alice", instructor=False)
    assert visibility.may_see_real(rec, session="p-bob", instructor=True)
    assert not visibility.may_see_real(rec, session="p-bob", instructor=False)
    seen = visibility.visible_record(rec, session="p-bob", instructor=False)
    assert seen.metrics == {} and seen.message == ""
    assert "mine.csv" not in seen.config.to_json() and "/srv" not in seen.config.to_json()
    assert seen.config.data_options["label"] == "y"  # column names are public
    shared = visibility.visible_record(rec, session="p-bob", instructor=False, shared=True)
    assert shared.metrics == {"synthetic/logreg": 0.7}
    assert visibility.visible_record(rec, session="p-alice", instructor=False) is rec
    # Built-in public data: nothing is redacted for anyone.
    pub = _record(store, dataset="digits")
    assert visibility.visible_record(pub, session="p-bob", instructor=False) is pub


def test_downloads_for_others_are_redacted(tmp_path):
    store = RunStore(tmp_path / "runs")
    rec = _record(store)
    kw = dict(record=rec, session="p-bob", instructor=False)
    m = json.loads(visibility.artifact_bytes("metrics.json", json.dumps(METRICS).encode(), **kw))
    assert "fidelity" not in m and "accuracy" not in m
    c = json.loads(visibility.artifact_bytes("config.json", rec.config.to_json().encode(), **kw))
    assert c["data_options"]["path"] == visibility.UPLOAD_PLACEHOLDER
    assert visibility.artifact_bytes("synthetic.csv", b"a,b\n", **kw) == b"a,b\n"
    assert visibility.artifact_bytes("attack.json", b"{}", **kw) is None
    own = visibility.artifact_bytes("metrics.json", b"{}", record=rec, session="p-alice",
                                    instructor=False)
    assert own == b"{}"


def test_the_budget_table_names_a_file_to_its_participants_only():
    row = {"dataset": "csv:1f2e", "label": "patients.csv (csv file, sha256 1f2e)",
           "public_treated_as_private": False, "runs": [{"run_id": "r1"}]}
    assert visibility.ledger_label(row, mine={"r1"}, instructor=False) == row["label"]
    assert visibility.ledger_label(row, mine=set(), instructor=True) == row["label"]
    other = visibility.ledger_label(row, mine={"r2"}, instructor=False)
    assert "patients" not in other and other == "another participant's csv file"
    pub = {"dataset": "digits", "label": "digits (public)", "public_treated_as_private": True}
    assert visibility.ledger_label(pub, mine=set(), instructor=False) == "digits (public)"


# ------------------------------------------------------------------ uploads


def test_uploads_live_in_the_owners_folder_and_go_with_their_last_run(tmp_path):
    root = tmp_path / "runs"
    store = RunStore(root)
    path = uploads.save(root, "p-alice", "my data.csv", b"a,y\n1,0\n")
    assert path.read_bytes() == b"a,y\n1,0\n" and uploads.display_name(path) == "my_data.csv"
    assert path.parent == uploads.owner_folder(root, "p-alice")
    assert "p-alice" not in str(path)  # the folder is a keyed hash, not the owner key
    assert uploads.files_of(root, "p-alice") == [path]
    assert uploads.files_of(root, "p-bob") == []
    r1 = _record(store, path=str(path))
    r2 = _record(store, path=str(path))
    store.delete_run(r1.run_id)
    assert path.exists()  # r2 still uses it
    store.delete_run(r2.run_id)
    assert not path.exists()  # gone with the last run


def test_only_the_owner_deletes_an_upload_and_the_size_limit_is_enforced(tmp_path):
    root = tmp_path / "runs"
    path = uploads.save(root, "p-alice", "d.csv", b"x\n1\n")
    with pytest.raises(InputError, match="only the participant who uploaded"):
        uploads.delete(root, "p-bob", path)
    uploads.delete(root, "p-alice", path)
    assert not path.exists()
    with pytest.raises(InputError, match=r"^big.csv is 2.0 MB; uploads are limited to 1 MB"):
        uploads.save(root, "p-alice", "big.csv", b"0" * (2 * 1024 * 1024), max_mb=1)


# ------------------------------------------------------------------ jobs


@pytest.fixture
def jm(tmp_path):
    jm = JobManager(RunStore(tmp_path / "runs"))
    yield jm
    jm.shutdown()


def test_renaming_tagging_and_sharing_are_owner_only(jm):
    rec = _record(jm.store)
    with pytest.raises(NotOwner, match="only its owner or an instructor can rename or tag"):
        jm.set_label(rec.run_id, name="mine now", session="p-bob")
    with pytest.raises(NotOwner, match="can share"):
        jm.set_shared(rec.run_id, True, session="p-bob")
    assert jm.store.labels() == {} and jm.store.shared_runs() == set()
    jm.set_label(rec.run_id, name="baseline", tags=["a"], session="p-alice")
    jm.set_shared(rec.run_id, True, session="p-alice")
    jm.set_label(rec.run_id, name="by the instructor", session="p-bob", instructor=True)
    assert jm.store.labels()[rec.run_id]["name"] == "by the instructor"
    assert jm.store.shared_runs() == {rec.run_id}
    jm.set_shared(rec.run_id, False, session="p-alice")
    assert jm.store.shared_runs() == set()


TINY = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu",
                 params={"n_features": 500, "epochs": 1})


def test_a_cap_below_the_spent_budget_says_so_and_still_reuses_finished_runs(jm, monkeypatch):
    led = Ledger(jm.store.root)
    led.book(TINY, run_id="earlier", source="test")  # ε = 1 spent on digits
    rid = jm.store.create_run(TINY, session="p-alice", settings=settings_for(TINY))
    jm.store.finish(rid, RunStatus.FINISHED, message="finished")
    assert led.over_cap("digits") is None
    led.set_cap("digits", 0.5)
    note = led.over_cap("digits")
    assert note.startswith("The cap 0.5 is below what digits") and "ε = 1" in note

    def no_data(*a, **k):
        raise AssertionError("the data was read")

    monkeypatch.setattr("engine.data.catalog.load", no_data)
    # The identical finished run comes back at no cost, for anyone, without reading data.
    assert jm.reusable_past_cap(TINY) == rid
    assert jm.request(TINY, session="p-bob") == (rid, True)
    assert len(led.datasets()[0]["runs"]) == 1  # nothing charged
    # Any other run is refused, before the data is read (as the message says).
    with pytest.raises(InputError, match=r"^Refused before reading the data: digits"):
        jm.request(RunConfig(**{**TINY.__dict__, "seed": 7}), session="p-bob")
    with pytest.raises(InputError, match=r"^Refused before reading the data"):
        jm.request(TINY, session="p-bob", reuse=False)
    assert not jm.store.active_runs()


def test_reuse_past_a_cap_needs_data_that_cannot_have_changed(tmp_path):
    store = RunStore(tmp_path / "runs")
    loose = tmp_path / "loose.csv"  # a file outside the uploads: its bytes may change
    loose.write_text("a,y\n1,0\n")
    up = uploads.save(store.root, "p-alice", "d.csv", b"a,y\n1,0\n")
    for path, expect_found in ((loose, False), (up, True)):
        cfg = RunConfig(dataset="csv", device="cpu", data_options={"path": str(path),
                                                                  "label": "y"})
        rid = store.create_run(cfg, session="p-alice", settings="{}")
        store.finish(rid, RunStatus.FINISHED, message="finished")
        assert (store.find_same_config(cfg) == rid) is expect_found
