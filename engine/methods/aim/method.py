"""AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative
Mechanism for Differentially Private Synthetic Data"): the paper's Algorithm 1 over
private-pgm's marginal inference (`mbi` 2.0, JAX on the CPU).

The workload puts the label first (engine/methods/aim/plan.py): every `degree`-way
marginal with the label at weight 1, every other pair at `other_weight`. Rounds T = 16·d
in all (the paper), the one-way marginals measured first at the paper's initial σ; then
each round picks the marginal the current model gets most wrong with the exponential
mechanism (quality: weighted L1 error minus the noise it would add), measures it with
Gaussian noise, and refits the graphical model (mirror descent, warm-started); when a
measurement barely moves the model the round budget is quadrupled (σ halved, ε_t
doubled), the last round takes what is left, and candidates whose junction tree would
pass `max_model_size` · (budget used) are skipped.
Synthetic records are sampled from the final model (post-processing).

Privacy (replace-one neighbours, n public; the paper states add/remove). A marginal's
count vector moves by −1 in one cell and +1 in another: L2 sensitivity √2 (the paper's 1
under add/remove), so a measurement with std σ is ρ = 1/σ²-zCDP and μ = √2/σ Gaussian DP.
The quality score w_r·(‖M_r(D) − M_r(model)‖₁ − √(2/π)·σ·n_r) moves by at most
2·w_r (the L1 change of M_r(D); the model and the bias are fixed given the past
outputs), so the exponential mechanism exp(ε_t·q/(2Δ_q)) uses Δ_q = 2·max w: it is
ε_t-bounded-range, ρ = ε_t²/8. Its randomness is Gumbel-max with uniforms from the
project's OS-entropy generator (noise.noise_generator), never a seed; its floating-point
sampling is not hardened as the Gaussian's is (engine/privacy/noise.py), which a reader should know.
Measurement noise comes from noise.gaussian_noise (OS entropy). How the budget is split,
and why the run meets its (ε, δ) both by zCDP and by the ledger's exact Gaussian-DP
composition, is engine/methods/aim/plan.py's docstring; the bins are its discretisation.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Iterator

import numpy as np
import torch

from engine.methods.aim import plan as aim_plan
from engine.data import column_kinds
from engine.privacy import dp_bounds
from engine.privacy import accountant as privacy
from engine.privacy import zcdp
from engine.methods.aim.plan import MARGINAL_L1_SENSITIVITY, MARGINAL_SENSITIVITY
from engine.data.dataset import Dataset
from engine.core.errors import InputError
from engine.methods.events import Event, TrainResult
from engine.privacy.charges import from_releases, total_epsilon
from engine.methods.knobs import check_knobs, knob
from engine.privacy.noise import gaussian_noise, noise_generator
from engine.privacy.accountant import NoisyRelease, PrivacyReport

TITLE = "AIM (adaptive marginals)"
DATA_KINDS = ("tabular",)  # what it models (engine/runs/gallery.py reads it)
# The method's other parts, found through engine/methods/registry.py (its checklist).
AUDIT = "engine.methods.aim.audit"
COST = "engine.methods.aim.cost"
TINY_PARAMS = {"bins": 2, "iters": 5, "final_iters": 5, "rounds": 2}

MC_ROWS = 100_000  # records sampled from the model to estimate its marginals
BIAS = aim_plan.BIAS  # E|N(0, 1)|: the L1 error noise alone would leave per cell


@dataclass(frozen=True)
class Params:
    degree: int = knob(3, lo=2, hi=3, main=True,
                       help="Workload: every k-way marginal (2 or 3) with the label the "
                            "synthetic table should keep, at weight 1.")
    other_weight: float = knob(0.1, lo=0.0,
                               help="Workload weight of the 2-way marginals without the "
                                    "label (0: the label's marginals only).")
    bins: int = knob(8, lo=2, hi=64, main=True,
                     help="Equal-width bins per numeric column on its public (or privately "
                          "released) bounds. Fewer bins = fewer cells sharing the noise.")
    rounds: int = knob(165, lo=1, main=True,  # for_data sets 15·d (165: d = 11)
                       help="Rounds after the one-way marginals: with d attributes the first "
                            "rounds get ρ/(d + rounds) each (default: 16·d in all, as the "
                            "paper). Annealing ends sooner.")
    max_model_size: float = knob(4.0, lo=0.0, lo_open=True,
                                 help="Cap on the graphical model's size (MB): candidates "
                                      "that would pass it (scaled by the budget used) are "
                                      "skipped. The paper uses 80.")
    iters: int = knob(100, lo=1, help="Mirror-descent iterations per round (warm-started).")
    final_iters: int = knob(1000, lo=1, help="Mirror-descent iterations of the final fit "
                                             "(1000 in the paper).")
    measure_share: float = knob(0.9, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                                help="Share of each round's budget for the measurement; the "
                                     "rest selects it (0.9 in the paper).")
    bounds_share: float = knob(0.1, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                               help="Budget share for releasing numeric bounds (columns "
                                    "without public bounds only).")
    max_cells: int = knob(10_000, lo=1,
                          help="Workload marginals with more cells than this are left out.")

    @classmethod
    def for_data(cls, data: Dataset) -> "Params":
        """T = 16·d rounds in all (the paper), d the attributes the model sees (label and
        flag columns included; public)."""
        d = len(column_kinds.model_view(data).columns or []) + 1
        return cls(rounds=aim_plan.paper_rounds(d))

    def validate(self, data: Dataset) -> "Params":
        check_knobs(self, TITLE, data)
        if data.kind != "tabular":
            raise InputError(f"{TITLE} models tables; {data.name} is {data.kind} data "
                             "(use dpmerf, datalens or marginals).")
        return self


# ------------------------------------------------------------------ preview


def _plan(config, params: Params, data: Dataset) -> tuple[aim_plan.Budget, float, float, float]:
    budget = aim_plan.plan_budget(config, measure_share=params.measure_share,
                                  bounds_share=params.bounds_share,
                                  n_private_bounds=len(dp_bounds.columns_without_bounds(data)))
    d = len(data.columns) + 1
    return (budget, *aim_plan.first_round(budget, d + params.rounds, d))


def privacy_preview(config, params: Params, data: Dataset) -> dict:
    """The budget and the first rounds' noise, before any record is read."""
    data = column_kinds.model_view(data)  # as `train` models it
    budget, sigma, eps_t, _ = _plan(config, params, data)
    out = {"zCDP budget of the rounds (rho)": budget.rho,
           "first rounds: noise std per count": sigma,
           "first rounds: selection epsilon": eps_t,
           "workload marginals": len(_workload(data, params)),
           "records per 2-way cell (mean)": data.n_train / params.bins ** 2,
           "hint": "AIM measures the marginals the model gets most wrong, round after round, "
                   "and keeps relations between columns that independent marginals lose."}
    if budget.bounds_sigma:
        out["numeric bounds: noise std per count"] = budget.bounds_sigma
    out["accountant"] = ACCOUNTANT if budget.private else privacy.NON_PRIVATE
    return out


# ------------------------------------------------------------------ the mechanism


def _measure(x: np.ndarray, sigma: float) -> np.ndarray:
    """One Gaussian release of a count vector (sensitivity √2)."""
    if sigma <= 0:
        return x.astype(np.float64)
    return x + gaussian_noise(x.shape, sigma, dtype=torch.float64).numpy()


def _select(quality: np.ndarray, eps: float, sensitivity: float):
    """The exponential mechanism by Gumbel-max: argmax of ε·q/(2Δ) + Gumbel noise, with
    uniforms from the OS-entropy generator (never a seed). ε = ∞: the best candidate.
    `quality` (C,) gives one index; (T, C) gives T independent ones (the audit's trials)."""
    quality = np.asarray(quality, np.float64)
    if math.isinf(eps):
        pick = np.argmax(quality, -1)
    else:
        gen = noise_generator()
        u = torch.rand(quality.shape, generator=gen, dtype=torch.float64).numpy()
        gumbel = -np.log(-np.log(u))
        top = quality.max(-1, keepdims=True)
        pick = np.argmax(eps * (quality - top) / (2 * sensitivity) + gumbel, -1)
    return int(pick) if pick.ndim == 0 else pick


def _mbi():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # mbi: counterproductive
    import mbi

    return mbi


def _workload(data: Dataset, params: Params, released=None) -> list[tuple[tuple, float]]:
    """The weighted workload on the discretised table: it depends on the bins' count only,
    so a preview may stand in any bounds for those not yet released."""
    if released is None:
        released = {j: (0.0, 1.0) for j in dp_bounds.columns_without_bounds(data)}
    disc = aim_plan.discretise(data, params.bins, released)
    return aim_plan.workload(disc.names, disc.sizes, params.degree, params.other_weight,
                             params.max_cells)


def _fit(mbi, domain, measurements, n: int, iters: int, warm=None):
    return mbi.estimation.MirrorDescent().estimate(domain, measurements, known_total=float(n),
                                                   iters=iters, warm_start=warm)


def train(config, params: Params, data: Dataset, device, stop, *,
          grown: tuple = ()) -> Iterator[Event]:
    """Bounds (if needed), one-way marginals, then rounds until the budget is spent (or
    `rounds` rounds without noise); `stop` is checked before each round.
    `grown` (timing only, engine/methods/aim/cost.py; without noise): cliques measured
    with the one-way ones, so the rounds after meet a model as large as a late round of
    a run does (and may grow it to max_model_size)."""
    t0 = time.perf_counter()
    mbi = _mbi()
    # A zero-inflated column's point mass is modelled as a flag column of its own, and
    # restored as that exact value after sampling (engine/data/column_kinds.py)
    data = column_kinds.model_view(data)
    budget, sigma, eps_t, rho_used = _plan(config, params, data)
    first_sigma = sigma
    releases: list[dict] = []
    released_bounds = {}
    private_cols = dp_bounds.columns_without_bounds(data)
    if private_cols:  # the only other read of the records: dp_bounds' noisy histogram
        got = dp_bounds.release_bounds(data.x_train[:, private_cols].astype(np.float64),
                                       noise_std=budget.bounds_sigma,
                                       dates=[data.columns[j].date for j in private_cols],
                                       masses=[data.columns[j].mass for j in private_cols])
        released_bounds = dict(zip(private_cols, got))
        releases.append(_gauss("numeric bounds histogram", budget.bounds_sensitivity,
                               budget.bounds_sigma))
    disc = aim_plan.discretise(data, params.bins, released_bounds)
    domain = mbi.Domain(disc.names, disc.sizes)
    records = mbi.Dataset(aim_plan.encode(data.x_train, data.y_train, disc), domain)
    candidates = aim_plan.candidates(_workload(data, params, released_bounds))
    oneway = [(a,) for a in disc.names]
    answers = {cl: np.asarray(records.project(cl).datavector())
               for cl in [*oneway, *candidates]}
    n = data.n_train

    measurements = []
    for cl in oneway:
        y = _measure(answers[cl], sigma)
        measurements.append(mbi.LinearMeasurement(y, cl, stddev=sigma or 1.0))
        releases.append(_gauss("marginal", MARGINAL_SENSITIVITY, sigma, clique=cl))
    if grown:
        if budget.private:
            raise ValueError("a grown model is for timing a stand-in without noise")
        for cl in grown:
            measurements.append(mbi.LinearMeasurement(answers[cl], cl, stddev=1.0))
    model = _fit(mbi, domain, measurements, n, params.iters)
    # Seconds per phase, the yields (the consumer's time) left out: engine/methods/aim/cost.py
    # times a stand-in run by these.
    took = {"setup": time.perf_counter() - t0, "rounds": []}
    yield Event("release", 0, params.rounds, _spent(releases, config),
                message=f"measured {len(measurements)} one-way marginals")

    stopped, t, anneals, last = False, 0, 0, False
    while not last:
        if stop is not None and stop.is_set():
            stopped = True
            break
        t, t_round = t + 1, time.perf_counter()
        if budget.private:
            step = zcdp.gaussian_rho(MARGINAL_SENSITIVITY, sigma) + zcdp.selection_rho(eps_t)
            if budget.rho - rho_used < 2 * step:  # the last round takes what is left
                left = budget.rho - rho_used
                a = budget.measure_share
                sigma = MARGINAL_SENSITIVITY / math.sqrt(2 * a * left)
                eps_t = math.sqrt(8 * (1 - a) * left)
                last = True
            rho_used += zcdp.gaussian_rho(MARGINAL_SENSITIVITY, sigma) + zcdp.selection_rho(eps_t)
            size_limit = params.max_model_size * rho_used / budget.rho
        else:
            last = t >= params.rounds
            size_limit = params.max_model_size * (1.0 if grown else t / params.rounds)
        pool = _small(mbi, candidates, model, size_limit)
        keys = list(pool)
        est = _estimates(model, keys, n, seed=config.seed + t)
        quality = np.array([pool[cl] * (np.abs(answers[cl] - est[cl]).sum()
                                        - BIAS * sigma * answers[cl].size) for cl in keys])
        sens = MARGINAL_L1_SENSITIVITY * max(pool.values())
        cl = keys[_select(quality, eps_t, sens)]
        releases.append(_selection(t, eps_t, sens))
        before = est[cl]  # the model's marginal before this measurement (estimated)
        y = _measure(answers[cl], sigma)
        measurements.append(mbi.LinearMeasurement(y, cl, stddev=sigma or 1.0))
        releases.append(_gauss("marginal", MARGINAL_SENSITIVITY, sigma, clique=cl))
        model = _fit(mbi, domain, measurements, n, params.iters, warm=model)
        if budget.private and np.abs(_project(model, cl) - before).sum() <= BIAS * sigma * y.size:
            sigma, eps_t, anneals = sigma / 2, eps_t * 2, anneals + 1
        took["rounds"].append(time.perf_counter() - t_round)
        yield Event("train", t, params.rounds, _spent(releases, config),
                    message=f"round {t}: measured {' x '.join(cl)}")

    # Post-processing from here: the noisy measurements only.
    t_end = time.perf_counter()
    model = _fit(mbi, domain, measurements, n, params.final_iters, warm=model)
    n_out = config.n_synthetic or n
    t_sample = time.perf_counter()
    x, y = _sample(model, n_out, disc, config.seed)
    took.update(final_fit=t_sample - t_end, sample=time.perf_counter() - t_sample)
    x = column_kinds.restore(x, data)  # kinds enforced: whole numbers, masses, bounds
    show = slice(0, min(100, n_out))
    report = _report(config, budget, releases)
    yield Event("train", t, params.rounds, report.epsilon_spent, samples=(x[show], y[show]))
    info = {"method": TITLE, "params": asdict(params), "steps": t,
            "rounds": t, "selections": t, "measurements": len(measurements),
            "anneals": anneals, "rho_budget": budget.rho,
            "first_sigma": first_sigma,
            "measured": [list(m.clique) for m in measurements],
            "numeric_bounds": {data.columns[j].name: b for j, b in released_bounds.items()},
            "model_cliques": [list(c) for c in model.cliques], "phase_seconds": took}
    result = TrainResult(x, y, report, info, seconds=time.perf_counter() - t0, stopped=stopped)
    yield Event("done", t, params.rounds, report.epsilon_spent, result=result)


def _project(model, cl) -> np.ndarray:
    return np.asarray(model.project(cl).datavector())


def _estimates(model, cliques: list, n: int, *, seed: int) -> dict:
    """The model's marginals of `cliques`, scaled to n: exact for cliques the model holds,
    else counted on MC_ROWS records sampled from it. (mbi's exact variable elimination
    compiles a JAX program per clique, minutes per round on a CPU; the sampling error,
    ~n·√(cells/MC_ROWS) in L1, is far below the selection's noise.) Post-processing."""
    sample = _seeded(seed, lambda: model.synthetic_data(rows=MC_ROWS, method="sample"))
    held = [set(c) for c in model.cliques]
    out = {}
    for cl in cliques:
        if any(set(cl) <= c for c in held):
            out[cl] = _project(model, cl)
        else:
            out[cl] = np.asarray(sample.project(cl).datavector()) * (n / MC_ROWS)
    return out


def _seeded(seed: int, fn):
    """Run `fn` with numpy's global generator (mbi samples with it) seeded from the run's
    seed, and restore it afterwards: sampling randomness, not DP noise."""
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        return fn()
    finally:
        np.random.set_state(state)


def _small(mbi, candidates: dict, model, size_limit: float) -> dict:
    """The paper's `filter_candidates`: cliques inside one the model already has, or
    whose junction tree stays within `size_limit` MB."""
    free = {frozenset(sub) for c in model.cliques for r in range(1, len(c) + 1)
            for sub in itertools.combinations(c, r)}
    cliques = list(model.cliques)
    return {cl: w for cl, w in candidates.items()
            if frozenset(cl) in free or mbi.junction_tree.hypothetical_model_size(
                model.domain, cliques + [cl]) <= size_limit}


def _sample(model, n_out: int, disc, seed: int):
    records = _seeded(seed, lambda: model.synthetic_data(rows=n_out).to_dict())
    return aim_plan.decode(records, disc, np.random.default_rng(seed))


# ------------------------------------------------------------------ the report


ACCOUNTANT = ("Gaussian DP, exact (autodp ComposeGaussian; selections by their bounded-range "
              "Gaussian-DP curve) and zCDP (Canonne-Kamath-Steinke conversion): the smaller")

# The names a run's privacy.releases use (tests/test_disclosures.py maps each to an audit).
RELEASE_NAMES = ("numeric bounds histogram", "marginal", "selection (exponential mechanism)")


def _gauss(name: str, sensitivity: float, sigma: float, clique=None) -> dict:
    out = {"name": name, "kind": "gaussian", "sensitivity": sensitivity, "count": 1,
           "sigma": sigma, "noise_multiplier": sigma / sensitivity,
           "rho": zcdp.gaussian_rho(sensitivity, sigma)}
    return {**out, "clique": list(clique)} if clique else out


def _selection(t: int, eps: float, quality_sensitivity: float) -> dict:
    """A selection as the ledger reads it: the Gaussian mechanism (μ = 1/multiplier,
    sensitivity 1) whose Gaussian-DP curve it satisfies (engine/privacy/zcdp.py)."""
    mu = zcdp.bounded_range_mu(eps)
    return {"name": RELEASE_NAMES[2], "round": t, "kind": "exponential",
            "epsilon": eps, "quality_sensitivity": quality_sensitivity,
            "sensitivity": 1.0, "count": 1, "noise_multiplier": 1.0 / mu, "sigma": 1.0 / mu,
            "rho": zcdp.selection_rho(eps)}


def _epsilons(releases: list[dict], delta: float) -> tuple[float, float, float]:
    """(ε by exact Gaussian-DP composition, ε by zCDP, the zCDP ρ) of the releases so far."""
    rho = sum(r["rho"] for r in releases)
    eps_gdp = total_epsilon(from_releases({"releases": releases}) or (), delta=delta)
    return eps_gdp, zcdp.epsilon(rho, delta), rho


def _spent(releases: list[dict], config) -> float:
    return min(_epsilons(releases, config.delta)[:2])


def _report(config, budget: aim_plan.Budget, releases: list[dict]) -> PrivacyReport:
    """metrics.json's privacy block: both valid bounds, the smaller reported."""
    eps_gdp, eps_z, rho = _epsilons(releases, config.delta)
    accountant = ACCOUNTANT if budget.private else privacy.NON_PRIVATE
    details = {"epsilon_gaussian_dp": eps_gdp, "epsilon_zcdp": eps_z, "rho": rho,
               "rho_budget": budget.rho, "neighbours": "replace-one (n public)",
               "selections": sum(r["kind"] == "exponential" for r in releases),
               "measurements": sum(r["kind"] == "gaussian" for r in releases)}
    return PrivacyReport(config.epsilon, min(eps_gdp, eps_z), config.delta, accountant,
                         tuple(_typed(r) for r in releases), details=details)


def _typed(release: dict) -> NoisyRelease:
    core = ("name", "sensitivity", "count", "sigma", "noise_multiplier")
    return NoisyRelease(*(release[k] for k in core),
                        details={k: v for k, v in release.items() if k not in core})
