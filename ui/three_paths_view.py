"""The Tune board's "Three paths" view for a tune-on study: its one private run, and the
three ways to tune the same knobs at the same ε side by side — (a) tune on the private
data, every trial charged; (b) private repeat-and-select, charged once; (c) tune on
public, one private run — with what each paid from the ledger. Numbers come from
engine/jobs/three_paths.py through the facade; this module draws."""

from __future__ import annotations

import streamlit as st

from engine.facade import InputError, epsilon_words, three_paths
from ui.common import show_input_error


def _settings(s) -> str:
    if not s:
        return ""
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in s.items())


def final_line(fin: dict | None, objective: str) -> None:
    """Under the study's header: its one private run (`studies.final_of`), or why there is
    none yet."""
    if fin is None:
        return
    if fin["value"] is not None:
        st.success(f"Private run on {fin['dataset']} with trial {fin['trial']}'s settings "
                   f"({_settings(fin['params'])}): {objective} "
                   f"{fin['value']:.4f} (run {fin['run_id']}); the trials on {fin['tune_on']} "
                   "were not charged.", icon="🔒")
    elif fin["why"]:
        st.warning(f"No private run: {fin['why']}")
    else:
        st.caption(f"Trials on {fin['tune_on']} (public, not charged); then one run with the "
                   f"best settings on {fin['dataset']}"
                   + (f": run {fin['run_id']} is {fin['status']}." if fin["run_id"] else "."))


def view(jm, name: str) -> None:
    """The three rows; a button measures (a) and (b) (the owner's or an instructor's)."""
    st.subheader("Three paths")
    try:
        rows = three_paths.rows(jm.manager, name)
    except InputError as err:
        show_input_error(err)
        return
    st.caption("Same knobs, same ε per run, same number of trials. Scores are on the "
               "private dataset's real test part (a non-private diagnostic). ε: what the "
               "private records paid, from the ledger (planned: the accountant's figure "
               "before running). Path (a) picks its best by that same test score, so its "
               "score is optimistic.")
    st.dataframe([{"path": f"({r['path']}) {r['words']}", r["objective"]: r["value"],
                   "ε paid (ledger)": epsilon_words(r["ledger_epsilon"]),
                   "ε planned": epsilon_words(r["planned_epsilon"]),
                   "runs on private data": r["private_runs"],
                   "seconds": None if r["seconds"] is None else round(r["seconds"]),
                   "state": r["state"], "settings": _settings(r["settings"]),
                   "note": r["note"]} for r in rows], hide_index=True,
                 use_container_width=True)
    if err := three_paths.error(jm.manager, name):
        st.error(err)
    if three_paths.measuring(jm.manager, name):
        st.caption("Measuring paths (a) and (b): their runs are on the queue.")
    elif any(r["value"] is None for r in rows if r["path"] in ("a", "b")) and st.button(
            "Measure paths (a) and (b) too (spends privacy on the private dataset)",
            key="tune_paths"):
        try:
            three_paths.start_measuring(jm.manager, name, session=jm.session,
                                        instructor=jm.instructor)
            st.toast("Queued: the study on the private data, then the private search.")
        except InputError as err:  # NotOwner, or already measuring
            show_input_error(err)
