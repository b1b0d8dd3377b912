"""One Playground widget per method knob, bound to the URL (engine.ui_state.Knob says
which kind and bounds; engine.ui_state.knob_key names it, so the Playground can reset
it when the dataset or method changes)."""

from __future__ import annotations

import streamlit as st

from engine.ui_state import knob_key


def knob_widget(method: str, k) -> object:
    key = knob_key(method, k.name)
    label = k.name.replace("_", " ")
    common = dict(key=key, help=k.help or None, bind="query-params")
    if k.kind == "int":
        return st.number_input(label, min_value=int(k.lo) if k.lo is not None else None,
                               max_value=int(k.hi) if k.hi is not None else None,
                               value=int(k.default), step=int(k.step or 1), **common)
    if k.kind == "float":
        return st.number_input(label, min_value=float(k.lo) if k.lo is not None else None,
                               max_value=float(k.hi) if k.hi is not None else None,
                               value=float(k.default), format="%g", **common)
    if k.kind == "optional_float":
        return st.number_input(label, min_value=float(k.lo) if k.lo is not None else None,
                               max_value=float(k.hi) if k.hi is not None else None,
                               value=k.default, format="%g", placeholder="dataset default",
                               **common)
    if k.kind == "optional_int":
        return st.number_input(label, min_value=int(k.lo) if k.lo is not None else None,
                               max_value=int(k.hi) if k.hi is not None else None,
                               value=k.default, step=1, placeholder="automatic", **common)
    if k.kind == "bool":
        return st.checkbox(label, value=bool(k.default), **common)
    return st.selectbox(label, list(k.choices), index=list(k.choices).index(k.default),
                        **common)
