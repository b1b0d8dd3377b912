"""Bad input, everywhere: the engine API, the CLI and the app answer each bad value with
one clear line (InputError / exit status 2 / st.error), never a traceback, and nothing is
recorded as a finished run.

Table-driven: ENGINE_CASES go through `runner.prepare` (what the CLI and the job runner
call first) and, for a sample, through the JobManager and the store; CLI_CASES run
`python -m engine train` in a subprocess; APP_CASES drive app.py with AppTest.
"""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.data import catalog as datasets
from engine.core.config import RunConfig, parse_epsilon
from engine.core.errors import InputError
from engine.jobs.manager import JobManager
from engine.runs.runner import prepare
from engine.store.runs import RunStore

from apptest import open_app
from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ bad files


def _csv(tmp: Path, name: str, text: str) -> str:
    p = tmp / name
    p.write_text(text)
    return str(p)


def _rows(n, f=lambda i: f"{i},{i % 7 * 1.5},{'a' if i % 2 else 'b'}"):
    return "x,z,label\n" + "\n".join(f(i) for i in range(n)) + "\n"


def _npz(tmp: Path, name: str, **arrays) -> str:
    p = tmp / name
    np.savez(p, **arrays)
    return str(p)


def make_files(tmp: Path) -> dict[str, str]:
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, (40, 8, 8), dtype=np.uint8)
    labels = np.arange(40) % 2
    ids = "\n".join(f"id{i},{i % 2}" for i in range(100_000))
    return {
        "csv_empty": _csv(tmp, "empty.csv", ""),
        "csv_header_only": _csv(tmp, "header.csv", "x,z,label\n"),
        "csv_ok": _csv(tmp, "ok.csv", _rows(60)),
        "csv_one_class": _csv(tmp, "one.csv", _rows(60, lambda i: f"{i},{i * 2},a")),
        "csv_missing": _csv(tmp, "missing.csv", _rows(60, lambda i: f"{'' if i == 5 else i},{i},{i % 2}")),
        "csv_text_num": _csv(tmp, "text.csv", _rows(60, lambda i: f"{'abc' if i == 9 else i},{i},{i % 2}")),
        "csv_inf": _csv(tmp, "inf.csv", _rows(60, lambda i: f"{'inf' if i == 3 else i},{i},{i % 2}")),
        "csv_few": _csv(tmp, "few.csv", _rows(5)),
        "csv_1e5_categories": _csv(tmp, "ids.csv", "user,label\n" + ids + "\n"),
        "csv_binary": str(tmp / "binary.csv"),
        "npz_2d": _npz(tmp, "flat.npz", x=imgs.reshape(40, 64), y=labels),
        "npz_channels_last": _npz(tmp, "hwc.npz", x=np.repeat(imgs[..., None], 3, -1), y=labels),
        "npz_y_mismatch": _npz(tmp, "ylen.npz", x=imgs, y=labels[:30]),
        "npz_int32": _npz(tmp, "int32.npz", x=imgs.astype(np.int32), y=labels),
        "npz_float_range": _npz(tmp, "range.npz", x=imgs.astype(np.float32), y=labels),
        "npz_nan": _npz(tmp, "nan.npz", x=np.full((40, 8, 8), np.nan, np.float32), y=labels),
        "npz_float_labels": _npz(tmp, "yfloat.npz", x=imgs, y=labels + 0.5),
        "npz_no_y": _npz(tmp, "noy.npz", x=imgs),
        "npz_garbage": _csv(tmp, "garbage.npz", "this is not a zip file"),
        "npz_one_class": _npz(tmp, "oneclass.npz", x=imgs, y=np.zeros(40, np.int64)),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    f = make_files(tmp)
    Path(f["csv_binary"]).write_bytes(b"\xff\xfe\x00\x81\x00bin\x00ary" * 50)
    return f


# ------------------------------------------------------------------ engine API

# (id, config kwargs or a callable(files) -> config kwargs, message regex)
ENGINE_CASES = [
    ("eps_zero", dict(epsilon=0.0), "epsilon"),
    ("eps_negative", dict(epsilon=-1.0), "epsilon"),
    ("eps_nan", dict(epsilon=math.nan), "epsilon"),
    ("eps_text", dict(epsilon="one"), "epsilon"),
    ("delta_one", dict(delta=1.0), "delta"),
    ("delta_above_one", dict(delta=1.5), "delta"),
    ("delta_nan", dict(delta=math.nan), "delta"),
    ("delta_zero", dict(delta=0.0), "delta"),
    ("delta_above_0.1", dict(delta=0.2), r"delta must be a number in \(0, 0.1\]"),
    ("eps_1e300", dict(epsilon=1e300), "epsilon must be between 0.001 and 1000"),
    ("eps_1e-300", dict(epsilon=1e-300), "epsilon must be between 0.001 and 1000"),
    ("csv_value_outside_public_list", lambda f: dict(dataset="csv", data_options={"path": f["csv_ok"], "label": "label", "categories": {"z": ["0"]}}), "outside its public list"),
    ("n_synthetic_zero", dict(n_synthetic=0), "n_synthetic"),
    ("unknown_method", dict(method="gan"), "unknown method"),
    ("unknown_dataset", dict(dataset="imagenet"), "unknown dataset"),
    ("unknown_param", dict(params={"n_feature": 10}), "unknown dpmerf parameter"),
    ("odd_features", dict(params={"n_features": 7}), "n_features"),
    ("negative_lr", dict(params={"lr": -0.1}), "lr"),
    ("top_k_above_dim", dict(method="datalens", params={"top_k": 65}), "top_k"),
    ("teachers_above_records", dict(method="datalens", params={"teachers": 5000}), "teachers"),
    ("datalens_on_tabular", dict(method="datalens", dataset="breast_cancer"), "image datasets only"),
    ("unknown_data_option", dict(data_options={"path": "x.csv"}), "unknown option"),
    ("csv_no_path", dict(dataset="csv"), "path"),
    ("csv_missing_file", dict(dataset="csv", data_options={"path": "/nonexistent/x.csv", "label": "y"}), "does not exist"),
    ("csv_empty", lambda f: dict(dataset="csv", data_options={"path": f["csv_empty"], "label": "label"}), "empty"),
    ("csv_header_only", lambda f: dict(dataset="csv", data_options={"path": f["csv_header_only"], "label": "label"}), "no records"),
    ("csv_no_label_option", lambda f: dict(dataset="csv", data_options={"path": f["csv_ok"]}), "label"),
    ("csv_label_not_a_column", lambda f: dict(dataset="csv", data_options={"path": f["csv_ok"], "label": "target"}), "not in"),
    ("csv_one_class", lambda f: dict(dataset="csv", data_options={"path": f["csv_one_class"], "label": "label"}), "one class"),
    ("csv_missing_values", lambda f: dict(dataset="csv", data_options={"path": f["csv_missing"], "label": "label"}), "missing values"),
    ("csv_text_in_numeric", lambda f: dict(dataset="csv", data_options={"path": f["csv_text_num"], "label": "label", "numeric": ["x"]}), "holds text"),
    ("csv_inf", lambda f: dict(dataset="csv", data_options={"path": f["csv_inf"], "label": "label"}), "inf"),
    ("csv_too_few_records", lambda f: dict(dataset="csv", data_options={"path": f["csv_few"], "label": "label"}), "at least"),
    ("csv_1e5_categories", lambda f: dict(dataset="csv", data_options={"path": f["csv_1e5_categories"], "label": "label"}), "categories"),
    ("csv_binary_garbage", lambda f: dict(dataset="csv", data_options={"path": f["csv_binary"], "label": "label"}), "CSV"),
    ("csv_bad_bounds", lambda f: dict(dataset="csv", data_options={"path": f["csv_ok"], "label": "label", "bounds": {"x": [5, 1]}}), "lo < hi"),
    ("npz_2d", lambda f: dict(dataset="npz", data_options={"path": f["npz_2d"]}), "shape"),
    ("npz_channels_last", lambda f: dict(dataset="npz", data_options={"path": f["npz_channels_last"]}), "channels"),
    ("npz_y_mismatch", lambda f: dict(dataset="npz", data_options={"path": f["npz_y_mismatch"]}), "one label per image"),
    ("npz_int32", lambda f: dict(dataset="npz", data_options={"path": f["npz_int32"]}), "dtype"),
    ("npz_float_range", lambda f: dict(dataset="npz", data_options={"path": f["npz_float_range"]}), r"\[0, 1\]"),
    ("npz_nan", lambda f: dict(dataset="npz", data_options={"path": f["npz_nan"]}), "NaN"),
    ("npz_float_labels", lambda f: dict(dataset="npz", data_options={"path": f["npz_float_labels"]}), "integer class labels"),
    ("npz_no_y", lambda f: dict(dataset="npz", data_options={"path": f["npz_no_y"]}), "lacks"),
    ("npz_garbage", lambda f: dict(dataset="npz", data_options={"path": f["npz_garbage"]}), "could not be read"),
    ("npz_one_class", lambda f: dict(dataset="npz", data_options={"path": f["npz_one_class"]}), "one class"),
]


def _config(case, files) -> dict:
    kw = case(files) if callable(case) else dict(case)
    return {"device": "cpu", **kw}


@pytest.mark.parametrize("name,case,match", ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_engine_rejects_with_one_clear_line(name, case, match, files):
    with pytest.raises(InputError, match=match) as err:
        prepare(RunConfig(**_config(case, files)))
    msg = str(err.value)
    assert "\n" not in msg.strip() and 10 < len(msg) < 600, msg
    assert "Traceback" not in msg


def test_enough_bad_inputs_are_tried():
    assert len(ENGINE_CASES) + len(CLI_CASES) + len(APP_CASES) >= 25


def test_parse_epsilon_rejects_text_nan_and_non_positive():
    for bad in ("abc", "", "nan", "-1", "0", None, [1], "1e300", "1e-300", "1e400", 10**400):
        with pytest.raises(InputError, match="epsilon"):
            parse_epsilon(bad)
    assert math.isinf(parse_epsilon("inf"))


def test_text_in_an_unforced_numeric_column_becomes_categorical(files):
    """Not an error by design: a column with text in its training part is read as
    categorical (stated in the loader's rules); forcing it numeric gives the clear error
    above. Text only in the test part leaves the column numeric and drops that test row."""
    from engine.data.dataset import split_indices

    train, _ = split_indices(60, 0)
    d = datasets.load("csv", options={"path": files["csv_text_num"], "label": "label"})
    assert d.columns[0].kind == ("cat" if 9 in train else "num")
    other_seed = next(s for s in range(1, 50) if (9 in split_indices(60, s)[0]) != (9 in train))
    d2 = datasets.load("csv", seed=other_seed,
                       options={"path": files["csv_text_num"], "label": "label"})
    assert {d.columns[0].kind, d2.columns[0].kind} == {"cat", "num"}


def test_bad_runs_through_the_job_manager_are_never_finished(files, tmp_path):
    """The job runner calls prepare inside the worker: a bad dataset ends FAILED with the
    loader's message and no artifacts but config.json."""
    jm = JobManager(RunStore(tmp_path), full_eval=False)
    try:
        picked = [c for c in ENGINE_CASES if callable(c[1])][:6] + \
                 [c for c in ENGINE_CASES if c[0] in ("top_k_above_dim", "unknown_param")]
        ids = {}
        for name, case, match in picked:
            ids[name] = (jm.submit(RunConfig(**_config(case, files))), match)
        for name, (rid, match) in ids.items():
            status = jm.wait(rid, timeout=HANG_S)
            row = jm.store.get_run(rid)
            assert status.value == "failed" and row.status == "failed", name
            import re

            assert re.search(match, row.message) and "Traceback" not in row.message, row
            assert set(jm.store.artifacts(rid)) <= {"config.json"}, name
        # Invalid configs never even reach the store.
        with pytest.raises(InputError, match=r"epsilon must be a number > 0"):
            jm.submit(RunConfig(epsilon=-1.0))
        assert len(jm.store.list_runs()) == len(ids)
        assert not jm.store.list_runs(status="finished")
    finally:
        jm.shutdown()


# ------------------------------------------------------------------ CLI

# Each case pays an interpreter + torch start-up (~3 s on two cores): the CLI's own
# paths only; the values themselves are covered by ENGINE_CASES.
CLI_CASES = [
    ("eps_nan", ["--epsilon", "nan"]),
    ("delta_one", ["--delta", "1"]),
    ("top_k_above_dim", ["--method", "datalens", "--top-k", "65"]),
    ("teachers_above_records", ["--method", "datalens", "--teachers", "5000"]),
    ("csv_empty", ["--csv", "{csv_empty}", "--label", "label"]),
    ("dangling_flag", ["--n-features"]),
    ("eps_1e300", ["--epsilon", "1e300"]),
    ("eps_1e-300", ["--epsilon", "1e-300"]),
    ("delta_half", ["--delta", "0.5"]),
]


def _cli(args: list[str], out: Path) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.Popen([sys.executable, "-m", "engine", "train", "--out", str(out),
                             "--device", "cpu", "--no-eval", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_cli_bad_inputs_exit_2_with_one_line(files, tmp_path):
    """All cases at once (two at a time: two cores) to keep the interpreter start-ups cheap."""
    results = {}
    pending = list(CLI_CASES)
    running: list = []
    while pending or running:
        while pending and len(running) < 2:
            name, args = pending.pop(0)
            out = tmp_path / name
            running.append((name, out, _cli([a.format(**files) for a in args], out)))
        name, out, proc = running.pop(0)
        stdout, stderr = proc.communicate(timeout=HANG_S)  # waits for the exit
        results[name] = (proc.returncode, stdout, stderr, out)
    for name, (rc, stdout, stderr, out) in results.items():
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        assert rc == 2, (name, rc, stderr)
        assert len(lines) == 1 and lines[0].startswith("error: "), (name, stderr)
        assert "Traceback" not in stderr + stdout, name
        assert not (out / "metrics.json").exists() and not (out / "synthetic.npz").exists(), name


# ------------------------------------------------------------------ app


def _bytes_csv(text: str) -> bytes:
    return text.encode()


def _bytes_npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


_IMGS = np.random.default_rng(1).integers(0, 256, (40, 8, 8), dtype=np.uint8)

# (id, dataset, uploaded file name, content, expected error text)
APP_CASES = [
    ("csv_empty", "csv", "empty.csv", b"", "could not be read"),
    ("csv_header_only", "csv", "h.csv", _bytes_csv("a,b,label\n"), "no records"),
    ("csv_missing", "csv", "m.csv", _bytes_csv(_rows(40, lambda i: f"{'' if i == 2 else i},{i},{i % 2}")), "missing values"),
    ("csv_few", "csv", "few.csv", _bytes_csv(_rows(5)), "at least"),
    ("csv_binary", "csv", "bin.csv", b"\xff\xfe\x00\x81" * 100, "could not be read"),
    ("npz_channels_last", "npz", "hwc.npz", _bytes_npz(x=np.repeat(_IMGS[..., None], 3, -1), y=np.arange(40) % 2), "channels"),
    ("npz_int32", "npz", "i.npz", _bytes_npz(x=_IMGS.astype(np.int32), y=np.arange(40) % 2), "dtype"),
    ("npz_garbage", "npz", "g.npz", b"not a zip at all", "could not be read"),
]


def test_app_bad_uploads_show_one_error_and_cannot_train(runs_root):
    at_by_kind = {}
    for name, kind, fname, content, expect in APP_CASES:
        at = at_by_kind.get(kind) or open_app({"dataset": kind})
        at_by_kind[kind] = at
        at.file_uploader[0].set_value((fname, content, "application/octet-stream")).run()
        assert not at.exception, (name, at.exception)
        errors = [e.value for e in at.error]
        assert any(expect in e for e in errors), (name, errors)
        assert all("Traceback" not in e for e in errors)
        assert at.button(key="pg_train").disabled, name
    assert not [r for r in RunStore(runs_root, recover=False).list_runs()
                if r.sweep != "gallery"]  # the precomputed gallery is loaded at start-up


def test_app_bad_url_values_fall_back_without_a_traceback(runs_root):
    for query in ({"eps": "-1"}, {"eps": "abc"}, {"eps": "nan"}, {"delta": "2"},
                  {"method": "datalens", "datalens_top_k": "999"},
                  {"method": "datalens", "datalens_teachers": "99999"}):
        at = open_app(query)
        assert not at.exception, (query, at.exception)
        eps = at.select_slider(key="eps").value
        assert eps == "inf" or float(eps) > 0
        assert 0 < float(at.select_slider(key="delta").value) < 1
        if "datalens_top_k" in query:
            assert at.number_input(key="datalens_top_k").value <= 64
        if "datalens_teachers" in query:
            assert at.number_input(key="datalens_teachers").value <= 1437


def test_upload_limit_is_configured():
    """The app has no size check of its own: Streamlit's server enforces maxUploadSize
    (MB) before the page sees the file, which AppTest cannot exercise. Pin the setting."""
    import tomllib

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert 0 < cfg["server"]["maxUploadSize"] <= 200
