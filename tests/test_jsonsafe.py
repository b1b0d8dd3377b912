import json
import math

import numpy as np

from engine.core.jsonsafe import jsonable


def test_strict_json_for_run_files():
    obj = {"eps": math.inf, "nan": float("nan"), "flag": True, "n": np.int64(3),
           "x": np.float32(0.5), "list": (1, np.float64(-math.inf)), 2: None, "obj": object}
    out = jsonable(obj)
    text = json.dumps(out, allow_nan=False)  # would raise on a bare inf/nan
    assert out["eps"] == "inf" and out["nan"] == "nan" and out["flag"] is True
    assert out["n"] == 3 and out["x"] == 0.5 and out["list"] == [1, "-inf"]
    assert out["2"] is None and isinstance(out["obj"], str)
    assert json.loads(text)["eps"] == "inf"


def test_every_file_a_run_writes_is_strict_json_even_with_an_undefined_roc_auc(tmp_path):
    """A label with 200 values leaves classes out of the test split: ROC-AUC is undefined.
    It must be written as null with a reason, and no file may hold a bare NaN/Infinity."""
    import pandas as pd

    from engine.cli.commands import main
    from engine.core.jsonsafe import strict_loads

    rng = np.random.default_rng(0)
    n = 600
    pd.DataFrame({"x": rng.normal(size=n).round(3), "c": rng.choice(["r", "g"], n),
                  "y": rng.integers(0, 200, n)}).to_csv(tmp_path / "f.csv", index=False)
    out = tmp_path / "run"
    assert main(["train", "--method", "marginals", "--csv", str(tmp_path / "f.csv"),
                 "--label", "y", "--device", "cpu", "--out", str(out)]) == 0
    files = sorted(out.glob("*.json"))
    assert {p.name for p in files} >= {"config.json", "metrics.json"}
    for p in files:
        strict_loads(p.read_text())  # raises on NaN / Infinity tokens
    scores = strict_loads((out / "metrics.json").read_text())["accuracy"]
    assert scores["synthetic/logreg/roc_auc"] is None
    assert "undefined" in scores["synthetic/logreg/roc_auc_undefined"]


def test_strict_loads_refuses_the_tokens_python_writes_by_default():
    import pytest

    from engine.core.jsonsafe import dumps, strict_loads

    with pytest.raises(ValueError, match="non-standard JSON token 'NaN'"):
        strict_loads(json.dumps({"a": float("nan")}))
    assert strict_loads(dumps({"a": float("nan"), "b": np.array([1.0, np.inf])})) == {
        "a": "nan", "b": [1.0, "inf"]}
