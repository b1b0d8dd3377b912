"""The Playground's "what will this cost" line, beside Train: steps, the whole wait on
this machine (training, scoring, the queue), memory.

The figures are the typed preview's `Cost` (engine/methods/preview.py; the web server times
nothing itself: engine/runs/cost_probe.py times a run's shape in a process of its own);
`engine.methods.preview.cost_line` formats them, as it does for the CLI, and this module only adds
the long-run warning.
"""

from __future__ import annotations

import streamlit as st

from engine.facade import Cost, about, cost_line, duration

LONG_RUN_S = 180.0  # above this a workshop participant should know before pressing Train


def queue_words(wait: tuple[float | None, float | None, int] | None) -> str | None:
    """The queue part of the whole wait: None with a free slot (or unknown)."""
    if wait is None:
        return None
    start, error, ahead = wait
    if ahead == 0 or start == 0.0:
        return None
    if start is None:
        return f"{ahead} run(s) queued or training ahead of it; their times are still being measured"
    return f"starts after {ahead} run(s) ahead of it, in {about(start, error)}"


def draw_cost(cost: Cost | None, wait: tuple[float | None, float | None, int] | None = None
              ) -> None:
    """The run's whole wait (training, scoring, the CNN when asked, the queue) and how it
    was found; `wait`: JobManager.queue_wait's (seconds, ±, runs ahead)."""
    if cost is None:
        return
    queue = queue_words(wait)
    st.markdown(f"**Cost on this machine:** {cost_line(cost, markdown=True)}"
                + (f" · queue: {queue}" if queue else ""))
    if cost.measuring:
        st.caption("Timing a few real steps and the scoring in a process of its own; the "
                   "figure appears here when it is done.")
        return
    whole = cost.whole_s if cost.whole_s is not None else cost.seconds
    if whole is not None and wait is not None and wait[0]:
        whole += wait[0]
    if whole is not None and whole > LONG_RUN_S:
        # Which knobs make it faster is the method's to say (its preview), not the page's.
        st.warning(f"This run would take about {duration(whole)} here, scoring included. "
                   "For a quick try: " + (f"{cost.faster_with}, or " if cost.faster_with else "")
                   + "a smaller dataset.", icon="⏱️")
    else:
        st.caption(f"Estimate on this machine: training {cost.basis} (a few real steps, "
                   "re-timed when the load changes); scoring "
                   f"{cost.scoring_basis or 'not estimated'}.")
