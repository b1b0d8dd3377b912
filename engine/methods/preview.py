"""The preview: what the Playground and the CLI show before training, typed and built once.

A method's `privacy_preview` returns a plain dict (engine/methods/registry.py says which keys);
`from_method` is the one place that dict becomes a `Preview`, so the page and the CLI read
named fields (`cost.seconds`, `warnings`, `refuse`) instead of guessing dict keys. The δ
warning is added here, once for every method, and `cost_line` is the one formatter of
the cost that the page and the CLI both print. Nothing here reads private records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from engine.store.eta import duration
from engine.privacy.accountant import delta_warning

__all__ = ["MEASURING", "Cost", "Preview", "cost_line", "duration", "from_method"]

MEASURING = "measuring…"  # the basis while the cost is being timed elsewhere

# The method dict's cost keys (engine/methods/registry.py) → Cost's fields.
_COST_KEYS = {"estimated seconds": "seconds", "estimated seconds (timed now)": "timed_seconds",
              "estimate basis": "basis", "estimated memory (GB)": "memory_gb",
              "estimated s / step": "per_step_s", "estimated s / iteration": "per_step_s",
              "estimated s / round": "per_step_s",
              "estimated steps": "steps", "faster with": "faster_with",
              "estimated CNN seconds (at most)": "cnn_seconds",
              "estimated scoring seconds": "scoring_seconds", "scoring basis": "scoring_basis"}
_NOTES = ("warning", "hint", "refuse")


@dataclass(frozen=True)
class Cost:
    """What a run will cost on this machine: training, then scoring (the classifiers
    fitted on the synthetic data and the real reference), then the CNN when asked for.
    `whole_s` is the whole wait once the run starts (the queue is the page's to add)."""

    seconds: float | None = None  # as shown: timed, corrected from finished runs; None: being timed
    basis: str = "timed now"  # how `seconds` was found, in words
    timed_seconds: float | None = None  # as timed, before the correction (metrics.json "timed")
    memory_gb: float | None = None  # peak resident memory, from the method's formula
    per_step_s: float | None = None  # seconds per step (DP-MERF), iteration (DataLens), round (AIM)
    unit: str = "step"  # what `per_step_s` counts: "step", "iteration" or "round" (AIM)
    steps: int | None = None
    faster_with: str | None = None  # the method's knobs that shorten a run, in words
    # scoring with the CNN (images, when asked), at most: every epoch, synthetic + real
    cnn_seconds: float | None = None
    # scoring with LogReg, MLP and RF (engine/methods/scoring_cost.py) and how it was found
    scoring_seconds: float | None = None
    scoring_basis: str | None = None

    @property
    def measuring(self) -> bool:
        """True while a timing runs in its own process (the page shows MEASURING)."""
        return ((self.seconds is None and self.basis == MEASURING)
                or (self.scoring_seconds is None and self.scoring_basis == MEASURING))

    @property
    def whole_s(self) -> float | None:
        """Training + scoring (+ the CNN at most): None while either is not known."""
        if self.seconds is None or self.scoring_seconds is None:
            return None
        return self.seconds + self.scoring_seconds + (self.cnn_seconds or 0.0)


@dataclass(frozen=True)
class Preview:
    """A run before training: its cost, cautions, teaching notes, the reason it cannot
    start here (if any), and the method's derived privacy figures as the method gives
    them (noise multiplier, σ, accountant, ...: name → number or text)."""

    figures: dict[str, Any] = field(default_factory=dict)
    cost: Cost | None = None
    warnings: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    refuse: str | None = None

    def notices(self) -> list[str]:
        """Every warning and hint, once each, as the CLI prints them."""
        return [f"warning: {w}" for w in self.warnings] + [f"hint: {h}" for h in self.hints]


def from_method(raw: dict, config, n_train: int) -> Preview:
    """The one adapter from a method's preview dict to a Preview; adds the δ warning
    (δ ≥ 1/n, engine/privacy/accountant.py) for private runs, whatever the method said."""
    cost_fields = {_COST_KEYS[k]: v for k, v in raw.items() if k in _COST_KEYS}
    for unit in ("iteration", "round"):
        if f"estimated s / {unit}" in raw:
            cost_fields["unit"] = unit
    has_cost = any(k in cost_fields for k in ("seconds", "memory_gb", "basis", "cnn_seconds",
                                              "scoring_seconds"))
    warnings = [delta_warning(config.delta, n_train) if config.private else None,
                raw.get("warning")]
    seen: list[str] = []
    for w in warnings:  # a method that still adds the δ warning itself is not shown twice
        if w and not any(w in s or s in w for s in seen):
            seen.append(w)
    return Preview(
        figures={k: v for k, v in raw.items() if k not in _COST_KEYS and k not in _NOTES},
        cost=Cost(**cost_fields) if has_cost else None,
        warnings=tuple(seen), hints=(raw["hint"],) if raw.get("hint") else (),
        refuse=raw.get("refuse") or None)


def cost_line(cost: Cost | None, *, markdown: bool = False) -> str:
    """The cost in one line, e.g. "about 8 min 3 s of training (timed now, no finished run
    yet) · 240 steps · 31 ms each · ~1.7 GB memory · then about 3 min 40 s of scoring
    (...) · about 11 min 43 s in all"; "" when there is no cost."""
    if cost is None:
        return ""
    if cost.seconds is not None:
        head = f"about {duration(cost.seconds)} of training ({cost.basis})"
    elif cost.basis == MEASURING:
        head = f"training time {cost.basis}"
    else:  # a method without a cost module
        head = "training time not estimated for this method"
    parts = [head]
    if cost.steps is not None:
        parts.append(f"{int(cost.steps):,} {cost.unit}s")
    if cost.per_step_s is not None and math.isfinite(cost.per_step_s):
        per = float(cost.per_step_s)
        parts.append(f"{per * 1000:,.0f} ms each" if per < 1 else f"{per:.1f} s each")
    if cost.memory_gb is not None:
        parts.append(f"~{float(cost.memory_gb):.1f} GB memory")
    if cost.scoring_seconds is not None:
        parts.append(f"then about {duration(cost.scoring_seconds)} of scoring "
                     f"(LogReg, MLP, RF; {cost.scoring_basis})")
    elif cost.scoring_basis:
        parts.append(f"scoring time {cost.scoring_basis}")
    if cost.cnn_seconds is not None:
        parts.append(f"then up to {duration(cost.cnn_seconds)} to score with the CNN")
    if cost.whole_s is not None:
        parts.append(f"**about {duration(cost.whole_s)} in all**" if markdown
                     else f"about {duration(cost.whole_s)} in all")
    return " · ".join(parts)
