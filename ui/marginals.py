"""Real vs synthetic histograms of one tabular column, on shared bins (the live view's
marginal chart). The real side describes the training records: it is NOT private, and
the page labels it so."""

from __future__ import annotations

from typing import Any

import numpy as np


def marginal_bins(real: np.ndarray, synth: np.ndarray, *, bins: int = 30,
                  categories: list[str] | None = None) -> dict[str, Any]:
    """Histograms of one column, real vs synthetic, on shared bins (fractions)."""
    real = np.asarray(real, dtype=np.float64)
    synth = np.asarray(synth, dtype=np.float64)
    if categories is not None:
        k = len(categories)
        rc = np.bincount(np.clip(np.rint(real), 0, k - 1).astype(int), minlength=k)
        sc = np.bincount(np.clip(np.rint(synth), 0, k - 1).astype(int), minlength=k)
        return {"x": list(categories), "real": rc / max(1, rc.sum()),
                "synthetic": sc / max(1, sc.sum()), "categorical": True}
    both = np.concatenate([real, synth])
    both = both[np.isfinite(both)]
    lo, hi = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    rh, _ = np.histogram(real, edges)
    sh, _ = np.histogram(synth, edges)
    centers = 0.5 * (edges[1:] + edges[:-1])
    return {"x": centers, "real": rh / max(1, rh.sum()), "synthetic": sh / max(1, sh.sum()),
            "categorical": False}
