"""Clicking a trial on the Tune board's slice or history plot picks it (ui/trial_view.py).

Optuna draws the plots (optuna.visualization) and does not say which trial a point is,
so each point is given its trial number in `customdata`, read off the figure as Optuna
built it: a slice colours its points by trial number, and the history's x axis is the
trial number. Streamlit hands a click back as a selection event whose points carry that
customdata. No streamlit here: both halves are plain functions, tested as such."""

from __future__ import annotations

from typing import Any

CLICKABLE = {"tune_slice": "slice", "tune_history": "history"}  # chart key -> plot


def with_trial_numbers(fig, plot: str):
    """`fig` (Optuna's slice or history figure) with each trial's point carrying the
    trial's number in its customdata; lines (the best so far) and greyed points whose
    colour is not a number are left alone."""
    for trace in fig.data:
        if getattr(trace, "mode", None) != "markers" or trace.x is None:
            continue
        numbers = trace.marker.color if plot == "slice" else trace.x
        if numbers is None or isinstance(numbers, str) or len(numbers) != len(trace.x):
            continue
        trace.customdata = [int(n) for n in numbers]
    return fig


def clicked_trial(event: Any) -> int | None:
    """The trial number a click on such a plot picked; None without a point (nothing
    clicked yet, a click on empty space, or a point that carries no number)."""
    points = ((event or {}).get("selection") or {}).get("points") or []
    for point in points:
        n = point.get("customdata")
        if isinstance(n, (list, tuple)):
            n = n[0] if n else None
        if isinstance(n, (int, float)) and not isinstance(n, bool):
            return int(n)
    return None
