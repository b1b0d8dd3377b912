"""Runs & Compare: queue a private hyperparameter search (engine/runs/private_search.py) and
see, before queueing, its ε by private selection beside the same search's ε by plain
composition. Numbers come from the engine; this module only draws."""

from __future__ import annotations

import time

import streamlit as st

from engine.facade import (DISTRIBUTIONS, InputError, RunConfig, available_methods,
                           default_params, parse_epsilon, parse_values, plan_search,
                           search_config)
from ui.choices import EPSILON_CHOICES, epsilon_label
from ui.common import dataset_infos, load_dataset, method_title, show_input_error
from ui.knobs import widgets


@st.cache_data(show_spinner="Calibrating the search…", max_entries=64)
def _plan(epsilon: float, delta: float, mean: float, distribution: str):
    p = plan_search(epsilon=epsilon, delta=delta, mean=mean, distribution=distribution,
                    grid={"_": [0]})
    return p.epsilon, p.plain_epsilon, p.candidate_epsilon


def private_search_panel(jm) -> None:
    """K random candidates with settings drawn from a grid; only the best is released."""
    st.caption("A random number K of candidates (mean E[K]), each with settings drawn at "
               "random from your grid, each scored with noise on a private validation part "
               "of the training records; only the best candidate is released (its synthetic "
               "data, settings and noisy score), the others are deleted. Papernot & Steinke "
               "(2022): the total ε below holds for the whole search.")
    avail = [d["name"] for d in dataset_infos() if d["available"] and not d["needs_file"]]
    c1, c2, c3, c4 = st.columns(4)
    method = c1.selectbox("Method", available_methods(), format_func=method_title, key="pt_method")
    dataset = c2.selectbox("Dataset", avail, key="pt_dataset")
    eps = c3.select_slider("total ε", [e for e in EPSILON_CHOICES if e != "inf"], value="2",
                           format_func=epsilon_label, key="pt_eps")
    mean = c4.number_input("E[K] candidates", min_value=1.0, max_value=100.0, value=10.0,
                           step=1.0, key="pt_mean")
    distribution = st.radio("K drawn from", DISTRIBUTIONS, horizontal=True, key="pt_dist",
                            help="geometric: K ≥ 1; Poisson: K may be 0 (then nothing is released)")
    try:
        total, plain, each = _plan(parse_epsilon(eps), RunConfig.delta, float(mean), distribution)
    except InputError as e:
        show_input_error(e)
        return
    a, b, c = st.columns(3)
    a.metric("ε by private selection", f"{total:.3g}", help="repeat-and-select RDP bound")
    b.metric("ε by plain composition", f"{plain:.3g}",
             help=f"the same {round(mean)} runs accounted one by one, as an ordinary sweep")
    c.metric("ε of each candidate", f"{each:.3g}")
    specs = {w.name: w.spec for w in widgets(default_params(method, load_dataset(dataset)))}
    knobs = st.multiselect("knobs to search (values comma-separated below)", list(specs),
                           key="pt_knobs")
    texts = {k: st.text_input(k, key=f"pt_values_{k}", placeholder=f"default {specs[k].default}")
             for k in knobs}
    name = st.text_input("search name", key="pt_name", placeholder="empty: private-<date>-<time>")
    if not st.button("Queue private search", type="primary", key="pt_go", disabled=not knobs):
        return
    try:
        grid = {k: parse_values(specs[k], texts[k]) for k in knobs}
        config = search_config(RunConfig(method=method, dataset=dataset).validate(), grid,
                               epsilon=parse_epsilon(eps), mean=float(mean),
                               distribution=distribution)
        sweep = " ".join(name.split()) or time.strftime("private-%Y%m%d-%H%M%S")
        jm.request(config, sweep=sweep, reuse=False, data=load_dataset(dataset))  # cached copy
    except InputError as err:
        show_input_error(err)
        return
    st.toast(f"Queued the private search {sweep}.")
    st.rerun()
