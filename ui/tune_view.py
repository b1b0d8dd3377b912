"""The Tune page's board: a study's trials and Optuna's own plots of them
(optuna.visualization: slice, contour, parallel coordinates, knob importance, history),
redrawn as trials finish. Numbers come from the engine and Optuna; this module draws."""

from __future__ import annotations

import streamlit as st

from engine.facade import (IMPORTANCE_EVALUATORS, IMPORTANCE_TITLES, InputError, SECOND_TITLES,
                           importance_plot, optuna_study, searched_epsilon, studies)
from ui import pareto_view, three_paths_view, trial_view
from ui.common import show_input_error
from ui.trial_click import with_trial_numbers

IMPORTANCE_NEEDS = 20  # trials Optuna's importance estimates want before they mean much


def trials_table(res) -> None:
    second = res.spec.second
    rows = [{"trial": t.number, "state": t.state, **t.params,
             res.spec.objective: t.value, **({SECOND_TITLES[second]: t.second} if second else {}),
             "run": t.run_id or "",
             "why it failed": t.message if t.state == "FAIL" else ""} for t in res.trials]
    st.dataframe(rows, hide_index=True, use_container_width=True)


def _clickable(fig, key: str) -> None:
    """A plot whose points pick their trial when clicked (read by ui/trial_view.py on the
    rerun the click starts)."""
    st.caption("Click a point to pick its trial above.")
    st.plotly_chart(fig, key=key, on_select="rerun", selection_mode="points")


def _plots(study, res, jm) -> None:
    from optuna import visualization as vis

    done = [t for t in res.trials if t.state == "COMPLETE"]
    tabs = st.tabs(["Slice", "Contour", "Parallel", "Importance", "History", "Pareto (all runs)"])
    with tabs[5]:  # drawn from the run store, so it has points before this study has any
        pareto_view.draw(jm, res.spec)
    if not done:
        with tabs[0]:
            st.info("No trial has finished with a score yet; the plots appear with the first.")
        return
    names = [k.name for k in res.spec.knobs]
    # a two-objective study: every plot but the front is of the first (the score)
    one = {} if not res.spec.second else {"target": lambda t: t.values[0],
                                          "target_name": res.spec.objective}
    with tabs[0]:
        _clickable(with_trial_numbers(vis.plot_slice(study, **one), "slice"), "tune_slice")
    with tabs[1]:
        if len(names) < 2:
            st.caption("A contour needs two knobs.")
        else:
            a, b = st.columns(2)
            x = a.selectbox("x", names, key="tune_cx")
            y = b.selectbox("y", [n for n in names if n != x], key="tune_cy")
            st.plotly_chart(vis.plot_contour(study, params=[x, y], **one), key="tune_contour")
    with tabs[2]:
        st.plotly_chart(vis.plot_parallel_coordinate(study, **one), key="tune_parallel")
    with tabs[3]:
        how = st.radio("evaluator", IMPORTANCE_EVALUATORS, horizontal=True,
                       format_func=IMPORTANCE_TITLES.get, key="tune_importance_eval")
        st.caption(f"Rests on {len(done)} finished trial(s), by {IMPORTANCE_TITLES[how]}"
                   + (f"; importance estimates want about {IMPORTANCE_NEEDS}."
                      if len(done) < IMPORTANCE_NEEDS else "."))
        if len(names) < 2 or len(done) < 2:
            st.caption("Importance needs two knobs and two finished trials.")
        else:
            fig, why = importance_plot(study, res.spec, how)
            if fig is None:
                st.caption(f"No importance by {how}: {why}.")
            else:
                st.plotly_chart(fig, key="tune_importance")
    with tabs[4]:
        _clickable(with_trial_numbers(vis.plot_optimization_history(study, **one), "history"),
                   "tune_history")


def board(jm, name: str) -> None:
    """A study's state and Stop (owner or instructor only), refreshed every two seconds
    while it runs; then its trials table, three paths, a trial's details and the plots,
    drawn again only when a trial (or a tune-on study's private run) changes. (Redrawing
    them every two seconds kept the browser busy: watching a study slowed its trials on
    a laptop's two cores; bench/watch_board.py.)"""
    root = jm.manager.store.root
    studies.resume(jm.manager, name)  # after a restart: a study left unfinished goes on
    seen = f"tune_board_seen_{name}"

    @st.fragment(run_every=2.0 if studies.running(jm.manager, name) else None)
    def live() -> None:
        res = studies.result(jm.manager, name)
        if res is None:
            st.warning(f"No study {name!r} in this run store.")
            return
        running = studies.running(jm.manager, name)
        final = studies.final_of(jm.manager, name) if res.spec.tune_on else None
        # what the parts below the fragment show: trials, and a tune-on study's private run
        state = (running, res.stopped,
                 [(t.number, t.state, t.value, t.run_id) for t in res.trials], final)
        changed = st.session_state.get(seen, state) != state
        st.session_state[seen] = state
        if changed:
            st.rerun(scope="app")  # the table, the picker and the plots, once per change
        spec = res.spec
        best = res.best
        eps = searched_epsilon(spec.knobs)
        st.markdown(f"**{name}** · {spec.base.method} on {spec.base.dataset} "
                    + (f"at ε = {spec.base.epsilon:g} per trial" if eps is None else
                       f"with ε searched in [{eps.grid()[0]:g}, {eps.grid()[-1]:g}]")
                    + f" · {spec.sampler} · "
                    f"{len(res.done)} of {spec.trials} trial(s) done"
                    + (" · running" if running else " · stopped" if res.stopped else ""))
        if best is not None:
            st.caption(f"best {spec.objective} {best.value:.4f} with {best.params} "
                       f"(trial {best.number}, run {best.run_id})"
                       + ("; the trials ran at different ε, so the best was bought with more "
                          "privacy than some: compare them on the Pareto tab, against ε"
                          if eps is not None else ""))
        if spec.second and res.pareto:
            st.caption(f"Pareto front ({spec.objective} against {SECOND_TITLES[spec.second]}): "
                       + ", ".join(f"trial {t.number}" for t in res.pareto))
        if spec.tune_on:  # trials on a public stand-in, then one private run
            three_paths_view.final_line(final, spec.objective)
        if err := studies.error(jm.manager, name):
            st.error(err)
        if running and st.button("Stop the study", key="tune_stop"):
            try:
                studies.stop(jm.manager, name, session=jm.session, instructor=jm.instructor)
                st.toast("Stopping: its queued and running trials end as FAIL.")
            except InputError as err:  # NotOwner: not this browser's study
                st.session_state["tune_stop_refused"] = (name, err)
        # kept while the study runs: the fragment's next redraw, two seconds on, would
        # otherwise take the refusal away before a reader has seen it
        refused = st.session_state.get("tune_stop_refused")
        if refused and refused[0] == name and running:
            show_input_error(refused[1])

    live()
    res = studies.result(jm.manager, name)
    if res is not None:
        trials_table(res)
        if res.spec.tune_on:
            three_paths_view.view(jm, name)
        trial_view.draw(jm, res)
        _plots(optuna_study(root, name), res, jm)
