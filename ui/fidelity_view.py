"""Runs page: the measured fidelity of a tabular run (metrics.json "fidelity", computed
by engine/evaluation/fidelity.py): real vs synthetic histograms per column and the heatmap of
|real − synthetic| dependence. Reads and draws only; the figures are NOT private
(measured on the real training records), as the caption says."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st


def histogram_figure(name: str, hist: dict) -> go.Figure:
    """One column's shares per bin or category, real beside synthetic."""
    fig = go.Figure([go.Bar(x=hist["x"], y=hist["real"], name="real"),
                     go.Bar(x=hist["x"], y=hist["synthetic"], name="synthetic")])
    fig.update_layout(barmode="group", title=name, yaxis_title="share of records",
                      height=300, margin=dict(t=40, b=30))
    return fig


def dependence_figure(dep: dict) -> go.Figure:
    """Heatmap of |real − synthetic| dependence (Pearson r or Cramér's V) per pair."""
    fig = go.Figure(go.Heatmap(z=dep["abs_difference"], x=dep["names"], y=dep["names"],
                               zmin=0, zmax=1, colorscale="Reds",
                               colorbar=dict(title="|Δ|")))
    fig.update_layout(title="Dependence error |real − synthetic|", height=450,
                      yaxis_autorange="reversed")
    return fig


def rules_words(rules: dict) -> str:
    """The rules-broken figure in words: values outside bounds, the worst pair rules."""
    worst = sorted(((v, k) for k, v in rules["pairs"].items() if v > 0), reverse=True)[:3]
    pairs = "; ".join(f"{k}: {v:.1%} of rows" for v, k in worst) or "none broken"
    return (f"{rules['outside_bounds']:.1%} of numeric values outside their bounds; "
            f"{rules['broken_pairs']:.1%} of rows pair values the real table never pairs "
            f"({pairs}). Rules: {rules['how']}.")


@st.cache_data(show_spinner=False, max_entries=256)
def _load_fidelity(path: str, mtime: float) -> dict | None:
    """metrics.json's "fidelity", read once per file version (`mtime`), not every rerun."""
    try:
        return json.loads(Path(path).read_text()).get("fidelity")
    except (OSError, ValueError):
        return None


def load_fidelity(metrics_path: Path) -> dict | None:
    try:
        mtime = metrics_path.stat().st_mtime
    except OSError:
        return None
    return _load_fidelity(str(metrics_path), mtime)


def fidelity_section(store, runs) -> None:
    """A picker over finished runs whose metrics.json has "fidelity", then its figures."""
    found = {}
    for r in runs[:50]:  # the newest
        fid = load_fidelity(store.artifact_dir(r.run_id) / "metrics.json")
        if fid:
            found[r.run_id] = (r, fid)
    if not found:
        st.info("No tabular run with measured fidelity yet: train one on a table.")
        return
    rid = st.selectbox("Tabular run", list(found), key="runs_fidelity_pick",
                       format_func=lambda i: f"{i} · {found[i][0].method} · {found[i][0].dataset}")
    fid = found[rid][1]
    a, b, c = st.columns(3)
    a.metric("Mean per-column distance", f"{fid['mean_column_distance']:.3f}")
    b.metric("Mean dependence error", f"{fid['mean_dependence_error']:.3f}")
    rules = fid.get("rules_broken")  # runs measured before it was added have none
    if rules is not None:
        c.metric("Rows breaking a rule", f"{rules['rows']:.1%}", help=rules_words(rules))
    st.caption("NOT private: measured on the real training records without noise. " + fid["how"])
    names = list(fid["columns"])
    col = st.selectbox("Column", names, key="runs_fidelity_col")
    st.plotly_chart(histogram_figure(col, fid["columns"][col]["histogram"]),
                    key="runs_fidelity_hist")
    st.plotly_chart(dependence_figure(fid["dependence"]), key="runs_fidelity_dep")
