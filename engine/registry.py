"""Method registry: a name maps to a module that provides `Params` and `train`.

A method module must define
  - `TITLE`: a human name;
  - `Params`: a dataclass of its knobs with `for_dataset(dataset_name) -> Params`
    (defaults sized for that dataset), optionally `for_data(dataset) -> Params` (defaults
    derived from the loaded data, preferred when present) and `validate(dataset) -> Params`;
  - `train(config, data, device, stop) -> Iterator[Event]`, yielding Events and ending
    with one whose `result` is a TrainResult; it checks `stop.is_set()` between steps.
Modules are imported lazily so listing methods stays cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from engine.errors import InputError

METHODS: dict[str, str] = {
    "dpmerf": "engine.dpmerf",
    "datalens": "engine.datalens",
}


def available_methods() -> list[str]:
    return [m for m in METHODS if importlib.util.find_spec(METHODS[m]) is not None]


def get_method(name: str) -> ModuleType:
    if name not in available_methods():
        raise InputError(f"unknown method {name!r}; choose one of {', '.join(available_methods())}.")
    return importlib.import_module(METHODS[name])


def make_params(method: str, dataset, overrides: dict | None = None):
    """The method's defaults for this dataset, updated with the user's overrides, validated."""
    module = get_method(method)
    # Defaults derived from the data itself (size, shape) when the method can; else by name.
    for_data = getattr(module.Params, "for_data", None)
    params = for_data(dataset) if for_data else module.Params.for_dataset(dataset.name)
    fields = set(params.__dataclass_fields__)
    unknown = set(overrides or {}) - fields
    if unknown:
        raise InputError(
            f"unknown {method} parameter(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(fields))}."
        )
    from dataclasses import replace

    return replace(params, **(overrides or {})).validate(dataset)
