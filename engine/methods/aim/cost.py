"""What an AIM run will cost on this machine, before it starts: rounds, seconds, memory.

Measured, not a constant: the first preview of a shape runs AIM's own `train` on a
stand-in table of the run's shape (engine/methods/stand_in.py: the same columns, bins,
classes, rows and workload; public random numbers, no record read, so no privacy cost)
for PROBE_ROUNDS rounds without noise, and reads the seconds of each phase the run
records (info["phase_seconds"]): the set-up and one-way fit, a round (selection,
measurement, warm refit), the final fit per iteration, and the sampling. A round's time
grows as the model grows (on the census bench table from 0.3 s to 8 s), which a young
model's rounds cannot show (the preview was −67 % on that table): so the stand-in is
timed twice, once young and once grown (as many workload marginals measured before
its rounds as the run is expected to make at its ε, at most GROWN_PER_ATTRIBUTE·d,
within max_model_size), and a
round's seconds are the line through the two timings, by measurements held. Cached on disk
per machine and shape, re-timed when old or when the load changed, and never cached
when the timing met a load spike (engine/store/cost_cache.py). Once this store has
finished AIM runs on the data, their measured training seconds replace the timing (a
stand-in's first rounds cannot show how much slower a grown model's rounds are): the
seconds of runs at the same ε and knobs, else their seconds per round times the rounds
expected at this ε.

The unit is a round. How many rounds a private run makes depends on how often it
anneals (each anneal quadruples a round's budget): the preview counts the run's own
schedule with each round's chance to anneal at its σ (plan.anneal_chance: the noise's
expected error against the most a marginal of n records can move), and finished runs
correct the seconds.
Memory is measured too: the timing process's peak resident set after the stand-in run
(JAX and the model dominate it; the stand-in holds the run's rows and domain).
"""

from __future__ import annotations

import math
import resource
import statistics
import threading
from dataclasses import asdict, replace

import numpy as np

from engine.core.config import RunConfig
from engine.core.jsonsafe import jsonable
from engine.data import column_kinds
from engine.methods import stand_in
from engine.methods.aim import method as aim
from engine.methods.aim import plan as aim_plan
from engine.methods.preview import MEASURING
from engine.privacy import dp_bounds
from engine.store import cost_cache

_RATES = cost_cache.TimedCache("aim")  # on disk: engine/runs/cost_probe.py fills it
PROBE_ROUNDS = 3  # rounds run on the stand-in (the first is not timed: JAX compiles)
PROBE_FINAL_ITERS = 50  # final-fit iterations timed, scaled to the run's
# The grown stand-in holds at most this many workload marginals per attribute before its
# timed rounds (census bench table, d = 12: 19–21 rounds at ε = 1), and no more than the
# run is expected to make: grown to 2·d on breast_cancer (d = 32, 64 marginals, where a
# run at ε = 1 makes 5–9 rounds), the timing took 73 s against a 70 s run.
GROWN_PER_ATTRIBUTE = 2


def _key(data, params, n_out: int, threads: int | None, n_rounds: int) -> tuple:
    shape = tuple((c.kind, len(c.categories or ()), c.bounds is None, c.mass is not None)
                  for c in data.columns)
    return ("grown", _grown_count(data, params, n_rounds), shape, data.n_train, data.n_classes,
            params.degree, params.other_weight, params.bins, params.iters,
            params.max_model_size, params.max_cells, n_out, threads)


def _grown_count(data, params, n_rounds: int) -> int:
    """Marginals the grown stand-in measures first: the `n_rounds` the run is expected to
    make (`rounds`), at most GROWN_PER_ATTRIBUTE·d and the run's `rounds` knob (it cannot
    grow further); 0 — no grown timing — where the young stand-in's PROBE_ROUNDS already
    cover the run (a tiny test run)."""
    d = len(column_kinds.model_view(data).columns) + 1
    count = min(n_rounds, GROWN_PER_ATTRIBUTE * d, params.rounds)
    return count if count > PROBE_ROUNDS else 0


def _calibrate(data, params, n_out: int, n_rounds: int) -> dict[str, float]:
    """Phase seconds of a stand-in run of `data`'s shape, young and grown to a run of
    `n_rounds` rounds (module docstring)."""
    fake = stand_in.like(data, data.n_train)
    config = RunConfig(method="aim", dataset=fake.name, epsilon=math.inf, seed=0,
                       n_synthetic=n_out)
    probe = replace(params, rounds=PROBE_ROUNDS, final_iters=PROBE_FINAL_ITERS)
    d = len(column_kinds.model_view(data).columns) + 1
    reset = _reset_peak()
    took = _stand_in_run(config, probe, fake)
    timed = range(2, PROBE_ROUNDS + 1)  # round 1 compiles JAX's programs: left out
    # measurements a timed round refits, on average: the one-way ones and its rounds so far
    held = d + statistics.fmean(timed)
    out = {"setup": took["setup"], "held": held,
           "round": statistics.fmean(took["rounds"][t - 1] for t in timed),
           "final_iter": took["final_fit"] / PROBE_FINAL_ITERS, "sample": took["sample"]}
    grown = grown_cliques(fake, params, _grown_count(data, params, n_rounds), seed=0)
    if grown:  # the grown model's rounds are slow: one timed round after the untimed first
        late = _stand_in_run(config, replace(probe, rounds=2), fake, grown)
        out.update(held_grown=d + len(grown) + 2, round_grown=late["rounds"][1])
    return {**out, "peak_gb": _peak_gb(reset)}  # after the grown model: nearer a run's


def _stand_in_run(config, probe, fake, grown: tuple = ()) -> dict:
    """One stand-in run's phase seconds, its JAX programs compiled afresh."""
    # Most of a round is JAX compiling the model's new programs. A run meets them cold;
    # a timing after another (a retake after a spike, a second preview) would find them
    # compiled and time a round at a tenth (0.3 s against 2–5 s on the census table).
    aim._mbi()
    import jax

    jax.clear_caches()
    result = None
    for event in aim.train(config, probe, fake, "cpu", threading.Event(), grown=grown):
        result = event.result or result
    return result.info["phase_seconds"]


def grown_cliques(data, params, count: int, seed: int = 0) -> tuple:
    """`count` workload marginals of `data`'s shape (2-way and up, a seeded random order)
    for the grown stand-in, each kept while the model's junction tree stays within
    max_model_size MB; where none fits any more, the kept ones again (a run measures a
    marginal more than once too). Public shape only."""
    mbi = aim._mbi()
    view = column_kinds.model_view(data)
    disc = aim_plan.discretise(view, params.bins, {j: (0.0, 1.0) for j in
                                                   dp_bounds.columns_without_bounds(view)})
    domain = mbi.Domain(disc.names, disc.sizes)
    order = [cl for cl in aim_plan.candidates(aim._workload(view, params)) if len(cl) > 1]
    order = [order[i] for i in np.random.default_rng(seed).permutation(len(order))]
    kept = [(a,) for a in disc.names]
    for cl in order:
        if len(kept) - len(disc.names) >= count:
            break
        if mbi.junction_tree.hypothetical_model_size(domain, kept + [cl]) <= params.max_model_size:
            kept.append(cl)
    chosen = kept[len(disc.names):]
    return tuple(chosen[i % len(chosen)] for i in range(count)) if chosen else ()


def per_round(timed: dict, held: float) -> float:
    """Seconds of a round that refits `held` measurements: on the line through the young
    and the grown stand-in's rounds (never below the faster of the two: a line fitted to
    two timings may dip where it is read below both); a timing without the grown one
    scales the young round in proportion to the measurements."""
    if "round_grown" not in timed or timed["held_grown"] <= timed["held"]:
        return timed["round"] * held / timed["held"]
    slope = (timed["round_grown"] - timed["round"]) / (timed["held_grown"] - timed["held"])
    return max(min(timed["round"], timed["round_grown"]),
               timed["round"] + slope * (held - timed["held"]))


def _reset_peak() -> bool:
    """Reset this process's peak resident set (Linux clear_refs 5) so the stand-in run's
    own peak is read, not that of whatever this process ran before; False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_gb(reset: bool) -> float:
    """Peak resident GB since `_reset_peak` (VmHWM), else over the process's life."""
    if reset:
        try:
            with open("/proc/self/status") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
            return kb / 1e6
        except (OSError, StopIteration, ValueError):
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # Linux: KiB


def rounds(config, data, params) -> int:
    """The selection rounds the preview counts (module docstring)."""
    view = column_kinds.model_view(data)
    budget = aim_plan.plan_budget(config, measure_share=params.measure_share,
                                  bounds_share=params.bounds_share,
                                  n_private_bounds=len(dp_bounds.columns_without_bounds(view)))
    disc = aim_plan.discretise(view, params.bins, {j: (0.0, 1.0) for j in
                                                   dp_bounds.columns_without_bounds(view)})
    cells = aim_plan.mean_cells(aim._workload(view, params), disc.names, disc.sizes)
    return aim_plan.expected_rounds(budget, params.rounds, len(view.columns) + 1,
                                    view.n_train, cells)


def _same_run(metrics: dict, config, params) -> bool:
    """Whether a finished run asked what this one asks: the same ε, δ and knobs (its
    rounds then come from the same schedule)."""
    return (metrics.get("epsilon_target") == jsonable(config.epsilon)
            and metrics.get("delta") == config.delta
            and (metrics.get("info") or {}).get("params") == jsonable(asdict(params)))


def _measured(config, data, params, n_rounds: int) -> dict | None:
    """The time keys from this store's finished AIM runs on this data (their training
    seconds and rounds, as metrics.json has them), or None when there is none.
    A stand-in timing cannot see how a run's rounds slow down as its model grows (on the
    census bench table from 0.3 s to 8 s a round), nor JAX compiling each new model, so
    a finished run is the better figure. Runs that asked the same ε, δ and knobs give
    their seconds and rounds; the others only their seconds per round, times the
    `n_rounds` expected here (their rounds followed their own ε: at ε = 3 a run makes
    several times the rounds of one at ε = 0.3). The rounds a run made are post-
    processing of its noisy measurements (its anneal test reads the model only)."""
    seen = [m for m in cost_cache.finished_metrics("aim", config.dataset, n_train=data.n_train,
                                                   data_options=config.data_options)
            if (m.get("info") or {}).get("rounds") and (m.get("seconds") or {}).get("train")]
    if not seen:
        return None
    same = [m for m in seen if _same_run(m, config, params)]
    if same:
        steps = round(statistics.median(m["info"]["rounds"] for m in same))
        train = statistics.median(m["seconds"]["train"] for m in same)
        return {"estimated steps": steps, "estimated s / round": train / steps,
                "estimated seconds": float(train),
                cost_cache.BASIS_KEY: f"measured by {cost_cache.finished_runs(len(same))} "
                                      "on this data"}
    per_round = statistics.median(m["seconds"]["train"] / m["info"]["rounds"] for m in seen)
    return {"estimated steps": n_rounds, "estimated s / round": per_round,
            "estimated seconds": float(per_round * n_rounds),
            cost_cache.BASIS_KEY: "seconds per round measured by "
                                  f"{cost_cache.finished_runs(len(seen))} on this data at "
                                  f"another ε or other knobs, times {n_rounds} rounds "
                                  "expected at this ε"}


def estimate(config, data, params, device, *, threads: int | None = None, away=None) -> dict:
    """The preview's cost keys: rounds, seconds per round and in all (set-up, rounds,
    final fit, sampling), memory; from finished runs when there are some, else timed on
    the stand-in; "measuring…" while the probe times it elsewhere."""
    n_out = config.n_synthetic or data.n_train
    n_rounds = rounds(config, data, params)
    key = _key(data, params, n_out, threads, n_rounds)
    measured = _measured(config, data, params, n_rounds)
    if measured is not None:  # nothing to time; the memory from a timing, if one was taken
        timed = _RATES.peek(key)[0]
        return {**measured, **({"estimated memory (GB)": timed["peak_gb"]} if timed else {})}
    timed = (away(_RATES, key) if away is not None
             else _RATES.get(key, lambda: _calibrate(data, params, n_out, n_rounds)))
    if timed is None:
        return {"estimated steps": n_rounds, cost_cache.BASIS_KEY: MEASURING}
    # A round refits every measurement so far: its time grows with them and with the
    # model (mirror descent and the model's sampling both run over the measured cliques).
    # Round t holds d + t measurements: with `per_round` linear in them, the run's mean
    # round is the one at d + (T + 1) / 2.
    d = len(column_kinds.model_view(data).columns) + 1
    mean_round = per_round(timed, d + (n_rounds + 1) / 2)
    seconds = (timed["setup"] + n_rounds * mean_round
               + params.final_iters * timed["final_iter"] + timed["sample"])
    return cost_cache.correct({"estimated steps": n_rounds, "estimated s / round": mean_round,
                               "estimated seconds": float(seconds),
                               "estimated memory (GB)": timed["peak_gb"]},
                              config.method, config.dataset,
                              data_options=config.data_options)
