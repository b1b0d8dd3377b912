"""The Learn page's membership game and its room view (players by name or alias).

The release, the optimal attacker and every figure come from engine.teaching.game / engine.privacy.risk;
this module keeps the session's rounds, writes each played round to the run store and
draws. The secret membership stays in the server's session state until the guess is in.
"""

from __future__ import annotations

import math
import time

import streamlit as st

from engine.facade import RunStore, game
from ui.choices import format_epsilon
from ui.risk_view import add_point, epsilon_sentence, tradeoff_figure

GAME_EPSILONS = ["0.1", "0.5", "1", "2", "4", "8", "inf"]
ROOM_HOURS = 6           # the room view shows rounds from the last few hours
ROOM_REFRESH_S = 5
_STATE = "game_state"    # {ε choice: {"played": [(member, guess, optimal)], "round": ..}}


def _eps(choice: str) -> float:
    return math.inf if choice == "inf" else float(choice)


def _deal(g: game.Game) -> dict:
    r = g.deal(1)
    return {"member": bool(r.member[0]), "others": int(r.others[0]),
            "release": float(r.release[0]), "optimal": bool(r.optimal_guess()[0])}


def _state(choice: str) -> dict:
    games = st.session_state.setdefault(_STATE, {})
    if choice not in games:
        games[choice] = {"played": [], "round": _deal(game.Game(_eps(choice))), "last": None}
    return games[choice]


def _guess(store: RunStore, session: str, choice: str, guess: bool) -> None:
    """Button callback: score the round, store it, deal the next one."""
    s = _state(choice)
    r = s["round"]
    s["played"].append((r["member"], guess, r["optimal"]))
    store.add_game_round(session=session, player=st.session_state.get("game_player") or "",
                         epsilon=game.epsilon_key(_eps(choice)), delta=game.GAME_DELTA,
                         member=r["member"], guess=guess, optimal=r["optimal"])
    s["last"] = {**r, "guess": guess}
    s["round"] = _deal(game.Game(_eps(choice)))


def _curves(g: game.Game) -> dict:
    return {"this mechanism's own curve": (g.curve, "own"),
            f"any (ε = {format_epsilon(g.epsilon)}, δ = {g.delta:g}) mechanism": (g.bound, "bound")}


def game_panel(store: RunStore, session: str) -> None:
    """Play the attacker: rounds, guesses, and your point beside the optimal attacker's."""
    left, right = st.columns([1, 2])
    choice = left.select_slider("ε", GAME_EPSILONS, value="1", key="game_eps",
                                format_func=lambda c: "∞" if c == "inf" else c)
    right.info(epsilon_sentence(_eps(choice), game.GAME_DELTA))
    st.text_input("Your name in the room view (optional)", key="game_player", max_chars=40)
    g, s = game.Game(_eps(choice)), _state(choice)
    r = s["round"]
    st.markdown(
        f"**Round {len(s['played']) + 1}.** The {game.PEOPLE - 1} other people's answers are "
        f"known: **{r['others']}** said yes. The target said yes too. The released count of "
        f"yes answers is **{r['release']:.2f}** (Gaussian noise, σ = {g.sigma:.2f}). "
        f"In: the true count is {r['others'] + 1}; out: {r['others']}. Was the target in?")
    a, b, _ = st.columns([1, 1, 4])
    a.button("In", key="game_in", on_click=_guess, args=(store, session, choice, True),
             type="primary")
    b.button("Out", key="game_out", on_click=_guess, args=(store, session, choice, False))
    if last := s["last"]:
        right_guess = last["guess"] == last["member"]
        st.caption(f"Last round: the target was **{'in' if last['member'] else 'out'}** "
                   f"(released {last['release']:.2f}); you were "
                   f"{'right' if right_guess else 'wrong'}, the optimal attacker was "
                   f"{'right' if last['optimal'] == last['member'] else 'wrong'}.")
    played = s["played"]
    fig = tradeoff_figure(_curves(g), title=f"Your rounds at ε = {format_epsilon(g.epsilon)}",
                          height=440)
    you = game.point([p[0] for p in played], [p[1] for p in played])
    best = game.point([p[0] for p in played], [p[2] for p in played])
    if you is not None:
        add_point(fig, best, name="optimal attacker, same releases", meta="optimal",
                  colour="#059669", symbol="diamond")
        add_point(fig, you, name="you", meta="you", colour="#dc2626")
    with st.container(key="game_chart_box"):
        st.plotly_chart(fig, key="game_chart")
    if you is None:
        st.caption(f"{len(played)} rounds played: your point appears once you have seen at "
                   "least one round of each kind (in and out).")
    else:
        st.caption(f"{len(played)} rounds: you said “in” on {you.tpr:.0%} of the rounds where "
                   f"the target was in and {you.fpr:.0%} where it was out. Error bars: 95 % "
                   "Clopper–Pearson intervals. Nobody gets above the blue curve, except by "
                   "luck within the bars.")


def room_panel(store: RunStore) -> None:
    """Every session's point at one ε, refreshed live from the run store (open to
    everyone: players are named by their chosen name or a public alias only)."""
    choice = st.select_slider("ε of the room", GAME_EPSILONS,
                              value=st.session_state.get("game_eps", "1"), key="game_room_eps",
                              format_func=lambda c: "∞" if c == "inf" else c)
    _room(store, choice)


@st.fragment(run_every=ROOM_REFRESH_S)
def _room(store: RunStore, choice: str) -> None:
    g = game.Game(_eps(choice))
    rows = store.game_rounds(epsilon=game.epsilon_key(g.epsilon),
                             since=time.time() - ROOM_HOURS * 3600)
    from ui.participant import alias

    # Named by a chosen name or a short alias: never by the stored owner key (nor the
    # cookie it comes from), which would let a copied label take over a participant.
    view = game.room(rows, alias=alias)
    fig = tradeoff_figure(_curves(g), title=f"The room at ε = {format_epsilon(g.epsilon)}",
                          height=440)
    outside = []
    for i, p in enumerate(view["players"]):
        if p["point"] is not None:
            add_point(fig, p["point"], name=f"{p['player']} ({p['rounds']})",
                      meta=f"player-{p['tag']}", colour=f"hsl({(i * 67) % 360}, 65%, 45%)")
            if not p["point"].inside(g.curve):
                outside.append(p["player"])
    if view["optimal"] is not None:
        add_point(fig, view["optimal"], name="optimal attacker, all rounds", meta="optimal",
                  colour="#059669", symbol="diamond")
    with st.container(key="game_room_box"):
        st.plotly_chart(fig, key="game_room_chart")
    st.caption(f"{view['rounds']} rounds by {len(view['players'])} sessions in the last "
               f"{ROOM_HOURS} hours; refreshed every {ROOM_REFRESH_S} s.")
    if outside:
        st.error(f"Outside the mechanism's curve beyond their 99.9 % interval: "
                 f"{', '.join(outside)}. That should not happen: it points to a bug in "
                 "the release or its accounting.", icon="🚨")
