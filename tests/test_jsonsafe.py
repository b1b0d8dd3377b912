import json
import math

import numpy as np

from engine.jsonsafe import jsonable


def test_strict_json_for_run_files():
    obj = {"eps": math.inf, "nan": float("nan"), "flag": True, "n": np.int64(3),
           "x": np.float32(0.5), "list": (1, np.float64(-math.inf)), 2: None, "obj": object}
    out = jsonable(obj)
    text = json.dumps(out, allow_nan=False)  # would raise on a bare inf/nan
    assert out["eps"] == "inf" and out["nan"] == "nan" and out["flag"] is True
    assert out["n"] == 3 and out["x"] == 0.5 and out["list"] == [1, "-inf"]
    assert out["2"] is None and isinstance(out["obj"], str)
    assert json.loads(text)["eps"] == "inf"
