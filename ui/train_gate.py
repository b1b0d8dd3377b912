"""Beside the Playground's Train button: why it is off, and what the run will cost.

A greyed-out Train with its reason 2,000 px further down reads as a broken button
(issue 43). The page collects the one reason Train is off (the first that applies: no
data here, no file yet, a file that cannot be read, a setting the engine refuses, the
memory or budget-cap refusal, a run of this session still going) and `draw_beside`
shows it directly under Train and Stop, with the whole wait of the run when it can
start. Messages name an uploaded file as the user named it, never the stored (hashed)
name (`user_words`). Draws only; every figure comes from the engine's preview.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from engine.facade import Cost
from ui.cost import draw_cost

UPLOAD_NAMES = "pg_upload_names"  # session state: stored path → the user's file name


def user_words(text: str) -> str:
    """`text` with every uploaded file's stored path, and its stored name, replaced by
    the name the user gave the file."""
    for stored, name in (st.session_state.get(UPLOAD_NAMES) or {}).items():
        p = Path(stored)
        for old in (stored, str(p.resolve()), p.name):
            text = text.replace(old, name)
        safe = p.name.split("-", 1)[-1]  # the stored name without its hash prefix
        if safe != name and len(safe) > 4:
            text = text.replace(safe, name)
    return text


def show_error(message: str, icon: str = "⚠️") -> None:  # as ui.common.show_input_error
    """An error in the user's words (their file name)."""
    st.error(user_words(str(message)), icon=icon)


def draw_beside(reason: str | None, cost: Cost | None, wait: tuple[float, float | None, int] | None
                ) -> None:
    """Directly under Train: the reason it is off, else the run's cost and whole wait.
    `wait`: (seconds until a slot is free, ± seconds, runs ahead) from the queue."""
    if reason:
        with st.container(key="pg_train_reason"):
            st.error(f"**Train is off:** {user_words(reason)}", icon=":material/block:")
    if cost is not None:
        with st.container(key="pg_cost_beside"):
            draw_cost(cost, wait=wait)


FITS_HALF = 22  # characters of a metric label that fit half the settings column
FITS_WHOLE = 36  # ... and the whole column


def short_label(label: str) -> str:
    """A metric label that fits the settings column: a long one loses its parenthesis
    (the full label is the metric's help); the page puts labels longer than FITS_HALF on
    a row of their own."""
    if len(label) <= FITS_WHOLE:
        return label
    return label.split(" (", 1)[0].strip() or label


def start_hint(config) -> str:
    """Before the first run: what Train will do. The digits remark only when it applies
    (a CSV session is not told about digits)."""
    text = "Press **Train** to start."
    if config is not None and config.dataset == "digits" and config.method == "dpmerf":
        text += " The defaults (digits, DP-MERF, ε = 1) train in well under a minute on a laptop."
    elif config is not None:
        text += " The whole wait (training, then scoring on the real test data) is shown under Train."
    return text
