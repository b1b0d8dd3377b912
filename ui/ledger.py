"""The privacy ledger where people decide: the Playground's line before Train, and the
Runs page's budget per dataset and per sweep. Every number comes from engine.privacy.ledger
(exact composition by the accountant); this module only draws."""

from __future__ import annotations

import math

import streamlit as st

from engine.facade import (INFINITE_WORDS, PUBLIC_DATASETS, PUBLIC_NOTE, InputError, Ledger,
                           RunConfig, declared_public, epsilon_words, visibility)
from ui.common import runs_root


def _ledger() -> Ledger:
    return Ledger(runs_root())


def budget_line(config: RunConfig, reusable=None) -> str | None:
    """Under the Playground's settings: what this dataset has spent and where this run
    takes it. Returns the refusal (past the cap) so the page can disable Train, unless
    `reusable()` (called only past the cap) names a finished run with the same settings:
    Train then hands that run back, which releases nothing and costs nothing."""
    f = _ledger().forecast(config)
    if f is None:
        if config.dataset in PUBLIC_DATASETS:  # a stand-in declared public: nothing spent
            st.info(f"**{config.dataset} is declared public**: runs on it are not charged "
                    "to any dataset's budget (a stand-in to tune on).", icon="🧾")
        elif declared_public(config):  # the user's own file, marked public on Tune
            st.info("**You marked this file public**: its records get no privacy "
                    "protection, and runs on it are not charged to any budget.", icon="🧾")
        return None
    if f.refused:
        found = reusable() if reusable is not None else None
        if found is not None:
            st.info(f"**Past this dataset's cap**, but run {found} has exactly these "
                    "settings: Train shows it again, at no cost to the budget.", icon="♻️")
            return None
        st.error(f.refused, icon="⛔")
        return f.refused
    (st.warning if math.isinf(f.after) else st.info)(
        f"**Privacy budget of this dataset.** {f.words()} Every run on the same records "
        "adds to it, deleted runs included.", icon="🧾")
    return None


def ledger_section(*, instructor: bool, mine: set[str] = frozenset()) -> None:
    """Runs & Compare: the ledger per dataset and per sweep; caps for instructors. An
    uploaded file is named only to its participants (`mine`: the viewer's run ids) and
    instructors (engine/jobs/visibility.ledger_label)."""
    led = _ledger()
    rows = [{**d, "label": visibility.ledger_label(d, mine=mine, instructor=instructor)}
            for d in led.datasets()]
    st.subheader("Privacy budget per dataset")
    st.caption("Every run that touched a dataset's records, composed exactly (all releases "
               f"are Gaussian) at the ledger's δ; deleting a run does not un-spend it. "
               f"Built-in datasets are {PUBLIC_NOTE}. Gallery runs are charged where they "
               "were built, not here.")
    if not rows:
        st.info("No run has spent budget in this store yet.")
    table = [{"dataset": d["label"], "runs": len(d["runs"]), "ε spent": epsilon_words(d["epsilon"]),
              "at δ": f"{d['delta']:g}", "cap": "none" if d["cap"] is None else f"{d['cap']:g}",
              "sweeps": ", ".join(f"{s['sweep']}: ε = {epsilon_words(s['epsilon'])} "
                                  f"({s['runs']} runs)" for s in d["sweeps"])}
             for d in rows]
    if table:
        st.dataframe(table, hide_index=True, key="ledger_table")
    for d in rows:
        if math.isinf(d["epsilon"]):
            st.warning(f"{d['label']}: ε = ∞ — {INFINITE_WORDS}.")
    if not instructor:
        st.caption("Budget caps are set by an instructor (instructor mode) or the data owner: "
                   "`python -m engine ledger --cap digits=5`.")
        return
    with st.form("ledger_cap"):
        a, b, c = st.columns(3)
        key = a.selectbox("dataset", [d["dataset"] for d in rows] or ["digits"], key="ledger_ds")
        cap = b.number_input("cap on total ε (0 = no cap)", min_value=0.0, value=0.0,
                             step=0.5, key="ledger_cap_eps")
        delta = c.select_slider("ledger δ", [1e-7, 1e-6, 1e-5, 1e-4], value=1e-5,
                                key="ledger_cap_delta")
        if st.form_submit_button("Set cap"):
            try:
                led.set_cap(key, cap or None, delta=float(delta), by="instructor (app)")
            except InputError as e:
                st.error(str(e), icon="⚠️")
            else:
                # Said once, after the rerun that redraws the table with the new cap.
                st.session_state["ledger_cap_note"] = led.over_cap(key)
                st.rerun()
    if note := st.session_state.pop("ledger_cap_note", None):
        st.warning(note, icon="⚠️")
