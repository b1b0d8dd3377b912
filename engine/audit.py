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

The releases below are built from the engine's own pieces — `engine.features`,
`engine.dpmerf._releases`, `engine.privacy.calibrate_releases`/`gaussian_noise`,
`engine.datalens.partition`/`topk_sto_sign`/`top_agg` — so a bug in any of them shows up
here. Trials are vectorised (one noise draw of shape (trials, ...)). No privacy claim is
made by this module; it only tests the claims of the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from engine import features as fx
from engine import privacy

# ------------------------------------------------------------------ pure statistics


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided (1 − alpha) upper confidence bound on a binomial rate with k of n."""
    from scipy.stats import beta

    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """The ε the (ε, δ) inequalities force for one test with these error rates (≥ 0)."""
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if b <= 0:
            return math.inf if 1 - delta - a > 0 else best
        if 1 - delta - a > 0:
            best = max(best, math.log((1 - delta - a) / b))
    return best


def epsilon_lower_bound(fp: int, n0: int, fn: int, n1: int, *, delta: float,
                        confidence: float = 0.95) -> float:
    """High-confidence lower bound on ε from fp false positives in n0 trials on D0 and
    fn false negatives in n1 trials on D1 (Clopper–Pearson, union bound over the two)."""
    alpha = (1.0 - confidence) / 2
    return epsilon_from_rates(clopper_pearson_upper(fp, n0, alpha),
                              clopper_pearson_upper(fn, n1, alpha), delta)


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


# --------------------------------------------------------------- the audited releases


def _project(out: torch.Tensor, mean0: torch.Tensor, mean1: torch.Tensor) -> np.ndarray:
    """Score = projection of each trial's output on the unit direction mean1 − mean0."""
    u = (mean1 - mean0).double().flatten()
    u = u / u.norm()
    return ((out.double().flatten(1) - mean0.double().flatten()) @ u).numpy()


def dpmerf_embedding_scores(trials: int, *, epsilon: float, delta: float, m: int = 20,
                            n_features: int = 16, n_classes: int = 2,
                            noise_scale: float = 1.0, seed: int = 0):
    """The DP-MERF labelled mean-embedding release on a worst-case neighbouring pair.

    Frequencies are odd multiples of π, so φ(1) = −φ(0) exactly (public frequencies may be
    anything; DP must hold for all of them): replacing a class-0 record x = 0 by x' = 1 moves
    the embedding by exactly 2/m, the stated sensitivity. σ comes from the real release
    plan (`dpmerf._releases` + `calibrate_releases`); `noise_scale` tampers with it.
    Returns (scores on D0, scores on D1, claimed ε of the release).
    """
    from engine import dpmerf

    gen = torch.Generator().manual_seed(seed)
    w = math.pi * (2 * torch.randint(-3, 4, (1, n_features // 2), generator=gen) + 1).float()
    x0 = torch.zeros(m, 1)
    y = torch.arange(m) % n_classes
    x1 = x0.clone()
    x1[0] = 1.0  # record 0 (class 0) replaced by its opposite in feature space
    onehot = F.one_hot(y, n_classes).float()
    emb0 = fx.chunked_embedding(x0, onehot, lambda b: fx.rff(b, w))
    emb1 = fx.chunked_embedding(x1, onehot, lambda b: fx.rff(b, w))
    plan = dpmerf._releases(dpmerf.Params(labels="balanced"), m, heterogeneous=False,
                            n_private_bounds=0)
    report = privacy.calibrate_releases(epsilon=epsilon, delta=delta, releases=plan)
    sigma = report["releases"][-1]["sigma"] * noise_scale
    out0 = emb0 + privacy.gaussian_noise((trials, *emb0.shape), sigma, dtype=torch.float64)
    out1 = emb1 + privacy.gaussian_noise((trials, *emb1.shape), sigma, dtype=torch.float64)
    return _project(out0, emb0, emb1), _project(out1, emb0, emb1), report["epsilon_spent"]


def class_counts_scores(trials: int, *, epsilon: float, delta: float, m: int = 30,
                        n_classes: int = 3, noise_scale: float = 1.0):
    """The class-counts release (as DP-MERF's labels="counts" mode does it) on a pair that
    moves one record from class 0 to class 1 (change √2, the stated sensitivity)."""
    y0 = torch.arange(m) % n_classes
    y1 = y0.clone()
    y1[0] = 1  # record 0 was class 0
    c0 = torch.bincount(y0, minlength=n_classes).double()
    c1 = torch.bincount(y1, minlength=n_classes).double()
    report = privacy.calibrate_releases(
        epsilon=epsilon, delta=delta,
        releases=[privacy.Release("class counts", fx.COUNTS_SENSITIVITY)])
    sigma = report["releases"][0]["sigma"] * noise_scale
    out0 = c0 + privacy.gaussian_noise((trials, n_classes), sigma, dtype=torch.float64)
    out1 = c1 + privacy.gaussian_noise((trials, n_classes), sigma, dtype=torch.float64)
    return _project(out0, c0, c1), _project(out1, c0, c1), report["epsilon_spent"]


def datalens_votes(records: torch.Tensor, parts: np.ndarray, top_k: int) -> torch.Tensor:
    """Each teacher's vote: topk_sto_sign of the sum of its partition's records (a stand-in
    for its gradient; c = 1 and |g| ≥ 1 make every vote deterministic)."""
    from engine import datalens

    grads = records[torch.as_tensor(parts)].sum(1)  # (teachers, d)
    return datalens.topk_sto_sign(grads, top_k, 1.0)


def datalens_scores(trials: int, *, epsilon: float, delta: float, teachers: int = 10,
                    per_teacher: int = 3, top_k: int = 16, beta: float = 0.5,
                    noise_scale: float = 1.0, partition_fn=None, seed: int = 0):
    """DataLens: one synthetic record's aggregated vote (top_agg) on a worst-case pair.

    Records live in d = 2k dims. Every record is 1 on the last k coordinates; the target
    record is instead +M on the first k (D0) or −M (D1), so its teacher's k votes flip sign
    (change 2√k, the stated sensitivity) and the other teachers vote elsewhere. The real
    `partition` decides which teacher holds it (`partition_fn` can tamper with that).
    σ = z·2√k with z calibrated for the claimed ε of one release (`datalens_epsilon`).
    """
    from engine import datalens

    part = partition_fn or datalens.partition
    n = teachers * per_teacher
    parts = part(n, teachers, seed, per_teacher)
    d = 2 * top_k
    base = torch.zeros(n, d)
    base[:, top_k:] = 1.0
    target = int(parts[0, 0])
    big = float(n + 1)  # larger than any teacher's sum elsewhere, so top-k picks these
    r0, r1 = base.clone(), base.clone()
    r0[target, :top_k], r0[target, top_k:] = big, 0.0
    r1[target, :top_k], r1[target, top_k:] = -big, 0.0
    v0, v1 = datalens_votes(r0, parts, top_k), datalens_votes(r1, parts, top_k)
    z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=delta)
    sigma = z * 2 * math.sqrt(top_k)
    claimed = privacy.datalens_epsilon(steps=1, top_k=top_k, sigma=sigma, batch=1, delta=delta)
    sigma *= noise_scale
    out0 = datalens.top_agg(v0[:, None, :].expand(-1, trials, -1), sigma, beta)
    out1 = datalens.top_agg(v1[:, None, :].expand(-1, trials, -1), sigma, beta)
    mean0 = v0.sum(0, dtype=torch.float32)
    mean1 = v1.sum(0, dtype=torch.float32)
    return _project(out0, mean0, mean1), _project(out1, mean0, mean1), claimed


RELEASES = {
    "DP-MERF mean embedding": dpmerf_embedding_scores,
    "class counts": class_counts_scores,
    "DataLens top_agg votes": datalens_scores,
}


def run_audit(name: str, trials: int, *, epsilon: float, delta: float,
              confidence: float = 0.95, **kw) -> AuditResult:
    s0, s1, claimed = RELEASES[name](trials, epsilon=epsilon, delta=delta, **kw)
    return audit_scores(s0, s1, delta=delta, claimed_epsilon=claimed, name=name,
                        confidence=confidence)
