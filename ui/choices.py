"""The Playground's and the Accountant's setting choices and how ε and δ read in words.

Choices are strings because they go into the URL (the Playground binds its widgets to
the query string), so a copied link restores them exactly.
"""

from __future__ import annotations

import math

from engine.facade import risk

# ε on a log scale, plus the non-private reference.
EPSILON_CHOICES = ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "inf"]
DELTA_CHOICES = ["1e-7", "1e-6", "1e-5", "1e-4", "1e-3"]
DEFAULTS = {"dataset": "digits", "method": "dpmerf", "eps": "1", "delta": "1e-5", "seed": 0}


def epsilon_label(choice: str) -> str:
    # The label is also the URL form of the choice (Streamlit binds formatted options),
    # so numbers stay bare: ?eps=0.5 works in a hand-written link.
    return "∞ (non-private)" if choice == "inf" else choice


def format_epsilon(eps: float | None) -> str:
    if eps is None or (isinstance(eps, float) and math.isinf(eps)):
        return "∞"
    return f"{eps:g}"


def privacy_in_words(eps: float, delta: float) -> str:
    """(ε, δ) as plain sentences: the best guess of membership (engine.privacy.risk.in_words, the
    one source every page uses), the odds ratio e^ε and δ as a failure chance."""
    words = risk.in_words(eps, delta)
    lead = f"{words[0].upper()}{words[1:]}."
    if math.isinf(eps):
        return f"{lead} A reference run with no privacy at all, trained without noise."
    ratio = math.exp(eps)
    return (f"{lead} Any result is at most e^ε ≈ {ratio:,.3g}× as likely with one "
            f"person's record as without it, so seeing it raises anyone's odds that this "
            f"person is in the data at most {ratio:,.3g}-fold (from 1:1 to {ratio:,.3g}:1). "
            f"δ = {delta:g}: the small chance that this promise fails (keep it below "
            f"1 / records).")
