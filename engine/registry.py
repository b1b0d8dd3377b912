"""Method registry: a name maps to a module that provides `Params`, `train` and
`privacy_preview`. Adding a method is its module plus one line in METHODS; the app, the
CLI and the tradeoff chart find it from here.

A method module must define
  - `TITLE`: a human name;
  - `Params`: a frozen dataclass whose every field is declared with
    `engine.params.knob(...)` (kind, bounds, choices, help, main/advanced: the Playground
    draws its widgets from these), with
      `for_data(dataset) -> Params`: defaults derived from the data's public shape
      (n_train, kind, image shape, columns), never from its name or values;
      `validate(dataset) -> Params`: `engine.params.check_knobs` plus the checks that
      depend on the data or on several fields; raises InputError;
  - `privacy_preview(config, params, data) -> dict`: what the app and CLI show before
    training (no private data touched). Numbers are drawn as metrics; the optional keys
    "estimated memory (GB)", "estimated s / iteration", "estimated seconds" are the cost,
    "refuse" a one-line reason the run cannot start here, "warning" a caution (a weak δ,
    settings that will not learn) and "hint" a teaching note;
  - `train(config, params, data, device, stop) -> Iterator[Event]`: `params` are the
    validated Params from `make_params` (built once per run by engine.runner); yields
    Events and ends with one whose `result` is a TrainResult; checks `stop.is_set()`
    between steps.
Modules are imported lazily so listing methods stays cheap, and no method imports this
module (the runner hands it its params).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import fields, replace
from types import ModuleType

from engine.errors import InputError

METHODS: dict[str, str] = {
    "dpmerf": "engine.dpmerf",
    "datalens": "engine.datalens",
    "marginals": "engine.marginals",
    "aim": "engine.aim",
}


def available_methods() -> list[str]:
    return [m for m in METHODS if importlib.util.find_spec(METHODS[m]) is not None]


def get_method(name: str) -> ModuleType:
    if name not in available_methods():
        raise InputError(f"unknown method {name!r}; choose one of {', '.join(available_methods())}.")
    return importlib.import_module(METHODS[name])


def default_params(method: str, dataset):
    """The method's defaults for this loaded dataset (not validated: a method that does
    not support the data says so in `validate`)."""
    return get_method(method).Params.for_data(dataset)


def make_params(method: str, dataset, overrides: dict | None = None):
    """The method's defaults for this dataset, updated with the user's overrides, validated."""
    params = default_params(method, dataset)
    known = {f.name for f in fields(params)}
    unknown = set(overrides or {}) - known
    if unknown:
        raise InputError(
            f"unknown {method} parameter(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(known))}."
        )
    return replace(params, **(overrides or {})).validate(dataset)
