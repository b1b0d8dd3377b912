"""One trial of a study on the Tune board: pick it (in a selectbox, or by clicking its
point on the slice or history plot: ui/trial_click.py), see its settings and its sample grid,
and open it in the Playground with its method, dataset, ε, δ, seed and knobs filled in.

The Playground's widgets are keyed by name (ui/knobs.knob_key) and bound to the URL;
setting their keys in the session before switching page is how they open filled in (a
bound widget takes a session value over the URL's). The Playground's ε and δ are sliders
of fixed choices: a trial at an ε between two (a searched ε) opens at the nearest one,
and the board says so before the button is pressed, since Train there would spend that ε
and not the trial's."""

from __future__ import annotations

import math

import streamlit as st

from engine.facade import get_method, knob_specs
from ui.choices import DELTA_CHOICES, EPSILON_CHOICES
from ui.knobs import knob_key
from ui.trial_click import CLICKABLE, clicked_trial

PLAYGROUND = "pages/playground.py"


def _nearest(value: float, choices: list[str]) -> str:
    """The choice nearest `value` on a log scale ('inf' only for ∞)."""
    if math.isinf(value):
        return "inf"
    finite = [c for c in choices if c != "inf"]
    return min(finite, key=lambda c: abs(math.log(float(c)) - math.log(value)))


def playground_state(config) -> tuple[dict, list[str]]:
    """The Playground's session keys for a run's config, and a note for each setting the
    Playground cannot hold exactly (it opens at the nearest instead)."""
    eps, delta = _nearest(config.epsilon, EPSILON_CHOICES), _nearest(config.delta, DELTA_CHOICES)
    notes = []
    if not math.isinf(config.epsilon) and not math.isclose(float(eps), config.epsilon,
                                                           rel_tol=1e-9):
        notes.append(f"The Playground's ε slider has no {config.epsilon:.4g}: it opens at "
                     f"ε = {eps}, the nearest, and Train there spends ε = {eps}, not the "
                     "trial's.")
    if not math.isclose(float(delta), config.delta, rel_tol=1e-9):
        notes.append(f"δ = {config.delta:g} is not on the Playground's slider: it opens at "
                     f"{delta}.")
    kinds = {s.name: s.kind for s in knob_specs(get_method(config.method).Params)}
    cast = {"int": int, "float": float, "bool": bool}
    state = {"dataset": config.dataset, "method": config.method, "eps": eps, "delta": delta,
             "seed": int(config.seed)}
    for name, value in config.params.items():
        if name in kinds and kinds[name] != "ints":  # layer-width tuples have no widget
            state[knob_key(config.method, name)] = cast.get(kinds[name], lambda v: v)(value)
    return state, notes


def open_in_playground(config, run_id: str | None) -> None:
    """Fill the Playground with `config` (and show its finished run there) and go."""
    state, _ = playground_state(config)
    for key in ("pg_knob_basis", "pg_knob_defaults"):  # no reset of the knobs on arrival
        st.session_state.pop(key, None)
    st.session_state.update(state)
    if run_id is not None:
        st.session_state.update(pg_run=run_id, pg_reused=False, pg_seen_active=False)
    st.switch_page(PLAYGROUND)


def _label(t, spec) -> str:
    value = f"{t.value:.4f}" if t.value is not None else t.state.lower()
    eps = t.params.get("epsilon")
    return (f"trial {t.number}: {spec.objective} {value}"
            + (f" at ε = {eps:.3g}" if eps is not None else ""))


def _take_click(numbers: list[int]) -> None:
    """A point newly clicked on the slice or history plot picks its trial in the
    selectbox; the click is remembered, so picking another trial in the selectbox
    afterwards is not undone by the plot's selection, which stays."""
    for key in CLICKABLE:
        n = clicked_trial(st.session_state.get(key))
        if n != st.session_state.get(f"{key}_seen"):
            st.session_state[f"{key}_seen"] = n
            if n in numbers:
                st.session_state["tune_trial"] = n


def draw(jm, res) -> None:
    """A selectbox of the study's trials with a run; the chosen one's details."""
    spec = res.spec
    trials = [t for t in res.trials if t.run_id]
    if not trials:
        return
    by_number = {t.number: t for t in trials}
    best = res.best
    numbers = list(by_number)
    if st.session_state.get("tune_trial") not in numbers:  # first the best
        st.session_state["tune_trial"] = best.number if best in trials else numbers[0]
    _take_click(numbers)
    pick = st.selectbox("A trial: its settings and samples (or click its point on the Slice "
                        "or History plot)", numbers,
                        format_func=lambda n: _label(by_number[n], spec), key="tune_trial")
    t = by_number[pick]
    rec = jm.manager.store.get_run(t.run_id)
    if rec is None:
        st.warning(f"Trial {t.number}'s run {t.run_id} is no longer in the store.")
        return
    rec = jm.visible(rec)
    cfg = rec.config
    left, right = st.columns([1, 2])
    with left:
        st.markdown(f"**Trial {t.number}** · {t.state.lower()} · run `{t.run_id}`")
        rows = {"method": cfg.method, "dataset": cfg.dataset, "ε": f"{cfg.epsilon:g}",
                "δ": f"{cfg.delta:g}", "seed": cfg.seed,
                **{k: v for k, v in cfg.params.items()}}
        if t.value is not None:
            rows[spec.objective] = f"{t.value:.4f}"
        if t.second is not None:
            rows[spec.second] = f"{t.second:.4g}"
        st.dataframe([{"setting": k, "value": str(v)} for k, v in rows.items()],
                     hide_index=True, width="stretch", key="tune_trial_settings")
        _, notes = playground_state(cfg)
        for note in notes:
            st.caption(note)
        if st.button("Open in the Playground", key="tune_open",
                     help="The Playground with this trial's settings; Train there hands "
                          "back this finished run at no cost when nothing was changed."):
            open_in_playground(cfg, t.run_id if rec.status.terminal else None)
    with right:
        png = jm.manager.store.artifacts(t.run_id).get("samples.png") \
            if rec.status.terminal else None
        if png is not None:
            st.image(str(png), caption=f"trial {t.number}'s synthetic samples (its release)")
        else:
            st.caption("No sample grid saved for this run"
                       + ("" if rec.status.terminal else " yet (it has not ended)") + ".")
