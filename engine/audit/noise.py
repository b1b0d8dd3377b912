"""Each release's noise as computed: what a run released minus the exact statistic, over
repeated releases on a tiny dataset, through the code paths the audit drives. Each
method declares its draws (its AUDIT module's `DRAWS`: engine/methods/<method>/audit.py,
found through engine/methods/registry.py); only the noise call is batched or switched off
(engine/methods/audit_harness.py).

The audit's projection score (engine/audit/lower_bound.py) sees a release's noise along
one direction only; these draws let tests/test_release_noise.py check the rest of what
the privacy argument assumes (engine/privacy/noise.py): the noise is independent across
coordinates and rows with the stated variance σ²·I, no coordinate comes out exactly at
its true value more often than the rounded Gaussian allows (≤ 1/(256·√(2π)) per value),
and every released value lies on its public grid (a statistic not snapped to it shows).
No privacy claim is made here.
"""

from __future__ import annotations

from typing import Callable

from engine.audit.lower_bound import declared


def draws() -> dict[str, Callable]:
    """{name: draws(trials) -> [audit_harness.Draws]} over every registered method."""
    return declared("DRAWS")
