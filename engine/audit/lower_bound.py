"""Empirical privacy audit: a statistical *lower* bound on ε from distinguishing trials.

If a mechanism M is (ε, δ)-DP then for neighbouring datasets D0, D1 and ANY test that
says "D1" on a set S of outputs, with FPR = P[M(D0) ∈ S] and FNR = P[M(D1) ∉ S],

    FPR + e^ε·FNR ≥ 1 − δ    and    FNR + e^ε·FPR ≥ 1 − δ,

so ε ≥ max(log((1−δ−FNR)/FPR), log((1−δ−FPR)/FNR)). We run the release many times on a
worst-case pair (one record replaced by one whose contribution is opposite), score each
output by its projection on the direction D1 − D0, pick a threshold on one part of the
trials and measure the error rates on the rest, replacing FPR and FNR by their
Clopper–Pearson upper bounds (each at level α/2, so both hold together with probability
≥ 1 − α). The result is a (1 − α)-confidence lower bound: if it exceeds the claimed ε,
the implementation does not meet its claim (wrong σ, wrong sensitivity, ...).

The releases themselves, run through the engine's own code with planted bugs caught, are
declared by each method (its AUDIT module's `RELEASES`: engine/methods/<method>/audit.py,
found through engine/methods/registry.py); what a projection cannot see (correlated or
skipped noise, the grid) is checked on the same releases by engine/audit/noise.py;
`box_muller_trace` is the floating-point test of the noise itself. No privacy claim is
made by these modules; they only test the claims of the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine.methods import registry
from engine.methods.audit_harness import fast_sampler
from engine.privacy import accountant as privacy
from engine.privacy.audit_stats import epsilon_lower_bound


def method_audits() -> dict[str, tuple[str, ...]]:
    """Every registered method and the audits its AUDIT module declares, which run its
    release as its `train` does: through `train` itself (AIM: its measurements by
    `_measure`, its selections by `_select`), or the smallest function `train` calls that
    holds the whole release (DP-MERF's `_release`). Claims come from the target (ε, δ)
    (engine/methods/audit_harness.target_multiplier), never from a run's report."""
    return {m: tuple(_declared(m, "RELEASES")) for m in registry.METHODS}


def releases() -> dict[str, Callable]:
    """Every declared audit by name (each method's AUDIT module's RELEASES)."""
    return declared("RELEASES")


def declared(attr: str) -> dict[str, Callable]:
    """The union over the registered methods of their AUDIT modules' `attr` (RELEASES,
    DRAWS). Two methods may declare one entry (the numeric-bounds histogram of
    engine/methods/bounds_audit.py); one name for two different functions is an error,
    so a name always says what ran."""
    out: dict[str, Callable] = {}
    for method in registry.METHODS:
        for name, fn in _declared(method, attr).items():
            if out.setdefault(name, fn) is not fn:
                raise ValueError(f"{method}'s {attr} entry {name!r} is another method's name.")
    return out


def _declared(method: str, attr: str) -> dict[str, Callable]:
    module = registry.part_module(method, "AUDIT")
    return dict(getattr(module, attr, {}))

@dataclass(frozen=True)
class AuditResult:
    name: str
    claimed_epsilon: float
    delta: float
    epsilon_lb: float  # the (confidence)-level lower bound
    confidence: float
    threshold: float
    fpr: float  # measured on the evaluation half
    fnr: float
    trials: int  # per dataset (both halves)

    @property
    def passed(self) -> bool:
        return self.epsilon_lb <= self.claimed_epsilon


def _errors(s0: np.ndarray, s1: np.ndarray, t: float) -> tuple[int, int]:
    """Test "output came from D1" iff score > t: (false positives, false negatives)."""
    return int((s0 > t).sum()), int((s1 <= t).sum())


def audit_scores(s0, s1, *, delta: float, claimed_epsilon: float, name: str = "",
                 confidence: float = 0.95, select_fraction: float = 0.3) -> AuditResult:
    """Threshold chosen on the first `select_fraction` of each score array, bound from
    the rest.

    The threshold maximises the same Clopper–Pearson bound on the selection part, so the
    evaluation part is untouched by the choice and its bound stays valid. Most trials go
    to evaluation: the bound is limited by how small an FPR it can certify (~3/n).
    """
    s0, s1 = np.asarray(s0, np.float64), np.asarray(s1, np.float64)
    h0, h1 = int(len(s0) * select_fraction), int(len(s1) * select_fraction)
    sel0, sel1, ev0, ev1 = s0[:h0], s1[:h1], s0[h0:], s1[h1:]
    cands = np.unique(np.quantile(np.concatenate([sel0, sel1]), np.linspace(0, 1, 401)))
    best_t, best = float(cands[0]), -1.0
    for t in cands:
        fp, fn = _errors(sel0, sel1, t)
        lb = epsilon_lower_bound(fp, h0, fn, h1, delta=delta, confidence=confidence)
        if lb > best:
            best, best_t = lb, float(t)
    fp, fn = _errors(ev0, ev1, best_t)
    lb = epsilon_lower_bound(fp, len(ev0), fn, len(ev1), delta=delta, confidence=confidence)
    return AuditResult(name, claimed_epsilon, delta, lb, confidence, best_t,
                       fp / len(ev0), fn / len(ev1), len(s0))


def run_audit(name: str, trials: int, *, epsilon: float, delta: float,
              audit_delta: float | None = None, confidence: float = 0.95,
              exact_noise: bool = False, **kw) -> AuditResult:
    """Audit release `name` configured for (epsilon, delta).

    Every release claims to be no more revealing than one Gaussian mechanism of some
    multiplier z, i.e. (ε(z, δ'), δ') for EVERY δ' (its privacy profile). The bound is
    checked at `audit_delta` (default: delta): a δ' near 1/trials lets the trials resolve
    the claim, so a near-tight audit (and a small planted bug) becomes visible.
    `exact_noise=False` draws the trials with `audit_harness.fast_sampler` (same
    distribution, much faster); True uses engine/privacy/noise.py's sampler itself.
    """
    release = releases()[name]
    if exact_noise:
        s0, s1, z = release(trials, epsilon=epsilon, delta=delta, **kw)
    else:
        with fast_sampler():
            s0, s1, z = release(trials, epsilon=epsilon, delta=delta, **kw)
    at = delta if audit_delta is None else audit_delta
    claimed = privacy.epsilon_for(z, delta=at)
    return audit_scores(s0, s1, delta=at, claimed_epsilon=claimed, name=name,
                        confidence=confidence)


# ----------------------------------------------------- floating-point trace of the noise


def box_muller_trace(residual, std: float, *, max_radius2: float = 0.02) -> tuple[int, float]:
    """The review's floating-point distinguishing statistic (Mironov 2012 style) on noise
    `residual` = release − guessed exact statistic, with the noise's std.

    torch's CPU float32 `randn` fills blocks of 16 by Box–Muller from 24-bit uniforms:
    value j and j + 8 share a radius r, with r² = −2·log(u) and u a multiple of 2^-24 —
    so exp(−r²/2) of each pair lands on the 2^-24 grid. For small r the float32 rounding
    of the values moves that point by far less than a grid step, so the trace is sharp.
    Returns (pairs looked at: those with r² < max_radius2, fraction within 0.1 of a grid
    point). Noise without that structure gives ≈ 0.2 (the width of the window); torch's
    gives ≈ 1; a wrong guess of the statistic also gives ≈ 0.2, which is the attack.
    """
    z = np.asarray(residual, np.float64).reshape(-1) / std
    n = len(z) // 16 * 16
    pairs = z[:n].reshape(-1, 2, 8)
    r2 = pairs[:, 0, :] ** 2 + pairs[:, 1, :] ** 2
    small = r2 < max_radius2
    u = np.exp(-r2[small] / 2) * 2.0 ** 24
    near = np.abs(u - np.round(u)) < 0.1
    return int(small.sum()), float(near.mean()) if small.any() else 0.0
