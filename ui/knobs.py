"""The Playground's method knobs, read from the method's own declarations
(engine.methods.knobs.knob_specs): which to show, their widget bounds and URL names, the
overrides a set of widget values amounts to, and the settings → RunConfig step.
No Streamlit here, so it is testable; ui/knob_widgets.py draws the widgets.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from engine.facade import KnobSpec, RunConfig, data_limits, knob_specs, parse_delta, parse_epsilon


def knob_key(method: str, name: str) -> str:
    """The Playground's widget key (and URL name) of a method knob: dpmerf_epochs."""
    return f"{method}_{name}"


@dataclasses.dataclass(frozen=True)
class Widget:
    """One knob as a widget: its declaration plus numeric bounds for this dataset (a
    data-named bound resolved, an open bound moved to the nearest float inside)."""

    spec: KnobSpec
    lo: float | None
    hi: float | None

    @property
    def name(self) -> str:
        return self.spec.name


def widgets(params, data=None) -> list[Widget]:
    """The widgets for a method's Params instance (its values are the defaults shown).
    Tuples of layer widths are structural (CLI only) and get no widget."""
    limits = data_limits(data) if data is not None else None
    out = []
    for spec in knob_specs(params):
        if spec.kind == "ints":
            continue
        lo, hi = spec.bounds(limits)
        if spec.kind == "float":
            lo = math.nextafter(lo, math.inf) if lo is not None and spec.lo_open else lo
            hi = math.nextafter(hi, -math.inf) if hi is not None and spec.hi_open else hi
        if isinstance(spec.default, (int, float)):  # keep the default reachable: a method
            # whose defaults do not fit this data says why when validated, not by crashing
            lo = None if lo is None else min(lo, spec.default)
            hi = None if hi is None else max(hi, spec.default)
        out.append(Widget(spec, lo, hi))
    return out


def changed_params(params, values: dict[str, Any]) -> dict[str, Any]:
    """Only the knobs that differ from the dataset's defaults (short configs, clean URLs)."""
    return {f.name: values[f.name] for f in dataclasses.fields(params)
            if f.name in values and values[f.name] != getattr(params, f.name)}


def config_from_settings(*, dataset: str, method: str, eps: str, delta: str, seed: int,
                         params: dict[str, Any], data_options: dict | None = None,
                         device: str = "auto") -> RunConfig:
    """The Playground's strings → a validated RunConfig (raises InputError). The one
    place a Train's ε and δ are parsed: the config carries them as floats from here on
    (tests/test_facade.py counts the parser's calls)."""
    return RunConfig(method=method, dataset=dataset, epsilon=parse_epsilon(eps),
                     delta=parse_delta(delta), seed=int(seed), device=device,
                     data_options=dict(data_options or {}), params=dict(params)).validate()
