"""Runs & Compare: every run kept (the gallery's precomputed ones too), the settings
each changed, names and tags, every score each run has, side-by-side comparison, the
privacy–utility chart per configuration (y-axis: any of those scores) with sample grids
across ε, membership attacks on a run inside its DP bound (a non-private diagnostic),
sweeps over ε, seeds and any one knob."""

from __future__ import annotations

import math

import streamlit as st

from engine.facade import (GALLERY_SWEEP, InputError, RunStatus, about, attackable, real_key,
                           visibility)
from ui.choices import format_epsilon
from ui.common import REAL_NOTE, jobs, line_figure, log_axis, method_title, show_input_error
from ui.attack_view import attack_section
from ui.fidelity_view import fidelity_section
from ui.ledger import ledger_section
from ui.private_search import private_search_panel
from ui.runs_table import chart_dataset, metric_keys, metric_label, privacy_utility, runs_rows
from ui.runs_view import label_editor, pu_figure, sample_grids, sweep_panel

st.title("Runs & Compare")
jm = jobs()
store = jm.store


@st.fragment(run_every=1.0 if jm.active() else None)
def queue_strip() -> None:
    queue = jm.queue()
    if not queue:
        return
    st.markdown(f"**{len(queue)} run(s) queued or training** ({jm.occupancy_line()}; "
                "times are estimates)")
    for snap in queue:
        a, b = st.columns([5, 1])
        where = (f"position {snap.position}" if snap.position else snap.status.value)
        if snap.status == RunStatus.QUEUED and snap.start_in_s is not None:
            where += f", starts in {about(snap.start_in_s, snap.start_error_s)}"
        elif snap.eta_s is not None:
            where += f", {about(snap.eta_s, snap.eta_error_s)} left"
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


def _share(rid: str) -> None:
    try:
        jm.set_shared(rid, bool(st.session_state[f"runs_share_{rid}"]))
    except InputError as e:
        show_input_error(e)


# Each run as this viewer may see it: another participant's upload shows its DP outputs
# only (engine/jobs/visibility.py), unless its owner shares the synthetic-data scores.
shared = store.shared_runs()
runs = [jm.visible(r, shared) for r in store.list_runs()]
labels = store.labels()
c1, c2, c3, c4 = st.columns(4)
f_method = c1.multiselect("Method", sorted({r.method for r in runs}), key="runs_f_method")
f_data = c2.multiselect("Dataset", sorted({r.dataset for r in runs}), key="runs_f_data")
f_status = c3.multiselect("Status", [s.value for s in RunStatus], key="runs_f_status")
f_tag = c4.multiselect("Tag or sweep", sorted({t for lab in labels.values() for t in lab["tags"]}
                                              | {r.sweep for r in runs if r.sweep}),
                       key="runs_f_tag")
shown = [r for r in runs
         if (not f_method or r.method in f_method)
         and (not f_data or r.dataset in f_data)
         and (not f_status or r.status.value in f_status)
         and (not f_tag or r.sweep in f_tag
              or set(f_tag) & set(labels.get(r.run_id, {}).get("tags", [])))]
scores = metric_keys(runs) or ["synthetic/logreg"]
metric = st.selectbox("Score", scores, format_func=metric_label, key="runs_metric",
                      help="What the table's reference column, the comparison and the "
                           "privacy–utility chart show. Every score trains a classifier on "
                           "synthetic data and tests it on real test data; tabular data "
                           "adds ROC-AUC and F1.")

if not runs:
    st.info("No runs yet. Train one in the Playground, or queue a sweep below.")
else:
    st.caption("**settings**: what differs from the method's defaults for that dataset. "
               "Runs of the sweep *gallery* were precomputed (`python -m engine gallery`).")
    columns = metric_keys(shown) + [real_key(metric)]
    st.dataframe(runs_rows(shown, labels, metrics=columns), hide_index=True, key="runs_table",
                 column_config={metric_label(k): st.column_config.NumberColumn(
                     metric_label(k), format="%.3f",
                     help=f"same classifier, {REAL_NOTE}" if k.startswith("real/") else
                     "classifier trained on synthetic data, tested on real data")
                     for k in columns})

ids = [r.run_id for r in shown]
by_id = {r.run_id: r for r in runs}
# The user's own latest runs only (never another participant's); the gallery's are
# compared across ε further down.
default_pick = [r.run_id for r in shown if r.status == RunStatus.FINISHED
                and r.sweep != GALLERY_SWEEP and r.session == jm.session][:2]
picked = st.multiselect("Pick runs to compare or download", ids,
                        default=default_pick, key="runs_pick",
                        format_func=lambda i: f"{i} · {by_id[i].method} · "
                                              f"{by_id[i].dataset} · ε="
                                              f"{format_epsilon(by_id[i].epsilon)}")

if picked:
    cols = st.columns(min(4, len(picked)))
    for i, rid in enumerate(picked[:4]):
        r = by_id[rid]
        art = store.artifacts(rid)
        with cols[i]:
            st.markdown(f"**{method_title(r.method)}** · {r.dataset} · "
                        f"ε = {format_epsilon(r.epsilon)} · seed {r.seed}")
            label_editor(jm, rid, labels.get(rid, {}), allowed=jm.may_control(rid))
            if jm.may_control(rid) and visibility.on_private_records(r.config):
                st.toggle("share scores with the room", value=rid in shared,
                          key=f"runs_share_{rid}", on_change=_share, args=(rid,),
                          help="Lets other participants see this run's synthetic-data "
                               "scores (measured on your real test records, not private). "
                               "Fidelity, real-data scores and the file stay yours.")
            st.caption(r.status.value + (f" — {r.message}" if r.message and
                                         r.message != r.status.value else ""))
            if "samples.png" in art:
                st.image(str(art["samples.png"]), caption="synthetic samples")
            if metric in r.metrics:
                value, real = r.metrics[metric], r.metrics.get(real_key(metric))
                st.metric(f"{metric_label(metric)} (synthetic → real)", f"{value:.3f}",
                          delta=None if real is None else f"{value - real:+.3f} vs real data",
                          delta_color="off")
            for name, mime in (("synthetic.npz", "application/octet-stream"),
                               ("synthetic.csv", "text/csv"), ("samples.png", "image/png"),
                               ("config.json", "application/json"),
                               ("metrics.json", "application/json")):
                body = (visibility.artifact_bytes(name, art[name].read_bytes(), r,
                                                  session=jm.session, instructor=jm.instructor,
                                                  shared=rid in shared)
                        if name in art else None)
                if body is not None:
                    st.download_button(f"⬇ {name}", body, file_name=
                                       f"{rid}-{name}", mime=mime, key=f"dl_{rid}_{name}",
                                       use_container_width=True)
    hist = {rid: store.metric_history(rid) for rid in picked}
    loss = {rid: tuple(zip(*[(s, v) for s, v in h.get("loss", []) if v is not None]))
            for rid, h in hist.items()}
    eps = {rid: tuple(zip(*[(s, v) for s, v in h.get("epsilon_spent", [])
                            if v is not None and math.isfinite(v)])) for rid, h in hist.items()}
    if any(loss.values()) or any(eps.values()):  # gallery runs keep no curves
        a, b = st.columns(2)
        with a:
            fig = line_figure({k: v for k, v in loss.items() if v}, title="Loss",
                              x_title="step", y_title="loss")
            log_axis(fig, "y", [v for xs_ys in loss.values() if xs_ys for v in xs_ys[1]])
            st.plotly_chart(fig, key="runs_loss")
        with b:
            st.plotly_chart(line_figure({k: v for k, v in eps.items() if v}, title="ε spent",
                                        x_title="step", y_title="ε"), key="runs_eps")
    deletable = [rid for rid in picked if jm.may_control(rid)]
    if deletable:
        with st.popover("Delete runs…"):
            # Nothing is pre-selected: a deletion is always chosen run by run.
            doomed = st.multiselect("Runs to delete (yours)", deletable, default=[],
                                    key="runs_delete_pick")
            st.write("This removes the runs and their files for good (an uploaded file "
                     "goes with the last run that uses it).")
            if st.button("Delete", type="primary", key="runs_delete", disabled=not doomed):
                try:
                    for rid in doomed:  # owner-only: jobs() is this session's view
                        jm.delete(rid)
                except InputError as e:
                    show_input_error(e)
                else:
                    st.session_state.pop("runs_pick", None)
                    st.session_state.pop("runs_delete_pick", None)
                    st.rerun()

st.subheader("Fidelity (tabular runs)")
# Fidelity is measured on the real records without noise: the owner's and instructor's.
fidelity_section(store, [r for r in shown if r.status == RunStatus.FINISHED
                         and jm.may_see_real(r)])

st.subheader("Membership attacks")
attackable = [r.run_id for r in shown if r.status == RunStatus.FINISHED
              and attackable(store.artifact_dir(r.run_id))]  # gallery: no release kept
if attackable:
    first = next((i for i in picked if i in attackable), attackable[0])
    rid = st.selectbox("Run to attack", attackable, index=attackable.index(first),
                       key="runs_attack_pick", format_func=lambda i: f"{i} · {by_id[i].method} · "
                       f"{by_id[i].dataset} · ε={format_epsilon(by_id[i].epsilon)}")
    attack_section(jm, rid, allowed=jm.may_control(rid))
else:
    st.info("No finished run with its synthetic data here yet (precomputed gallery runs "
            "keep only their samples): train one, then measure it.")

st.subheader("Privacy–utility")
datasets = sorted({r.dataset for r in runs})
if datasets:
    # Opens on the dataset of my latest run, else the Playground's, else the busiest.
    mine = by_id.get(st.session_state.get("pg_run") or "")
    opening = chart_dataset(runs, mine.dataset if mine else None, st.session_state.get("dataset"))
    ds = st.selectbox("Dataset", datasets, index=datasets.index(opening), key="runs_pu_dataset")
    on_ds = [r for r in shown if r.dataset == ds]
    pu = privacy_utility(on_ds, metric)
    if pu["lines"] or pu["nonprivate"]:
        st.plotly_chart(pu_figure(pu), key="runs_pu_chart")
        st.caption("One line per configuration (method + settings changed from its "
                   f"defaults); band: lowest to highest {metric_label(metric)} over seeds "
                   "at that ε. The score and the filters above apply.")
        with st.expander("Sample grids across ε", expanded=True):
            sample_grids(store, on_ds, metric)
    else:
        st.info(f"No finished runs with a {metric_label(metric)} on this dataset yet.")

st.subheader("Sweep")
sweep_panel(jm)

st.subheader("Private tuning")
private_search_panel(jm)  # only the best of K random candidates is released

# Budget spent per dataset and per sweep; an upload is named to its participants only.
ledger_section(instructor=jm.instructor,
               mine={r.run_id for r in runs if r.session == jm.session})
