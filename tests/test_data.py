"""Dataset loaders: shapes, ranges, splits, public domains, and every bad-input message."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.data import catalog as data
from engine.data.catalog import Column, frame_to_tabular, list_datasets, load, tabular_to_frame
from engine.data.dataset import split_indices
from engine.core.errors import InputError

DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")
HAVE_FASHION = all((DEBIAN_FASHION / f"{s}.gz").is_file() for s in data.IDX_FILES)


# ----------------------------------------------------------------------------- helpers
def write_idx(folder: Path, n_train=12, n_test=5, h=6, w=7, gz=True, seed=0) -> dict:
    """Tiny idx files in the official format, so loaders are tested without real data."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, h, w), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, h, w), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for stem, a in arrays.items():
        header = (0x0800 + a.ndim).to_bytes(4, "big") + b"".join(
            int(d).to_bytes(4, "big") for d in a.shape)
        raw = header + a.tobytes()
        if gz:
            (folder / f"{stem}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / stem).write_bytes(raw)
    return arrays


def no_idx_anywhere(monkeypatch, tmp_path):
    """Point every place the idx loaders look at empty folders."""
    monkeypatch.setenv("DPSYNTH_DATA_DIR", str(tmp_path / "env"))
    for name, (_, subdirs, tv, host) in list(data._IDX.items()):
        monkeypatch.setitem(data._IDX, name, ([str(tmp_path / "sys")], subdirs, tv, host))


def tabular_frame(n=60, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.uniform(18, 90, n).round(2),  # many distinct numbers -> num
        "rooms": rng.integers(1, 5, n),  # 4 distinct integers -> cat
        "city": rng.choice(["Oslo", "Bergen", "Alta"], n),  # text -> cat
        "y": np.array(["no", "yes"])[np.arange(n) % 2],
    })


def write_csv(tmp_path, df, name="d.csv") -> str:
    p = tmp_path / name
    df.to_csv(p, index=False)
    return str(p)


def write_npz(tmp_path, name="d.npz", **arrays) -> str:
    p = tmp_path / name
    np.savez(p, **arrays)
    return str(p)


# ----------------------------------------------------------------------------- bundled
def test_digits_shapes_ranges_and_disjoint_split():
    from sklearn.datasets import load_digits

    d = load("digits", seed=3)
    assert d.kind == "image" and d.image_shape == (1, 8, 8) and d.n_classes == 10
    assert d.x_train.dtype == np.float32 and d.x_train.shape[1:] == (1, 8, 8)
    assert 0 <= d.x_train.min() and d.x_train.max() <= 1 and d.y_train.dtype == np.int64
    assert len(d.y_train) + len(d.y_test) == 1797 and len(d.y_test) == 360
    # The two halves partition the data: together they are exactly the original records.
    full = load_digits()
    ours = np.r_[d.x_train, d.x_test].reshape(1797, -1) * 16
    key = lambda a, y: sorted(map(tuple, np.c_[a, y].round().astype(int)))  # noqa: E731
    assert key(ours, np.r_[d.y_train, d.y_test]) == key(full.data, full.target)
    assert np.array_equal(load("digits", seed=3).y_train, d.y_train)
    assert not np.array_equal(load("digits", seed=4).y_train, d.y_train)


def test_breast_cancer_bounds_are_not_taken_from_its_records():
    """sklearn's DESCR Min/Max table is the records' own range (checked here on two rows),
    so no column gets public bounds: the method releases them privately (issue 28)."""
    from sklearn.datasets import load_breast_cancer

    d = load("breast_cancer", seed=0)
    assert d.kind == "tabular" and len(d.columns) == 30 and d.class_names == ["malignant", "benign"]
    assert d.x_train.dtype == np.float64 and d.x_train.shape == (455, 30) and d.x_test.shape == (114, 30)
    assert all(c.kind == "num" and c.bounds is None and c.bounds_source == "" for c in d.columns)
    assert "released privately" in d.notes["bounds"]
    bunch = load_breast_cancer()
    names = list(bunch.feature_names)
    for row, name in (("area (mean):", "mean area"), ("radius (worst):", "worst radius")):
        line = next(x for x in bunch.DESCR.splitlines() if x.strip().startswith(row))
        lo, hi = map(float, line.split()[-2:])
        col = bunch.data[:, names.index(name)]
        assert (lo, hi) == pytest.approx((col.min(), col.max()), rel=1e-3)


# ----------------------------------------------------------------------------- idx sets
@pytest.mark.skipif(not HAVE_FASHION, reason="Debian package dataset-fashion-mnist not installed")
def test_fashion_mnist_from_debian_package(monkeypatch):
    monkeypatch.delenv("DPSYNTH_DATA_DIR", raising=False)
    d = load("fashion_mnist")
    assert d.x_train.shape == (60000, 1, 28, 28) and d.x_test.shape == (10000, 1, 28, 28)
    assert d.x_train.dtype == np.float32 and d.x_train.min() == 0 and d.x_train.max() == 1
    assert set(np.unique(d.y_train)) == set(range(10)) and d.y_test.dtype == np.int64
    assert d.class_names[0] == "T-shirt/top" and d.class_names[9] == "Ankle boot"
    assert d.notes["source"] == str(DEBIAN_FASHION)
    hits = data._parse_idx_set.cache_info().hits
    again = load("fashion_mnist")
    assert data._parse_idx_set.cache_info().hits == hits + 1  # parsed once per process
    again.x_train[0] = 0  # callers get their own float arrays; the cache is untouched
    assert load("fashion_mnist").x_train[0].max() > 0


def test_idx_root_layouts(tmp_path, monkeypatch):
    no_idx_anywhere(monkeypatch, tmp_path)
    arrays = write_idx(tmp_path / "tv" / "FashionMNIST" / "raw", gz=False)
    d = load("fashion_mnist", options={"root": str(tmp_path / "tv"), "download": False})
    assert d.x_train.shape == (12, 1, 6, 7) and d.image_shape == (1, 6, 7)
    np.testing.assert_allclose(d.x_test[:, 0] * 255, arrays["t10k-images-idx3-ubyte"], atol=1e-3)
    assert np.array_equal(d.y_train, arrays["train-labels-idx1-ubyte"])
    write_idx(tmp_path / "env" / "mnist", n_train=9, seed=1)  # $DPSYNTH_DATA_DIR/mnist
    m = load("mnist", options={"download": False})
    assert m.x_train.shape == (9, 1, 6, 7) and m.class_names == [str(i) for i in range(10)]


def test_idx_missing_names_every_place(tmp_path, monkeypatch):
    no_idx_anywhere(monkeypatch, tmp_path)
    with pytest.raises(InputError) as err:
        load("mnist", options={"root": str(tmp_path / "r"), "download": False})
    msg = str(err.value)
    for place in ("r/MNIST/raw", "r/mnist", "env/mnist", "sys", "download=False"):
        assert place in msg
    monkeypatch.setattr(data, "_network_reachable", lambda host, port: False)
    with pytest.raises(InputError, match="no network to fashion-mnist"):
        load("fashion_mnist")
    entry = {e["name"]: e for e in list_datasets()}["fashion_mnist"]
    assert entry["available"] is False and "DPSYNTH_DATA_DIR" in entry["where"]


def test_idx_download_only_when_missing_and_online(tmp_path, monkeypatch):
    """The torchvision download path, with a stand-in torchvision (no network in tests)."""
    import sys
    import types

    calls = []

    class FakeFashion:
        def __init__(self, root, train, download):
            calls.append((root, train, download))
            write_idx(Path(root) / "FashionMNIST" / "raw", n_train=8)

    class Broken:
        def __init__(self, root, train, download):
            raise RuntimeError("Error downloading train-images-idx3-ubyte.gz")

    fake = types.SimpleNamespace(datasets=types.SimpleNamespace(FashionMNIST=FakeFashion,
                                                                MNIST=Broken))
    monkeypatch.setitem(sys.modules, "torchvision", fake)
    no_idx_anywhere(monkeypatch, tmp_path)
    monkeypatch.setattr(data, "_network_reachable", lambda host, port: True)
    d = load("fashion_mnist", options={"root": str(tmp_path / "dl")})
    assert d.x_train.shape == (8, 1, 6, 7)
    assert calls == [(str(tmp_path / "dl"), True, True), (str(tmp_path / "dl"), False, True)]
    load("fashion_mnist", options={"root": str(tmp_path / "dl")})
    assert len(calls) == 2  # found locally the second time: no new download
    with pytest.raises(InputError, match="torchvision download to .* failed: Error downloading"):
        load("mnist")


def test_network_probe_is_false_for_a_closed_port():
    assert data._network_reachable("127.0.0.1", 9, timeout=1.0) is False


def test_idx_corrupt_file(tmp_path, monkeypatch):
    no_idx_anywhere(monkeypatch, tmp_path)
    write_idx(tmp_path / "r", gz=False)
    (tmp_path / "r" / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x03junk")
    with pytest.raises(InputError, match="not an idx file"):
        load("mnist", options={"root": str(tmp_path / "r")})


# ----------------------------------------------------------------------------- CSV
def test_csv_detection_codes_and_notes(tmp_path):
    df = tabular_frame()
    d = load("csv", seed=1, options={"path": write_csv(tmp_path, df), "label": "y"})
    kinds = {c.name: c.kind for c in d.columns}
    assert kinds == {"age": "num", "rooms": "cat", "city": "cat"}
    cols = {c.name: c for c in d.columns}
    assert cols["city"].categories == ["Alta", "Bergen", "Oslo"]
    assert cols["rooms"].categories == ["1", "2", "3", "4"] and cols["age"].bounds is None
    assert d.class_names == ["no", "yes"] and set(d.y_train) == {0, 1}
    assert len(d.y_train) == 48 and len(d.y_test) == 12
    assert "NOT private" in d.notes["category_domain"] and "test_rows_dropped" not in d.notes
    back = tabular_to_frame(np.r_[d.x_train, d.x_test], d.columns,
                            y=np.r_[d.y_train, d.y_test], class_names=d.class_names, label="y")
    rows = lambda f: sorted(map(tuple, f.astype(str).to_numpy()))  # noqa: E731
    assert rows(back[df.columns]) == rows(df)
    assert np.array_equal(frame_to_tabular(back, d.columns), np.r_[d.x_train, d.x_test])


def test_csv_overrides_and_user_bounds(tmp_path):
    path = write_csv(tmp_path, tabular_frame())
    d = load("csv", options={"path": path, "label": "y", "categorical": "age",
                             "numeric": ["rooms"], "bounds": {"rooms": [0, 10]}})
    cols = {c.name: c for c in d.columns}
    # age has 60 distinct values, 48 of them in the training part: only those are its domain
    assert cols["age"].kind == "cat" and len(cols["age"].categories) == 48
    assert cols["rooms"].kind == "num" and cols["rooms"].bounds == (0.0, 10.0)
    assert cols["rooms"].bounds_source == "user"


def bad_csv_cases():
    base = tabular_frame()
    many = base.copy()
    many["id"] = [f"id{i}" for i in range(len(many))]
    many = pd.concat([many] * 22, ignore_index=True)  # 1,056 distinct ids in training
    many["id"] = [f"id{i}" for i in range(len(many))]
    holes = base.copy().astype({"age": float})
    holes.loc[3, "age"] = np.nan
    holes.loc[5, "city"] = None
    text = base.copy().astype({"rooms": object})
    text.loc[2, "rooms"] = "four"
    return [
        (base, {"label": "target"}, r"label column 'target' is not in .*columns: \['age', 'rooms'"),
        (base.assign(y="yes"), {"label": "y"}, "one class only"),
        (holes, {"label": "y"}, r"columns \['age', 'city'\] have missing values; drop or impute"),
        (text, {"label": "y", "numeric": ["rooms"]}, "'rooms' is forced numeric but holds text such as 'four'"),
        (many, {"label": "y"}, "categorical column 'id' has 1056 categories"),
        (base.head(19), {"label": "y"}, "19 records; at least 20"),
        (base, {}, "needs option label="),
        (base, {"label": "y", "categorical": ["nope"]}, r"'categorical' names \['nope'\]"),
        (base, {"label": "y", "categorical": ["age"], "numeric": ["age"]}, "both categorical and numeric"),
        (base, {"label": "y", "bounds": {"city": [0, 1]}}, "'city', which is categorical"),
        (base, {"label": "y", "bounds": {"age": [5, 1]}}, "lo < hi"),
        (base[["y"]], {"label": "y"}, "only the label column"),
    ]


@pytest.mark.parametrize("df,opts,message", bad_csv_cases())
def test_csv_bad_inputs(tmp_path, df, opts, message):
    with pytest.raises(InputError, match=message):
        load("csv", options={"path": write_csv(tmp_path, df), **opts})


def test_csv_bad_files(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load("csv", options={"path": str(tmp_path / "none.csv"), "label": "y"})
    with pytest.raises(InputError, match="needs option path="):
        load("csv", options={"label": "y"})
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match="is empty"):
        load("csv", options={"path": str(tmp_path / "empty.csv"), "label": "y"})
    (tmp_path / "head.csv").write_text("a,y\n")
    with pytest.raises(InputError, match="header but no records"):
        load("csv", options={"path": str(tmp_path / "head.csv"), "label": "y"})
    (tmp_path / "bin.csv").write_bytes(b"a,y\n\xff\xfe\x00\x81,\x9c\n" * 30)
    with pytest.raises(InputError, match="could not be read as CSV"):
        load("csv", options={"path": str(tmp_path / "bin.csv"), "label": "y"})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(20, 40),
    n_levels=st.integers(1, 14),
    seed=st.integers(0, 2**16),
    data_seed=st.integers(0, 2**16),
)
def test_csv_roundtrip_property(n, n_levels, seed, data_seed):
    """Any small valid CSV loads, detects kinds by the >10-distinct rule on its training
    part, and that part round-trips."""
    rng = np.random.default_rng(data_seed)
    df = pd.DataFrame({
        "ints": rng.permutation(np.arange(n) % n_levels),  # exactly n_levels distinct values
        "x": rng.normal(size=n).round(3),
        "word": rng.choice(["a", "b b", "c,d"], n),
        "cls": rng.permutation(np.arange(n) % 3),
    })
    with tempfile.TemporaryDirectory() as tmp:
        d = load("csv", seed=seed, options={"path": write_csv(Path(tmp), df), "label": "cls",
                                             "numeric": ["x"]})
    kinds = {c.name: c.kind for c in d.columns}
    train = df.iloc[split_indices(n, seed)[0]]
    many = train["ints"].nunique() > 10  # the rule reads the training part only
    assert kinds["ints"] == ("num" if many else "cat") and kinds["word"] == "cat"
    assert len(d.y_train) == n - int(np.ceil(0.2 * n)) and len(d.y_test) <= int(np.ceil(0.2 * n))
    assert d.class_names == sorted(set(train["cls"].astype(str)))
    back = tabular_to_frame(d.x_train, d.columns)  # the training part round-trips exactly
    if many:
        np.testing.assert_array_equal(np.sort(back["ints"]), np.sort(train["ints"]))
    else:
        assert sorted(back["ints"]) == sorted(train["ints"].astype(str))
    assert sorted(back["word"]) == sorted(train["word"])
    np.testing.assert_allclose(np.sort(back["x"]), np.sort(train["x"]))


def test_tabular_to_frame_clips_synthetic_codes():
    cols = [Column("c", "cat", categories=["a", "b", "c"]), Column("v", "num")]
    f = tabular_to_frame(np.array([[-0.7, 1.5], [1.4, 2.0], [9.0, 3.0]]), cols)
    assert list(f["c"]) == ["a", "b", "c"] and list(f["v"]) == [1.5, 2.0, 3.0]
    with pytest.raises(InputError, match="outside its category domain"):
        frame_to_tabular(pd.DataFrame({"c": ["z"], "v": [1.0]}), cols)


# ----------------------------------------------------------------------------- NPZ
def test_npz_uint8_and_float_and_label_remap(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (30, 5, 4), dtype=np.uint8)
    y = np.array([3, 7, 9] * 10)
    d = load("npz", seed=2, options={"path": write_npz(tmp_path, x=x, y=y)})
    assert d.x_train.shape == (24, 1, 5, 4) and d.x_train.dtype == np.float32
    assert d.image_shape == (1, 5, 4) and d.class_names == ["3", "7", "9"]
    assert set(np.r_[d.y_train, d.y_test]) == {0, 1, 2} and d.y_train.dtype == np.int64
    assert np.isclose(np.r_[d.x_train, d.x_test].max(), x.max() / 255)
    xf = rng.uniform(0, 1, (25, 3, 4, 4)).astype(np.float64)
    d = load("npz", options={"path": write_npz(tmp_path, "f.npz", x=xf, y=np.arange(25) % 2)})
    assert d.image_shape == (3, 4, 4) and d.x_test.dtype == np.float32 and d.x_test.max() <= 1


def bad_npz_cases():
    img = np.zeros((30, 4, 4), np.uint8)
    lab = np.arange(30) % 2
    nan = np.zeros((30, 4, 4))
    nan[0, 0, 0] = np.nan
    return [
        ({"images": img, "y": lab}, r"lacks array\(s\) \['x'\]; it holds \['images', 'y'\]"),
        ({"x": np.zeros((30, 16), np.uint8), "y": lab}, r"shape \(n, h, w\) or \(n, c, h, w\)"),
        ({"x": img, "y": lab[:29]}, "x has 30 images, y has shape"),
        ({"x": img, "y": lab + 0.5}, "integer class labels"),
        ({"x": nan, "y": lab}, "NaN or inf"),
        ({"x": np.zeros((30, 4, 4, 3), np.uint8), "y": lab}, "1 or 3 channels.*channels-last"),
        ({"x": np.zeros((30, 2, 4, 4), np.uint8), "y": lab}, "1 or 3 channels"),
        ({"x": img[:19], "y": lab[:19]}, "19 images; at least 20"),
        ({"x": np.full((30, 4, 4), 2.0), "y": lab}, r"in \[0, 1\]; got \[2, 2\]"),
        ({"x": img.astype(np.int32), "y": lab}, "dtype int32; use uint8"),
        ({"x": img, "y": np.zeros(30, int)}, "one class only"),
    ]


@pytest.mark.parametrize("arrays,message", bad_npz_cases())
def test_npz_bad_inputs(tmp_path, arrays, message):
    with pytest.raises(InputError, match=message):
        load("npz", options={"path": write_npz(tmp_path, **arrays)})


def test_npz_bad_files(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load("npz", options={"path": str(tmp_path / "none.npz")})
    (tmp_path / "t.npz").write_text("not a zip")
    with pytest.raises(InputError, match="could not be read as .npz"):
        load("npz", options={"path": str(tmp_path / "t.npz")})
    with pytest.raises(InputError, match="needs option path="):
        load("npz")


# ----------------------------------------------------------------------------- registry
def test_load_rejects_unknown_names_and_options():
    with pytest.raises(InputError, match="unknown dataset 'cifar'; choose one of digits"):
        load("cifar")
    with pytest.raises(InputError, match=r"unknown option\(s\) \['lable'\].*valid options: \['path', 'label'"):
        load("csv", options={"lable": "y"})
    with pytest.raises(InputError, match="valid options: none"):
        load("digits", options={"root": "x"})


def test_list_datasets_fields():
    entries = list_datasets()
    assert [e["name"] for e in entries] == list(data.DATASETS)
    for e in entries:
        assert set(e) == {"name", "kind", "description", "available", "where", "needs_file"}
        assert e["kind"] in ("image", "tabular") and isinstance(e["available"], bool)
        assert e["needs_file"] == (e["name"] in ("csv", "npz")) and e["where"]
    by = {e["name"]: e for e in entries}
    assert by["digits"]["available"] and by["breast_cancer"]["available"]
    if HAVE_FASHION and "DPSYNTH_DATA_DIR" not in __import__("os").environ:
        assert by["fashion_mnist"]["available"] and by["fashion_mnist"]["where"] == str(DEBIAN_FASHION)
