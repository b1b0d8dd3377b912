"""What a study may search and optimise beyond a method's own knobs: ε as a searched knob
and a second objective (seconds or ε), for a Pareto front of the trials.

* **ε searched** (`--knob epsilon=0.3:3:log`): each trial runs, and is charged by the
  ledger, at its own ε. ε is no method knob (it is the run's budget, RunConfig.epsilon),
  so it is parsed here, not from a knob() declaration. Before launch the sampler has not
  picked any ε, so the study's privacy can only be bounded: every trial at the top of
  the range (the ledger's composition grows with each trial's ε).
* **A second objective**: "seconds" (the run's measured wall time, start to end) or
  "epsilon" (the ε its releases spent, as the run recorded it), both minimised. A trial
  without it is told FAIL, never a made-up value. "epsilon" needs ε searched: at one ε
  every trial spends the same and there is no front to draw.
"""

from __future__ import annotations

import math
from typing import Any

from engine.core.config import EPSILON_MAX, EPSILON_MIN
from engine.core.errors import InputError

EPSILON_KNOB = "epsilon"
SECONDS = ("seconds", "epsilon")  # the second objectives a study can have
SECOND_TITLES = {"seconds": "seconds (wall time)", "epsilon": "ε spent"}
EPSILON_HELP = ("each trial's privacy budget ε: every trial is charged by the ledger at "
                "its own ε")


def is_epsilon(name: str) -> bool:
    return name.strip().lower() in (EPSILON_KNOB, "eps", "ε")


def epsilon_range(body: str) -> dict[str, Any]:
    """'0.3:3:log' (or '0.3:3', or choices '0.5,1,2') → the fields of a KnobRange named
    epsilon (study_space builds it: this module stays below it), inside the budgets a run
    can have (engine/core/config.py)."""

    def number(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise InputError(f"epsilon: {text!r} is not a number.") from None
        if not (math.isfinite(v) and EPSILON_MIN <= v <= EPSILON_MAX):
            raise InputError(f"epsilon: {text.strip()} is outside its bounds; a searched ε must "
                             f"be finite, between {EPSILON_MIN:g} and {EPSILON_MAX:g} (a "
                             "non-private trial would end every guarantee on the data).")
        return v

    if ":" in body:
        parts = [p.strip() for p in body.split(":")]
        log = len(parts) == 3 and parts[2].lower() == "log"
        if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
            raise InputError(f"epsilon: a range is lo:hi or lo:hi:log. Got {body!r}.")
        lo, hi = number(parts[0]), number(parts[1])
        if not lo < hi:
            raise InputError(f"epsilon: the range's low end must be below its high end. "
                             f"Got {lo:g}:{hi:g}.")
        return dict(name=EPSILON_KNOB, kind="float", lo=lo, hi=hi, log=log, help=EPSILON_HELP)
    values = tuple(dict.fromkeys(number(v) for v in body.split(",") if v.strip()))
    if len(values) < 2:
        raise InputError("epsilon: give two or more values (or a range lo:hi) to search.")
    return dict(name=EPSILON_KNOB, kind="choice", choices=values, help=EPSILON_HELP)


def searched_epsilon(knobs) -> Any:
    """The ε KnobRange of a study's knobs, or None when every trial shares one ε."""
    return next((k for k in knobs if k.name == EPSILON_KNOB), None)


def top_epsilon(knob) -> float:
    """The largest ε a trial can get: what the privacy bound before launch assumes."""
    return float(knob.hi) if knob.numeric else float(max(knob.choices))


def split_values(values: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
    """A trial's values → (its ε if searched, else None; the method's knobs)."""
    rest = dict(values)
    eps = rest.pop(EPSILON_KNOB, None)
    return (None if eps is None else float(eps)), rest


def check_second(second: str | None, knobs, sampler: str) -> str | None:
    """The second objective as given, checked (InputError), or None."""
    if second in (None, "", "none"):
        return None
    if second not in SECONDS:
        raise InputError(f"the second objective is one of {', '.join(SECONDS)}. Got {second!r}.")
    if sampler == "cmaes":
        raise InputError("CMA-ES optimises one objective; with a second objective use tpe, "
                         "random or grid.")
    if second == "epsilon" and searched_epsilon(knobs) is None:
        raise InputError("a second objective ε needs ε searched (e.g. --knob "
                         "epsilon=0.3:3:log): at one ε every trial spends the same.")
    return second


def directions(direction: str, second: str | None) -> list[str]:
    """Optuna's directions: the objective's, then minimise the second (cost) objective."""
    return [direction] + (["minimize"] if second else [])


def second_value(record, second: str) -> tuple[float | None, str]:
    """A finished run's second objective, or (None, why it has none)."""
    if second == "seconds":
        s = record.seconds
        return (float(s), "") if s is not None else (None, "no wall time recorded")
    spent = record.epsilon_spent
    if spent is None or not math.isfinite(spent):
        return None, "no spent ε recorded (a run without noise has none)"
    return float(spent), ""
