"""A light Streamlit client: one browser session over Streamlit's own websocket protocol.

No browser runs, so N simulated sessions cost the machine almost nothing and a load
benchmark measures the server, not the room. What the client does is what a browser tab
does as far as the server can tell (read from Streamlit 1.67: the frontend bundle
`static/js/index.*.js`, `web/server/starlette/starlette_websocket.py` and
`runtime/app_session.py`):

- connects to ws://HOST:PORT/_stcore/stream with the subprotocol "streamlit" and no
  Origin header (the server skips its XSRF check for such non-browser clients);
- sends `BackMsg.rerun_script` (a `ClientState`: the URL's query string, the page's script
  hash once the server named it, widget states, the hashes of cached messages);
- reads `ForwardMsg`s: `new_session` starts every run (full or fragment; `metadata.run`
  names the fragments), `delta`s carry the elements, `page_info_changed` rewrites the
  query string (URL-bound widgets), `auto_rerun` asks for a fragment rerun every
  `interval` seconds (the browser uses setInterval: it sends without waiting for the
  previous rerun), `stop_auto_rerun` cancels one, `script_finished` ends a run;
- clears every auto-rerun timer when a full run starts, as the browser does;
- presses a button by sending its widget id with `trigger_value`;
- fetches each new `/media/...` URL once (the images a browser would load);
- keeps messages flagged `metadata.cacheable` and lists their hashes, so the server may
  answer with a `ref_hash` instead of the message, as it does for a browser.

Widget states other than a pressed button are not sent: the server keeps each widget's
last value, and the bound ones come back through the query string. Engine-free: imports
only Streamlit's protobufs and `websockets` (a Streamlit dependency).
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

_TEXT_FIELDS = ("body", "label", "text")


@dataclass
class Element:
    """What the client keeps of one element: its kind, its text and, for buttons, id/state."""

    kind: str
    text: str = ""
    widget_id: str = ""
    disabled: bool = False


@dataclass
class _Pending:
    """A rerun request on its way: sent at `sent`, answered by the run that starts after it."""

    sent: float
    auto: bool  # an auto-rerun of a fragment (its round trip is a "rerun latency")
    started: bool = False


@dataclass
class Timings:
    """Seconds, measured at this client: auto-rerun round trips (with the wall-clock time
    each was sent) and media fetches."""

    reruns: list[tuple[float, float]] = field(default_factory=list)  # (sent at, seconds)
    media: list[float] = field(default_factory=list)


def _text(element) -> Element:
    kind = element.WhichOneof("type") or ""
    sub = getattr(element, kind) if kind else None
    parts = [getattr(sub, f) for f in _TEXT_FIELDS
             if sub is not None and f in sub.DESCRIPTOR.fields_by_name and getattr(sub, f)]
    if kind == "button":
        return Element(kind, " ".join(parts), sub.id, sub.disabled)
    return Element(kind, " ".join(parts))


def _media_urls(msg) -> list[str]:
    """Every `url` field under a protobuf message that points at the server's media store."""
    urls = []
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE:
            items = [value] if hasattr(value, "ListFields") else value
            for v in items:  # (a map yields its keys: strings, skipped)
                if hasattr(v, "ListFields"):
                    urls += _media_urls(v)
        elif fd.name == "url" and isinstance(value, str) and "media/" in value:
            urls.append(value)
    return urls


class Session:
    """One simulated browser tab. Use as `async with Session(url, query) as s: ...`."""

    def __init__(self, base_url: str, query: str = "", *, fetch_media: bool = True) -> None:
        self.http = base_url.rstrip("/")
        self.ws_url = self.http.replace("http", "ws", 1) + "/_stcore/stream"
        self.query = query.lstrip("?")
        self.fetch_media = fetch_media
        self.page_hash = ""
        self.elements: dict[tuple, Element] = {}
        self.timings = Timings()
        self.errors: list[str] = []
        self._touched: set[tuple] = set()
        self._full_run = False
        self._cache: dict[str, ForwardMsg] = {}
        self._pending: list[_Pending] = []
        self._timers: dict[str, asyncio.Task] = {}
        self._media_seen: set[str] = set()
        self._fetches: set[asyncio.Task] = set()
        self._finished = asyncio.Event()  # a full run finished successfully
        self._ws = None
        self._reader: asyncio.Task | None = None

    async def __aenter__(self) -> Session:
        self._t_connect = time.perf_counter()
        self._ws = await connect(self.ws_url, subprotocols=["streamlit"], max_size=None,
                                 open_timeout=None, ping_interval=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        for t in [*self._timers.values(), *self._fetches]:
            t.cancel()
        await self._ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    # -- what a user does ---------------------------------------------------------------

    async def load(self, timeout: float) -> float:
        """Opens the page; seconds from connecting to the end of its first full run."""
        self._finished.clear()
        await self._rerun()
        await self._wait_finished(timeout)
        return time.perf_counter() - self._t_connect

    def button(self, label: str) -> Element | None:
        return next((e for e in self.elements.values()
                     if e.kind == "button" and e.text == label), None)

    def shows(self, text: str) -> bool:
        return any(text in e.text for e in self.elements.values())

    async def click(self, label: str, timeout: float) -> None:
        """Presses the button labelled `label` and waits for the full run it starts."""
        b = self.button(label)
        if b is None or b.disabled:
            raise RuntimeError(f"no enabled button {label!r} on the page")
        self._finished.clear()
        await self._rerun(trigger=b.widget_id)
        await self._wait_finished(timeout)

    async def wait_for_text(self, text: str, timeout: float) -> None:
        """Waits (while the page's own auto-reruns go on) until `text` is on the page."""
        deadline = time.monotonic() + timeout
        while not self.shows(text):
            if self._reader.done():
                raise RuntimeError(f"connection closed before {text!r} appeared")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not shown within {timeout:.0f} s")
            await asyncio.sleep(0.2)

    # -- the protocol -------------------------------------------------------------------

    async def _wait_finished(self, timeout: float) -> None:
        """Until a full run finishes; fails at once if the connection has dropped."""
        waiter = asyncio.ensure_future(self._finished.wait())
        done, _ = await asyncio.wait([waiter, self._reader], timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not self._finished.is_set():
            why = self.errors[-1] if self.errors else "the connection closed"
            raise TimeoutError(f"no full run finished within {timeout:.0f} s" if not done
                               else f"page not loaded: {why}")

    async def _rerun(self, *, trigger: str = "", fragment: str = "") -> None:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.page_script_hash = self.page_hash
        cs.fragment_id = fragment
        cs.is_auto_rerun = bool(fragment)
        cs.cached_message_hashes.extend(self._cache)
        if trigger:
            w = cs.widget_states.widgets.add()
            w.id, w.trigger_value = trigger, True
        self._pending.append(_Pending(time.perf_counter(), auto=bool(fragment)))
        await self._ws.send(msg.SerializeToString())

    async def _auto_rerun(self, fragment: str, interval: float) -> None:
        while True:  # setInterval: one request per interval, answered or not
            await asyncio.sleep(interval)
            await self._rerun(fragment=fragment)

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                self._handle(msg)
        except Exception as e:  # a dropped connection ends the session; reported by caller
            self.errors.append(f"{type(e).__name__}: {e}")

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            msg = self._cache[msg.ref_hash]
            kind = msg.WhichOneof("type")
        elif msg.metadata.cacheable and msg.hash:
            self._cache[msg.hash] = msg
        if kind == "new_session":
            self._start(msg)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            path = tuple(msg.metadata.delta_path)
            self.elements[path] = _text(msg.delta.new_element)
            self._touched.add(path)
            if self.fetch_media:
                for url in _media_urls(msg.delta.new_element):
                    if url not in self._media_seen:
                        self._media_seen.add(url)
                        task = asyncio.create_task(self._get(url))
                        self._fetches.add(task)
                        task.add_done_callback(self._fetches.discard)
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "auto_rerun":
            fid, every = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if fid not in self._timers:
                self._timers[fid] = asyncio.create_task(self._auto_rerun(fid, every))
        elif kind == "stop_auto_rerun":
            for fid in msg.stop_auto_rerun.fragment_ids:
                self._stop_timer(fid)
        elif kind == "script_finished":
            self._end(msg.script_finished)

    def _start(self, msg: ForwardMsg) -> None:
        if msg.new_session.page_script_hash:
            self.page_hash = msg.new_session.page_script_hash
        # Every request sent so far is answered by this run (the server merges pending
        # requests into one). A run that started before a request reached the server is
        # counted too, so a latency can err low, by at most one run.
        for p in self._pending:
            p.started = True
        self._full_run = not msg.metadata.run.fragment_ids
        if self._full_run:
            for fid in list(self._timers):
                self._stop_timer(fid)
            self._touched = set()

    def _end(self, status: int) -> None:
        if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return  # the requests it held are served by the run that replaces it
        now = time.perf_counter()
        done = [p for p in self._pending if p.started]
        self._pending = [p for p in self._pending if not p.started]
        wall = time.time() - now  # perf_counter → wall clock, for "while N were open"
        self.timings.reruns += [(wall + p.sent, now - p.sent) for p in done if p.auto]
        if self._full_run and status == ForwardMsg.FINISHED_SUCCESSFULLY:
            # like the browser, drop the elements this run did not draw again
            self.elements = {k: v for k, v in self.elements.items() if k in self._touched}
            self._finished.set()

    def _stop_timer(self, fid: str) -> None:
        t = self._timers.pop(fid, None)
        if t is not None:
            t.cancel()

    async def _get(self, url: str) -> None:
        full = url if url.startswith("http") else f"{self.http}/{url.lstrip('/')}"
        t0 = time.perf_counter()
        try:
            await asyncio.to_thread(lambda: urllib.request.urlopen(full, timeout=60).read())
            self.timings.media.append(time.perf_counter() - t0)
        except OSError as e:
            self.errors.append(f"media {url}: {e}")
