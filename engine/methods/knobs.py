"""Declarative method knobs: each field of a method's `Params` says its kind, bounds,
choices, help and whether it is a main knob, once; validation (`check_knobs`) and the
Playground's widgets (ui/knobs.py) both read that one declaration.

    @dataclass(frozen=True)
    class Params:
        sigma: float = knob(5000.0, lo=0, lo_open=True, main=True, help="Noise std ...")

A bound may name a property of the loaded data instead of a number (`hi="n_train"`):
validation resolves it against the dataset, and the widget caps itself the same way.
Those data properties are public under the neighbouring relation (replace-one keeps n;
the image shape and column count are public metadata), so reading them costs no privacy.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any

from engine.core.errors import InputError

KINDS = ("int", "float", "bool", "choice", "ints")
# Data properties a bound may name, with the words the error message uses for them.
DATA_LIMITS = {"n_train": "the number of training records", "dim": "the data dimension"}


@dataclass(frozen=True)
class KnobSpec:
    """One knob: what values are valid, how to show it. `default` is the value of the
    Params it was read from (the dataset's defaults when that came from `for_data`)."""

    name: str
    kind: str  # one of KINDS; "ints" is a fixed-length tuple of ints (layer widths)
    default: Any
    lo: float | None = None
    hi: float | str | None = None  # a number, or a key of DATA_LIMITS
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple = ()
    help: str = ""
    main: bool = False  # shown up front in the Playground; others under "Advanced"
    none: str = ""  # what None means when None is allowed ("" = not allowed)
    multiple_of: int | None = None  # ints only: e.g. 2 for an even number of features
    length: int | None = None  # "ints" only: the declared tuple length

    @property
    def optional(self) -> bool:
        return bool(self.none)

    def bounds(self, limits: dict[str, float] | None = None) -> tuple[float | None, float | None]:
        """(lo, hi) as numbers; a data-named bound is None when `limits` lacks it."""
        hi = self.hi
        if isinstance(hi, str):
            hi = (limits or {}).get(hi)
        return self.lo, hi

    def rule(self, limits: dict[str, float] | None = None) -> str:
        """The accepted values in words: "a float > 0", "an int in [1, 1437] (the number
        of training records)", "one of exact, rdp"."""
        if self.kind == "bool":
            text = "true or false"
        elif self.kind == "choice":
            text = "one of " + ", ".join(map(str, self.choices))
        else:
            lo, hi = self.bounds(limits)
            if self.kind == "ints":
                noun = f"a tuple of {self.length} ints"
            else:
                noun = "an int" if self.kind == "int" else "a float"
            if self.multiple_of == 2:
                noun = "an even int"
            elif self.multiple_of:
                noun = f"an int multiple of {self.multiple_of}"
            text = f"{noun}{_range_words(lo, hi, self.lo_open, self.hi_open)}"
            if isinstance(self.hi, str) and hi is not None:
                text += f" ({DATA_LIMITS[self.hi]})"
        return text + (f" or None (= {self.none})" if self.none else "")

    def accepts(self, value: Any, limits: dict[str, float] | None = None) -> bool:
        if value is None:
            return self.optional
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":
            return isinstance(value, str) and value in self.choices
        if self.kind == "ints":
            return (isinstance(value, (tuple, list)) and len(value) == self.length
                    and all(self._in_range(v, limits) and _is_int(v) for v in value))
        if self.kind == "int" and not _is_int(value):
            return False
        if self.kind == "float" and not _is_number(value):
            return False
        if self.multiple_of and value % self.multiple_of:
            return False
        return self._in_range(value, limits)

    def _in_range(self, v, limits) -> bool:
        lo, hi = self.bounds(limits)
        if lo is not None and (v < lo or (self.lo_open and v == lo)):
            return False
        return hi is None or not (v > hi or (self.hi_open and v == hi))


def knob(default: Any, *, kind: str | None = None, lo: float | None = None,
         hi: float | str | None = None, lo_open: bool = False, hi_open: bool = False,
         choices: tuple = (), help: str = "", main: bool = False, none: str = "",
         multiple_of: int | None = None):
    """A dataclass field whose metadata declares the knob. `kind` is inferred from the
    default when it is not None; `none` (what None stands for) allows None."""
    kind = kind or _infer_kind(default, choices)
    if kind not in KINDS:
        raise ValueError(f"knob kind must be one of {KINDS}; got {kind!r}")
    if default is None and not none:
        raise ValueError("a knob whose default is None must say what None means (none=...)")
    if isinstance(hi, str) and hi not in DATA_LIMITS:
        raise ValueError(f"a data-named bound must be one of {tuple(DATA_LIMITS)}; got {hi!r}")
    spec = dict(kind=kind, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open,
                choices=tuple(choices), help=help, main=main, none=none, multiple_of=multiple_of,
                length=len(default) if kind == "ints" else None)
    return dataclasses.field(default=default, metadata={"knob": spec})


def knob_specs(params_or_cls) -> list[KnobSpec]:
    """Every declared knob of a Params class or instance, in field order. From an
    instance, `default` is that instance's value (e.g. the defaults for one dataset)."""
    out = []
    for f in dataclasses.fields(params_or_cls):
        spec = f.metadata.get("knob")
        if spec is None:
            continue
        value = (getattr(params_or_cls, f.name) if not isinstance(params_or_cls, type)
                 else f.default)
        out.append(KnobSpec(name=f.name, default=value, **spec))
    return out


def data_limits(data) -> dict[str, int]:
    """The public data properties a bound may name (see DATA_LIMITS)."""
    return {"n_train": int(data.n_train), "dim": int(math.prod(data.x_train.shape[1:]))}


def check_knobs(params, title: str, data=None) -> None:
    """Raise InputError for the first field outside its declared kind/bounds, as in
    "The 'sigma' parameter of DataLens must be a float > 0. Got -1 instead."
    Data-named bounds are checked only when `data` is given."""
    limits = data_limits(data) if data is not None else None
    for spec in knob_specs(params):
        value = getattr(params, spec.name)
        if not spec.accepts(value, limits):
            raise InputError(f"The '{spec.name}' parameter of {title} must be "
                             f"{spec.rule(limits)}. Got {value!r} instead.")


def _range_words(lo, hi, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {_num(lo)}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {_num(hi)}"
    return ""


def _num(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _infer_kind(default, choices) -> str:
    if choices:
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if _is_int(default):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, tuple):
        return "ints"
    raise ValueError(f"cannot infer a knob kind from {default!r}; pass kind=")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
