"""Shared pieces for the pages: the job registry handle, cached data, small plot helpers.

Not a page itself (app.py lists the pages explicitly). Nothing here does math; plots get
their numbers from the engine.

Ownership: each browser has a secret participant cookie (ui/participant.py); the runs it
starts are stored under its owner key (a keyed hash of the cookie, never shown), and
`jobs()` hands a page the shared JobManager seen through that key, so it may stop,
delete, rename or tag only its own runs, and sees the real-data results of another
participant's upload only in instructor mode (engine/jobs/visibility.py). Instructor mode:
DPSYNTH_INSTRUCTOR=1 for everyone, or the passphrase in DPSYNTH_INSTRUCTOR_KEY typed in
the sidebar (a signed cookie keeps it across reloads).
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from engine.facade import (AttackJob, InputError, JobManager, RunConfig, RunStore, Submission,
                           available_methods, get_method, list_datasets,
                           describe_dataset, load_gallery, visibility)
from ui.participant import alias, instructor as is_instructor, owner_key, runs_root

# One colour per registered method, in registry order (DP-MERF blue, DataLens amber, ...),
# so a new method gets its own colour without an edit here.
_COLOURS = ("#2563eb", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2")
PALETTE = {m: _COLOURS[i % len(_COLOURS)] for i, m in enumerate(available_methods())}
REAL_NOTE = "real data — not private"


@st.cache_resource(show_spinner=False)
def _jobs_for(root: str) -> JobManager:
    # One registry per runs root, shared by every session: it is an immutable handle
    # (its own locks guard the state inside). Opening the store marks runs left
    # RUNNING/QUEUED by a dead process as interrupted.
    jm = JobManager(RunStore(root))
    load_gallery(jm.store)  # precomputed runs (assets/gallery), added once per store
    return jm


def session_id() -> str:
    """This browser's owner key: what the runs it starts are stored under (never shown,
    and not the cookie: ui/participant.py)."""
    return owner_key()


def instructor() -> bool:
    """Instructor mode (ui/participant.instructor)."""
    return is_instructor()


class SessionJobs:
    """The shared JobManager as one browser session sees it: runs it submits are its
    own, and it may stop or delete only those (any run in instructor mode). Reads
    (snapshot, queue, status, store, ...) pass through unchanged."""

    def __init__(self, manager: JobManager, session: str, is_instructor: bool) -> None:
        self.manager, self.session, self.instructor = manager, session, is_instructor

    def __getattr__(self, name: str):
        return getattr(self.manager, name)

    def request(self, config: RunConfig, **kw) -> Submission:
        return self.manager.request(config, session=self.session, **kw)

    def submit(self, config: RunConfig, **kw) -> str:
        return self.request(config, **kw).run_id

    def cancel(self, run_id: str) -> bool:
        return self.manager.cancel(run_id, session=self.session, instructor=self.instructor)

    def delete(self, run_id: str) -> None:
        self.manager.delete(run_id, session=self.session, instructor=self.instructor)

    def measure_attacks(self, run_id: str) -> AttackJob:
        return self.manager.measure_attacks(run_id, session=self.session,
                                            instructor=self.instructor)

    def may_control(self, run_id: str) -> bool:
        return self.manager.may_control(run_id, session=self.session,
                                        instructor=self.instructor)

    def set_label(self, run_id: str, *, name: str = "", tags=()) -> None:
        self.manager.set_label(run_id, name=name, tags=tags, session=self.session,
                               instructor=self.instructor)

    def set_shared(self, run_id: str, shared: bool) -> None:
        self.manager.set_shared(run_id, shared, session=self.session,
                                instructor=self.instructor)

    def visible(self, record, shared: set[str] | None = None):
        """The record as this viewer may see it (engine/jobs/visibility.py)."""
        if shared is None:
            shared = self.manager.store.shared_runs()
        return visibility.visible_record(record, session=self.session, instructor=self.instructor,
                              shared=record.run_id in shared)

    def may_see_real(self, record) -> bool:
        return visibility.may_see_real(record, session=self.session, instructor=self.instructor)

    def owner_label(self, owner: str | None) -> str:
        if owner is None:
            return "no session (command line or gallery)"

        return "you" if owner == self.session else f"participant {alias(owner)}"

    def latest_run(self) -> str | None:
        """This participant's newest queued or running run, else its newest run (what the
        Playground shows again after a reload)."""
        mine = [r for r in self.manager.store.active_runs() if r.session == self.session]
        if mine:
            return mine[-1].run_id
        mine = [r for r in self.manager.store.list_runs() if r.session == self.session]
        return mine[0].run_id if mine else None


def jobs() -> SessionJobs:
    return SessionJobs(_jobs_for(runs_root()), session_id(), instructor())


def store() -> RunStore:
    return _jobs_for(runs_root()).store


@st.cache_resource(show_spinner="Reading the dataset's shape…", max_entries=8)
def _described(name: str, options_key: tuple = ()):
    """(public shape, peek), read once per server in a child process (engine/data/view.py)
    and shared by every session: the server never loads the records themselves."""
    return describe_dataset(name, dict(options_key))


def load_dataset(name: str, options_key: tuple = ()):
    """The dataset's public shape: sizes, image shape, columns, classes; its arrays are
    zeros. Enough for defaults, knob bounds and the cost preview, which read no record."""
    return _described(name, options_key)[0]


def peek(name: str, options_key: tuple = ()):
    """Real training records for the person at the screen (NOT private): the first
    images of an image set, or the rows of a table (engine/data/view.py's Peek)."""
    return _described(name, options_key)[1]


@st.cache_data(ttl=60, show_spinner=False)
def dataset_infos() -> list[dict]:
    """What can be loaded here (file checks only), refreshed each minute."""
    return list_datasets()


def options_key(options: dict) -> tuple:
    return tuple(sorted((k, repr(v) if isinstance(v, (list, dict)) else v)
                        for k, v in options.items()))


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
        log_axis(fig, "x", [x for xs, _ in series.values() for x in xs])
    return fig


def log_ticks(values) -> tuple[list[float], list[str]]:
    """Tick values and labels of a log axis over `values`: 1, 2, 5, 10, 20, 50, … (only
    the powers of ten when that makes more than 12 ticks), each labelled with its own
    number. Plotly's own log ticks label the minor ones "2" and "5" in every decade, which
    reads "5, 2, 10, 5, 2, 1" (issue 43)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not vals:
        return [], []
    lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    decades = range(lo, hi + 1)
    ticks = [m * 10.0 ** d for d in decades for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(vals) / 1.0001 <= t <= max(vals) * 1.0001] or [10.0 ** lo]
    if len(ticks) > 12:
        ticks = [10.0 ** d for d in decades if min(vals) / 1.0001 <= 10.0 ** d <= max(vals) * 1.0001]
    if len(ticks) < 3:  # a narrow range: plotly's own ticks read well there
        return [], []
    return ticks, [_tick_label(t) for t in ticks]


def _tick_label(t: float) -> str:
    if t >= 1e5 or t < 1e-3:
        return f"{t:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{t:,.3f}".rstrip("0").rstrip(".") if t < 1 else f"{t:,.0f}"


def log_axis(fig: go.Figure, axis: str, values) -> go.Figure:
    """Make `axis` ("x" or "y") logarithmic with `log_ticks` over `values`."""
    ticks, labels = log_ticks(values)
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(type="log", **({"tickvals": ticks, "ticktext": labels} if ticks else {}))
    return fig


def method_title(name: str) -> str:
    try:
        return get_method(name).TITLE
    except InputError:
        return name
