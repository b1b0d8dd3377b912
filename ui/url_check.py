"""Which settings of a shared link were ignored, and why.

The Playground binds its widgets to the URL; Streamlit silently drops a value it cannot
use (?eps=abc, ?seed=-5) and shows the default instead. `remember_link()` keeps the
query string the session opened with; `ignored()` compares it with what the widgets
ended up holding, so the page can say so in one warning. `drop_unknown()` then takes the keys that are no
setting here out of the URL, so a copied link does not carry them on.
"""

from __future__ import annotations

import math

import streamlit as st

_STREAMLIT_OWN = ("embed", "embed_options")


def remember_link() -> None:
    """Keep the URL's settings as the session first saw them (call before any widget)."""
    if "pg_link" not in st.session_state:
        st.session_state["pg_link"] = st.query_params.to_dict()


def _same(asked: str, got) -> bool:
    if isinstance(got, bool):
        return asked.strip().lower() == str(got).lower()
    if isinstance(got, (int, float)):
        try:
            return math.isclose(float(asked), float(got), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return False
    return asked == str(got)


def _why(asked: str, got) -> str:
    if isinstance(got, bool):
        return "not true or false"
    if isinstance(got, (int, float)):
        try:
            x = float(asked)
        except ValueError:
            return "not a number"
        if isinstance(got, int) and not x.is_integer():
            return "not a whole number"
        return "outside the allowed range"
    return "not one of the choices"


def ignored(widget_keys: set[str]) -> list[str]:
    """'key=value (why; used X)' for each setting of the link that no widget took,
    judged once, on the session's first run (later changes are the user's own)."""
    if "pg_link_ignored" not in st.session_state:
        st.session_state["pg_link_ignored"] = _judge(widget_keys)
    return st.session_state["pg_link_ignored"]


def _judge(widget_keys: set[str]) -> list[str]:
    out = []
    for key, asked in (st.session_state.get("pg_link") or {}).items():
        if key in _STREAMLIT_OWN:
            continue
        if key not in widget_keys:
            out.append(f"{key}={asked} (not a setting here)")
            continue
        got = st.session_state.get(key)
        if got is not None and not _same(asked, got):
            out.append(f"{key}={asked} ({_why(asked, got)}; used {got})")
    return out


def drop_unknown(widget_keys: set[str]) -> list[str]:
    """Remove from the URL every query parameter that is no setting here (the warning
    from `ignored` has named them); returns the keys removed."""
    from streamlit.errors import StreamlitAPIException

    gone = []
    for key in list(st.query_params.keys()):
        if key in widget_keys or key in _STREAMLIT_OWN:
            continue
        try:
            del st.query_params[key]
        except StreamlitAPIException:  # bound to a widget of another method: Streamlit's own
            continue
        gone.append(key)
    return gone


def unknown_page(url: str | None, url_paths: list[str], base: str = "") -> str | None:
    """The page path of `url` (the browser's, st.context.url) when no page has it, e.g.
    "no_such_page"; None for a known page, the app's root, or no URL (tests)."""
    if not url:
        return None
    from urllib.parse import urlparse

    path = urlparse(url).path.strip("/")
    base = (base or "").strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):].strip("/")
    if not path or path in {p.strip("/") for p in url_paths}:
        return None
    return path
