"""Who is who, without anything on screen that grants control (no streamlit here).

Three values, never confused:

* the **participant cookie** (ui/participant.py): a random secret the browser keeps. It
  is the only thing that proves "this is participant X" and is never displayed, stored
  or logged by the app;
* the **owner key** = HMAC(server secret, cookie): what the run store keeps with each run
  and game round, and what ownership checks compare (engine/jobs/manager.may_control). It is
  never shown either, and even if it leaked it could not be turned back into a cookie
  (a keyed one-way function), so a copied owner key grants nothing;
* the **alias** = a few characters of HMAC(server secret, owner key): the short public
  name the room view and "started by" show for a participant who gave no name. Knowing
  an alias gives neither the key nor the cookie.

The server secret is 32 random bytes in `<runs root>/server.secret` (mode 0600), made on
first use; deleting it makes every stored owner key and instructor cookie invalid (a new
workshop). Privacy/security assumption: whoever can read the runs root (the server's
account) is trusted; participants only see pages.

The instructor cookie is `<expiry>.<HMAC(secret, expiry | hash of the passphrase)>`:
it proves the passphrase was typed once, survives a reload until it expires, and stops
working when the passphrase (DPSYNTH_INSTRUCTOR_KEY) or the secret changes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from pathlib import Path

SECRET_FILE = "server.secret"
INSTRUCTOR_TTL_S = 12 * 3600  # one workshop day
ALIAS_LEN = 6
_TOKEN = re.compile(r"(\d{1,12})\.([0-9a-f]{64})")


def server_secret(root: str | os.PathLike) -> bytes:
    """The store's secret (made once, readable by the server's account only)."""
    path = Path(root) / SECRET_FILE
    try:
        data = path.read_bytes()
        if len(data) >= 32:
            return data
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_bytes(32)
    try:  # O_EXCL: two processes starting at once agree on the first file written
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # the other writer may not have written its bytes yet
            data = path.read_bytes()
            if len(data) >= 32:
                return data
            time.sleep(0.01)
        raise RuntimeError(f"{path} is shorter than 32 bytes; delete it to make a new one.")
    with os.fdopen(fd, "wb") as f:
        f.write(fresh)
    return fresh


def _mac(root, *parts: str) -> str:
    return hmac.new(server_secret(root), "\x00".join(parts).encode(), hashlib.sha256).hexdigest()


def owner_key(root, cookie: str) -> str:
    """The key a participant's runs are stored under (never shown; not the cookie)."""
    return "p-" + _mac(root, "owner", cookie)


def alias(root, key: str | None) -> str:
    """A short public name for an owner key: not invertible, grants nothing."""
    return _mac(root, "alias", key or "")[:ALIAS_LEN]


def _passphrase_hash(passphrase: str) -> str:
    return hashlib.sha256(passphrase.encode()).hexdigest()


def instructor_token(root, passphrase: str, *, now: float | None = None) -> str:
    """The signed instructor cookie value, valid INSTRUCTOR_TTL_S from `now`."""
    expires = int((time.time() if now is None else now) + INSTRUCTOR_TTL_S)
    return f"{expires}.{_mac(root, 'instructor', str(expires), _passphrase_hash(passphrase))}"


def instructor_token_valid(root, token: str | None, passphrase: str, *,
                           now: float | None = None) -> bool:
    """Was `token` signed here for this passphrase, and has it not expired?"""
    if not token or not passphrase:
        return False
    m = _TOKEN.fullmatch(token)
    if m is None or int(m.group(1)) < (time.time() if now is None else now):
        return False
    want = _mac(root, "instructor", m.group(1), _passphrase_hash(passphrase))
    return hmac.compare_digest(m.group(2), want)


def passphrase_ok(typed: str, passphrase: str) -> bool:
    """Constant-time comparison of a typed passphrase (False when none is set)."""
    return bool(passphrase) and hmac.compare_digest(typed.encode(), passphrase.encode())
