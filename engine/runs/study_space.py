"""A tuning study's request, checked once: which method, dataset and ε, which knobs over
which ranges, how many trials, which sampler and which stored score to optimise.

Knob ranges come from the command line's syntax and are checked against the method's own
knob declarations (engine/methods/knobs.py), so bounds, kinds and help come for free:

    lr=1e-3:1e-1:log            a float range, sampled on a log scale
    epochs=10:60                an int range (both ends ints)
    n_features=500,1000,2000    choices

Nothing here reads data or privacy: a study is ordinary runs (engine/jobs/study.py), each
charged to the ledger like any other.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from engine.core.config import RunConfig
from engine.core.errors import InputError

MAX_KNOBS = 4
SAMPLERS = ("grid", "random", "tpe", "cmaes")
STUDY_DIRECTIONS = ("maximize", "minimize")
DEFAULT_OBJECTIVE = "synthetic/logreg"
GRID_POINTS = 5  # points per numeric range when the grid sampler needs a finite grid
_NUMERIC = ("int", "float")


@dataclass(frozen=True)
class KnobRange:
    """One searched knob: a numeric range [lo, hi] (int or float, maybe log-scaled) or a
    list of choices. `help` is the knob's declared help, for the page and the CLI."""

    name: str
    kind: str  # "int", "float" or "choice"
    lo: float | None = None
    hi: float | None = None
    log: bool = False
    choices: tuple = ()
    step: int = 1  # ints: a declared multiple_of (n_features is even)
    help: str = ""

    @property
    def numeric(self) -> bool:
        return self.kind in _NUMERIC

    def grid(self) -> list:
        """A finite list of values (the grid sampler's): the choices, else GRID_POINTS
        points over the range (log-spaced when `log`), ints rounded and deduplicated."""
        if not self.numeric:
            return list(self.choices)
        lo, hi = float(self.lo), float(self.hi)
        if self.log:
            pts = [math.exp(math.log(lo) + i * (math.log(hi) - math.log(lo)) / (GRID_POINTS - 1))
                   for i in range(GRID_POINTS)]
        else:
            pts = [lo + i * (hi - lo) / (GRID_POINTS - 1) for i in range(GRID_POINTS)]
        if self.kind == "int":
            return list(dict.fromkeys(self.snap(p) for p in pts))
        return [float(f"{p:.6g}") for p in pts]

    def snap(self, value: float) -> int:
        """An int range's nearest allowed value (a multiple of `step`, inside the range)."""
        v = int(round(value / self.step)) * self.step
        return int(min(max(v, self.lo), self.hi))

    def words(self) -> str:
        if not self.numeric:
            return f"{self.name} in {{{', '.join(map(str, self.choices))}}}"
        return f"{self.name} in [{self.lo:g}, {self.hi:g}]" + (" (log)" if self.log else "")


@dataclass(frozen=True)
class StudySpec:
    """A study before it runs. `base` holds what every trial shares (method, dataset, ε,
    δ, seed, fixed params); each trial adds one value per knob."""

    base: RunConfig
    knobs: tuple[KnobRange, ...]
    trials: int = 24
    sampler: str = "tpe"
    objective: str = DEFAULT_OBJECTIVE
    direction: str = "maximize"
    second: str | None = None  # a second objective, "seconds" or "epsilon" (minimised)
    # A public stand-in the trials run on instead (engine/runs/public_tuning.py): then
    # the best settings get one run on base.dataset, the only one charged. A user's file
    # marked public is "csv" or "npz" with its path (and label) in tune_on_options.
    tune_on: str | None = None
    tune_on_options: dict | None = None

    def config_for(self, values: dict[str, Any]) -> RunConfig:
        """A trial's run: the base with the sampled knob values (on `tune_on` if set; a
        searched ε is the run's own budget, not a method knob: engine/runs/study_objectives.py)."""
        from engine.runs.public_tuning import trial_config

        config = self.final_config(values)
        return trial_config(config, self.tune_on, self.tune_on_options) if self.tune_on \
            else config

    @property
    def tune_on_words(self) -> str | None:
        """The stand-in as the board and the CLI name it (a file by the name it was
        uploaded under); None for a study on its private data."""
        from engine.runs.public_tuning import tune_on_words

        return tune_on_words(self.tune_on, self.tune_on_options) if self.tune_on else None

    def final_config(self, values: dict[str, Any]) -> RunConfig:
        """The run on base.dataset with these knob values (a tune-on study's private run)."""
        from engine.runs.study_objectives import split_values

        eps, params = split_values(values)
        return replace(self.base, epsilon=self.base.epsilon if eps is None else eps,
                       params={**self.base.params, **params}).validate()

    def centre(self) -> dict[str, Any]:
        """A representative trial (each range's middle, the middle choice): what the
        preview times, since a trial's settings are not known before the sampler picks."""
        out = {}
        for k in self.knobs:
            grid = k.grid()
            if k.numeric and k.log:
                mid = math.sqrt(k.lo * k.hi)
            elif k.numeric:
                mid = (k.lo + k.hi) / 2
            else:
                mid = grid[len(grid) // 2]
            out[k.name] = k.snap(mid) if k.kind == "int" else mid
        return out

    def to_dict(self) -> dict:
        d = {"base": self.base.to_dict(), "knobs": [asdict(k) for k in self.knobs],
             "trials": self.trials, "sampler": self.sampler, "objective": self.objective,
             "direction": self.direction}
        # only when set: a study stored before second objectives or tune_on still matches
        return {**d, **({"second": self.second} if self.second else {}),
                **({"tune_on": self.tune_on} if self.tune_on else {}),
                **({"tune_on_options": self.tune_on_options} if self.tune_on_options else {})}

    @classmethod
    def from_dict(cls, d: dict) -> "StudySpec":
        knobs = tuple(KnobRange(**{**k, "choices": tuple(k.get("choices") or ())})
                      for k in d["knobs"])
        return cls(base=RunConfig.from_dict(d["base"]), knobs=knobs, trials=int(d["trials"]),
                   sampler=d["sampler"], objective=d["objective"], direction=d["direction"],
                   second=d.get("second"), tune_on=d.get("tune_on"),
                   tune_on_options=d.get("tune_on_options"))


def _number(text: str, kind: str, name: str):
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        noun = "an integer" if kind == "int" else "a number"
        raise InputError(f"{name}: {text!r} is not {noun}.") from None


def parse_knob(text: str, specs: dict) -> KnobRange:
    """'lr=1e-3:1e-1:log' → a KnobRange, checked against the method's declaration
    (`specs`: name → engine.methods.knobs.KnobSpec); InputError with the fix."""
    if "=" not in text:
        raise InputError(f"a knob looks like name=lo:hi[:log] or name=a,b,c. Got {text!r}.")
    name, body = (s.strip() for s in text.split("=", 1))
    name = name.replace("-", "_")
    from engine.runs.study_objectives import epsilon_range, is_epsilon

    if is_epsilon(name):  # the run's budget, searched: each trial at its own ε
        return KnobRange(**epsilon_range(body))
    spec = specs.get(name)
    if spec is None:
        raise InputError(f"unknown knob {name!r}; this method's knobs are "
                         f"{', '.join(sorted(specs))}.")
    if spec.kind not in _NUMERIC + ("choice", "bool"):
        raise InputError(f"{name} ({spec.kind}) cannot be searched; pick int, float or "
                         "choice knobs.")
    if ":" in body:
        if spec.kind not in _NUMERIC:
            raise InputError(f"{name} is a {spec.kind} knob: give its values as a,b,c.")
        parts = body.split(":")
        log = len(parts) == 3 and parts[2].strip().lower() == "log"
        if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
            raise InputError(f"{name}: a range is lo:hi or lo:hi:log. Got {body!r}.")
        lo, hi = (_number(p.strip(), spec.kind, name) for p in parts[:2])
        if not lo < hi:
            raise InputError(f"{name}: the range's low end must be below its high end. "
                             f"Got {lo:g}:{hi:g}.")
        if log and lo <= 0:
            raise InputError(f"{name}: a log range needs lo > 0. Got {lo:g}.")
        for v in (lo, hi):
            if not spec.accepts(v):
                raise InputError(f"{name}: {v:g} is outside its bounds; it must be "
                                 f"{spec.rule()}.")
        # (accepts() checked a declared multiple_of at both ends; trials snap to it)
        return KnobRange(name, spec.kind, lo=lo, hi=hi, log=log, step=spec.multiple_of or 1,
                         help=spec.help)
    from engine.runs.sweeps import parse_values  # typed, range-checked values

    values = parse_values(spec, body)
    if len(values) < 2:
        raise InputError(f"{name}: give two or more values (or a range lo:hi) to search.")
    return KnobRange(name, "choice", choices=tuple(values), help=spec.help)


def build_spec(base: RunConfig, knob_texts: list[str], *, trials: int, sampler: str,
               objective: str = DEFAULT_OBJECTIVE, direction: str | None = None,
               second: str | None = None, tune_on: str | None = None,
               tune_on_options: dict | None = None, root=None,
               owner: str | None = None) -> StudySpec:
    """Check a whole request; raise InputError for the first thing wrong. A user's file
    to tune on ("csv"/"npz", its path in `tune_on_options`) is checked against the
    store at `root` and its uploader `owner` (engine/runs/public_tuning.check_tune_on)."""
    from engine.methods.knobs import knob_specs
    from engine.methods.registry import get_method
    from engine.runs.study_objectives import check_second

    base.validate()
    if tune_on:  # a public stand-in of the same kind, not the private dataset itself
        from engine.runs.public_tuning import check_tune_on

        tune_on_options = check_tune_on(base, tune_on, tune_on_options, root=root,
                                        owner=owner) or None
    if sampler not in SAMPLERS:
        raise InputError(f"sampler must be one of {', '.join(SAMPLERS)}. Got {sampler!r}.")
    if not knob_texts:
        raise InputError("give at least one knob to search, e.g. --knob lr=1e-3:1e-1:log.")
    if len(knob_texts) > MAX_KNOBS:
        raise InputError(f"a study searches at most {MAX_KNOBS} knobs. Got {len(knob_texts)}.")
    if not isinstance(trials, int) or not 1 <= trials <= 500:
        raise InputError(f"trials must be a whole number in [1, 500]. Got {trials!r}.")
    specs = {s.name: s for s in knob_specs(get_method(base.method).Params)}
    knobs = tuple(parse_knob(t, specs) for t in knob_texts)
    names = [k.name for k in knobs]
    if len(set(names)) != len(names):
        raise InputError(f"each knob once please; got {', '.join(names)}.")
    if tune_on and "epsilon" in names:  # free on public data: the search would take the top
        raise InputError("ε cannot be a searched knob when the trials run on a public "
                         "stand-in: there a larger ε costs nothing, so the search would "
                         "always pick the top of the range. Give --epsilon instead.")
    if sampler == "cmaes" and not all(k.numeric for k in knobs):
        bad = ", ".join(k.name for k in knobs if not k.numeric)
        raise InputError(f"CMA-ES searches numeric ranges only; {bad} is a list of choices "
                         "(use tpe, random or grid, or give a range lo:hi).")
    if not objective or objective.count("/") > 2:
        raise InputError(f"objective must be a stored score, e.g. {DEFAULT_OBJECTIVE}. "
                         f"Got {objective!r}.")
    if sampler == "grid":  # a grid has only so many points: never repeat one
        trials = min(trials, math.prod(len(k.grid()) for k in knobs))
    direction = direction or default_direction(objective)
    if direction not in STUDY_DIRECTIONS:
        raise InputError(f"direction must be one of {', '.join(STUDY_DIRECTIONS)}. "
                         f"Got {direction!r}.")
    return StudySpec(base=base, knobs=knobs, trials=trials, sampler=sampler,
                     objective=objective, direction=direction,
                     second=check_second(second, knobs, sampler), tune_on=tune_on or None,
                     tune_on_options=tune_on_options if tune_on else None)


def default_direction(objective: str) -> str:
    """Accuracies and AUCs go up; distances and errors go down."""
    low = objective.lower()
    return "minimize" if any(w in low for w in ("distance", "error", "seconds")) else "maximize"
