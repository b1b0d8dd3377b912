"""Tune: a study's knobs and ranges (from the method's knob declarations), its preview
before Start (time, memory per trial, the ledger's total after every trial beside the
private alternative), then the board of its trials and Optuna's plots, live."""

from __future__ import annotations

import time

import streamlit as st

from engine.facade import (EPSILON_KNOB, MAX_KNOBS, PUBLIC_DATASETS, SAMPLERS, SECOND_TITLES,
                           SECONDS, InputError, RunConfig, available_methods, build_study_spec,
                           default_params, parse_epsilon, studies, study_names, study_preview)
from ui.choices import EPSILON_CHOICES, epsilon_label
from ui.common import dataset_infos, jobs, load_dataset, method_title, show_input_error
from ui.knobs import widgets
from ui.public_file_view import kind_file, public_files, stand_in_name
from ui.tune_view import board

st.title("Tune")
st.caption("Optuna proposes each trial; every trial is an ordinary run on the queue and on "
           "the ledger, charged in full. The preview says what the study will cost before it "
           "starts.")
jm = jobs()
root = jm.manager.store.root

avail = [d["name"] for d in dataset_infos() if d["available"] and not d["needs_file"]]
c1, c2, c3 = st.columns(3)
method = c1.selectbox("Method", available_methods(), format_func=method_title, key="tune_method")
dataset = c2.selectbox("Dataset", avail, key="tune_dataset")
eps = c3.select_slider("ε per trial", [e for e in EPSILON_CHOICES if e != "inf"], value="1",
                       format_func=epsilon_label, key="tune_eps")
data = load_dataset(dataset)
specs = {w.name: w.spec for w in widgets(default_params(method, data))
         if w.spec.kind in ("int", "float", "choice", "bool")}
knobs = st.multiselect(f"knobs to search (at most {MAX_KNOBS})", list(specs),
                       max_selections=MAX_KNOBS, key="tune_knobs")
texts = [f"{k}=" + st.text_input(
    f"{k}: lo:hi, lo:hi:log, or a,b,c", key=f"tune_range_{k}",
    help=f"{specs[k].help} Must be {specs[k].rule()}; default {specs[k].default}.")
    for k in knobs]
if st.checkbox("search ε too (each trial at its own ε, charged at it)", key="tune_eps_search"):
    texts.append(f"{EPSILON_KNOB}=" + st.text_input(
        "ε: lo:hi, lo:hi:log, or a,b,c", "0.3:3:log", key="tune_range_epsilon",
        help="Replaces the ε above. The privacy before Start is then a bound: every trial "
             "at the top of the range."))
d1, d2, d3, d4, d5 = st.columns(5)
trials = int(d1.number_input("trials", 1, 200, 8, key="tune_trials"))
sampler = d2.selectbox("sampler", SAMPLERS, index=SAMPLERS.index("tpe"), key="tune_sampler")
objective = d3.text_input("objective (a stored score)", "synthetic/logreg", key="tune_objective")
second = d4.selectbox("second objective", (None, *SECONDS), key="tune_second",
                      format_func=lambda s: "none" if s is None else SECOND_TITLES[s],
                      help="Minimised beside the objective, for a Pareto front of the trials.")
name = d5.text_input("study name", key="tune_name", placeholder="empty: tune-<date>-<time>")
kind = {d["name"]: d["kind"] for d in dataset_infos()}
stand_ins = [d for d in PUBLIC_DATASETS if d in avail and kind[d] == kind[dataset]
             and dataset not in PUBLIC_DATASETS]
if dataset not in PUBLIC_DATASETS:  # the participant's own files, once marked public
    stand_ins += public_files(root, jm.session, kind[dataset])
tune_on = st.selectbox("trials run on", [None, *stand_ins], key="tune_on",
                       format_func=lambda d: f"{dataset} itself (every trial charged)" if d is None
                       else f"{stand_in_name(d)}, public (not charged), then one run on {dataset}",
                       disabled=not stand_ins)
file_on = tune_on not in (None, *PUBLIC_DATASETS)  # a path: the user's file marked public

spec = None
if texts:
    try:
        spec = build_study_spec(RunConfig(method=method, dataset=dataset, epsilon=parse_epsilon(eps),
                                          device="cpu").validate(),
                                texts, trials=trials, sampler=sampler, objective=objective,
                                second=second,
                                tune_on=kind_file(tune_on) if file_on else tune_on,
                                tune_on_options={"path": tune_on} if file_on else None,
                                root=root, owner=jm.session)
        pending = jm.uncharged()  # queued or claimed, not yet charged
        seen = study_preview(spec, root=root, slots=jm.slots, pending=pending, data=data,
                             wait=False)
        for line in seen.lines():
            st.markdown(f"- {line}")
    except InputError as err:
        show_input_error(err)
        spec = None
if st.button("Start the study", type="primary", key="tune_start", disabled=spec is None):
    study = " ".join(name.split()) or time.strftime("tune-%Y%m%d-%H%M%S")
    try:
        studies.start(spec, study, jm.manager, session=jm.session)
        st.session_state["tune_show"] = study
    except InputError as err:
        show_input_error(err)

st.divider()
names = study_names(root)
if names:
    shown = st.session_state.get("tune_show")
    pick = st.selectbox("Study", names, index=names.index(shown) if shown in names else
                        len(names) - 1, key="tune_pick")
    board(jm, pick)
else:
    st.caption("No study in this run store yet.")
