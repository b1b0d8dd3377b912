"""What a trainer yields: a plain iterator of Events, read by the CLI, the jobs, the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.privacy.accountant import PrivacyReport


@dataclass
class Event:
    """One progress report from a trainer.

    `phase` is "release" (a DP statistic was released), "train" (an optimisation step),
    "probe" (a quick downstream accuracy), "evaluate" (the runner starts the final
    evaluation), or "done"/"cancelled" (the last event; it carries the synthetic data and
    the privacy report in `result`).
    """

    phase: str
    step: int
    total: int
    epsilon_spent: float
    loss: float | None = None
    # A small batch of generated records for live views: (x, y), x in the dataset's domain.
    samples: tuple[np.ndarray, np.ndarray] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    message: str = ""
    result: "TrainResult | None" = None


@dataclass
class TrainResult:
    """The final output of a run: released synthetic data plus how it was made private.

    The contract every method meets (tests/test_method_contract.py): `privacy` is the
    accountant's report of the releases as they ran (ε spent never above the target; ∞
    with no noise when ε = ∞); `stopped` is True when `stop` was set before the last
    step, and the result then holds what the run released so far."""

    x: np.ndarray  # images: (n, c, h, w) float32 in [0, 1]; tabular: (n, d) in raw units
    y: np.ndarray  # (n,) int64 labels
    privacy: PrivacyReport  # engine.privacy.accountant: ε spent, δ, accountant, every release's σ
    info: dict[str, Any] = field(default_factory=dict)  # method facts for metrics.json
    seconds: float = 0.0
    stopped: bool = False
