"""Run configuration: one frozen dataclass, saved with every run and never edited.

Method-specific knobs live in `params` (a plain dict) and are validated by the method's
own params dataclass (see `engine.methods.registry`), so the config stays JSON-serialisable and
one CLI/app form can carry any method.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.core.errors import InputError
from engine.core.jsonsafe import dumps

# δ above this is no guarantee at all: the mechanism may fail outright that often.
DELTA_MAX = 0.1
# Finite ε outside this range is refused: below it no data set can carry the noise, above
# it the guarantee is meaningless (e^1000) and autodp's root finder cannot calibrate it.
EPSILON_MIN, EPSILON_MAX = 1e-3, 1e3

# The datasets read from a user's file (the ledger keys them by the file's bytes; uploads
# are owner-only): every other dataset is built in.
FILE_DATASETS = ("csv", "npz")
# Built-in public stand-ins (engine/data/catalog.py): their records are declared public, so
# the ledger neither charges nor caps a run on them (a study tunes there, tune_on).
PUBLIC_DATASETS = ("digits_public", "fashion_public")
# A built-in set whose records are part of another's: charged to that one's ledger row,
# since a run on either touches the same records (digits_private is half of digits).
SAME_RECORDS = {"digits_private": "digits"}


@dataclass(frozen=True)
class RunConfig:
    method: str = "dpmerf"
    dataset: str = "digits"
    # Total privacy budget for the whole run; math.inf means "no noise" (non-private
    # reference), reported as such so the gap to real data can be split in two.
    epsilon: float = 1.0
    delta: float = 1e-5
    # Seeds model initialisation and data splits only. DP noise never uses it.
    seed: int = 0
    device: str = "auto"
    # Number of synthetic records released at the end; None = size of the training set.
    n_synthetic: int | None = None
    # Dataset options for user files: path, label column, categorical overrides, bounds.
    data_options: dict[str, Any] = field(default_factory=dict)
    # Method knobs, validated by the method's params dataclass.
    params: dict[str, Any] = field(default_factory=dict)
    # Also score the synthetic images with a small CNN (slower; images only). Evaluation
    # reads the released data only, so it costs no privacy.
    cnn_eval: bool = False

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    def validate(self) -> "RunConfig":
        """Check the values that every method shares; raise InputError with the fix."""
        # The numbers only: ε and δ were parsed from the user's text once, where the
        # config was built (parse_epsilon, parse_delta), and travel as floats.
        if not isinstance(self.epsilon, (int, float)):
            raise InputError(f"epsilon must be a number > 0 or 'inf'. Got {self.epsilon!r}.")
        _epsilon_in_range(float(self.epsilon), self.epsilon)
        if not isinstance(self.delta, (int, float)):
            raise InputError(_delta_message(self.delta))
        _delta_in_range(float(self.delta), self.delta)
        if not isinstance(self.cnn_eval, bool):
            raise InputError(f"cnn_eval must be true or false. Got {self.cnn_eval!r}.")
        if self.n_synthetic is not None and int(self.n_synthetic) < 1:
            raise InputError(f"n_synthetic must be at least 1. Got {self.n_synthetic!r}.")
        return self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # JSON has no infinity; keep it readable and round-trippable.
        d["epsilon"] = "inf" if math.isinf(self.epsilon) else self.epsilon
        return d

    def to_json(self) -> str:
        return dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        """A config as to_dict wrote it (a stored run's): "inf" back to math.inf. Not
        the user's text, so not parsed again: it was validated before it was stored."""
        d = dict(d)
        d["epsilon"] = float(d.get("epsilon", 1.0))
        return cls(**d)


def parse_epsilon(value: Any) -> float:
    """Turn user input ('1', 1.5, 'inf') into a float; raise InputError on anything else."""
    try:
        eps = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"epsilon must be a number > 0 or 'inf'. Got {value!r}.") from None
    overflow = math.isinf(eps) and isinstance(value, str) and \
        value.strip().lower().lstrip("+") not in ("inf", "infinity")
    if overflow:  # '1e400' is not a request for no privacy
        raise InputError(f"epsilon must be a number > 0 or 'inf'. Got {value!r}.")
    return _epsilon_in_range(eps, value)


def parse_delta(value: Any) -> float:
    """Turn user input ('1e-5', 1e-5) into a float in (0, DELTA_MAX]; raise InputError."""
    try:
        delta = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(_delta_message(value)) from None
    return _delta_in_range(delta, value)


def _epsilon_in_range(eps: float, value: Any) -> float:
    """`eps` when it is a budget a run can have, else InputError quoting `value`."""
    if math.isnan(eps) or eps <= 0:
        raise InputError(f"epsilon must be a number > 0 or 'inf'. Got {value!r}.")
    if math.isfinite(eps) and not EPSILON_MIN <= eps <= EPSILON_MAX:
        raise InputError(f"epsilon must be between {EPSILON_MIN:g} and {EPSILON_MAX:g}, or 'inf' "
                         f"for a non-private run (beyond {EPSILON_MAX:g} the guarantee means "
                         f"nothing; below {EPSILON_MIN:g} no data can carry the noise). "
                         f"Got {value!r}.")
    return eps


def _delta_in_range(delta: float, value: Any) -> float:
    if math.isnan(delta) or not 0 < delta <= DELTA_MAX:
        raise InputError(_delta_message(value))
    return delta


def _delta_message(value: Any) -> str:
    return (f"delta must be a number in (0, {DELTA_MAX:g}], e.g. 1e-5 (larger delta is no "
            f"guarantee). Got {value!r}.")


def resolved_settings(config: RunConfig, params) -> str:
    """What a run trains with, as canonical JSON: the config (method, dataset, seed, ε,
    δ, ...) with `params` the method's every Params field after the dataset's defaults
    and the overrides (a Params, or the dict a run's metrics.json "info" kept). Reuse
    matches on this, never on the overrides alone: a run made before a default changed
    is not handed back for the new default (engine/store/runs.find_finished;
    engine/methods/registry.settings_for resolves a config on its dataset)."""
    settings = config.to_dict()
    settings["params"] = asdict(params) if not isinstance(params, dict) else dict(params)
    return dumps(settings, sort_keys=True)
