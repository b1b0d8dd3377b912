"""The trade-off chart (TPR against FPR) and the bound's figures, as the Accountant page
and the membership game draw them. Every number comes from engine.privacy.risk / engine.teaching.game;
this module only draws."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.facade import risk

# Dense near FPR 0, where the (ε, δ) bound bends and the small-FPR figures are read.
_FPR = np.unique(np.concatenate([[0.0], np.logspace(-5, 0, 300), np.linspace(0, 1, 201)]))
_CURVE_STYLE = {"own": dict(color="#2563eb", width=2.5),
                "bound": dict(color="#d97706", width=2, dash="dash")}


def epsilon_sentence(epsilon: float, delta: float) -> str:
    """engine.privacy.risk.in_words as a sentence of its own (capital letter, full stop)."""
    words = risk.in_words(epsilon, delta)
    return f"{words[:1].upper()}{words[1:]}."


def tradeoff_figure(curves: dict[str, tuple[risk.Tradeoff, str]], *, title: str,
                    height: int = 420) -> go.Figure:
    """One line per curve ({legend name: (Tradeoff, "own" | "bound")}) above the
    diagonal of guessing; the region under the first curve is shaded."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="guessing",
                             line=dict(color="#9ca3af", dash="dot"), meta="guessing"))
    for i, (name, (curve, style)) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=_FPR, y=curve.tpr(_FPR), mode="lines", name=name,
                                 line=_CURVE_STYLE[style], fill="tonexty" if i == 0 else None,
                                 fillcolor="rgba(37, 99, 235, 0.08)", meta=f"curve-{style}"))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height,
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.2),
                      xaxis=dict(title="false-positive rate (says “in” when out)",
                                 range=[0, 1], constrain="domain"),
                      yaxis=dict(title="true-positive rate (says “in” when in)", range=[0, 1.02],
                                 scaleanchor="x"))
    return fig


def add_point(fig: go.Figure, point, *, name: str, meta: str, colour: str,
              symbol: str = "circle") -> None:
    """An attacker's (FPR, TPR) with its Clopper–Pearson interval as error bars."""
    fig.add_trace(go.Scatter(
        x=[point.fpr], y=[point.tpr], mode="markers", name=name, meta=meta,
        marker=dict(size=13, color=colour, symbol=symbol, line=dict(width=1, color="white")),
        error_x=dict(type="data", symmetric=False, array=[point.fpr_ci[1] - point.fpr],
                     arrayminus=[point.fpr - point.fpr_ci[0]], color=colour, thickness=1),
        error_y=dict(type="data", symmetric=False, array=[point.tpr_ci[1] - point.tpr],
                     arrayminus=[point.tpr - point.tpr_ci[0]], color=colour, thickness=1),
        hovertemplate=(f"{name}<br>FPR %{{x:.2f}}, TPR %{{y:.2f}}<br>{point.rounds_in} rounds "
                       f"in, {point.rounds_out} out<extra></extra>")))


def summary_metrics(t: risk.Tradeoff, *, prior: float = 0.01) -> None:
    """The bound's figures as four metrics and a caption on the posterior."""
    s = risk.summary(t, prior=prior)
    cols = st.columns(4)
    cols[0].metric("max advantage (TPR − FPR)", f"{s['max advantage']:.3f}")
    cols[1].metric("best accuracy from 50/50", f"{s['best accuracy']:.1%}")
    cols[2].metric("TPR at 1 % FPR", f"{s['TPR at 1% FPR']:.3f}")
    cols[3].metric("TPR at 0.1 % FPR", f"{s['TPR at 0.1% FPR']:.4f}")
    st.caption(f"From a prior of {prior:.0%} that a record was used, an attacker's belief can "
               f"reach at most {s['posterior']:.1%} (except with probability about δ). "
               f"Curve: {t.source}.")
