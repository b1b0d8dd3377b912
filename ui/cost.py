"""The Playground's "what will this cost" line: steps, time on this machine, memory.

The figures come from each method's `privacy_preview` (DP-MERF: engine/dpmerf_cost.py,
measured step rates); this module only formats them and warns when a run is long.
"""

from __future__ import annotations

import streamlit as st

# Preview keys this block draws; the Playground's generic figure grid skips them.
COST_KEYS = ("estimated steps", "estimated seconds", "estimated s / step",
             "estimated s / iteration", "estimated memory (GB)", "faster with",
             "estimated seconds (timed now)", "estimate basis")
LONG_RUN_S = 180.0  # above this a workshop participant should know before pressing Train


def duration(seconds: float) -> str:
    """12 → '12 s', 95 → '1 min 35 s', 7300 → '2 h 2 min'."""
    s = int(round(seconds))
    if s < 60:
        return f"{max(s, 1)} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def draw_cost(preview: dict) -> None:
    if "estimated seconds" not in preview:
        return
    secs = float(preview["estimated seconds"])
    parts = []
    if "estimated steps" in preview:
        parts.append(f"{int(preview['estimated steps']):,} steps")
    per = preview.get("estimated s / step", preview.get("estimated s / iteration"))
    if per is not None:
        parts.append(f"{float(per) * 1000:,.0f} ms each" if per < 1 else f"{per:.1f} s each")
    if "estimated memory (GB)" in preview:
        parts.append(f"~{float(preview['estimated memory (GB)']):.1f} GB memory")
    basis = preview.get("estimate basis", "timed now")
    st.markdown(f"**Cost on this machine:** about **{duration(secs)}** of training ({basis}) · "
                + " · ".join(parts))
    note = (f"Estimate {basis} on this machine (a few real steps, re-timed when the load "
            "changes); evaluation afterwards is not included.")
    if secs > LONG_RUN_S:
        # Which knobs make it faster is the method's to say (its preview), not the page's.
        faster = preview.get("faster with")
        st.warning(f"This run would take about {duration(secs)} here. For a quick try: "
                   + (f"{faster}, or " if faster else "") + "a smaller dataset.", icon="⏱️")
    else:
        st.caption(note)
