"""A Pareto front of a score against its cost (ε spent, or seconds), over every stored
run of one method on one dataset: study trials, sweeps and single runs alike.

Pure functions: `non_dominated` marks the points no other point beats on both axes;
`points` reads finished runs (RunRecords from the store) into points; `front` puts the
two together with the words the board needs to stay honest — how many runs were left
out and why, and whether the runs span several ε (then a better score at a larger ε
was bought with more privacy, and the points are not like for like).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

AXES = ("epsilon", "seconds")
AXIS_TITLES = {"epsilon": "ε spent", "seconds": "seconds (wall time of the run)"}


def non_dominated(xs: Sequence[float], ys: Sequence[float], *, y_direction: str = "maximize",
                  x_direction: str = "minimize") -> list[bool]:
    """For each point (x, y): True when no other point is at least as good on both axes
    and strictly better on one. Identical points do not dominate each other (both are
    kept). O(n log n): sort by x, sweep the best y seen so far."""
    if len(xs) != len(ys):
        raise ValueError("xs and ys differ in length")
    for d in (x_direction, y_direction):
        if d not in ("minimize", "maximize"):
            raise ValueError(f"a direction is minimize or maximize, not {d!r}")
    # both axes as "smaller is better"
    a = [x if x_direction == "minimize" else -x for x in xs]
    b = [y if y_direction == "minimize" else -y for y in ys]
    order = sorted(range(len(a)), key=lambda i: (a[i], b[i]))
    keep = [False] * len(a)
    best_b = math.inf  # the best b among points with a strictly smaller a
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and a[order[j]] == a[order[i]]:
            j += 1
        group = order[i:j]  # equal a; sorted by b, so its first has the group's best b
        low = b[group[0]]
        if low < best_b:  # not beaten by any point of smaller a
            for k in group:
                keep[k] = b[k] == low  # a larger b in the group is beaten by its best
        best_b = min(best_b, low)
        i = j
    return keep


@dataclass(frozen=True)
class Point:
    run_id: str
    x: float  # ε spent, or the run's seconds
    y: float  # the objective
    epsilon: float  # the run's target ε (its config)
    group: str  # "study:NAME", a sweep's name, or "single run"
    settings: dict = field(default_factory=dict)
    best: bool = False  # on the front


@dataclass(frozen=True)
class Front:
    objective: str
    axis: str
    direction: str
    points: list[Point]
    left_out: dict[str, int]  # why → how many finished runs could not be placed

    @property
    def on_front(self) -> list[Point]:
        return sorted((p for p in self.points if p.best), key=lambda p: p.x)

    @property
    def epsilons(self) -> list[float]:
        return sorted({round(p.epsilon, 6) for p in self.points})

    def notes(self) -> list[str]:
        """What a reader must know before comparing the points."""
        out = []
        eps = self.epsilons
        if len(eps) > 1:
            out.append(f"These {len(self.points)} runs were trained at {len(eps)} different "
                       f"ε ({eps[0]:g} to {eps[-1]:g}): a better {self.objective} at a larger "
                       "ε was bought with more privacy, so points at different ε are not "
                       "like for like" + (" — read the ε axis." if self.axis == "epsilon" else
                                          " — the colour gives each point's ε."))
        if self.points:
            out.append(f"{len(self.on_front)} of {len(self.points)} run(s) on the front: no "
                       f"other run has both a {'higher' if self.direction == 'maximize' else 'lower'}"
                       f" {self.objective} and a {'smaller ε' if self.axis == 'epsilon' else 'shorter time'}.")
        for why, n in self.left_out.items():
            out.append(f"{n} finished run(s) left out: {why}.")
        return out


def _x(record, axis: str) -> float | None:
    if axis == "seconds":
        return record.seconds
    spent = record.epsilon_spent  # what its releases spent (metrics), else its target
    eps = spent if spent is not None and spent > 0 else record.config.epsilon
    return eps if math.isfinite(eps) else None


def points(records: Iterable, objective: str, axis: str = "epsilon") -> tuple[list[Point], dict]:
    """Finished runs with a finite `objective` as unmarked points, and {why: count} of
    the finished runs that could not be placed (no such score; no noise, so no ε)."""
    if axis not in AXES:
        raise ValueError(f"axis is one of {AXES}, not {axis!r}")
    out, left = [], {}
    for r in records:
        if getattr(r.status, "value", r.status) != "finished":
            continue
        y = r.metrics.get(objective)
        if y is None or not math.isfinite(y):
            why = f"no {objective} score"
        elif not r.config.private:
            why = "trained without noise (ε = ∞), nothing to compare privately"
        else:
            x = _x(r, axis)
            if x is None:
                why = f"no {axis} recorded"
            else:
                out.append(Point(r.run_id, float(x), float(y), float(r.config.epsilon),
                                 r.sweep or "single run", dict(r.config.params)))
                continue
        left[why] = left.get(why, 0) + 1
    return out, left


def front(records: Iterable, objective: str, *, axis: str = "epsilon",
          direction: str = "maximize") -> Front:
    """Every finished run of `records` placed and the non-dominated ones marked."""
    pts, left = points(records, objective, axis)
    keep = non_dominated([p.x for p in pts], [p.y for p in pts], y_direction=direction)
    marked = [Point(**{**p.__dict__, "best": k}) for p, k in zip(pts, keep)]
    return Front(objective, axis, direction, marked, left)
