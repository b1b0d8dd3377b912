"""Draws one run from its job snapshot (a RunRecord plus curves, samples and estimates,
engine/jobs/manager.py): queue position and the estimated start and finish while queued, step
progress while training, its own "evaluating…" progress at the end, then curves,
samples and every score the evaluator returned.

Used by the Playground's polling fragment. Reads only; never starts or stops anything.
Estimates are labelled as such; they come from engine/store/eta.py, smoothed between polls.
"""

from __future__ import annotations

import math
import time

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.facade import (MEASURING, JobSnapshot, RunStatus, class_rows, grid_scale,
                           headline_key, method_part, params_for, real_key)
from ui.choices import format_epsilon
from ui.common import (REAL_NOTE, dataset_infos, line_figure, load_dataset, log_axis,
                       options_key, peek)
from ui.marginals import marginal_bins
from ui.runs_table import metric_keys, metric_label

_BADGE = {"queued": ":orange-badge[queued]", "running": ":blue-badge[training]",
          "finished": ":green-badge[finished]", "failed": ":red-badge[failed]",
          "cancelled": ":gray-badge[cancelled]", "interrupted": ":orange-badge[interrupted]"}


def draw_run(jobs, run_id: str) -> JobSnapshot | None:
    """Draw one run from one snapshot of the store; returns that snapshot (None: the run
    is not in the store, and nothing is drawn)."""
    snap = jobs.snapshot(run_id)
    if snap is not None:
        draw(snap, owner=jobs.owner_label(snap.session),
             artifacts=jobs.store.artifacts(run_id) if snap.status.terminal else {})
    return snap


MAX_POINTS = 200  # curves are thinned to this many points: the page polls each second


def _thin(points: list) -> list:
    """Every k-th point (and the last), so a poll sends a small chart whatever the steps."""
    if len(points) <= MAX_POINTS:
        return points
    k = -(-len(points) // MAX_POINTS)
    return points[::k] + ([points[-1]] if (len(points) - 1) % k else [])


def _seconds(s: float) -> str:
    """A rough duration for an estimate: '40 s', '3 min', '1 h 5 min'."""
    if s < 90:
        return f"{max(1, round(s / 5) * 5 if s >= 20 else round(s)):.0f} s"
    m = round(s / 60)
    return f"{m} min" if m < 60 else f"{m // 60} h {m % 60} min"


def _about(seconds: float, error_s: float | None) -> str:
    """'about 40 s ± 10 s': the estimate with the spread of the runs it came from."""
    spread = f" ± {_seconds(error_s)}" if error_s is not None and error_s >= 0.5 else ""
    return f"about {_seconds(seconds)}{spread}"


def _progress(snap: JobSnapshot) -> None:
    """Queue position, training progress or evaluation progress, with estimates."""
    status, total, step = snap.status, snap.total, snap.step
    if status == RunStatus.QUEUED:
        ahead = snap.position - 1 if snap.position else 0
        text = (f"queued · position {snap.position} "
                f"({'next to start' if not ahead else f'{ahead} run(s) ahead'})")
        if snap.start_in_s is not None and snap.eta_s is not None:
            text += (f" · estimate: starts in {_about(snap.start_in_s, snap.start_error_s)}, "
                     f"done in {_about(snap.eta_s, snap.eta_error_s)}")
        else:
            text += " · no estimate yet (no similar run measured here)"
        st.progress(0.0, text=text)
        return
    if snap.evaluating:
        spent = snap.eval_elapsed_s or 0.0
        text = f"evaluating… {spent:,.0f} s (classifiers trained on the synthetic data)"
        frac = snap.eval_fraction or 0.0
        cnn = _cnn_progress(snap.metrics)
        if cnn is not None:
            text, frac = f"evaluating… {spent:,.0f} s · {cnn[0]}", cnn[1]
        elif snap.eta_s is not None:
            text += f" · estimate: {_about(snap.eta_s, snap.eta_error_s)} left"
        st.progress(frac, text=text)
        return
    if status == RunStatus.RUNNING and not total:
        st.progress(0.0, text=_starting(snap))
        return
    # A run that ended early shows where it stopped, not a full bar.
    frac = min(1.0, step / total) if total else (1.0 if status == RunStatus.FINISHED else 0.0)
    text = f"step {step:,} of {total:,}" if total else status.value
    if status.terminal and status != RunStatus.FINISHED:
        text = (f"{status.value}: stopped at step {step:,} of {total:,}" if total else
                f"{status.value} before its first step")
    elif status == RunStatus.RUNNING and snap.stop_requested:
        text += " · stopping…"
    elif status == RunStatus.RUNNING and snap.eta_s is not None:
        text += f" · estimate: {_about(snap.eta_s, snap.eta_error_s)} left, scoring included"
    elif status == RunStatus.RUNNING:
        text += f" · time left: {MEASURING} (the first steps are timed first)"
    st.progress(frac, text=text)


def _cnn_progress(metrics: dict) -> tuple[str, float] | None:
    """While the CNN scores an image run (engine/runs/runner.py's "eval/cnn_*" progress): what
    it is doing and the share done, counting every epoch it may run (it often stops early)."""
    epoch, most = metrics.get("eval/cnn_epoch"), metrics.get("eval/cnn_max_epochs")
    if not epoch or not most:
        return None
    real = bool(metrics.get("eval/cnn_real_fit"))
    text = (f"CNN on the {'real (reference)' if real else 'synthetic'} data: epoch "
            f"{epoch:.0f} of at most {most:.0f}")
    return text, min(0.99, (epoch + (most if real else 0)) / (2 * most))


def _starting(snap: JobSnapshot) -> str:
    """A running run before its first step: what it is doing (its method's `starting`,
    e.g. DataLens building its teachers, which takes a while on big data) and what is
    known so far."""
    cfg, what = snap.config, "preparing"
    try:
        starting = method_part(cfg.method, "starting")
        if starting is not None:
            what = starting(params_for(cfg, load_dataset(cfg.dataset, options_key(
                cfg.data_options or {}))))
    except Exception:  # the data is not loadable here: say less, never fail the view
        pass
    text = f"starting: {what}…"
    if snap.started:
        text += f" · {max(0.0, time.time() - snap.started):,.0f} s so far"
    text += " · ε spent 0 so far (nothing released yet)"
    if snap.eta_s is not None:
        text += f" · estimate: {_about(snap.eta_s, snap.eta_error_s)} left, scoring included"
    else:
        text += f" · time left: {MEASURING}"
    return text


def draw(snap: JobSnapshot, *, owner: str, artifacts: dict) -> None:
    """The run's header, progress, curves, samples and, once finished, its scores."""
    cfg, status = snap.config, snap.status
    st.markdown(f"**Run `{snap.run_id}`** · {cfg.method} on {cfg.dataset} · "
                f"target ε = {format_epsilon(cfg.epsilon)}, δ = {cfg.delta:g} · "
                f"{_BADGE.get(status.value, status.value)} · started by {owner}")
    if status == RunStatus.FAILED:
        st.error(snap.message or "the run failed", icon="⚠️")
    elif snap.message and status.terminal and status != RunStatus.FINISHED:
        st.warning(snap.message)

    _progress(snap)

    acc_key = headline_key(snap.metrics)
    c1, c2, c3 = st.columns(3)
    spent = snap.epsilon_spent
    c1.metric("ε spent", "—" if spent is None else format_epsilon(float(spent)),
              help="From engine.privacy.accountant (autodp); never more than the target.")
    last_loss = snap.loss_curve[-1][1] if snap.loss_curve else None
    c2.metric("loss", "—" if last_loss is None else f"{last_loss:.4g}")
    c3.metric("accuracy on real test data",
              "—" if acc_key is None else f"{snap.metrics[acc_key]:.3f}",
              help=f"{acc_key or 'classifier'} trained on synthetic data, tested on real data.")

    left, right = st.columns(2)
    with left:
        if snap.eps_curve:
            xs, ys = zip(*_thin(snap.eps_curve))
            ys = [y if math.isfinite(y) else None for y in ys]
            st.plotly_chart(line_figure({"ε spent": (xs, ys)}, title="Privacy budget spent",
                                        x_title="step", y_title="ε"), key="pg_eps_chart")
    with right:
        if snap.loss_curve:
            xs, ys = zip(*_thin(snap.loss_curve))
            fig = line_figure({"loss": (xs, ys)}, title="Training loss", x_title="step",
                              y_title="loss")
            log_axis(fig, "y", ys)
            st.plotly_chart(fig, key="pg_loss_chart")

    if snap.probe_curve:
        key = next(iter(snap.probe_curve[-1][1]), None)
        pts = [(s, m[key]) for s, m in snap.probe_curve if key in m]
        if pts:
            xs, ys = zip(*pts)
            st.plotly_chart(line_figure({key: (xs, ys)}, title="Quick probe: accuracy on real "
                                        "test data while training", x_title="step",
                                        y_title="accuracy", height=220), key="pg_probe_chart")

    _draw_samples(snap, artifacts)
    if status == RunStatus.FINISHED:
        _draw_summary(snap)


def _draw_samples(snap: JobSnapshot, artifacts: dict) -> None:
    cfg = snap.config
    samples = snap.samples
    png = artifacts.get("samples.png")
    if _dataset_kind(cfg.dataset) == "image":
        if samples is not None:
            x, y = samples
            y = np.maximum(y, 0)  # unlabelled samples (y = -1) share one row
            st.image(class_rows(x, y, int(y.max()) + 1, scale=grid_scale(x.shape[-1])),
                     caption=f"synthetic samples, one row per class (step {snap.step:,})")
        elif png is not None:
            st.image(str(png), caption="synthetic samples (final)")
        return
    if samples is None:
        if png is not None:
            st.image(str(png), caption="synthetic marginals (final)")
        return
    key = options_key(cfg.data_options or {})
    data, real = load_dataset(cfg.dataset, key), peek(cfg.dataset, key)
    x, _ = samples
    names = [c.name for c in data.columns]
    col = st.selectbox("Column", names, key="pg_marginal_col")
    j = names.index(col)
    c = data.columns[j]
    b = marginal_bins(real.x[:, j], x[:, j],
                      categories=c.categories if c.kind == "cat" else None)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=list(b["x"]), y=list(b["real"]), name=REAL_NOTE, opacity=0.55))
    fig.add_trace(go.Bar(x=list(b["x"]), y=list(b["synthetic"]), name="synthetic",
                         opacity=0.55))
    fig.update_layout(barmode="overlay", height=280, margin=dict(l=10, r=10, t=36, b=10),
                      title=dict(text=f"Marginal of {col}: real vs synthetic", font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.25), yaxis_title="fraction")
    st.plotly_chart(fig, key="pg_marginal_chart")


def _dataset_kind(dataset: str) -> str:
    kinds = {d["name"]: d["kind"] for d in dataset_infos()}
    return kinds.get(dataset, "image")


def _draw_summary(snap: JobSnapshot) -> None:
    """Every score of the final evaluation: one row per score, synthetic-trained next to
    the same classifier trained on real data (tabular data adds ROC-AUC and F1)."""
    m = snap.metrics
    rows = []
    for key in metric_keys([snap]):
        real = m.get(real_key(key))
        rows.append({"score": metric_label(key),
                     "trained on synthetic → real test": round(m[key], 4),
                     f"trained on real → real test ({REAL_NOTE})":
                         None if real is None else round(real, 4)})
    if rows:
        st.markdown("**Downstream scores** — the same classifier trained on synthetic "
                    "data and on the real training data, both tested on real test data.")
        st.table(rows)


__all__ = ["draw", "draw_run"]
