"""Playground: pick data, method and budget, press Train, watch it learn.

Every setting is bound to the URL (bind="query-params"), so a copied link restores it.
The run itself happens in a background job (engine.jobs.manager); the live panel polls it once
a second from a fragment, so the page stays responsive.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from engine.facade import (InputError, RunStatus, available_methods, class_rows, default_params,
                           get_method, grid_scale, uploads)
from engine.facade import preview as preview_run
from ui import live_view, start_view, url_check
from ui.choices import DEFAULTS, DELTA_CHOICES, EPSILON_CHOICES, epsilon_label, privacy_in_words
from ui.common import (REAL_NOTE, dataset_infos, jobs, load_dataset, method_title,
                       options_key, peek, runs_root, session_id, show_input_error)
from ui.knob_widgets import knob_widget
from ui.knobs import changed_params, config_from_settings, knob_key, widgets
from ui.ledger import budget_line
from ui.train_gate import FITS_HALF, draw_beside, short_label, show_error, start_hint, user_words


def _sync_knobs(method: str, dataset: str, data_options: dict | None, defaults) -> None:
    """Dataset, method or uploaded file changed: set every knob to the new defaults; ε or
    δ changed: move the knobs the user left at their default to the new budget's default
    (a knob the user set stays as set).

    The knobs are bound to the URL, and a bound widget whose state is merely dropped
    takes its value back from the query string (digits → Fashion kept digits' epochs
    under a "defaults for fashion_mnist" heading). Assigning the defaults before the
    widgets are drawn outranks the URL, and Streamlit then rewrites the URL to match.
    The first run of a session keeps the URL's values: that is how a shared link works.
    """
    basis = (method, dataset, options_key(data_options or {}))
    previous = st.session_state.get("pg_knob_basis")
    before = st.session_state.get("pg_knob_defaults")
    now = {w.name: w.spec.default for w in widgets(defaults)}
    st.session_state["pg_knob_basis"], st.session_state["pg_knob_defaults"] = basis, now
    if previous is not None and previous != basis:
        for name, value in now.items():
            st.session_state[knob_key(method, name)] = value
    elif before is not None and before != now:  # the same data, another budget
        for name, value in now.items():
            key = knob_key(method, name)
            if st.session_state.get(key, before.get(name)) == before.get(name):
                st.session_state[key] = value


def _user_settings(method: str, basis: tuple) -> dict:
    """The knobs the user set away from the defaults last shown (or, on a shared link's
    first run, the link's knobs): a budget-derived default (DataLens's σ) is calibrated
    around them, so σ follows the user's max_steps instead of staying at the 300 steps'
    one. A knob still at its default is no setting: it moves with ε and δ."""
    if st.session_state.get("pg_knob_basis") == basis:
        before = st.session_state.get("pg_knob_defaults") or {}
        return {name: st.session_state[knob_key(method, name)] for name, default in before.items()
                if st.session_state.get(knob_key(method, name), default) not in (default, None)}
    if st.session_state.get("pg_knob_basis") is not None:
        return {}  # another dataset or method: every knob goes back to its default
    out = {}  # the first run: the link's values, typed as the class defaults
    for w in widgets(get_method(method).Params()):
        raw = st.query_params.get(knob_key(method, w.name))
        if raw is not None and isinstance(w.spec.default, (int, float)) \
                and not isinstance(w.spec.default, bool):
            try:
                out[w.name] = type(w.spec.default)(float(raw) if isinstance(w.spec.default, float)
                                                   else int(raw))
            except ValueError:
                pass  # the widget refuses it and url_check says so
    return out


def _upload(kind: str) -> dict | None:
    """Keep the user's file in their own folder of the run store (engine/store/uploads.py: it
    outlives this tab, so attacks and reruns of its runs keep working); returns data
    options."""
    up = st.file_uploader(
        f"Your .{kind} file (at most {uploads.MAX_UPLOAD_MB} MB)", type=[kind],
        key=f"pg_upload_{kind}", max_upload_size=uploads.MAX_UPLOAD_MB,
        help="Kept on this server in a folder of your own, shown to you and the instructor "
             "only, until you delete it (below) or delete every run that uses it.")
    _my_uploads()
    if up is None:
        st.info("CSV: one header row, a label column, numeric or categorical features. "
                if kind == "csv" else
                "NPZ: arrays x (n, h, w) or (n, c, h, w), uint8 or floats in [0, 1], and y "
                "(integer labels).")
        return None
    try:
        path = uploads.save(runs_root(), session_id(), up.name, up.getvalue())
    except InputError as e:
        show_input_error(e)
        return None
    # Messages name the file as the user knows it, never the stored (hashed) name.
    st.session_state.setdefault("pg_upload_names", {})[str(path)] = up.name
    if kind == "npz":
        classes = st.text_input("Public class labels (optional)", key="pg_npz_classes",
                                placeholder="0, 1, 2",
                                help="Labels everyone may know (e.g. from the data's documentation).")
        st.caption("**Treated as public** (not protected by ε): the image size, the number "
                   "of images and the class labels you list. Labels you do not list are read "
                   "from the training images and are **not private**.")
        return {"path": str(path), **({"classes": classes} if classes.strip() else {})}
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
    public = st.text_area("Public category lists (optional)", key="pg_csv_public_cats",
                          placeholder="colour: red, green, blue\ncity: Oslo, Bergen",
                          help="One line per categorical column. Give lists everyone may know "
                               "(a code book), not values read off your records.")
    classes = st.text_input("Public class names (optional)", key="pg_csv_classes",
                            placeholder="no, yes")
    schema = st.text_area(
        "Public column kinds and bounds (optional, JSON)", key="pg_csv_schema",
        placeholder='{"age": {"kind": "integer", "bounds": [17, 90]},\n'
                    ' "capital_gain": {"kind": ["zero-inflated", "integer"], "mass": 0},\n'
                    ' "hours": {"kind": "integer", "bounds": [1, 99]}}',
        help="Kinds: integer, non-negative, zero-inflated (a point mass at \"mass\", 0 by "
             "default), bounded (\"bounds\": [lo, hi]), categorical. Public bounds spare the "
             "budget a private bound release costs and keep every synthetic value inside "
             "them. Kinds you do not give are read from the training records (not private).")
    st.caption("**Treated as public** (not protected by ε): the number of records, the "
               "column names and the lists you give above. Category lists and class names "
               "you do not give are read from the training records and are **not private**: "
               "a value that occurs once in training can appear in the synthetic CSV. "
               "Whether a column is numeric is read from the training records too, unless "
               "you set it.")
    opts = {"path": str(path), "label": label}
    if cats:
        opts["categorical"] = cats
    if public.strip():
        opts["categories"] = public
    if classes.strip():
        opts["classes"] = classes
    if schema.strip():
        opts["schema"] = schema
    return opts


def _delete_upload(path: str) -> None:
    try:
        uploads.delete(runs_root(), session_id(), path)
    except InputError as e:
        st.session_state["pg_upload_msg"] = str(e)


def _my_uploads() -> None:
    """This participant's kept files, each with a Delete button."""
    files = uploads.files_of(runs_root(), session_id())
    if msg := st.session_state.pop("pg_upload_msg", None):
        st.error(msg, icon="⚠️")
    if not files:
        return
    with st.expander(f"Your uploaded files on this server ({len(files)})"):
        st.caption("Runs that use a deleted file keep their synthetic data, but can no "
                   "longer be attacked or rerun.")
        for i, f in enumerate(files):
            a, b = st.columns([4, 1])
            a.markdown(f"`{uploads.display_name(f)}` · {f.stat().st_size / 1024:.0f} KB")
            b.button("Delete", key=f"pg_upload_del_{i}", on_click=_delete_upload,
                     args=(str(f),))


def _load(name: str, options: dict | None):
    """(the dataset, or None when it is not here or not uploaded yet; its InputError)."""
    if options is None or not info[name]["available"]:
        return None, None
    try:
        return load_dataset(name, options_key(options)), None
    except InputError as e:
        return None, e
    except RuntimeError as e:  # the reading process died (out of memory, a bad file)
        return None, InputError(str(e))


@st.fragment(run_every=1.0)
def _await_cost(config, data) -> None:
    """While the cost is being timed elsewhere: look once a second, redraw when it is in."""
    cost = preview_run(config, data, time_here=False).cost
    if cost is None or not cost.measuring:
        st.rerun(scope="app")


st.title("Playground")
st.caption("Train a differentially private generator and watch the privacy–utility "
           "tradeoff happen. Settings live in the URL: copy it to share them.")

infos = dataset_infos()
names = [d["name"] for d in infos]
info = {d["name"]: d for d in infos}
methods = available_methods()

url_check.remember_link()  # before any widget: what the shared link asked for
settings, live = st.columns([1, 2], gap="large")
with settings:
    link_note = st.container()
    # No format_func on bound widgets: Streamlit puts the displayed label in the URL,
    # and short names keep links readable (?dataset=digits&method=datalens).
    dataset = st.selectbox("Dataset", names, index=names.index(DEFAULTS["dataset"]),
                           key="dataset", bind="query-params")
    st.caption(f"{':green[available]' if info[dataset]['available'] else ':red[not available here]'} · "
               f"{info[dataset]['description']} · {info[dataset]['where']}")
    data_options: dict | None = {}
    if info[dataset]["needs_file"]:
        data_options = _upload(dataset)
    method = st.selectbox("Method", methods, index=methods.index(DEFAULTS["method"]),
                          key="method", bind="query-params",
                          help=" · ".join(f"{m} = {method_title(m)}" for m in methods))
    eps = st.select_slider("Privacy budget ε (log scale)", EPSILON_CHOICES,
                           value=DEFAULTS["eps"], key="eps", bind="query-params",
                           format_func=epsilon_label,
                           help="Smaller ε = stronger privacy = more noise. ∞ trains "
                                "without noise, as a non-private reference.")
    delta = st.select_slider("δ", DELTA_CHOICES, value=DEFAULTS["delta"], key="delta",
                             bind="query-params",
                             help="Chance the ε guarantee fails; keep it below 1/records.")
    in_words = st.empty()  # (ε, δ) in words, from the run's config once it is built
    seed = st.number_input("Seed (model init only; DP noise is never seeded)", min_value=0,
                           value=DEFAULTS["seed"], step=1, key="seed", bind="query-params")
    # Scoring reads only the released synthetic data: it costs time, never privacy.
    cnn = info[dataset]["kind"] == "image" and st.checkbox(
        "also score with a CNN (slower)", key="cnn", bind="query-params",
        help="Also train a small CNN on the synthetic images and test it on the real test "
             "images (the DataLens paper's measure); adds minutes on a CPU.")

    actions = st.container()  # Train / Stop sit here, above the long list of knobs
    module = get_method(method)
    data, data_error = _load(dataset, data_options)
    try:  # ε and δ parsed once per script run, here: the knobs' defaults are for them
        base, base_error = config_from_settings(
            dataset=dataset, method=method, eps=eps, delta=delta, seed=int(seed), params={},
            data_options=data_options), None
    except InputError as e:
        base, base_error = None, e
    # Defaults derived from the data (its size and shape) and the budget asked; the class
    # defaults until the data is here (a file not uploaded yet), when nothing can train.
    defaults = module.Params() if data is None else default_params(
        method, data, *((base.epsilon, base.delta) if base is not None else ()),
        settings=_user_settings(method, (method, dataset, options_key(data_options or {}))))
    _sync_knobs(method, dataset, data_options, defaults)
    values = {}
    all_knobs = widgets(defaults, data)
    st.markdown(f"**{module.TITLE} settings** (defaults for {dataset})")
    for w in [w for w in all_knobs if w.spec.main]:
        values[w.name] = knob_widget(method, w)
    with st.expander("Advanced"):
        for w in [w for w in all_knobs if not w.spec.main]:
            values[w.name] = knob_widget(method, w)

    widget_keys = {"dataset", "method", "eps", "delta", "seed", "cnn",
                   *(knob_key(method, w.name) for w in all_knobs)}
    if bad := url_check.ignored(widget_keys):
        link_note.warning("Ignored in the link: " + "; ".join(bad) + ".")
    url_check.drop_unknown(widget_keys)  # and out of the URL, so a copied link is clean

    config = refuse = preview = None
    blocked: str | None = None  # why Train is off: shown directly under it (ui/train_gate.py)
    if not info[dataset]["available"]:
        blocked = f"{dataset} is not available on this machine: {info[dataset]['where']}."
        st.error(blocked)
    elif data_error is not None:
        blocked = user_words(str(data_error))
        show_error(data_error)
    elif data is None:
        blocked = f"upload your .{dataset} file first (above)."
    else:
        try:
            if base is None:
                raise base_error
            config = replace(base, params=changed_params(defaults, values),
                             cnn_eval=cnn).validate()
            # The page's one engine call for the preview; the web server never times
            # training steps itself (engine/runs/cost_probe.py does, in its own process).
            preview = preview_run(config, data, time_here=False)
        except InputError as e:
            blocked = user_words(str(e))
            show_error(e)
            config = None
        else:
            in_words.caption(privacy_in_words(config.epsilon, config.delta))
            # Cautions (a weak δ, settings that will not learn) and teaching notes.
            for warning in preview.warnings:
                st.warning(warning)
            for hint in preview.hints:
                st.info(hint)
            if preview.cost is not None and preview.cost.measuring:
                _await_cost(config, data)
            st.markdown("**Derived before training** (no data touched yet)")
            refuse = preview.refuse
            if refuse:
                show_error(refuse)
            nums = {k: v for k, v in preview.figures.items() if isinstance(v, (int, float))}
            # Two to a row when every label fits half the column, else one: never cut off.
            two = all(len(short_label(k)) <= FITS_HALF for k in nums)
            cols = st.columns(2 if two else 1)
            for i, (k, v) in enumerate(nums.items()):
                cols[i % len(cols)].metric(short_label(k), f"{v:.3g}" if isinstance(v, float)
                                           else f"{v:,}", help=k)
            for k, v in preview.figures.items():
                if not isinstance(v, (int, float)):
                    st.caption(f"{k}: {v}")
            st.caption(f"{data.n_train:,} training records · {data.n_classes} classes")
            # The dataset's ledger and its cap; past the cap, an identical finished run
            # is still handed back at no cost (JobManager.request).
            refuse = refuse or budget_line(config, reusable=lambda: jobs().reusable_past_cap(config))
            blocked = refuse

    if "pg_run" not in st.session_state:  # a new session (reload, new tab): show my run again
        st.session_state["pg_run"] = jobs().latest_run()
    run_id = st.session_state.get("pg_run")
    snap = jobs().snapshot(run_id, curves=False) if run_id else None
    running = snap is not None and not snap.status.terminal
    if running and not blocked:
        blocked = (f"your run `{run_id}` is still {'queued' if snap.status == RunStatus.QUEUED else 'training'}"
                   " — one run at a time per participant: press Stop, or wait for it to end.")
    b1, b2 = actions.columns(2)
    if b1.button("Train", type="primary", disabled=config is None or running or bool(refuse),
                 key="pg_train", use_container_width=True, help=blocked):
        try:
            sub = jobs().request(config, data=data)  # loaded once, for the preview
            st.session_state["pg_run"] = sub.run_id
            st.session_state["pg_reused"] = sub.reused
            st.session_state["pg_seen_active"] = not sub.reused
        except InputError as e:
            show_error(e)
        st.rerun()
    if b2.button("Stop", disabled=not running or not jobs().may_control(run_id),
                 key="pg_stop", use_container_width=True,
                 help="Only the session that started a run (or an instructor) can stop it."):
        try:
            jobs().cancel(run_id)
        except InputError as e:
            show_error(e)
        st.rerun()
    with actions:  # the reason Train is off, else the run's whole wait: right under it
        draw_beside(blocked, preview.cost if preview is not None else None,
                    jobs().queue_wait(config) if config is not None and not blocked else None)

    if data is not None and data.kind == "image":
        with st.expander(f"Peek at the training data ({REAL_NOTE})"):
            real = peek(dataset, options_key(data_options))
            st.image(class_rows(real.x, real.y, data.n_classes,
                                scale=grid_scale(data.x_train.shape[-1])),
                     caption=REAL_NOTE)


@st.fragment(run_every=1.0 if running else None)
def live_panel(config, data) -> None:
    rid = st.session_state.get("pg_run")
    if not rid:
        st.info(start_hint(config))
        start_view.gallery_answer(jobs(), config, data)
        return
    if st.session_state.get("pg_reused"):
        start_view.reused_note(jobs(), rid)
    snap = live_view.draw_run(jobs(), rid)
    if snap is None:
        st.warning(f"Run {rid} is no longer in the store.")
        return
    if snap.status.terminal and st.session_state.get("pg_seen_active"):
        # The job ended since the last full run: redraw the whole page once so the
        # buttons re-enable and polling stops.
        st.session_state["pg_seen_active"] = False
        st.rerun()
    if snap.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        st.session_state["pg_seen_active"] = True


with live:
    live_panel(config, data)
