"""AIM's public preparation and its privacy budget (engine/methods/aim/method.py runs the mechanism).

Discretisation (nothing read from the private records unless charged or disclosed):
categorical columns use their category list (public metadata, or listed under
`disclosures` when read from a user's file, as for every method); numeric columns get
`bins` equal-width bins on their public bounds, or, where a column has none, on bounds
released privately by engine.privacy.dp_bounds (its noisy grid histogram, sensitivity
√(2·k) for k such columns, charged below). The label is one more attribute.

Budget (replace-one neighbours, n public). The run's (ε, δ) is met twice over:
* the ledger (engine/privacy/ledger.py) composes every run as Gaussian mechanisms, exactly, and
  charges a run before it starts with the one Gaussian mechanism of multiplier z whose ε
  at δ is the target. AIM's releases are Gaussian marginals (μ² = Δ²/σ² each) and
  ε_t-bounded-range selections (μ_BR(ε_t)² ≤ (π/8)·ε_t², engine/privacy/zcdp.py). A round with
  zCDP budget ρ_t spends α·ρ_t on its measurement (μ² = 2αρ_t) and (1 − α)·ρ_t on its
  selection (ε_t² = 8(1 − α)ρ_t, μ² ≤ π(1 − α)ρ_t), so μ² ≤ c·ρ_t, c = 2α + π(1 − α).
  AIM's ρ budget is therefore (1/z² − μ_bounds²)/c: whatever the rounds turn out to be,
  the run's Gaussian-DP μ stays within the planned charge's 1/z, and the ledger's exact
  composition with other runs holds (Gaussian DP composes adaptively: Smith & Thakurta
  2022).
* the paper's own accounting: the same releases are ρ-zCDP with ρ = Σ ρ_t + μ_bounds²/2,
  converted by Canonne–Kamath–Steinke (engine/privacy/zcdp.py). At the ε and δ this project
  allows this ρ budget is 4–15 % larger than the paper's (CKS) calibration would give,
  so nothing is lost by meeting both.
The reported ε is the smaller of the two valid bounds.

Workload (public choices, no record read). Where the table has a label (every table
here does: the downstream task is public knowledge), the marginals a classifier needs
come first: every `degree`-way marginal containing the label has weight 1, every other
2-way marginal `other_weight`; the candidates are the workload's cliques and all their
subsets, each scored by the weighted number of workload attributes it covers (the paper's
`compile_workload`). Rounds: T = 16·d in all, one-way marginals included (the paper).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from engine.privacy import dp_bounds
from engine.privacy import accountant as privacy
from engine.privacy import zcdp
from engine.data.dataset import Dataset
from engine.methods.tabular_bins import Column, bin_codes, public_columns

MARGINAL_SENSITIVITY = math.sqrt(2.0)  # replace-one: one cell −1, one cell +1 (L2)
MARGINAL_L1_SENSITIVITY = 2.0  # the same change in L1: the quality score's, per unit weight
LABEL = "label"
ROUNDS_PER_ATTRIBUTE = 16  # the paper: T = 16·d rounds, one-way marginals included


def gdp_per_rho(measure_share: float) -> float:
    """c: a round's Gaussian-DP μ² per unit of its zCDP budget (module docstring): a
    measurement's μ² is 2ρ; a selection's ε_t² = 8ρ, and μ² ≤ (π/8)·ε_t² (engine/privacy/zcdp.py)."""
    return 2.0 * measure_share + 8 * zcdp.BR_MU2_PER_EPS2 * (1.0 - measure_share)


@dataclass
class Budget:
    """What the run may spend: `rho` for AIM's rounds, and the bounds release."""

    rho: float  # zCDP budget of the rounds (inf: no noise)
    bounds_sigma: float  # noise std of the bounds histogram (0: none, or no noise)
    bounds_sensitivity: float
    measure_share: float

    @property
    def private(self) -> bool:
        return math.isfinite(self.rho)


def plan_budget(config, *, measure_share: float, bounds_share: float,
                n_private_bounds: int) -> Budget:
    """Split the run's (ε, δ) between the bounds release and the rounds (docstring)."""
    sens = dp_bounds.sensitivity(n_private_bounds) if n_private_bounds else 0.0
    if not config.private:
        return Budget(math.inf, 0.0, sens, measure_share)
    z = privacy.calibrate_noise_multiplier(epsilon=config.epsilon, delta=config.delta)
    mu2 = 1.0 / z ** 2
    sigma_b, mu2_b = 0.0, 0.0
    if n_private_bounds:
        mu2_b = bounds_share * mu2
        sigma_b = sens / math.sqrt(mu2_b)
    # (1 − 1e-9): floating-point room so the recomputed total never passes 1/z².
    rho = (mu2 - mu2_b) / gdp_per_rho(measure_share) * (1 - 1e-9)
    return Budget(rho, sigma_b, sens, measure_share)


def first_round(budget: Budget, rounds: int, n_oneway: int) -> tuple[float, float, float]:
    """(σ, ε_t, ρ of the one-way measurements) of the first rounds: the budget shared
    over `rounds` rounds, as the paper starts (ε_t = 0 / σ = 0 without noise)."""
    if not budget.private:
        return 0.0, math.inf, 0.0
    a = budget.measure_share
    sigma = MARGINAL_SENSITIVITY * math.sqrt(rounds / (2 * a * budget.rho))
    eps = math.sqrt(8 * (1 - a) * budget.rho / rounds)
    return sigma, eps, n_oneway * zcdp.gaussian_rho(MARGINAL_SENSITIVITY, sigma)


def paper_rounds(n_attributes: int) -> int:
    """Rounds after the one-way marginals so that T = 16·d in all (the paper's default)."""
    return (ROUNDS_PER_ATTRIBUTE - 1) * n_attributes


# E|N(0, 1)|: a count's expected L1 error under noise std 1 (the anneal rule's and the
# quality score's noise term, engine/methods/aim/method.py)
BIAS = math.sqrt(2 / math.pi)
PATHS = 256  # schedules drawn (seeded: public) to average the anneals' chance over


def anneal_chance(sigma: float, cells: float, n: int) -> float:
    """The chance that a round at noise std `sigma` anneals, from public figures only.
    The rule (method.train) anneals when the measured marginal moved the model by at most
    the noise's expected L1 error, BIAS·σ·cells. The move is at most 2n (two tables of n
    records differ by at most 2n in L1), and nothing read says where below: it is 2n·U·V,
    U the table's dependence on that marginal as a share of the most there can be, V the
    share of it the model has not learnt yet, each uniform on [0, 1] (no record read, no
    constant fitted). With r = BIAS·σ·cells/(2n), P(2n·U·V ≤ BIAS·σ·cells) = r·(1 − ln r),
    and 1 from r ≥ 1 on: noise that large anneals whatever the data."""
    r = BIAS * sigma * cells / (2 * n)
    return 1.0 if r >= 1 else r * (1 - math.log(r))


def expected_rounds(budget: Budget, rounds: int, n_oneway: int, n: int | None = None,
                    cells: float | None = None) -> int:
    """Selection rounds of method.train's schedule (the last takes what is left), each
    round annealing (σ halved, ε_t doubled: 4× the budget) with `anneal_chance` at its σ
    for a table of `n` records whose selected marginals have `cells` cells; the mean over
    PATHS seeded schedules. Without `n`: never annealing, the most rounds a run makes.
    `rounds`: those after the one-way marginals; public figures only."""
    if not budget.private:
        return rounds
    rng = np.random.default_rng(0)
    made = []
    for _ in range(PATHS if n else 1):
        sigma, eps, used = first_round(budget, n_oneway + rounds, n_oneway)
        t = 0
        while True:
            t += 1
            step = zcdp.gaussian_rho(MARGINAL_SENSITIVITY, sigma) + zcdp.selection_rho(eps)
            if budget.rho - used < 2 * step:
                break
            used += step
            if n and rng.random() < anneal_chance(sigma, cells, n):
                sigma, eps = sigma / 2, eps * 2
        made.append(t)
    return max(1, round(float(np.mean(made))))


def mean_cells(work: list[tuple[tuple, float]], names: list[str], sizes: list[int]) -> float:
    """The cells of the marginal a round selects, on average: the candidates' (the
    workload's downward closure) weighted by their weight, which the selection's quality
    score scales by. Public: the bins and categories only."""
    size = dict(zip(names, sizes))
    cand = candidates(work)
    total = sum(cand.values())
    return sum(w * math.prod(size[a] for a in cl) for cl, w in cand.items()) / total


# ------------------------------------------------------------------ workload


def workload_cliques(names: list[str], degree: int) -> tuple[list[tuple], list[tuple]]:
    """(the `degree`-way cliques with the label, the 2-way ones without it): the label's
    marginals first, then every other pair (module docstring)."""
    features = [a for a in names if a != LABEL]
    if LABEL not in names:  # no label: every `degree`-way marginal alike
        return list(itertools.combinations(features, degree)), []
    label = [(*cl, LABEL) for cl in itertools.combinations(features, degree - 1)]
    return label, list(itertools.combinations(features, 2))


def workload(names: list[str], sizes: list[int], degree: int, other_weight: float,
             max_cells: int) -> list[tuple[tuple, float]]:
    """[(clique, weight)]: the label's cliques weight 1, other pairs `other_weight`;
    cliques with more than `max_cells` cells are left out (the paper's filter)."""
    size = dict(zip(names, sizes))
    label, other = workload_cliques(names, degree)
    weighted = [(cl, 1.0) for cl in label] + [(cl, float(other_weight)) for cl in other]
    return [(cl, w) for cl, w in weighted if w > 0 and math.prod(size[a] for a in cl) <= max_cells]


def candidates(work: list[tuple[tuple, float]]) -> dict[tuple, float]:
    """The workload's downward closure, each clique weighted by Σ w·|clique ∩ W| over the
    workload cliques W (the paper's `compile_workload`), smallest cliques first."""
    closure = {sub for cl, _ in work for r in range(1, len(cl) + 1)
               for sub in itertools.combinations(cl, r)}
    return {cl: float(sum(w * len(set(cl) & set(wl)) for wl, w in work))
            for cl in sorted(closure, key=lambda c: (len(c), c))}


# ------------------------------------------------------------------ discretisation


@dataclass
class Discrete:
    """The mbi view of a table: one integer attribute per column plus the label."""

    columns: list[Column]  # binning of every feature column
    names: list[str]  # attribute names, features then LABEL
    sizes: list[int]


def discretise(data: Dataset, bins: int, released: dict[int, tuple[float, float]]) -> Discrete:
    """Bins from public metadata and the released bounds only (as the marginals
    baseline bins)."""
    cols = public_columns(data, bins, released=released)
    names = [f"c{j}" for j in range(len(cols))] + [LABEL]
    return Discrete(cols, names, [c.size for c in cols] + [data.n_classes])


def encode(x: np.ndarray, y: np.ndarray, disc: Discrete) -> dict[str, np.ndarray]:
    """Integer codes per attribute; row i depends on record i only (values clipped into
    the end bins), so one replaced record moves one cell of every marginal."""
    codes = bin_codes(x, disc.columns)
    out = {name: codes[:, j] for j, name in enumerate(disc.names[:-1])}
    out[LABEL] = np.asarray(y, np.int64)
    return out


def decode(records: dict[str, np.ndarray], disc: Discrete, rng) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic codes back to the table: a category's code, or a value uniform in its
    bin (post-processing)."""
    n = len(records[LABEL])
    x = np.empty((n, len(disc.columns)))
    for j, col in enumerate(disc.columns):
        b = np.asarray(records[disc.names[j]], np.int64)
        if col.edges is None:
            x[:, j] = b
        else:
            lo, hi = col.edges[b], col.edges[b + 1]
            x[:, j] = lo + rng.random(n) * (hi - lo)
    return x, np.asarray(records[LABEL], np.int64)
