"""The Playground's answers that need no training: a reused run, and the gallery's run
for the current settings before Train.

A reuse (engine.jobs.manager.request found a finished run with the same resolved settings and
seed: every knob after the dataset's defaults, engine/methods/registry.settings_for) is said
out loud, with a "Train anew" button that asks for a fresh run of the same config
(`reuse=False`); a fresh run spends privacy budget like any other (engine/privacy/ledger.py
checks it before it is queued). Reads and submits only; training happens in the worker.
"""

from __future__ import annotations

import streamlit as st

from engine.facade import InputError
from ui import live_view
from ui.common import show_input_error


def reused_note(jobs, run_id: str) -> None:
    """Say that `run_id` was reused; "Train anew" queues the same settings as a new run."""
    rec = jobs.store.get_run(run_id)
    where = "the precomputed gallery run" if rec and rec.sweep == "gallery" else "the finished run"
    st.info(f"Reused {where} `{run_id}` — nothing was retrained; no budget spent. It has "
            "exactly these settings and seed. **Train anew** trains them again as a new "
            "run (that spends privacy budget).", icon=":material/recycling:")
    if rec is not None and st.button("Train anew", key="pg_train_anew"):
        try:
            sub = jobs.request(rec.config, reuse=False)
        except InputError as e:
            show_input_error(e)
            return
        st.session_state.update(pg_run=sub.run_id, pg_reused=False, pg_seen_active=True)
        st.rerun()


def gallery_answer(jobs, config, data) -> None:
    """Before Train: the finished run the store already has for these settings (the
    gallery's, for the defaults), drawn as it is, labelled as precomputed (`data`: the
    page's loaded dataset, so the settings are resolved without loading it again)."""
    if config is None:
        return
    found = jobs.reusable(config, data=data)
    rec = jobs.store.get_run(found) if found else None
    if rec is None:
        return
    st.markdown("**The gallery's answer for these settings** — a precomputed gallery run, "
                "not trained now; Train would reuse it." if rec.sweep == "gallery" else
                "**A finished run with these settings** — trained earlier on this server; "
                "Train would reuse it.")
    with st.container(key="pg_gallery_answer"):
        live_view.draw_run(jobs, found)
