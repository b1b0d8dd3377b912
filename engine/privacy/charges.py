"""The ledger's accounting, apart from its bookkeeping (engine/privacy/ledger.py): what a run is
charged before and after it trains, and how the rows of one dataset compose.

Every release in this project is a Gaussian mechanism with a stated L2 sensitivity, so a
run is a list of (noise multiplier, count) pairs and the rows compose exactly (Gaussian
DP) through `engine.privacy.accountant.composed_epsilon`; private searches (engine/runs/private_search.py)
add their repeat-and-select bound. Multiplier 0 stands for a release without noise.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Iterable

from engine.core.config import RunConfig
from engine.core.jsonsafe import dumps

Mechanisms = tuple[tuple[float, int], ...]

def planned(config: RunConfig) -> Mechanisms:
    """The charge of a run before it releases anything: one Gaussian mechanism with the
    smallest noise multiplier whose ε at the run's δ is its target ε. Every method
    calibrates its releases to meet that target, and they compose to one Gaussian
    mechanism, so their true multiplier is at least this one (an upper bound)."""
    from engine.privacy import accountant as privacy

    if not config.private:
        return ((0.0, 1),)
    return ((privacy.calibrate_noise_multiplier(epsilon=config.epsilon, delta=config.delta), 1),)


def search_row(search: dict) -> dict:
    # A search not yet run may draw any K: its plain composition is unbounded (a
    # multiplier-0 stand-in), so its forecast is its repeat-and-select bound.
    return {"mechanisms": "[[0.0, 1]]", "search": dumps(search)}


def planned_row(config: RunConfig) -> dict:
    """A run about to start, as a ledger row (for forecasts): a private search job
    (engine/runs/private_search.py) by its repeat-and-select bound, any other run by `planned`."""
    from engine.privacy import search_plan

    plan = search_plan.spec_plan(config)
    if plan is not None:
        return search_row(search_plan.ledger_search(plan))
    return {"mechanisms": dumps([list(m) for m in planned(config)]), "search": None}


def from_releases(report: dict) -> Mechanisms | None:
    """(noise multiplier, count) of each release in a privacy report (metrics.json
    "privacy"); multiplier 0 for a release without noise. None if it lists none."""
    out = []
    for r in report.get("releases") or []:
        count = int(r.get("count", 1))
        z = r.get("noise_multiplier")
        if z is None:
            sens, sigma = float(r["sensitivity"]), float(r["sigma"])
            if sens <= 0:
                continue  # a statistic no record can move carries no information
            z = sigma / sens
        z = float(z)
        out.append((z if math.isfinite(z) else 0.0, count))
    return tuple(out) or None


def total_epsilon(mechanisms: Iterable[tuple[float, int]], *, delta: float) -> float:
    """ε at `delta` of the exact composition of Gaussian mechanisms (multiplier, count);
    ∞ if any has no noise, 0 for none."""
    from engine.privacy import accountant as privacy

    merged: Counter = Counter()
    for z, n in mechanisms:
        if int(n) > 0:
            merged[float(z)] += int(n)
    if any(z <= 0 for z in merged):
        return math.inf
    return privacy.composed_epsilon(tuple(sorted(merged.items())), delta=delta)


def compose_rows(rows: Iterable, *, delta: float) -> float:
    """ε at `delta` of ledger rows (each with "mechanisms" and "search" JSON columns).

    Without private searches: the exact Gaussian composition of every release. With
    them, two valid bounds and the smaller is reported: every candidate that started
    composed in full (exact), and each search's repeat-and-select RDP bound composed
    with the other rows (engine.privacy.accountant.repeat_and_select_epsilon)."""
    from engine.privacy import accountant as privacy

    rows = list(rows)
    mechs = [[tuple(m) for m in json.loads(r["mechanisms"])] for r in rows]
    plain = total_epsilon([m for ms in mechs for m in ms], delta=delta)
    searches = [json.loads(r["search"]) for r in rows if r["search"]]
    if not searches:
        return plain
    others = [m for r, ms in zip(rows, mechs) if not r["search"] for m in ms]
    rs = privacy.repeat_and_select_epsilon(
        [(tuple(map(tuple, s["candidate"])), s["mean"], s["shape"]) for s in searches],
        delta=delta, others=others)
    return min(plain, rs)


def epsilon_words(eps: float) -> str:
    return "∞" if math.isinf(eps) else f"{eps:.3g}"


INFINITE_WORDS = ("a run without noise (ε = ∞) was trained on these records, so they have no "
                  "privacy guarantee left")
