"""Runs & Compare: every run kept, side-by-side comparison, privacy–utility chart,
sweeps over ε and seeds, downloads of each run's artifacts."""

from __future__ import annotations

import math
import time

import plotly.graph_objects as go
import streamlit as st

from engine.config import RunConfig, parse_epsilon
from engine.errors import InputError
from engine.registry import available_methods
from engine.store import RunStatus
from engine.ui_state import (EPSILON_CHOICES, epsilon_label, format_epsilon,
                             privacy_utility, runs_rows)
from ui.common import (PALETTE, REAL_NOTE, dataset_infos, jobs, line_figure,
                       method_title, show_input_error)

st.title("Runs & Compare")
jm = jobs()
store = jm.store


@st.fragment(run_every=1.0 if jm.active() else None)
def queue_strip() -> None:
    queue = jm.queue()
    if not queue:
        return
    st.markdown(f"**{len(queue)} run(s) queued or training** (one at a time per device; "
                "times are estimates)")
    for snap in queue:
        a, b = st.columns([5, 1])
        where = (f"position {snap.position}" if snap.position else snap.status.value)
        if snap.status == RunStatus.QUEUED and snap.start_in_s is not None:
            where += f", starts in about {snap.start_in_s:,.0f} s"
        elif snap.eta_s is not None:
            where += f", about {snap.eta_s:,.0f} s left"
        label = (f"{snap.run_id} · {snap.config.method} · {snap.config.dataset} · "
                 f"ε = {format_epsilon(snap.config.epsilon)} · {where} · "
                 f"by {jm.owner_label(snap.session)}")
        a.progress(snap.fraction, text=label)
        if b.button("Stop", key=f"runs_stop_{snap.run_id}",
                    disabled=not jm.may_control(snap.run_id),
                    help="Only the session that started a run (or an instructor) can stop it."):
            try:
                jm.cancel(snap.run_id)
            except InputError as e:
                show_input_error(e)


queue_strip()

runs = store.list_runs()
c1, c2, c3 = st.columns(3)
f_method = c1.multiselect("Method", sorted({r["method"] for r in runs}), key="runs_f_method")
f_data = c2.multiselect("Dataset", sorted({r["dataset"] for r in runs}), key="runs_f_data")
f_status = c3.multiselect("Status", [s.value for s in RunStatus], key="runs_f_status")
shown = [r for r in runs
         if (not f_method or r["method"] in f_method)
         and (not f_data or r["dataset"] in f_data)
         and (not f_status or r["status"] in f_status)]

if not runs:
    st.info("No runs yet. Train one in the Playground, or queue a sweep below.")
else:
    st.dataframe(runs_rows(shown), hide_index=True, key="runs_table",
                 column_config={
                     "accuracy": st.column_config.NumberColumn(
                         "accuracy", format="%.3f",
                         help="classifier trained on synthetic data, tested on real data"),
                     "real accuracy": st.column_config.NumberColumn(
                         "real accuracy", format="%.3f", help=f"same classifier, {REAL_NOTE}"),
                 })

ids = [r["id"] for r in shown]
by_id = {r["id"]: r for r in runs}
default_pick = [r["id"] for r in shown if r["status"] == "finished"][:2]
picked = st.multiselect("Pick runs to compare, download or delete", ids,
                        default=default_pick, key="runs_pick",
                        format_func=lambda i: f"{i} · {by_id[i]['method']} · "
                                              f"{by_id[i]['dataset']} · ε="
                                              f"{format_epsilon(by_id[i]['epsilon'])}")

if picked:
    cols = st.columns(min(4, len(picked)))
    for i, rid in enumerate(picked[:4]):
        r = by_id[rid]
        art = store.artifacts(rid)
        with cols[i]:
            st.markdown(f"**{method_title(r['method'])}** · {r['dataset']} · "
                        f"ε = {format_epsilon(r['epsilon'])} · seed {r['seed']}")
            st.caption(r["status"] + (f" — {r['message']}" if r["message"] and
                                      r["message"] != r["status"] else ""))
            if "samples.png" in art:
                st.image(str(art["samples.png"]), caption="synthetic samples")
            if r["accuracy"] is not None:
                st.metric("accuracy (synthetic → real)", f"{r['accuracy']:.3f}",
                          delta=None if r["real_accuracy"] is None else
                          f"{r['accuracy'] - r['real_accuracy']:+.3f} vs real data",
                          delta_color="off")
            for name, mime in (("synthetic.npz", "application/octet-stream"),
                               ("synthetic.csv", "text/csv"), ("samples.png", "image/png"),
                               ("config.json", "application/json"),
                               ("metrics.json", "application/json")):
                if name in art:
                    st.download_button(f"⬇ {name}", art[name].read_bytes(), file_name=
                                       f"{rid}-{name}", mime=mime, key=f"dl_{rid}_{name}",
                                       use_container_width=True)
    hist = {rid: store.metric_history(rid) for rid in picked}
    a, b = st.columns(2)
    loss = {rid: tuple(zip(*[(s, v) for s, v in h.get("loss", []) if v is not None]))
            for rid, h in hist.items()}
    eps = {rid: tuple(zip(*[(s, v) for s, v in h.get("epsilon_spent", [])
                            if v is not None and math.isfinite(v)])) for rid, h in hist.items()}
    with a:
        fig = line_figure({k: v for k, v in loss.items() if v}, title="Loss",
                          x_title="step", y_title="loss")
        fig.update_yaxes(type="log")
        st.plotly_chart(fig, key="runs_loss")
    with b:
        st.plotly_chart(line_figure({k: v for k, v in eps.items() if v}, title="ε spent",
                                    x_title="step", y_title="ε"), key="runs_eps")
    with st.popover(f"Delete {len(picked)} picked run(s)"):
        st.write("This removes the runs and their files for good.")
        if st.button("Delete", type="primary", key="runs_delete"):
            try:
                for rid in picked:  # owner-only: jobs() is this session's view
                    jm.delete(rid)
            except InputError as e:
                show_input_error(e)
            else:
                st.session_state.pop("runs_pick", None)
                st.rerun()

st.subheader("Privacy–utility")
datasets = sorted({r["dataset"] for r in runs})
if datasets:
    ds = st.selectbox("Dataset", datasets, key="runs_pu_dataset")
    pu = privacy_utility([r for r in runs if r["dataset"] == ds])
    fig = go.Figure()
    for m, line in pu["lines"].items():
        color = PALETTE.get(m)
        fig.add_trace(go.Scatter(x=line["epsilon"] + line["epsilon"][::-1],
                                 y=line["hi"] + line["lo"][::-1], fill="toself",
                                 line=dict(width=0, color=color), opacity=0.2,
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=line["epsilon"], y=line["mean"], mode="lines+markers",
                                 name=f"{method_title(m)} (mean over seeds)",
                                 line=dict(color=color),
                                 customdata=line["n"],
                                 hovertemplate="ε=%{x}<br>acc=%{y:.3f}<br>%{customdata} run(s)"))
    for m, acc in pu["nonprivate"].items():
        fig.add_hline(y=acc, line_dash="dash", line_color=PALETTE.get(m),
                      annotation_text=f"{method_title(m)}, non-private (ε = ∞)")
    if pu["real"] is not None:
        fig.add_hline(y=pu["real"], line_dash="dot", line_color="gray",
                      annotation_text=f"trained on real data ({REAL_NOTE})")
    fig.update_xaxes(type="log", title="ε")
    fig.update_layout(height=380, yaxis_title="accuracy on real test data",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.2))
    if pu["lines"] or pu["nonprivate"]:
        st.plotly_chart(fig, key="runs_pu_chart")
        st.caption("Band: lowest to highest accuracy over seeds at that ε.")
    else:
        st.info("No finished runs with an accuracy on this dataset yet.")

st.subheader("Sweep")
avail = [d["name"] for d in dataset_infos() if d["available"] and not d["needs_file"]]
with st.form("runs_sweep"):
    c1, c2 = st.columns(2)
    s_method = c1.selectbox("Method", available_methods(), format_func=method_title,
                            key="sweep_method")
    s_data = c2.selectbox("Dataset", avail, key="sweep_dataset")
    s_eps = st.multiselect("ε values", EPSILON_CHOICES, default=["0.5", "1", "2", "5"],
                           format_func=epsilon_label, key="sweep_eps")
    s_seeds = st.number_input("seeds per ε", min_value=1, max_value=10, value=2,
                              key="sweep_seeds")
    submitted = st.form_submit_button("Queue sweep", type="primary")
if submitted:
    if not s_eps:
        st.error("Pick at least one ε value for the sweep.")
    else:
        sweep = time.strftime("sweep-%Y%m%d-%H%M%S")
        try:
            n = 0
            for e in s_eps:
                for seed in range(int(s_seeds)):
                    jm.submit(RunConfig(method=s_method, dataset=s_data,
                                        epsilon=parse_epsilon(e), seed=seed), sweep=sweep)
                    n += 1
        except InputError as err:
            show_input_error(err)
        else:
            st.success(f"Queued {n} runs as {sweep}; they train one after another.")
            st.rerun()
