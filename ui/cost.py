"""The Playground's "what will this cost" line: steps, time on this machine, memory.

The figures are the typed preview's `Cost` (engine/methods/preview.py; the web server times
nothing itself: engine/runs/cost_probe.py times a run's shape in a process of its own);
`engine.methods.preview.cost_line` formats them, as it does for the CLI, and this module only adds
the long-run warning.
"""

from __future__ import annotations

import streamlit as st

from engine.methods.preview import Cost, cost_line, duration

LONG_RUN_S = 180.0  # above this a workshop participant should know before pressing Train


def draw_cost(cost: Cost | None) -> None:
    if cost is None:
        return
    st.markdown(f"**Cost on this machine:** {cost_line(cost)}")
    if cost.seconds is None:
        st.caption("Timing a few real steps in a process of its own; the figure appears "
                   "here when it is done.")
        return
    if cost.seconds > LONG_RUN_S:
        # Which knobs make it faster is the method's to say (its preview), not the page's.
        st.warning(f"This run would take about {duration(cost.seconds)} here. For a quick "
                   "try: " + (f"{cost.faster_with}, or " if cost.faster_with else "")
                   + "a smaller dataset.", icon="⏱️")
    else:
        st.caption(f"Estimate {cost.basis} on this machine (a few real steps, re-timed when "
                   "the load changes); scoring with LogReg, MLP and RF afterwards is not "
                   "included.")
