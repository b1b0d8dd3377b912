"""Column kinds (engine/data/column_kinds.py): integer and zero-inflated columns come back as
such from every tabular method, values stay inside public bounds, kinds read from the
data are disclosed, and a bad schema is one clear line."""

import json

import numpy as np
import pandas as pd
import pytest

from engine.cli.commands import main
from engine.data.column_kinds import apply_kinds, parse_schema
from engine.data.dataset import Column
from engine.core.errors import InputError


def _table(path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    gain = np.where(rng.random(n) < 0.9, 0.0, np.round(rng.lognormal(7, 1, n), 2))
    pd.DataFrame({"age": np.clip(rng.normal(40 + 5 * label, 12, n), 17, 90).round().astype(int),
                  "gain": gain, "hours": rng.normal(40, 8, n).round(1),
                  "colour": rng.choice(["r", "g", "b"], n), "y": label}).to_csv(path, index=False)


SCHEMA = {"age": {"kind": "integer", "bounds": [17, 90]},
          "gain": {"kind": ["zero-inflated", "non-negative"], "mass": 0},
          "hours": {"kind": "bounded", "bounds": [1, 99]}}


# 4,000 rows put about 400 off the point mass: enough for the private bounds to see where
# the continuous part lies at ε = 3 (with 400 rows its 40 records stay under the noise
# floor and the continuous part comes back at the mass). DP-MERF after two epochs draws
# few records off the mass (measured: 0.9-1.8 % of its synthetic gains), so it samples
# 20,000 rows to hold a hundred or more of them.
@pytest.mark.parametrize("method,knobs", [("dpmerf", ["--param", "epochs=2",
                                                      "--param", "n_features=100",
                                                      "--n-synthetic", "20000"]),
                                          ("marginals", []),
                                          ("aim", ["--param", "iters=5",
                                                   "--param", "final_iters=5",
                                                   "--param", "rounds=3"])])
def test_integer_mass_and_bounds_come_back_from_every_tabular_method(tmp_path, method, knobs):
    _table(tmp_path / "t.csv", n=4000)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    out = tmp_path / method
    assert main(["train", "--method", method, "--csv", str(tmp_path / "t.csv"), "--label", "y",
                 "--data-option", f"schema={tmp_path / 'schema.json'}", "--epsilon", "3",
                 "--no-eval", "--device", "cpu", "--out", str(out), *knobs]) == 0
    syn = pd.read_csv(out / "synthetic.csv")
    assert list(syn.columns) == ["age", "gain", "hours", "colour", "y"]
    age = syn["age"].to_numpy(float)
    assert np.all(age == np.round(age)) and age.min() >= 17 and age.max() <= 90
    assert syn["hours"].between(1, 99).all()
    gain = syn["gain"].to_numpy(float)
    assert gain.min() >= 0
    # the point mass is reproduced as the exact value: ~90 % of real rows sit at 0 ...
    assert 0.6 < np.mean(gain == 0.0) < 1.0
    # ... and the continuous part keeps its scale (real: lognormal, median ≈ 1,100), not
    # the ±2^-10 around the mass that the bounds gave when the mass was binned with it
    assert gain.max() > 100
    metrics = json.loads((out / "metrics.json").read_text())
    kinds_note = metrics["disclosures"]["not private"]["column_kinds"]
    assert "read from the training records" in kinds_note and "age" not in kinds_note.split(
        "(NOT private")[-1]


def test_kinds_not_given_are_read_from_the_data_and_disclosed(tmp_path):
    from engine.data.user_csv import load_csv

    _table(tmp_path / "t.csv")
    data = load_csv(path=str(tmp_path / "t.csv"), label="y")
    cols = {c.name: c for c in data.columns}
    assert cols["age"].integer and cols["age"].nonneg and cols["age"].mass is None
    assert cols["gain"].mass == 0.0 and cols["gain"].nonneg and not cols["gain"].integer
    assert not cols["hours"].integer
    note = data.notes["column_kinds"]
    assert "NOT private" in note and "gain: non-negative, point mass at 0" in note


def test_apply_kinds_rounds_clips_and_keeps_other_columns():
    cols = [Column("a", "num", bounds=(0.0, 10.0), integer=True),
            Column("b", "num", nonneg=True), Column("c", "cat", categories=["x"])]
    frame = pd.DataFrame({"a": [-3.2, 4.6, 12.0], "b": [-1.0, 2.5, 0.0], "c": ["x"] * 3})
    out = apply_kinds(frame, cols)
    assert out["a"].tolist() == [0.0, 5.0, 10.0] and out["b"].tolist() == [0.0, 2.5, 0.0]
    assert out["c"].tolist() == ["x"] * 3 and frame["a"].iloc[0] == -3.2  # a copy


@pytest.mark.parametrize("schema,words", [
    ('{"age": {"kind": "integr"}}', "unknown kinds"),
    ('{"age": {"kind": "bounded"}}', "gives no bounds"),
    ('{"age": {"bounds": [5, 1]}}', "lo < hi"),
    ('{"age": [1, 2]}', "must be an object"),
    ('{"age": ', "not valid JSON"),
    ("/no/such/schema.json", "does not exist"),
])
def test_a_bad_schema_is_one_clear_line(schema, words):
    with pytest.raises(InputError, match=words):
        parse_schema(schema)


def test_schema_naming_a_missing_column_is_refused_by_the_cli(tmp_path, capsys):
    _table(tmp_path / "t.csv")
    code = main(["train", "--method", "marginals", "--csv", str(tmp_path / "t.csv"), "--label",
                 "y", "--data-option", 'schema={"nope": "integer"}', "--no-eval",
                 "--out", str(tmp_path / "o")])
    assert code == 2 and "nope" in capsys.readouterr().err


def test_private_bounds_are_tight_when_n_is_large_against_the_noise():
    """The fine grid (4 cells per doubling) for many records: an age column 17–90 gets
    bounds within one grid cell (+ the pad) of its range, not the ladder's [16, 128].
    Noise alone clears the threshold somewhere with probability 1 % (dp_bounds.FALSE_CELL)
    and then stretches the bounds (measured: 97 of 10,000 draws not tight), so 30 draws
    are made and 24 must be tight: 7 or more miss with probability C(30,7)·p^7 ≈ 2e-8 at
    p = .0097 (3e-6 at p = .02). Ten draws needing 8 failed about once in 10,000 runs."""
    from engine.privacy import dp_bounds

    ages = np.random.default_rng(0).integers(17, 91, 30_000).astype(float)[:, None]
    assert dp_bounds.steps_per_octave(len(ages), 10.0) == 4
    draws = [dp_bounds.release_bounds(ages, noise_std=10.0)[0] for _ in range(30)]
    assert sum(12 <= lo <= 17 and 90 <= hi <= 110 for lo, hi in draws) >= 24
    # few records against the noise: the octave ladder, merged cells when none clears
    assert dp_bounds.steps_per_octave(455, 91.0) == 1
    octaves = dp_bounds.grid(1)
    lo, hi = dp_bounds.bounds_from_counts(np.zeros(len(octaves) - 1), 1.0, octaves)
    assert lo < hi


def test_a_zero_inflated_columns_bounds_come_from_the_records_off_its_mass():
    """Records at the point mass are binned nowhere (they come back as the mass through
    the flag column): 4,000 records, 90 % at 0, the rest 500-5,000, get bounds around
    500-5,000 instead of ±2^-10 around 0; with no record off the mass, the bounds are
    the mass's own cell rather than the heaviest cell of noise."""
    from engine.privacy import dp_bounds

    rng = np.random.default_rng(0)
    gain = np.where(rng.random(4000) < 0.9, 0.0, rng.uniform(500, 5000, 4000))[:, None]
    # noise alone clears the threshold somewhere with probability ~1 % per merge level
    # (dp_bounds.FALSE_CELL; measured 2 of 300 draws), so 7 of 9 draws must hold
    draws = [dp_bounds.release_bounds(gain, noise_std=6.0, masses=[0.0])[0] for _ in range(9)]
    assert sum(100 < lo < 2000 and 5000 <= hi < 10_000 for lo, hi in draws) >= 7
    with_mass = [dp_bounds.release_bounds(gain, noise_std=6.0)[0] for _ in range(9)]
    assert sum(lo < 0 < hi for lo, hi in with_mass) >= 7  # what the mass did to them
    zeros = np.zeros((400, 1))
    draws = [dp_bounds.release_bounds(zeros, noise_std=6.0, masses=[0.0])[0] for _ in range(9)]
    assert sum(lo == 0.0 and 0 < hi <= 2.0 ** -10 for lo, hi in draws) >= 7
