"""Membership inference against a released synthetic set: the attacks and their figures.

NOT PRIVATE. Every figure here is computed from the run's private training records (the
members) and its held-back records (the non-members). It is a diagnostic for the data
owner, never part of the release, and lies outside the run's ε (metrics.json's
`disclosures` says so). engine/audit/membership_run.py reads a run's files and writes the result
to its own file, attack.json, next to (never inside) the released files.

The game, as the literature plays it black-box: the attacker holds the released
synthetic records S and reference records R from the same distribution (never used by
the run) and gets a target record x; it answers "member" when its score s(x) is high.
Members are training records, non-members held-back records disjoint from R; both are
sampled to equal counts. Attacks (higher score = "member"):

  * dcr: minus the distance from x to its closest synthetic record (GAN-Leaks' full
    black-box attack, Chen et al. 2020; "distance to closest record").
  * dcr_calibrated: the same minus the distance from x to its closest reference
    record (GAN-Leaks' calibration by a reference model): records that lie in dense
    regions are near everything, not only near the synthetic set.
  * domias: log p_S(x) − log p_R(x), the density of the synthetic set over that of the
    reference set (DOMIAS, van Breugel et al. 2023), both by Gaussian kernel density on
    a whitened PCA of the records fitted on R alone (the attacker's own representation).

Membership is decided per record by a split that never looks at values, so DP bounds
these attacks too (Humphries et al. 2020): every (FPR, TPR) an attack reaches lies under
the run's trade-off curve. `bound_check` tests that with Clopper–Pearson intervals; a
point above the curve beyond its interval is a bug in the code or in the accounting.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

TITLES = {
    "dcr": "distance to closest synthetic record (GAN-Leaks)",
    "dcr_calibrated": "closest-record distance, calibrated by reference data (GAN-Leaks cal.)",
    "domias": "density ratio synthetic / reference (DOMIAS, PCA + KDE)",
}
TARGET_FPR = 0.01  # the headline figure: TPR at 1 % FPR (Carlini et al. 2022's low-FPR view)
# FPRs at which each attack's point is checked against the bound.
CHECK_FPRS = (0.01, 0.05, 0.1, 0.25, 0.5)
CHECK_CONFIDENCE = 0.99  # all of one attack's checks hold together at this level
# DOMIAS' representation: at most 24 whitened PCA components (all of a small table), and
# the synthetic set's KDE narrower than Scott's rule, since a memorised record raises the
# density only within about one bandwidth of itself. Both chosen once on the memorising
# control (a 90 % subsample of the training records): digits AUC .63 at 8 components and
# Scott's rule, .90 at half of it, .93 with 24 components; the mixed CSV of bench/attacks.py
# .52 at 8 components, .90 with all 20.
PCA_COMPONENTS = 24
SYNTHETIC_BANDWIDTH = 0.5
# A KDE on a sample of the synthetic set would miss most memorised records (the signal is
# one kernel per record), so only very large sets are thinned.
KDE_MAX_POINTS = 50_000


# ------------------------------------------------------------------ the attacks
def _nearest(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Euclidean distance from each query to its nearest point (brute force, BLAS)."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(points)
    return nn.kneighbors(queries, return_distance=True)[0][:, 0]


def _kde_logdensity(points: np.ndarray, queries: np.ndarray, rng, *, factor: float = 1.0
                    ) -> np.ndarray:
    """log density by a Gaussian KDE, bandwidth `factor` × Scott's rule (data whitened)."""
    from sklearn.neighbors import KernelDensity

    if len(points) > KDE_MAX_POINTS:
        points = points[rng.choice(len(points), KDE_MAX_POINTS, replace=False)]
    h = factor * len(points) ** (-1.0 / (points.shape[1] + 4))
    return KernelDensity(bandwidth=h, rtol=1e-4).fit(points).score_samples(queries)


def attack_scores(targets: np.ndarray, synthetic: np.ndarray, reference: np.ndarray, *,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """Each attack's score per target (higher = "member"); rows are encoded records.

    Uses only what the attacker holds: the synthetic set and the reference set (the
    targets are scored one by one, never fitted on)."""
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(seed)
    d_syn = _nearest(synthetic, targets)
    d_ref = _nearest(reference, targets)
    k = max(1, min(PCA_COMPONENTS, targets.shape[1], len(reference) - 1))
    pca = PCA(n_components=k, whiten=True, random_state=seed).fit(reference)
    z_t, z_s, z_r = (pca.transform(a) for a in (targets, synthetic, reference))
    density = (_kde_logdensity(z_s, z_t, rng, factor=SYNTHETIC_BANDWIDTH)
               - _kde_logdensity(z_r, z_t, rng))
    return {"dcr": -d_syn, "dcr_calibrated": d_ref - d_syn, "domias": density}


# ------------------------------------------------------------------ the figures
def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval on a binomial rate with k successes of n."""
    from engine.privacy.audit_stats import clopper_pearson_upper

    alpha = (1.0 - confidence) / 2
    return (1.0 - clopper_pearson_upper(n - k, n, alpha), clopper_pearson_upper(k, n, alpha))


def rates_at(s_in: np.ndarray, s_out: np.ndarray, fpr: float, *, seed: int = 0
             ) -> tuple[int, int]:
    """(true positives, false positives) of the test "score > t" with t the
    (floor(fpr·n)+1)-th highest non-member score: at most floor(fpr·n) non-members are
    flagged. Ties (many records at distance 0 from a synthetic record, on a table of
    few distinct values) are broken at random, as a randomised test does, so a tie at
    the top does not leave the whole tied block unflagged."""
    rng = np.random.default_rng(seed)
    scores = np.r_[s_in, s_out]
    order = np.lexsort((rng.random(len(scores)), scores))  # by score, then at random
    rank = np.empty(len(scores))
    rank[order] = np.arange(len(scores))
    r_in, r_out = rank[:len(s_in)], rank[len(s_in):]
    allowed = int(math.floor(fpr * len(s_out) + 1e-9))
    # The true FPR at this order statistic is Beta(k+1, n−k)-distributed, so the
    # Clopper–Pearson upper limit on k of n covers it exactly.
    t = np.sort(r_out)[::-1][allowed] if allowed < len(s_out) else -np.inf
    return int((r_in > t).sum()), int((r_out > t).sum())


def auc_interval(s_in: np.ndarray, s_out: np.ndarray, *, confidence: float = 0.95,
                 resamples: int = 300, seed: int = 0) -> tuple[float, float, float, float]:
    """ROC-AUC, its percentile bootstrap interval and the bootstrap standard deviation
    (members and non-members resampled apart, so the balance stays as measured)."""
    from scipy.stats import rankdata

    def auc(a, b):
        r = rankdata(np.concatenate([a, b]))  # Mann–Whitney U, ties counted half
        return (r[:len(a)].sum() - len(a) * (len(a) + 1) / 2) / (len(a) * len(b))

    rng = np.random.default_rng(seed)
    boot = [auc(rng.choice(s_in, len(s_in)), rng.choice(s_out, len(s_out)))
            for _ in range(resamples)]
    lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(auc(s_in, s_out)), float(lo), float(hi), float(np.std(boot))


def roc_points(s_in: np.ndarray, s_out: np.ndarray, n: int = 101) -> dict[str, list[float]]:
    """The ROC curve thinned to about `n` points (for the chart; no per-record scores)."""
    from sklearn.metrics import roc_curve

    y = np.r_[np.ones(len(s_in)), np.zeros(len(s_out))]
    fpr, tpr, _ = roc_curve(y, np.r_[s_in, s_out], drop_intermediate=True)
    keep = np.unique(np.r_[np.linspace(0, len(fpr) - 1, min(n, len(fpr))).astype(int)])
    return {"fpr": [round(float(v), 5) for v in fpr[keep]],
            "tpr": [round(float(v), 5) for v in tpr[keep]]}


def measured_point(s_in, s_out, fpr: float, confidence: float) -> dict:
    """One operating point with Clopper–Pearson intervals on both rates."""
    tp, fp = rates_at(s_in, s_out, fpr)
    m, n = len(s_in), len(s_out)
    (tpr_lo, tpr_hi), (fpr_lo, fpr_hi) = clopper_pearson(tp, m, confidence), \
        clopper_pearson(fp, n, confidence)
    return {"target_fpr": fpr, "fpr": fp / n, "fpr_ci": [fpr_lo, fpr_hi],
            "tpr": tp / m, "tpr_ci": [tpr_lo, tpr_hi]}


def summarise(s_in: np.ndarray, s_out: np.ndarray, *, confidence: float = 0.95,
              check_confidence: float = CHECK_CONFIDENCE, seed: int = 0) -> dict:
    """AUC (bootstrap interval) and TPR at 1 % FPR (Clopper–Pearson) at `confidence`,
    the thinned ROC, and what `bound_check` reads: the points at CHECK_FPRS and a lower
    limit on the AUC, all at `check_confidence` together (Bonferroni over the points and
    the AUC), so one attack raises a false alarm less often than 1 − check_confidence."""
    from scipy.stats import norm

    auc, lo, hi, sd = auc_interval(s_in, s_out, confidence=confidence, seed=seed)
    tests = len(CHECK_FPRS) + 1
    each = 1 - (1 - check_confidence) / tests
    points = [measured_point(s_in, s_out, f, each) for f in CHECK_FPRS]
    head = measured_point(s_in, s_out, TARGET_FPR, confidence)
    return {"auc": auc, "auc_ci": [lo, hi], "tpr_at_1pct_fpr": head["tpr"],
            "tpr_at_1pct_fpr_ci": head["tpr_ci"], "fpr_reached": head["fpr"],
            "fpr_reached_ci": head["fpr_ci"], "check_confidence": check_confidence,
            "points": points, "auc_check_low": auc - float(norm.ppf(1 - (1 - each) / 2)) * sd,
            "roc": roc_points(s_in, s_out)}


# ------------------------------------------------------------------ inside the bound?
def bound_check(summary: dict, tpr_bound: Callable[[np.ndarray], np.ndarray], *,
                name: str) -> list[str]:
    """Every way the attack's measured points break the trade-off curve `tpr_bound`
    (max TPR at each FPR), beyond their intervals (`summarise`'s check_confidence): a
    point's TPR lower limit above the curve at its FPR upper limit (the most generous
    reading of the point), or the AUC's lower limit above the curve's area. [] = inside."""
    out = []
    for p in summary["points"]:
        allowed = float(np.asarray(tpr_bound(np.array([p["fpr_ci"][1]])))[0])
        if p["tpr_ci"][0] > allowed + 1e-12:
            out.append(f"{name}: TPR ≥ {p['tpr_ci'][0]:.3f} at FPR ≤ {p['fpr_ci'][1]:.3f} "
                       f"(measured {p['tpr']:.3f} at {p['fpr']:.3f}) where the bound allows "
                       f"{allowed:.3f}")
    area = bound_auc(tpr_bound)
    if summary["auc_check_low"] > area + 1e-9:
        out.append(f"{name}: AUC ≥ {summary['auc_check_low']:.3f} where the bound allows "
                   f"{area:.3f}")
    return out


def bound_auc(tpr_bound: Callable[[np.ndarray], np.ndarray]) -> float:
    """Area under a trade-off curve: the largest AUC any attack can have. The curve is
    concave, so the trapezoids on a fine grid (dense near 0) sit just below it; the
    grid's last-cell slack is added so this never understates the area."""
    grid = np.unique(np.r_[0.0, np.geomspace(1e-8, 1.0, 4000)])
    tpr = np.minimum(np.asarray(tpr_bound(grid), np.float64), 1.0)
    return float(min(1.0, np.trapezoid(tpr, grid) + 1e-4))


def bound_points(tpr_bound: Callable[[np.ndarray], np.ndarray], n: int = 200) -> dict:
    """The curve on a grid dense near FPR 0 (for the chart)."""
    fpr = np.unique(np.r_[0.0, np.geomspace(1e-4, 1.0, n)])
    tpr = np.clip(np.asarray(tpr_bound(fpr), np.float64), 0.0, 1.0)
    return {"fpr": [float(v) for v in fpr], "tpr": [float(v) for v in tpr]}
