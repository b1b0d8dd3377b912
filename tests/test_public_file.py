"""A user's file marked public as a study's stand-in (engine/store/uploads.mark_public,
engine/runs/public_tuning.check_tune_on): only its uploader may mark it or tune on it,
a file not marked public is refused, so is one laid out unlike the private data, and
its trials are never charged while the one private run is charged once."""

from __future__ import annotations

import io

import numpy as np
import pytest

from engine.core import identity
from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.jobs import public_study
from engine.jobs.manager import JobManager
from engine.jobs.study import Study
from engine.privacy.ledger import Ledger
from engine.runs.study_space import StudySpec, build_spec
from engine.store import uploads
from engine.store.runs import RunStore

from job_fakes import scripted

from conftest import TINY_DPMERF

PRIVATE = RunConfig(method="dpmerf", dataset="digits_private", epsilon=1.0, device="cpu")


def _npz(shape=(8, 8), n=60) -> bytes:
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez(buf, x=rng.integers(0, 256, (n, *shape), dtype=np.uint8), y=np.arange(n) % 10)
    return buf.getvalue()


def _cancer_csv(drop: str | None = None) -> bytes:
    from sklearn.datasets import load_breast_cancer

    df = load_breast_cancer(as_frame=True).frame.head(80)
    return df.drop(columns=[drop] if drop else []).to_csv(index=False).encode()


@pytest.fixture
def people(tmp_path):
    """The store's root and two participants' owner keys."""
    return tmp_path, identity.owner_key(tmp_path, "cookie-a"), identity.owner_key(tmp_path, "cookie-b")


def _spec(root, owner, path, base=PRIVATE, kind="npz", trials=2):
    return build_spec(base, ["lr=1e-3:1e-1:log"], trials=trials, sampler="random",
                      tune_on=kind, tune_on_options={"path": str(path)}, root=root, owner=owner)


def _spec_knobs():
    """The knobs of a StudySpec built by hand, past build_spec."""
    from engine.methods.knobs import knob_specs
    from engine.methods.registry import get_method
    from engine.runs.study_space import parse_knob

    specs = {s.name: s for s in knob_specs(get_method("dpmerf").Params)}
    return (parse_knob("lr=1e-3:1e-1:log", specs),)


def test_a_file_not_marked_public_is_refused_with_the_fix(people):
    root, a, _ = people
    path = uploads.save(root, a, "mine.npz", _npz())
    with pytest.raises(InputError, match="not marked public.*this file is public"):
        _spec(root, a, path)
    # also at the study's start, for a spec built by hand past build_spec
    spec = StudySpec(base=PRIVATE, knobs=_spec_knobs(), trials=1, sampler="random",
                     tune_on="npz", tune_on_options={"path": str(path)})
    jm = JobManager(RunStore(root), execute=scripted, slots_per_device=1)
    try:
        with pytest.raises(InputError, match="not marked public"):
            Study(spec, "handmade", jm, session=a)
    finally:
        jm.shutdown()


def test_only_the_uploader_may_mark_it_or_tune_on_it(people):
    root, a, b = people
    path = uploads.save(root, a, "mine.npz", _npz())
    with pytest.raises(InputError, match="only the participant who uploaded"):
        uploads.mark_public(root, b, path)
    assert not uploads.is_public(path)
    uploads.mark_public(root, a, path)
    assert uploads.is_public(path) and path in uploads.files_of(root, a)  # the mark is no upload
    with pytest.raises(InputError, match="only the participant who uploaded mine.npz"):
        _spec(root, b, path)
    spec = _spec(root, a, path)
    assert spec.tune_on_options == {"path": str(path)}
    jm = JobManager(RunStore(root), execute=scripted, slots_per_device=1)
    try:  # a's spec, started by b: refused at the study's start too
        with pytest.raises(InputError, match="only the participant who uploaded"):
            Study(spec, "not-mine", jm, session=b)
    finally:
        jm.shutdown()
    with pytest.raises(InputError, match="needs the file: mark your upload public"):
        build_spec(PRIVATE, ["lr=1e-3:1e-1:log"], trials=1, sampler="random", tune_on="npz")
    uploads.delete(root, a, path)  # the mark goes with the file
    assert not uploads.is_public(path)


@pytest.mark.parametrize("content, kind, base, words", [
    (_npz(shape=(6, 6)), "npz", PRIVATE, r"shape \(1, 6, 6\) and digits_private \(1, 8, 8\)"),
    (_cancer_csv(), "csv", PRIVATE, "holds tabular data and digits_private image data"),
    (_cancer_csv(drop="mean radius"), "csv",
     RunConfig(method="dpmerf", dataset="breast_cancer", device="cpu"),
     r"pub.csv's columns are not breast_cancer's: missing \['mean radius'\]"),
    (_cancer_csv().replace(b"target", b"label,extra", 1), "csv",
     RunConfig(method="dpmerf", dataset="breast_cancer", device="cpu"),
     "needs breast_cancer's 30 feature columns plus one label column; it has 2"),
])
def test_a_public_file_unlike_the_private_data_is_refused(people, content, kind, base, words):
    root, a, _ = people
    path = uploads.save(root, a, f"pub.{kind}", content)
    uploads.mark_public(root, a, path)
    with pytest.raises(InputError, match=words):
        _spec(root, a, path, base=base, kind=kind)


def test_a_public_table_with_the_private_columns_is_accepted_and_its_label_found(people):
    root, a, _ = people
    path = uploads.save(root, a, "pub.csv", _cancer_csv())
    uploads.mark_public(root, a, path)
    spec = _spec(root, a, path, base=RunConfig(method="dpmerf", dataset="breast_cancer",
                                               device="cpu"), kind="csv")
    assert spec.tune_on_options == {"path": str(path), "label": "target"}
    assert spec.config_for({"lr": 0.01}).data_options == spec.tune_on_options
    assert spec.tune_on_words == "pub.csv (a csv file marked public)"
    assert StudySpec.from_dict(spec.to_dict()) == spec


def test_a_public_file_is_never_charged_and_the_private_run_once(people):
    """A tiny DP-MERF trial on the user's public NPZ through the real worker and
    ledger: no ledger row while they run, then one row, on digits, for the private run."""
    root, a, _ = people
    path = uploads.save(root, a, "pub.npz", _npz())
    run_on_it = RunConfig(method="dpmerf", dataset="npz", data_options={"path": str(path)})
    assert Ledger(root).forecast(run_on_it) is not None  # private until marked
    uploads.mark_public(root, a, path)
    assert Ledger(root).forecast(run_on_it) is None  # now: nothing to charge or cap
    base = RunConfig(method="dpmerf", dataset="digits_private", epsilon=1.0, device="cpu",
                     params=dict(TINY_DPMERF))
    spec = _spec(root, a, path, base=base, trials=1)
    jm = JobManager(RunStore(root), slots_per_device=1)
    seen = []
    try:
        study = Study(spec, "pubfile", jm, session=a)
        res = study.run(on_trial=lambda info, r: seen.append(Ledger(root).datasets()))
        fin = public_study.final(study)
    finally:
        jm.shutdown()
    assert [t.state for t in res.trials] == ["COMPLETE"] and seen == [[]]
    trial_runs = [jm.store.get_run(t.run_id) for t in res.trials]
    assert {r.config.dataset for r in trial_runs} == {"npz"}
    (digits,) = Ledger(root).datasets()
    assert digits["dataset"] == "digits" and [r["run_id"] for r in digits["runs"]] == [fin["run_id"]]
    assert digits["epsilon"] == pytest.approx(1.0, rel=0.05)
    assert fin["tune_on"] == "pub.npz (a npz file marked public)"


def test_the_tune_page_marks_an_upload_public_and_offers_it(runs_root):
    """The owner's NPZ is listed with its "public" checkbox (another participant's is not
    listed); ticked, it is marked for good and offered as the study's stand-in."""
    from apptest import open_app

    at = open_app()
    me = identity.owner_key(runs_root, at.session_state["owner_session"])
    mine = uploads.save(runs_root, me, "mine.npz", _npz())
    theirs = uploads.save(runs_root, identity.owner_key(runs_root, "else"), "theirs.npz", _npz(n=61))
    at = at.switch_page("pages/tune.py").run()
    at.selectbox(key="tune_dataset").set_value("digits_private").run()
    assert not at.exception
    assert not any("mine.npz" in o for o in at.selectbox(key="tune_on").options)
    box = at.checkbox(key=f"tune_public_{mine.name}")
    assert not box.value and "no privacy protection" in box.label
    assert not any(c.key == f"tune_public_{theirs.name}" for c in at.checkbox)
    box.check().run()
    assert uploads.is_public(mine) and not uploads.is_public(theirs)
    assert at.checkbox(key=f"tune_public_{mine.name}").disabled  # for good
    offered = at.selectbox(key="tune_on")
    assert any("mine.npz (your file), public (not charged)" in o for o in offered.options)
    offered.set_value(str(mine)).run()
    at.multiselect(key="tune_knobs").set_value(["lr"]).run()
    at.text_input(key="tune_range_lr").set_value("1e-3:1e-1:log").run()
    assert not at.exception and not at.error
    assert "run on mine.npz (a npz file marked public), public" in " ".join(m.value for m in at.markdown)
    assert not at.button(key="tune_start").disabled
