"""How the command line reads `name=value` pairs and method knobs given as extra flags
(`--n-features 2000`): shared by every sub-command and the benches that take --param."""

from __future__ import annotations

import json

from engine.core.errors import InputError


def value(text: str):
    """'3' → 3, '0.5' → 0.5, 'true' → True, 'none' → None, else the string."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def pairs(items: list[str], what: str) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"{what} must look like name=value. Got {item!r}.")
        key, val = item.split("=", 1)
        out[key.strip().replace("-", "_")] = value(val)
    return out


def extra_flags(extra: list[str]) -> dict:
    """Unknown `--knob value` pairs become method params."""
    out, i = {}, 0
    while i < len(extra):
        flag = extra[i]
        if not flag.startswith("--") or i + 1 >= len(extra):
            raise InputError(f"unrecognised argument {flag!r}; method knobs go as --name value.")
        out[flag[2:].replace("-", "_")] = value(extra[i + 1])
        i += 2
    return out
