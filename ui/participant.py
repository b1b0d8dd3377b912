"""Who is this browser? A participant id that survives a reload and a new tab.

Each browser gets a random, unguessable id (secrets.token_urlsafe) kept in a long-lived
first-party cookie; the runs it starts carry that id, and only it (or an instructor) may
stop or delete them (engine.jobs.manager.may_control). The id is read from the cookie the page
request sent (st.context.cookies) and never from the URL, so a shared link carries
settings, not control. Where the browser sent no cookie (first visit, AppTest) a fresh id
is made for this session and written to the cookie from the page itself.

Privacy/security assumption: whoever holds the cookie is the participant (no login; a
workshop, not a bank). The id is therefore never shown: pages show `tag(id)`, a short
hash that names a participant without handing over control.
"""

from __future__ import annotations

import hashlib
import re
import secrets

import streamlit as st

COOKIE = "dpsynth_participant"
MAX_AGE_S = 60 * 60 * 24 * 180  # half a year: a course, not forever
_VALID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # what token_urlsafe makes; anything else is ignored


def _sent_cookie() -> str | None:
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # no request context (AppTest, bare script run)
        return None
    return value if isinstance(value, str) and _VALID.fullmatch(value) else None


def participant_id() -> str:
    """This browser's participant id (stored with the runs it starts)."""
    pid = st.session_state.get("owner_session")
    if pid is None:
        pid = _sent_cookie() or secrets.token_urlsafe(18)
        st.session_state["owner_session"] = pid
    return pid


def remember() -> None:
    """Write the id into the browser's cookie when the page request did not carry it.

    Call once per script run (app.py). The script runs in the page itself (not an
    iframe), so the cookie is first-party for this origin, path=/ for every page."""
    pid = participant_id()
    if _sent_cookie() == pid:
        return
    st.html(f"<script>document.cookie = '{COOKIE}={pid}; path=/; max-age={MAX_AGE_S}; "
            "SameSite=Lax';</script>", unsafe_allow_javascript=True)


def tag(pid: str | None) -> str:
    """A short public name for a participant id (a hash: it grants nothing)."""
    return hashlib.sha256((pid or "").encode()).hexdigest()[:6]
