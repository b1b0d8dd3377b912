"""The workshop benchmark's light client (bench/ws_client.py) against the real app.

`streamlit run app.py` on a free port with a temporary DPSYNTH_RUNS; one websocket
session opens the Playground, finds the Train button's widget id, presses it and follows
the page's own auto-refresh. Plus the client's bookkeeping on hand-made messages.
"""

import asyncio
import time

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.app_server import serve
from bench.ws_client import Session


@pytest.fixture
def app_url(tmp_path):
    with serve(tmp_path / "runs") as url:
        yield url


async def _until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:.0f} s"
        await asyncio.sleep(0.1)


def test_a_websocket_session_loads_the_playground_and_trains(app_url):
    async def visit():
        async with Session(app_url, "seed=7&dpmerf_epochs=1") as s:
            took = await s.load(timeout=120)
            loaded = dict(s.elements)
            train = s.button("Train")
            assert train is not None and not train.disabled, "Train missing or disabled"
            await s.click("Train", timeout=60)
            await s.wait_for_text("started by you", timeout=60)
            # the live panel's fragment asks for a 1 s auto-refresh; the client follows it
            await _until(lambda: s.timings.reruns, 60, "an auto-refresh round trip")
            stop = s.button("Stop")
            return took, loaded, train, stop, s.timings.reruns, s.errors

    took, loaded, train, stop, reruns, errors = asyncio.run(visit())
    assert 0 < took < 120
    assert train.widget_id.endswith("-pg_train")  # Streamlit's id for key="pg_train"
    assert any(e.kind == "heading" and e.text == "Playground" for e in loaded.values())
    assert any("noise multiplier (sigma)" in e.text for e in loaded.values())
    assert stop is not None and not stop.disabled  # the session owns a running run now
    assert all(0 < seconds < 60 for _, seconds in reruns)
    assert errors == []


def _msg(**fields) -> ForwardMsg:
    m = ForwardMsg()
    for k, v in fields.items():
        if k == "fragments":
            m.metadata.run.fragment_ids.extend(v)
        elif k == "path":
            m.metadata.delta_path.extend(v)
        elif k == "new_session":
            m.new_session.SetInParent()
        elif k == "markdown":
            m.delta.new_element.markdown.body = v
        else:
            setattr(m, k, v)
    return m


def test_a_full_run_drops_what_it_did_not_redraw_and_ref_hashes_resolve():
    s = Session("http://localhost:1")  # never connected: messages are fed by hand
    s._handle(_msg(new_session=True))
    cached = _msg(markdown="old text", path=[0, 1], hash="h1")
    cached.metadata.cacheable = True
    s._handle(cached)
    s._handle(_msg(markdown="kept", path=[0, 0]))
    s._handle(_msg(script_finished=ForwardMsg.FINISHED_SUCCESSFULLY))
    assert s.shows("old text") and s.shows("kept")

    s._handle(_msg(new_session=True))
    s._handle(_msg(markdown="kept again", path=[0, 0]))
    s._handle(_msg(script_finished=ForwardMsg.FINISHED_SUCCESSFULLY))
    assert not s.shows("old text") and s.shows("kept again")

    s._handle(_msg(new_session=True))
    ref = ForwardMsg(ref_hash="h1")  # "the message you cached as h1", as the server sends
    s._handle(ref)
    s._handle(_msg(script_finished=ForwardMsg.FINISHED_SUCCESSFULLY))
    assert s.shows("old text") and not s.shows("kept again")


def test_a_fragment_run_keeps_the_page_and_times_the_auto_rerun():
    s = Session("http://localhost:1")
    s._handle(_msg(new_session=True))
    s._handle(_msg(markdown="page", path=[0, 0]))
    s._handle(_msg(script_finished=ForwardMsg.FINISHED_SUCCESSFULLY))
    from bench.ws_client import _Pending

    s._pending.append(_Pending(time.perf_counter(), auto=True))
    s._handle(_msg(new_session=True, fragments=["f1"]))
    s._handle(_msg(markdown="live", path=[0, 1]))
    s._handle(_msg(script_finished=ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert s.shows("page") and s.shows("live")
    assert len(s.timings.reruns) == 1 and s._pending == []
