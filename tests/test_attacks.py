"""Membership attacks on a release (engine/audit/membership.py, engine/audit/membership_run.py): they catch a
release that memorises its training records, read chance on a release independent of
them, stay inside the DP bound on a real DP run, and say so loudly when a point is
outside it. Their scores never reach the released files."""

import json
import math

import numpy as np
import pytest

from engine.audit import membership_run as attack_run
from engine.audit import membership as attacks
from engine.privacy import risk
from engine.cli.commands import main
from engine.data.dataset import Column, Dataset

FAST_MARGINALS = ("--method", "marginals", "--dataset", "digits", "--no-eval", "--device", "cpu")


def _strict(text: str):
    def refuse(token):
        raise ValueError(f"non-strict JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def _mixed(n: int, seed: int) -> tuple[Dataset, object]:
    """A mixed-type table from one fixed distribution: two numeric columns with public
    bounds, one categorical, a label that depends on them."""
    rng = np.random.default_rng(seed)

    def draw(m):
        cat = rng.integers(0, 3, m)
        a = np.clip(rng.normal(2.0 * cat, 1.0), -5, 10)
        b = np.clip(rng.normal(0.0, 1.0, m) + 0.5 * a, -5, 10)
        y = (a + b + rng.normal(0, 1, m) > 3).astype(np.int64)
        return np.column_stack([a, b, cat]).astype(np.float64), y

    x_tr, y_tr = draw(n)
    x_te, y_te = draw(n // 2)
    cols = [Column("a", "num", bounds=(-5, 10)), Column("b", "num", bounds=(-5, 10)),
            Column("c", "cat", categories=["x", "y", "z"])]
    return Dataset("mixed", "tabular", x_tr, y_tr, x_te, y_te, ["no", "yes"], columns=cols), draw


def test_a_release_that_memorises_its_training_records_is_flagged(digits):
    rng = np.random.default_rng(0)
    keep = rng.choice(digits.n_train, int(0.9 * digits.n_train), replace=False)
    result = attack_run.measure(digits, digits.x_train[keep], digits.y_train[keep],
                                epsilon=math.inf, delta=1e-5)
    for name, a in result["attacks"].items():
        assert a["auc"] >= 0.7, (name, a["auc"])
        assert a["auc_ci"][0] <= a["auc"] <= a["auc_ci"][1]
    # Members copied into the release sit at distance 0: nearly all are caught at 1 % FPR.
    assert result["attacks"]["dcr"]["tpr_at_1pct_fpr"] > 0.8
    assert result["inside_bound"]  # ε = ∞ bounds nothing


def test_a_release_independent_of_the_members_reads_chance():
    data, draw = _mixed(3000, seed=1)
    syn_x, syn_y = draw(3000)  # same distribution, no training record in it
    result = attack_run.measure(data, syn_x, syn_y, epsilon=1.0, delta=1e-5)
    assert result["game"]["members"] == result["game"]["non-members"] == 1500
    for name, a in result["attacks"].items():
        assert abs(a["auc"] - 0.5) < 0.06, (name, a["auc"])
        assert a["tpr_at_1pct_fpr"] < 0.05, name
    assert result["inside_bound"], result["violations"]


def test_the_reference_set_never_holds_an_evaluated_non_member(digits, monkeypatch):
    seen = []
    real = attacks.attack_scores

    def spy(targets, synthetic, reference, *, seed=0):
        seen.append((targets, reference))
        return real(targets, synthetic, reference, seed=seed)

    monkeypatch.setattr(attacks, "attack_scores", spy)
    attack_run.play(digits, digits.x_train[:200], digits.y_train[:200], folds=3)
    assert len(seen) == 3
    for targets, reference in seen:
        ref_rows = {r.tobytes() for r in reference}
        assert not any(t.tobytes() in ref_rows for t in targets[len(targets) // 2:])


def test_bound_check_flags_a_point_outside_the_bound_and_passes_one_inside():
    rng = np.random.default_rng(0)
    strong = attacks.summarise(rng.normal(3, 1, 2000), rng.normal(0, 1, 2000))
    tight = risk.for_epsilon(0.5, 1e-5)
    outside = attacks.bound_check(strong, tight.tpr, name="strong")
    assert outside and any("TPR" in v for v in outside) and any("AUC" in v for v in outside)
    assert attacks.bound_check(strong, risk.for_epsilon(math.inf, 1e-5).tpr, name="s") == []
    # A point right at a Gaussian curve is inside it: its interval covers the curve.
    mu = 1.0
    at_curve = attacks.summarise(rng.normal(mu, 1, 4000), rng.normal(0, 1, 4000))
    assert attacks.bound_check(at_curve, risk.for_gaussian(mu).tpr, name="g") == []
    assert attacks.bound_check(at_curve, risk.for_gaussian(0.3).tpr, name="g")


def test_tpr_at_fpr_uses_the_threshold_that_keeps_the_fpr():
    s_out = np.arange(100.0)  # 1 % FPR: only the top non-member (99) may be flagged
    tp, fp = attacks.rates_at(np.array([97.5, 98.5, 99.5, 120.0]), s_out, 0.01)
    assert (tp, fp) == (3, 1)  # the threshold sits at 98: 97.5 is not flagged
    # Ties (ten non-members and a member at 1.0) are broken at random, so 5 % FPR flags
    # exactly five non-members rather than none of the tied block.
    tied = np.r_[np.zeros(90), np.ones(10)]
    tp, fp = attacks.rates_at(np.array([1.0, 2.0]), tied, 0.05)
    assert fp == 5 and tp in (1, 2)
    lo, hi = attacks.clopper_pearson(0, 50)
    assert lo == 0.0 and 0.05 < hi < 0.08  # 1 − 0.025^(1/50) = .071
    assert attacks.bound_auc(risk.for_epsilon(math.inf, 0).tpr) == pytest.approx(1.0)
    assert attacks.bound_auc(risk.for_gaussian(0.0).tpr) == pytest.approx(0.5, abs=1e-3)


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("attack") / "run"
    assert main(["train", *FAST_MARGINALS, "--epsilon", "1", "--out", str(out)]) == 0
    return out


def test_cli_attack_measures_a_dp_run_inside_its_bound(dp_run, capsys):
    released = {p.name: p.read_bytes() for p in dp_run.iterdir()}
    assert main(["attack", str(dp_run), "--json"]) == 0
    cap = capsys.readouterr()
    result = _strict(cap.out)
    assert "NOT private" in cap.err and "about" in cap.err  # the label and the cost preview
    assert result["inside_bound"] and result["violations"] == []
    assert set(result["attacks"]) == set(attacks.TITLES)
    assert set(result["bounds"]) == {"report", "epsilon"}
    assert result["bounds"]["epsilon"]["tpr_at_1pct_fpr"] == pytest.approx(
        risk.for_epsilon(1, 1e-5).tpr(np.array([0.01]))[0])
    saved = _strict((dp_run / "attack.json").read_text())
    assert saved["label"].startswith("NOT PRIVATE") and attack_run.saved(dp_run) == saved
    # The released files are untouched, and no attack figure is written into them.
    for name, blob in released.items():
        assert (dp_run / name).read_bytes() == blob, name
    metrics = (dp_run / "metrics.json").read_text()
    assert "attack.json" in json.loads(metrics)["disclosures"]["not private"]
    assert '"auc' not in metrics and "tpr_at" not in metrics and "domias" not in metrics
    for a in result["attacks"].values():
        for value in (a["auc"], *a["auc_ci"], a["tpr_at_1pct_fpr"]):
            if len(repr(value)) >= 8:  # short ones (0.0, 0.5) occur anywhere by chance
                assert repr(value) not in metrics


def test_cli_attack_prints_the_table_next_to_the_bound(dp_run, capsys):
    assert main(["attack", str(dp_run)]) == 0
    out = capsys.readouterr().out
    assert "TPR@1%FPR" in out and "bound report" in out and "domias" in out


def test_a_release_that_breaks_its_claim_fails_the_cli_loudly(digits, tmp_path, capsys):
    """A 'run' whose accounting claims ε = 0.5 but whose release is its training records:
    the check catches the mismatch (a bug of code or accounting) and exits 1."""
    out = tmp_path / "bad"
    assert main(["train", *FAST_MARGINALS, "--epsilon", "0.5", "--out", str(out)]) == 0
    np.savez_compressed(out / "synthetic.npz", x=digits.x_train, y=digits.y_train)
    assert main(["attack", str(out)]) == 1
    err = capsys.readouterr().err
    assert "BOUND VIOLATED" in err and "bug" in err
    assert _strict((out / "attack.json").read_text())["inside_bound"] is False


def test_a_stale_result_is_not_shown_for_new_files(dp_run, digits):
    attack_run.attack_run(dp_run)
    assert attack_run.saved(dp_run) is not None
    path = dp_run / "synthetic.npz"
    keep = path.read_bytes()
    np.savez_compressed(path, x=digits.x_test, y=digits.y_test)
    try:
        assert attack_run.saved(dp_run) is None
    finally:
        path.write_bytes(keep)


def test_attack_on_a_folder_that_is_no_run_is_one_line(tmp_path, capsys):
    assert main(["attack", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "finished run" in err[0]
    assert main(["attack", str(tmp_path), "--folds", "1"]) == 2


def test_an_unlabelled_tabular_release_is_read_and_attacked(tmp_path):
    data, draw = _mixed(400, seed=2)
    from engine.data.catalog import tabular_to_frame

    syn_x, _ = draw(400)
    tabular_to_frame(syn_x, data.columns).to_csv(tmp_path / "synthetic.csv", index=False)
    x, y = attack_run.read_synthetic(tmp_path, data)
    assert (y == -1).all() and np.allclose(x, syn_x)
    result = attack_run.measure(data, x, y, epsilon=1.0, delta=1e-5)
    assert result["game"]["members"] == 200
    assert all(0 <= a["auc"] <= 1 for a in result["attacks"].values())


def test_runs_page_measures_a_run_and_draws_it_inside_its_bound(dp_run, runs_root, monkeypatch):
    import shutil
    import threading
    import time

    from apptest import open_app
    from conftest import HANG_S
    from engine.core.config import RunConfig
    from engine.store.runs import RunStore

    monkeypatch.delenv("DPSYNTH_INSTRUCTOR", raising=False)
    monkeypatch.delenv("DPSYNTH_INSTRUCTOR_KEY", raising=False)
    rid = "attack-me"
    shutil.copytree(dp_run, runs_root / rid)
    (runs_root / rid / "attack.json").unlink(missing_ok=True)
    config = RunConfig.from_dict(json.loads((runs_root / rid / "config.json").read_text()))
    metrics = json.loads((runs_root / rid / "metrics.json").read_text())
    assert RunStore(runs_root).import_finished(rid, config, metrics=metrics, sweep="mine",
                                               message="finished")
    at = open_app()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    assert at.selectbox(key="runs_attack_pick").value == rid
    # The run belongs to no browser session: this one may not read its diagnostic.
    assert not [b for b in at.button if b.key == f"runs_attack_{rid}_go"]
    assert any("Only the session that started this run" in c.value for c in at.caption)
    monkeypatch.setenv("DPSYNTH_INSTRUCTOR", "1")  # an instructor may
    at.run()
    assert any("non-private diagnostic" in m.value for m in at.markdown)
    assert any("about" in c.value and "members" in c.value for c in at.caption)  # the preview
    # The page only queues the job; the worker measures it in a process of its own
    # (engine/jobs/attack_jobs.py): were the attacks run here, in the server, these say so.
    here = []
    monkeypatch.setattr(attack_run, "attack_run", lambda *a, **k: here.append(a))
    monkeypatch.setattr(attack_run, "measure", lambda *a, **k: here.append(a))
    threads = set(threading.enumerate())
    at.button(key=f"runs_attack_{rid}_go").click().run()
    assert not at.exception
    store = RunStore(runs_root)
    assert store.attack_job(rid).state in ("queued", "running", "done")
    assert not [t.name for t in set(threading.enumerate()) - threads if "attack" in t.name]

    def chart():
        return [c for c in at.get("plotly_chart") if c.key == f"runs_attack_{rid}_chart"]

    deadline = time.monotonic() + HANG_S  # only guards against a hang
    while not chart() and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()  # what the polling fragment does once a second
    assert not at.exception and not at.error
    charts = chart()
    assert charts and attack_run.saved(runs_root / rid) is not None
    assert store.attack_job(rid).state == "done" and here == []
    figure = json.loads(charts[0].proto.spec)
    names = [t.get("name", "") for t in figure["data"]]
    assert "DP bound: the run's own curve" in names and any(n.startswith("domias") for n in names)


def test_attack_jobs_are_owner_only(dp_run, runs_root):
    import shutil

    from engine.core.config import RunConfig
    from engine.core.errors import InputError
    from engine.jobs.manager import JobManager
    from engine.store.runs import RunStore

    rid = "someone-elses"
    shutil.copytree(dp_run, runs_root / rid)
    config = RunConfig.from_dict(json.loads((runs_root / rid / "config.json").read_text()))
    store = RunStore(runs_root)
    store.import_finished(rid, config, metrics={}, sweep="mine", message="finished")
    jm = JobManager(store)
    try:
        with pytest.raises(InputError, match="only its owner or an instructor can measure"):
            jm.measure_attacks(rid, session="a participant", instructor=False)
        assert store.attack_job(rid) is None
        assert jm.measure_attacks(rid, session="a participant", instructor=True).state == "queued"
        with pytest.raises(InputError, match="no run 'nope'"):
            jm.measure_attacks("nope")
    finally:
        jm.shutdown()


def test_the_worker_fails_an_attack_job_saying_why(runs_root):
    import time

    from conftest import HANG_S
    from engine.jobs.attack_jobs import AttackJobs
    from engine.store.runs import RunStore

    store = RunStore(runs_root)
    store.queue_attack("orphan")
    assert store.claim_attack() == "orphan"  # left running by a worker that died
    jobs = AttackJobs(store)  # a new worker: that job is failed, never measured
    assert store.attack_job("orphan").error.startswith("interrupted")
    store.queue_attack("gone")  # no such run folder: the measuring process says so
    deadline = time.monotonic() + HANG_S
    while store.attack_job("gone").active and time.monotonic() < deadline:
        jobs.tick()
        time.sleep(0.1)
    job = store.attack_job("gone")
    assert job.state == "failed" and "is not a finished run's folder" in job.error
    jobs.close("test over")


def test_bench_tiny_runs_every_method_and_detects_the_control(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from conftest import HANG_S

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "bench/attacks.py", "--tiny", "--epsilon", "1", "inf",
                           "--json", str(tmp_path / "r.json")], cwd=root, capture_output=True,
                          text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ")]
    assert table[0].startswith("| data | release | ε |")
    runs = {tuple(c.strip() for c in ln.split("|")[1:4]) for ln in table[2:]}
    for data, methods in (("digits", ("dpmerf", "datalens", "marginals")),
                          ("csv", ("dpmerf", "marginals"))):
        assert {(data, m, e) for m in methods for e in ("1", "inf")} <= runs
    controls = [ln for ln in table if "control" in ln]
    assert len(controls) == 2
    for ln in controls:  # the first attack (dcr) flags the memorising release
        assert float(ln.split("|")[4].split()[0]) >= 0.7
    assert "records vs" in proc.stdout  # the two timed attacks
    assert all(r["inside_bound"] for r in json.loads((tmp_path / "r.json").read_text()))


def test_runs_page_shows_a_point_outside_the_bound_as_a_red_error(dp_run, digits, runs_root,
                                                                  monkeypatch):
    import shutil

    from apptest import open_app
    from engine.core.config import RunConfig
    from engine.store.runs import RunStore

    monkeypatch.setenv("DPSYNTH_INSTRUCTOR", "1")
    rid = "leaky"
    shutil.copytree(dp_run, runs_root / rid)
    # The release is the training records while the accounting claims ε = 1.
    np.savez_compressed(runs_root / rid / "synthetic.npz", x=digits.x_train, y=digits.y_train)
    assert attack_run.attack_run(runs_root / rid)["inside_bound"] is False
    config = RunConfig.from_dict(json.loads((runs_root / rid / "config.json").read_text()))
    metrics = json.loads((runs_root / rid / "metrics.json").read_text())
    RunStore(runs_root).import_finished(rid, config, metrics=metrics, sweep="mine",
                                        message="finished")
    at = open_app()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    assert at.selectbox(key="runs_attack_pick").value == rid
    errors = [e.value for e in at.error]
    assert any("OUTSIDE the DP bound" in e and "bug" in e for e in errors)


def test_a_new_run_in_the_folder_removes_the_old_attack_result(tmp_path):
    out = tmp_path / "run"
    assert main(["train", *FAST_MARGINALS, "--epsilon", "1", "--out", str(out)]) == 0
    attack_run.attack_run(out)
    assert (out / "attack.json").is_file()
    # --overwrite clears it with the run's other artifacts: it described that run.
    assert main(["train", *FAST_MARGINALS, "--epsilon", "2", "--out", str(out),
                 "--overwrite"]) == 0
    assert not (out / "attack.json").exists()
