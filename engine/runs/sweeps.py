"""Pure helpers for tuning on Runs & Compare: which settings of a run differ from its
dataset's defaults, a short label for that configuration (the privacy–utility chart
draws one line per configuration), and sweeps over ε, seeds and any one knob.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

from engine.core.config import RunConfig
from engine.core.errors import InputError
from engine.core.jsonsafe import dumps

_DEFAULT_DELTA = RunConfig.delta


@lru_cache(maxsize=64)
def _defaults(method: str, dataset: str, options: str = "{}"):
    """The method's defaults for the run's data (derived from its shape, so the data is
    loaded once per dataset and options; cached)."""
    from engine.data.catalog import load
    from engine.methods.registry import default_params

    try:
        return default_params(method, load(dataset, options=json.loads(options)))
    except InputError:  # a method this install lacks, or data no longer here: every knob counts
        return None


def _same(value: Any, default: Any) -> bool:
    if isinstance(default, tuple) and isinstance(value, list):
        value = tuple(value)  # JSON turns tuples into lists
    if isinstance(default, float) and isinstance(value, (int, float)):
        return math.isclose(value, default, rel_tol=1e-12, abs_tol=0.0)
    return value == default


def differing_settings(config: dict) -> dict[str, Any]:
    """A run's saved config (dict) → the settings that differ from its method's defaults
    on its dataset, besides ε and seed (they have their own columns)."""
    defaults = _defaults(config["method"], config["dataset"],
                         dumps(config.get("data_options") or {}, sort_keys=True))
    out = {}
    for name, value in sorted((config.get("params") or {}).items()):
        if defaults is None or not hasattr(defaults, name) or not _same(value, getattr(defaults, name)):
            out[name] = value
    delta = config.get("delta", _DEFAULT_DELTA)
    if delta != _DEFAULT_DELTA:
        out["delta"] = delta
    if config.get("n_synthetic") is not None:
        out["n_synthetic"] = config["n_synthetic"]
    return out


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "·".join(_short(v) for v in value)
    return str(value)


def settings_label(settings: dict[str, Any]) -> str:
    """{'epochs': 7, 'lr': 0.02} → 'epochs=7, lr=0.02'; no differences → 'defaults'."""
    return ", ".join(f"{k}={_short(v)}" for k, v in settings.items()) or "defaults"


_RULES = {"int": "an integer", "float": "a number", "bool": "true or false"}


def parse_values(knob, text: str) -> list[Any]:
    """'0.01, 0.02' for a knob (engine.methods.knobs.KnobSpec) → typed, range-checked values
    (data-dependent bounds are checked by sweep_configs, against the data)."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise InputError(f"Give one or more values for {knob.name}, separated by commas.")
    out = []
    for item in items:
        try:
            if knob.kind == "int":
                value: Any = int(item)
            elif knob.kind == "float":
                value = float(item)
            elif knob.kind == "bool":
                if item.lower() not in ("true", "false"):
                    raise ValueError
                value = item.lower() == "true"
            else:
                if item not in knob.choices:
                    raise ValueError
                value = item
        except ValueError:
            rule = _RULES.get(knob.kind) or "one of " + ", ".join(map(str, knob.choices))
            raise InputError(f"{knob.name} values must each be {rule}. Got {item!r}.") from None
        if not knob.accepts(value):
            raise InputError(f"{knob.name} values must each be {knob.rule()}. Got {item}.")
        out.append(value)
    return list(dict.fromkeys(out))  # keep order, drop repeats


def sweep_configs(*, method: str, dataset: str, epsilons: list[float], seeds: int,
                  data, knob: str | None = None, values: list[Any] | None = None,
                  delta: float = _DEFAULT_DELTA) -> list[RunConfig]:
    """Every (knob value, ε, seed) combination as a validated RunConfig.

    `data` is the loaded dataset: each knob value is validated by the method's own
    Params against it, so a bad value fails here, before anything is queued.
    """
    from engine.methods.registry import make_params

    if not epsilons:
        raise InputError("Pick at least one ε value for the sweep.")
    if int(seeds) < 1:
        raise InputError(f"seeds per setting must be at least 1. Got {seeds!r}.")
    variants: list[dict[str, Any]] = [{}]
    if knob:
        variants = [{knob: v} for v in (values or [])]
        if not variants:
            raise InputError(f"Give one or more values for {knob}.")
    out = []
    for params in variants:
        make_params(method, data, params)  # raises the method's own message
        for eps in epsilons:
            for seed in range(int(seeds)):
                out.append(RunConfig(method=method, dataset=dataset, epsilon=eps, delta=delta,
                                     seed=seed, params=dict(params)).validate())
    return out

