"""The Learn page's membership game and the Accountant's "What ε means" tab in AppTest:
rounds are played and stored, the point appears, the words and figures come from
engine.privacy.risk."""

import math

from apptest import open_app
from engine.teaching import game
from engine.privacy import risk
from engine.store.runs import RunStore


def _learn(runs_root):
    at = open_app()
    at.switch_page("pages/learn.py").run()
    assert not at.exception
    return at


def _trace_ids(at, key):
    import json

    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return [t.get("meta") for t in json.loads(chart.proto.spec)["data"]]


def test_game_plays_rounds_stores_them_and_draws_the_point(runs_root):
    at = _learn(runs_root)
    words = risk.in_words(1.0, game.GAME_DELTA)  # the engine's sentence, capitalised
    assert any(i.value == f"A{words[1:]}." for i in at.info)
    at.text_input(key="game_player").set_value("Ada").run()
    assert "you" not in _trace_ids(at, "game_chart")
    for i in range(10):
        at.button(key="game_in" if i % 2 else "game_out").click().run()
        assert not at.exception
    rows = RunStore(runs_root).game_rounds(epsilon=1.0)
    assert len(rows) == 10 and {r["player"] for r in rows} == {"Ada"}
    if len({r["member"] for r in rows}) == 2:  # both kinds dealt (all but 2 in 1,024 games)
        assert {"you", "optimal", "curve-own", "curve-bound"} <= set(_trace_ids(at, "game_chart"))
    assert any(c.value.startswith("Last round: the target was") for c in at.caption)


def test_game_at_infinite_epsilon_and_the_room_view(runs_root):
    at = _learn(runs_root)
    at.select_slider(key="game_eps").set_value("inf").run()
    assert any("every time" in i.value for i in at.info)
    for _ in range(4):
        at.button(key="game_in").click().run()
    rows = RunStore(runs_root).game_rounds(epsilon=None)
    assert len(rows) == 4 and all(r["optimal"] == r["member"] for r in rows)
    at.toggle(key="game_room_on").set_value(True).run()
    assert not at.exception
    at.select_slider(key="game_room_eps").set_value("inf").run()
    assert any(c.value.startswith("4 rounds by 1 sessions") for c in at.caption)


def test_privacy_in_words_uses_the_engine_sentence():
    from ui.choices import privacy_in_words

    assert privacy_in_words(1.0, 0.0).startswith("At ε = 1, no one can tell")
    assert "73 %" in privacy_in_words(1.0, 1e-5)
    assert "every time" in privacy_in_words(math.inf, 1e-5)


def test_accountant_shows_the_bound_and_its_figures(runs_root):
    at = open_app()
    at.switch_page("pages/accountant.py").run()
    at.number_input(key="acc_risk_eps").set_value(1.0).run()
    at.select_slider(key="acc_risk_delta").set_value("0").run()
    assert not at.exception
    values = {m.label: m.value for m in at.metric}
    s = risk.summary(risk.for_epsilon(1.0, 0.0))
    assert values["max advantage (TPR − FPR)"] == f"{s['max advantage']:.3f}" == "0.462"
    assert values["TPR at 1 % FPR"] == "0.027"
    assert "acc_risk_chart" in {c.key for c in at.get("plotly_chart")}
    at.select_slider(key="acc_risk_delta").set_value("1e-5").run()
    assert set(_trace_ids(at, "acc_risk_chart")) >= {"curve-own", "curve-bound"}
    assert any(c.value.startswith("From a prior of 1%") for c in at.caption)
