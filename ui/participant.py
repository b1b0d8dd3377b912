"""Who is this browser? A participant cookie that survives a reload and a new tab, and
an instructor cookie that survives a reload.

Each browser gets a random, unguessable secret (secrets.token_urlsafe) kept in a
long-lived first-party cookie. The secret itself is never stored, shown or logged: the
runs and game rounds it starts carry its **owner key**, HMAC(server secret, cookie)
(engine/core/identity.py), and ownership checks (engine.jobs.manager.may_control) compare owner keys
computed here from the cookie on every script run. Pages name a participant by a chosen
name or a short **alias** (a keyed hash of the owner key), from which neither the key
nor the cookie can be rebuilt. So nothing on any page lets another browser become this
participant. The id is read from the cookie the page request sent (st.context.cookies),
never from the URL, so a shared link carries settings, not control.

Limit (why "HttpOnly-equivalent in effect", not HttpOnly): a Streamlit script cannot set
response headers, so the cookie is written by a one-line script on the page, and only
when the request did not carry it (first visit); that script is the one place the value
appears in the page. A script injected into the page could read document.cookie; the app
renders no user HTML. Privacy/security assumption: whoever holds the cookie is the
participant (no login; a workshop, not a bank).
"""

from __future__ import annotations

import os
import re
import secrets

import streamlit as st

from engine.facade import default_root, identity

COOKIE = "dpsynth_participant"
INSTRUCTOR_COOKIE = "dpsynth_instructor"
MAX_AGE_S = 60 * 60 * 24 * 180  # half a year: a course, not forever
_VALID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # what token_urlsafe makes; anything else is ignored


def runs_root() -> str:
    """The run store's folder (its server secret keys every owner)."""
    return str(default_root().resolve())


def _sent(name: str) -> str | None:
    try:
        value = st.context.cookies.get(name)
    except Exception:  # no request context (AppTest, bare script run)
        return None
    return value if isinstance(value, str) else None


def _sent_cookie() -> str | None:
    value = _sent(COOKIE)
    return value if value is not None and _VALID.fullmatch(value) else None


def participant_id() -> str:
    """This browser's secret participant cookie (never shown, never stored)."""
    pid = st.session_state.get("owner_session")
    if pid is None:
        pid = _sent_cookie() or secrets.token_urlsafe(18)
        st.session_state["owner_session"] = pid
    return pid


def owner_key() -> str:
    """What this participant's runs are stored under and checked against (not shown)."""
    return identity.owner_key(runs_root(), participant_id())


def alias(key: str | None) -> str:
    """A short public name for an owner key (grants nothing)."""
    return identity.alias(runs_root(), key)


def _set_cookie(name: str, value: str, max_age: int) -> None:
    # The page's own script (not an iframe), so the cookie is first-party, path=/.
    st.html(f"<script>document.cookie = '{name}={value}; path=/; max-age={max_age}; "
            "SameSite=Strict';</script>", unsafe_allow_javascript=True)


def remember() -> None:
    """Write the participant cookie when the page request did not carry it, and the
    instructor cookie once the passphrase was typed. Call once per script run (app.py)."""
    pid = participant_id()
    if _sent_cookie() != pid:
        _set_cookie(COOKIE, pid, MAX_AGE_S)
    token = st.session_state.get("_instructor_token")
    if token and _sent(INSTRUCTOR_COOKIE) != token:
        _set_cookie(INSTRUCTOR_COOKIE, token, identity.INSTRUCTOR_TTL_S)
    if st.session_state.get("_instructor_forget"):
        # Kept while the session lasts: the cookies a session sees are those of its
        # first request, so the old one would otherwise count again on the next run.
        _set_cookie(INSTRUCTOR_COOKIE, "", 0)


def _passphrase() -> str:
    return os.environ.get("DPSYNTH_INSTRUCTOR_KEY", "")


def instructor() -> bool:
    """Instructor mode: everyone (DPSYNTH_INSTRUCTOR=1), or a browser that typed the
    passphrase set in DPSYNTH_INSTRUCTOR_KEY, in this session or before a reload (its
    signed cookie, verified on every script run)."""
    if os.environ.get("DPSYNTH_INSTRUCTOR", "").lower() in ("1", "true", "yes"):
        return True
    key = _passphrase()
    if not key or st.session_state.get("_instructor_forget"):
        return False
    token = st.session_state.get("_instructor_token") or _sent(INSTRUCTOR_COOKIE)
    return identity.instructor_token_valid(runs_root(), token, key)


def _check_passphrase() -> None:
    """The passphrase box's callback: sign a cookie, or say the passphrase is wrong."""
    typed = st.session_state.get("instructor_key") or ""
    st.session_state["instructor_key"] = ""  # not kept in the session once checked
    if not typed:
        return
    if identity.passphrase_ok(typed, _passphrase()):
        st.session_state["_instructor_token"] = identity.instructor_token(runs_root(), _passphrase())
        st.session_state.pop("_instructor_forget", None)
        st.session_state["_instructor_msg"] = None
    else:
        st.session_state["_instructor_msg"] = "Wrong passphrase: instructor mode is off."


def _leave() -> None:
    st.session_state.pop("_instructor_token", None)
    st.session_state["_instructor_forget"] = True


def instructor_box() -> None:
    """The sidebar's passphrase box (only where a passphrase is set), and its answer."""
    if not _passphrase():
        return
    if instructor():
        st.button("Leave instructor mode", key="instructor_leave", on_click=_leave)
        return
    st.text_input("Instructor passphrase", type="password", key="instructor_key",
                  on_change=_check_passphrase,
                  help="Lets this browser stop or delete anyone's runs and see every run's "
                       "real-data results; kept across reloads for "
                       f"{identity.INSTRUCTOR_TTL_S // 3600} hours.")
    if msg := st.session_state.get("_instructor_msg"):
        st.error(msg, icon="⛔")
