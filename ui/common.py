"""Shared pieces for the pages: the job registry handle, cached data, small plot helpers.

Not a page itself (app.py lists the pages explicitly). Nothing here does math; plots get
their numbers from the engine.
"""

from __future__ import annotations

import os
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from engine.errors import InputError
from engine.gallery import load_into as load_gallery
from engine.jobs import JobManager
from engine.store import RunStore, default_root

PALETTE = {"dpmerf": "#2563eb", "datalens": "#d97706"}
REAL_NOTE = "real data — not private"


def runs_root() -> str:
    return str(default_root().resolve())


@st.cache_resource(show_spinner=False)
def _jobs_for(root: str) -> JobManager:
    # One registry per runs root, shared by every session: it is an immutable handle
    # (its own locks guard the state inside). Opening the store marks runs left
    # RUNNING/QUEUED by a dead process as interrupted.
    jm = JobManager(RunStore(root))
    load_gallery(jm.store)  # precomputed runs (assets/gallery), added once per store
    return jm


def jobs() -> JobManager:
    return _jobs_for(runs_root())


def store() -> RunStore:
    return jobs().store


@st.cache_resource(show_spinner="Loading dataset…", max_entries=3)
def load_dataset(name: str, options_key: tuple = ()):
    """Datasets are read-only once loaded, so one copy is shared by every session."""
    from engine.data import load

    return load(name, options=dict(options_key))


@st.cache_data(ttl=60, show_spinner=False)
def dataset_infos() -> list[dict]:
    """What can be loaded here (file checks only), refreshed each minute."""
    from engine.data import list_datasets

    return list_datasets()


def options_key(options: dict) -> tuple:
    return tuple(sorted((k, repr(v) if isinstance(v, (list, dict)) else v)
                        for k, v in options.items()))


def options_from_key(key: tuple) -> dict:
    import ast

    out = {}
    for k, v in key:
        out[k] = ast.literal_eval(v) if isinstance(v, str) and v[:1] in "[{" else v
    return out


def show_input_error(e: InputError) -> None:
    st.error(str(e), icon="⚠️")


def line_figure(series: dict[str, tuple[list, list]], *, title: str, x_title: str,
                y_title: str, height: int = 260, log_x: bool = False) -> go.Figure:
    fig = go.Figure()
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines", name=name))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height,
                      margin=dict(l=10, r=10, t=36, b=10), xaxis_title=x_title,
                      yaxis_title=y_title, legend=dict(orientation="h", y=-0.25))
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def method_title(name: str) -> str:
    from engine.registry import get_method

    try:
        return get_method(name).TITLE
    except InputError:
        return name


def session_tmp_dir() -> Path:
    """A per-session temporary folder for uploads, removed when the session ends."""
    import atexit
    import shutil
    import tempfile
    import weakref

    d = st.session_state.get("_upload_dir")
    if d is None or not Path(d).is_dir():
        d = tempfile.mkdtemp(prefix="dpsynth-upload-")
        st.session_state["_upload_dir"] = d
        holder = _Cleanup(d)
        # Removed when the session's state is dropped, or at the latest at exit.
        st.session_state["_upload_dir_holder"] = holder
        weakref.finalize(holder, shutil.rmtree, d, True)
        atexit.register(shutil.rmtree, d, True)
    return Path(d)


class _Cleanup:
    def __init__(self, path: str) -> None:
        self.path = path


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
