"""Playground: pick data, method and budget, press Train, watch it learn.

Every setting is bound to the URL (bind="query-params"), so a copied link restores it.
The run itself happens in a background job (engine.jobs); the live panel polls it once
a second from a fragment, so the page stays responsive.
"""

from __future__ import annotations

import hashlib
import re

import streamlit as st

from engine.errors import InputError
from engine.registry import available_methods, get_method
from engine.store import RunStatus
from engine.ui_state import (DEFAULTS, DELTA_CHOICES, EPSILON_CHOICES, changed_params,
                             config_from_settings, epsilon_label, grid_scale, image_grid,
                             knobs)
from ui import live_view
from ui.common import (REAL_NOTE, dataset_infos, jobs, load_dataset,
                       method_title, options_key, session_tmp_dir, show_input_error)

HINTS = {
    ("datalens", "digits"): (
        "warning",
        "DataLens on digits stays near chance at ε = 1: its 1,437 training records split "
        "across the teachers leave too few per teacher to outvote the noise (about .3 at "
        "ε = 10). DP-MERF does about .8 here at ε = 1. Pick DP-MERF, or raise ε to see "
        "DataLens start to learn."),
    ("dpmerf", "digits"): (
        "info",
        "DP-MERF releases one noisy summary of the data, then trains as long as it likes "
        "for free: on digits at ε = 1 it reaches about .8 logistic-regression accuracy."),
    ("datalens", "fashion_mnist"): (
        "info", "DataLens at ε = 1 on Fashion-MNIST needs thousands of teachers and hours "
                "on a CPU; the paper reports .65 (CNN). Try a short run on a GPU."),
    ("datalens", "mnist"): (
        "info", "DataLens at ε = 1 on MNIST: paper .71 (CNN), hours on a CPU."),
}


def _reset_knobs() -> None:
    """Dataset or method changed: drop knob values so the new defaults apply."""
    for key in list(st.session_state):
        if isinstance(key, str) and re.match(r"^(dpmerf|datalens)_", key):
            del st.session_state[key]


def _upload(kind: str) -> dict | None:
    """Save the user's file in this session's temporary folder; returns data options."""
    up = st.file_uploader(f"Your .{kind} file", type=[kind], key=f"pg_upload_{kind}",
                          help="Kept in a temporary folder for this session only.")
    if up is None:
        st.info("CSV: one header row, a label column, numeric or categorical features. "
                if kind == "csv" else
                "NPZ: arrays x (n, h, w) or (n, c, h, w), uint8 or floats in [0, 1], and y "
                "(integer labels).")
        return None
    content = up.getvalue()
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", up.name)[-60:]
    path = session_tmp_dir() / f"{hashlib.sha256(content).hexdigest()[:12]}-{safe}"
    if not path.exists():
        path.write_bytes(content)
    if kind == "npz":
        return {"path": str(path)}
    import pandas as pd

    try:
        cols = [str(c).strip() for c in pd.read_csv(path, nrows=0).columns]
    except Exception as e:  # unreadable header: the loader gives the full message below
        st.error(f"{up.name} could not be read as CSV ({type(e).__name__}); save it as "
                 "comma-separated UTF-8 text with one header row.", icon="⚠️")
        return None
    label = st.selectbox("Label column", cols, index=len(cols) - 1, key="pg_csv_label")
    cats = st.multiselect("Treat as categorical", [c for c in cols if c != label],
                          key="pg_csv_cat",
                          help="Columns with ≤ 10 distinct values are categorical already.")
    opts = {"path": str(path), "label": label}
    if cats:
        opts["categorical"] = cats
    return opts


def _knob_widget(method: str, k) -> object:
    key = f"{method}_{k.name}"
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


def _data_shape(name: str, options: dict | None) -> tuple[int | None, int | None]:
    """(training records, features per record) for knob bounds, when loadable."""
    if options is None or not info[name]["available"]:
        return None, None
    try:
        d = load_dataset(name, options_key(options))
    except InputError:
        return None, None
    return d.n_train, int(d.x_train[0].size)


st.title("Playground")
st.caption("Train a differentially private generator and watch the privacy–utility "
           "tradeoff happen. Settings live in the URL: copy it to share them.")

infos = dataset_infos()
names = [d["name"] for d in infos]
info = {d["name"]: d for d in infos}
methods = available_methods()

settings, live = st.columns([1, 2], gap="large")
with settings:
    # No format_func on bound widgets: Streamlit puts the displayed label in the URL,
    # and short names keep links readable (?dataset=digits&method=datalens).
    dataset = st.selectbox("Dataset", names, index=names.index(DEFAULTS["dataset"]),
                           key="dataset", bind="query-params", on_change=_reset_knobs)
    st.caption(f"{':green[available]' if info[dataset]['available'] else ':red[not available here]'} · "
               f"{info[dataset]['description']} · {info[dataset]['where']}")
    data_options: dict | None = {}
    if info[dataset]["needs_file"]:
        data_options = _upload(dataset)
    method = st.selectbox("Method", methods, index=methods.index(DEFAULTS["method"]),
                          key="method", bind="query-params", on_change=_reset_knobs,
                          help=" · ".join(f"{m} = {method_title(m)}" for m in methods))
    eps = st.select_slider("Privacy budget ε (log scale)", EPSILON_CHOICES,
                           value=DEFAULTS["eps"], key="eps", bind="query-params",
                           format_func=epsilon_label,
                           help="Smaller ε = stronger privacy = more noise. ∞ trains "
                                "without noise, as a non-private reference.")
    delta = st.select_slider("δ", DELTA_CHOICES, value=DEFAULTS["delta"], key="delta",
                             bind="query-params",
                             help="Chance the ε guarantee fails; keep it below 1/records.")
    seed = st.number_input("Seed (model init only; DP noise is never seeded)", min_value=0,
                           value=DEFAULTS["seed"], step=1, key="seed", bind="query-params")

    actions = st.container()  # Train / Stop sit here, above the long list of knobs
    module = get_method(method)
    defaults = module.Params.for_dataset(dataset)
    values = {}
    shape_info = _data_shape(dataset, data_options)
    all_knobs = knobs(defaults, n_train=shape_info[0], n_dims=shape_info[1])
    st.markdown(f"**{module.TITLE} settings** (defaults for {dataset})")
    for k in [k for k in all_knobs if k.main]:
        values[k.name] = _knob_widget(method, k)
    with st.expander("Advanced"):
        for k in [k for k in all_knobs if not k.main]:
            values[k.name] = _knob_widget(method, k)

    hint = HINTS.get((method, dataset))
    if hint:
        getattr(st, hint[0])(hint[1])

    data = config = None
    if not info[dataset]["available"]:
        st.error(f"{dataset} is not available on this machine: {info[dataset]['where']}.")
    elif data_options is not None:
        try:
            data = load_dataset(dataset, options_key(data_options))
            config = config_from_settings(
                dataset=dataset, method=method, eps=eps, delta=delta, seed=int(seed),
                params=changed_params(defaults, values), data_options=data_options)
            preview = module.privacy_preview(config, data)
        except InputError as e:
            show_input_error(e)
            config = None
        else:
            st.markdown("**Derived before training** (no data touched yet)")
            nums = {k: v for k, v in preview.items() if isinstance(v, (int, float))}
            cols = st.columns(2)
            for i, (k, v) in enumerate(nums.items()):
                cols[i % 2].metric(k, f"{v:.3g}" if isinstance(v, float) else f"{v:,}", help=k)
            for k, v in preview.items():
                if k == "hint" and hint is None:
                    st.info(v)
                elif k != "hint" and not isinstance(v, (int, float)):
                    st.caption(f"{k}: {v}")
            st.caption(f"{data.n_train:,} training records · {data.n_classes} classes")

    run_id = st.session_state.get("pg_run")
    snap = jobs().snapshot(run_id, curves=False) if run_id else None
    running = snap is not None and not snap.status.terminal
    b1, b2 = actions.columns(2)
    if b1.button("Train", type="primary", disabled=config is None or running,
                 key="pg_train", use_container_width=True):
        try:
            sub = jobs().request(config)
            st.session_state["pg_run"] = sub.run_id
            st.session_state["pg_reused"] = sub.reused
            st.session_state["pg_seen_active"] = not sub.reused
        except InputError as e:
            show_input_error(e)
        st.rerun()
    if b2.button("Stop", disabled=not running or not jobs().may_control(run_id),
                 key="pg_stop", use_container_width=True,
                 help="Only the session that started a run (or an instructor) can stop it."):
        try:
            jobs().cancel(run_id)
        except InputError as e:
            show_input_error(e)
        st.rerun()
    if run_id and st.session_state.get("pg_reused"):
        actions.info(f"Reused the finished run `{run_id}`: same settings and seed, so "
                     "nothing was retrained and no privacy budget was spent again.")

    if data is not None and data.kind == "image":
        with st.expander(f"Peek at the training data ({REAL_NOTE})"):
            st.image(image_grid(data.x_train[:50], data.y_train[:50],
                                scale=grid_scale(data.x_train.shape[-1])),
                     caption=REAL_NOTE)


@st.fragment(run_every=1.0 if running else None)
def live_panel() -> None:
    rid = st.session_state.get("pg_run")
    if not rid:
        st.info("Press **Train** to start. The defaults (digits, DP-MERF, ε = 1) train "
                "in well under a minute on a laptop.")
        return
    view = live_view.run_view(jobs(), rid)
    if view is None:
        st.warning(f"Run {rid} is no longer in the store.")
        return
    live_view.draw(view)
    if view["status"].terminal and st.session_state.get("pg_seen_active"):
        # The job ended since the last full run: redraw the whole page once so the
        # buttons re-enable and polling stops.
        st.session_state["pg_seen_active"] = False
        st.rerun()
    if view["status"] in (RunStatus.QUEUED, RunStatus.RUNNING):
        st.session_state["pg_seen_active"] = True


with live:
    live_panel()
