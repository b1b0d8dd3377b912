"""Pieces of Runs & Compare: the privacy–utility chart, sample grids across ε, the
name/tag editor and the sweep panel. Numbers come from ui.runs_table / engine.runs.sweeps."""

from __future__ import annotations

import time

import plotly.graph_objects as go
import streamlit as st

from engine.facade import (InputError, RunRecord, RunStatus, available_methods, default_params,
                           differing_settings, parse_epsilon, parse_values, settings_label,
                           sweep_configs)
from ui.choices import EPSILON_CHOICES, epsilon_label, format_epsilon
from ui.common import (PALETTE, REAL_NOTE, dataset_infos, load_dataset, log_axis,
                       method_title, show_input_error)
from ui.knobs import widgets
from ui.runs_table import grid_columns, metric_label

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _config_name(method: str, settings: str) -> str:
    return method_title(method) + ("" if settings == "defaults" else f" · {settings}")


def pu_figure(pu: dict) -> go.Figure:
    """A score vs ε (`privacy_utility`'s metric): one line (mean over seeds, band min–max)
    per configuration."""
    label = metric_label(pu["metric"])
    fig = go.Figure()
    seen: dict[str, int] = {}
    for (method, settings), line in pu["lines"].items():
        color = PALETTE.get(method)
        dash = _DASHES[seen.setdefault(method, 0) % len(_DASHES)]
        seen[method] += 1
        fig.add_trace(go.Scatter(x=line["epsilon"] + line["epsilon"][::-1],
                                 y=line["hi"] + line["lo"][::-1], fill="toself",
                                 line=dict(width=0, color=color), opacity=0.15,
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=line["epsilon"], y=line["mean"], mode="lines+markers",
                                 name=_config_name(method, settings),
                                 line=dict(color=color, dash=dash), customdata=line["n"],
                                 hovertemplate="ε=%{x}<br>%{y:.3f}<br>%{customdata} run(s)"))
    # Non-private and real-data references: dashed lines named in the legend. As
    # annotations, several at nearly the same height printed over each other (issue 43).
    xs = [e for line in pu["lines"].values() for e in line["epsilon"]] or [0.1, 10.0]
    span = [min(xs), max(xs)]
    for (method, settings), acc in pu["nonprivate"].items():
        fig.add_trace(go.Scatter(x=span, y=[acc, acc], mode="lines",
                                 name=f"{_config_name(method, settings)}, non-private (ε = ∞)",
                                 line=dict(color=PALETTE.get(method), dash="dash", width=1.5),
                                 hovertemplate="non-private: %{y:.3f}<extra></extra>"))
    if pu["real"] is not None:
        fig.add_trace(go.Scatter(x=span, y=[pu["real"], pu["real"]], mode="lines",
                                 name=f"trained on real data ({REAL_NOTE})",
                                 line=dict(color="gray", dash="dot", width=1.5),
                                 hovertemplate="real data: %{y:.3f}<extra></extra>"))
    log_axis(fig, "x", xs)
    fig.update_xaxes(title="ε")
    fig.update_layout(height=400, yaxis_title=f"{label} on real test data",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.2))
    return fig


def sample_grids(store, runs: list[RunRecord], metric: str) -> None:
    """Per configuration, one sample grid per ε (newest finished run with a picture),
    captioned with the run's `metric`."""
    by: dict[tuple[str, str], dict[float, RunRecord]] = {}
    for r in runs:  # newest first, so the first one seen per ε is kept
        if r.status != RunStatus.FINISHED:
            continue
        group = (r.method, settings_label(differing_settings(r.config.to_dict())))
        by.setdefault(group, {}).setdefault(r.epsilon, r)
    kinds = {d["name"]: d["kind"] for d in dataset_infos()}
    for (method, settings), per_eps in sorted(by.items()):
        st.markdown(f"**{_config_name(method, settings)}**")
        order = sorted(per_eps)
        kind = kinds.get(per_eps[order[0]].dataset, "image")
        k = grid_columns(len(order), kind)  # a table's charts: 2 a row, not slivers
        for row in range(0, len(order), k):
            cols = st.columns(k)
            for col, eps in zip(cols, order[row:row + k]):
                r = per_eps[eps]
                png = store.artifacts(r.run_id).get("samples.png")
                score = "" if metric not in r.metrics else f" · {r.metrics[metric]:.2f}"
                if png is not None:
                    col.image(str(png), caption=f"ε = {format_epsilon(eps)}{score}")


def label_editor(jm, run_id: str, label: dict, *, allowed: bool) -> None:
    """Name and tags of one run, saved as soon as they change (owner or instructor:
    `jm` is this session's view of the jobs, which checks again)."""
    def save():
        tags = st.session_state[f"runs_tags_{run_id}"].split(",")
        try:
            jm.set_label(run_id, name=st.session_state[f"runs_name_{run_id}"], tags=tags)
        except InputError as e:
            show_input_error(e)

    why = None if allowed else "Only the participant who started this run can rename or tag it."
    st.text_input("name", value=label.get("name", ""), key=f"runs_name_{run_id}",
                  on_change=save, placeholder="e.g. baseline", disabled=not allowed, help=why)
    st.text_input("tags (comma-separated)", value=", ".join(label.get("tags", [])),
                  key=f"runs_tags_{run_id}", on_change=save, placeholder="e.g. lr-study",
                  disabled=not allowed, help=why)


def sweep_panel(jm) -> None:
    """Queue runs over ε values × seeds × values of any one knob."""
    avail = [d["name"] for d in dataset_infos() if d["available"] and not d["needs_file"]]
    c1, c2 = st.columns(2)
    method = c1.selectbox("Method", available_methods(), format_func=method_title,
                          key="sweep_method")
    dataset = c2.selectbox("Dataset", avail, key="sweep_dataset")
    eps = st.multiselect("ε values", EPSILON_CHOICES, default=["0.5", "1", "2", "5"],
                         format_func=epsilon_label, key="sweep_eps")
    c3, c4, c5 = st.columns([1, 1, 2])
    seeds = c3.number_input("seeds per setting", min_value=1, max_value=10, value=2,
                            key="sweep_seeds")
    specs = {w.name: w.spec for w in widgets(default_params(method, load_dataset(dataset)))}
    knob = c4.selectbox("also vary", ["(nothing)", *specs], key="sweep_knob")
    values_text = c5.text_input(
        "values (comma-separated)", key="sweep_values", disabled=knob == "(nothing)",
        placeholder=f"default {specs[knob].default}" if knob in specs else "")
    name = st.text_input("sweep name", key="sweep_name",
                         placeholder="empty: sweep-<date>-<time>")
    if not st.button("Queue sweep", type="primary", key="sweep_go"):
        return
    try:
        values = parse_values(specs[knob], values_text) if knob in specs else None
        data = load_dataset(dataset)  # the server's cached copy: no load per run queued
        configs = sweep_configs(method=method, dataset=dataset,
                                epsilons=[parse_epsilon(e) for e in eps], seeds=int(seeds),
                                data=data, knob=knob if knob in specs else None,
                                values=values)
        sweep = " ".join(name.split()) or time.strftime("sweep-%Y%m%d-%H%M%S")
        for config in configs:
            jm.submit(config, sweep=sweep, data=data)
    except InputError as err:
        show_input_error(err)
        return
    st.toast(f"Queued {len(configs)} runs as {sweep}; they train one after another.")
    st.rerun()
