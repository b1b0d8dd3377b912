"""One Playground widget per method knob, bound to the URL. ui/knobs.py says which
knobs, their kinds and bounds (from the method's declarations) and their keys, so the
Playground can reset them when the dataset or method changes."""

from __future__ import annotations

import streamlit as st

from ui.knobs import Widget, knob_key


def knob_widget(method: str, w: Widget) -> object:
    k = w.spec
    label = k.name.replace("_", " ")
    common = dict(key=knob_key(method, k.name), help=k.help or None, bind="query-params")
    if k.kind == "int":
        return st.number_input(label, min_value=int(w.lo) if w.lo is not None else None,
                               max_value=int(w.hi) if w.hi is not None else None,
                               value=None if k.default is None else int(k.default),
                               step=int(k.multiple_of or 1),
                               placeholder=k.none or None, **common)
    if k.kind == "float":
        return st.number_input(label, min_value=None if w.lo is None else float(w.lo),
                               max_value=None if w.hi is None else float(w.hi),
                               value=None if k.default is None else float(k.default),
                               format="%g", placeholder=k.none or None, **common)
    if k.kind == "bool":
        return st.checkbox(label, value=bool(k.default), **common)
    return st.selectbox(label, list(k.choices), index=list(k.choices).index(k.default),
                        **common)
