"""The Tune board's "Pareto (all runs)" tab: the objective against ε spent (or seconds)
over every stored run of the study's method on its dataset, study trial or not, the
non-dominated runs joined by a line. The points and the front come from the engine
(engine/runs/pareto.py); this module draws them and says what they may not be read as."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from engine.facade import PARETO_AXES, PARETO_AXIS_TITLES, pareto_front


def figure(front) -> go.Figure:
    pts = front.points
    fig = go.Figure()
    hover = [f"run {p.run_id}<br>{p.group}<br>ε = {p.epsilon:g}<br>"
             + ", ".join(f"{k}={v}" for k, v in p.settings.items()) for p in pts]
    fig.add_trace(go.Scatter(
        x=[p.x for p in pts], y=[p.y for p in pts], mode="markers", name="runs",
        text=hover, hoverinfo="text+x+y",
        marker=dict(size=8, opacity=0.6, color=[p.epsilon for p in pts],
                    colorscale="Viridis", showscale=len(front.epsilons) > 1,
                    colorbar=dict(title="ε"))))
    best = front.on_front
    fig.add_trace(go.Scatter(x=[p.x for p in best], y=[p.y for p in best],
                             mode="lines+markers", name="Pareto front",
                             marker=dict(size=11, symbol="diamond-open", color="crimson"),
                             line=dict(color="crimson", shape="hv")))
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title=PARETO_AXIS_TITLES[front.axis], yaxis_title=front.objective,
                      legend=dict(orientation="h", y=-0.2))
    if front.axis == "epsilon" and len(front.epsilons) > 1:
        fig.update_xaxes(type="log")
    return fig


def draw(jm, spec) -> None:
    """The tab for a study's method, dataset, objective and direction."""
    axis = st.radio("against", PARETO_AXES, horizontal=True, key="tune_pareto_axis",
                    format_func=PARETO_AXIS_TITLES.get)
    shared = jm.manager.store.shared_runs()
    records = [jm.visible(r, shared) for r in
               jm.manager.store.list_runs(method=spec.base.method, dataset=spec.base.dataset)]
    front = pareto_front(records, spec.objective, axis=axis, direction=spec.direction)
    if not front.points:
        st.info(f"No finished private run of {spec.base.method} on {spec.base.dataset} with "
                f"a {spec.objective} score yet.")
    else:
        st.plotly_chart(figure(front), key="tune_pareto")
    for note in front.notes():
        st.caption(note)
