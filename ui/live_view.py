"""Draws one run from its job snapshot (read from the store): queue position and the
estimated start and finish while queued, step progress while training, its own
"evaluating…" progress at the end, then curves, samples and the final accuracy.

Used by the Playground's polling fragment. Reads only; never starts or stops anything.
Estimates are labelled as such; they come from engine/eta.py, smoothed between polls.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from engine.store import RunStatus
from engine.ui_state import format_epsilon, grid_scale, image_grid, marginal_bins
from ui.common import REAL_NOTE, dataset_infos, line_figure, load_dataset, options_key

_BADGE = {"queued": ":orange-badge[queued]", "running": ":blue-badge[training]",
          "finished": ":green-badge[finished]", "failed": ":red-badge[failed]",
          "cancelled": ":gray-badge[cancelled]", "interrupted": ":orange-badge[interrupted]"}


def run_view(jobs, run_id: str) -> dict | None:
    """Everything `draw` needs about one run, from one snapshot of the store."""
    snap = jobs.snapshot(run_id)
    if snap is None:
        return None
    return {"run_id": snap.run_id, "status": snap.status, "step": snap.step,
            "total": snap.total, "epsilon_spent": snap.epsilon_spent,
            "eps_curve": snap.eps_curve, "loss_curve": snap.loss_curve,
            "metrics": snap.metrics, "message": snap.message, "samples": snap.samples,
            "probe_curve": snap.probe_curve, "config": snap.config.to_dict(),
            "owner": jobs.owner_label(snap.session), "snap": snap,
            "artifacts": jobs.store.artifacts(snap.run_id) if snap.status.terminal else {}}


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


def _progress(view: dict) -> None:
    """Queue position, training progress or evaluation progress, with estimates."""
    snap, status = view["snap"], view["status"]
    total, step = view["total"], view["step"]
    if status == RunStatus.QUEUED:
        ahead = snap.position - 1 if snap.position else 0
        text = (f"queued · position {snap.position} "
                f"({'next to start' if not ahead else f'{ahead} run(s) ahead'})")
        if snap.start_in_s is not None and snap.eta_s is not None:
            text += (f" · estimate: starts in about {_seconds(snap.start_in_s)}, "
                     f"done in about {_seconds(snap.eta_s)}")
        else:
            text += " · no estimate yet (no similar run measured here)"
        st.progress(0.0, text=text)
        return
    if snap.evaluating:
        spent = snap.eval_elapsed_s or 0.0
        text = f"evaluating… {spent:,.0f} s (classifiers trained on the synthetic data)"
        if snap.eta_s is not None:
            text += f" · estimate: about {_seconds(snap.eta_s)} left"
        st.progress(snap.eval_fraction or 0.0, text=text)
        return
    frac = min(1.0, step / total) if total else (1.0 if status.terminal else 0.0)
    text = f"step {step:,} of {total:,}" if total else status.value
    if status == RunStatus.RUNNING and snap.stop_requested:
        text += " · stopping…"
    elif status == RunStatus.RUNNING and snap.eta_s is not None:
        text += f" · estimate: about {_seconds(snap.eta_s)} left"
    st.progress(frac, text=text)


def draw(view: dict) -> None:
    cfg = view["config"]
    status = view["status"]
    eps_target = cfg["epsilon"]
    st.markdown(f"**Run `{view['run_id']}`** · {cfg['method']} on {cfg['dataset']} · "
                f"target ε = {format_epsilon(float(eps_target))}, δ = {cfg['delta']:g} · "
                f"{_BADGE.get(status.value, status.value)} · started by {view['owner']}")
    if status == RunStatus.FAILED:
        st.error(view["message"] or "the run failed", icon="⚠️")
    elif view["message"] and status.terminal and status != RunStatus.FINISHED:
        st.warning(view["message"])

    _progress(view)

    m = view["metrics"]
    acc_key = next((k for k in ("synthetic/logreg", "probe/logreg") if k in m),
                   next((k for k in m if k.startswith(("synthetic/", "probe"))), None))
    c1, c2, c3 = st.columns(3)
    spent = view["epsilon_spent"]
    c1.metric("ε spent", "—" if spent is None else format_epsilon(float(spent)),
              help="From engine.privacy (autodp); never more than the target.")
    last_loss = view["loss_curve"][-1][1] if view["loss_curve"] else None
    c2.metric("loss", "—" if last_loss is None else f"{last_loss:.4g}")
    c3.metric("accuracy on real test data", "—" if acc_key is None else f"{m[acc_key]:.3f}",
              help=f"{acc_key or 'classifier'} trained on synthetic data, tested on real data.")

    left, right = st.columns(2)
    with left:
        if view["eps_curve"]:
            xs, ys = zip(*_thin(view["eps_curve"]))
            ys = [y if math.isfinite(y) else None for y in ys]
            st.plotly_chart(line_figure({"ε spent": (xs, ys)}, title="Privacy budget spent",
                                        x_title="step", y_title="ε"), key="pg_eps_chart")
    with right:
        if view["loss_curve"]:
            xs, ys = zip(*_thin(view["loss_curve"]))
            fig = line_figure({"loss": (xs, ys)}, title="Training loss", x_title="step",
                              y_title="loss")
            fig.update_yaxes(type="log")
            st.plotly_chart(fig, key="pg_loss_chart")

    if view["probe_curve"]:
        key = next(iter(view["probe_curve"][-1][1]), None)
        pts = [(s, m[key]) for s, m in view["probe_curve"] if key in m]
        if pts:
            xs, ys = zip(*pts)
            st.plotly_chart(line_figure({key: (xs, ys)}, title="Quick probe: accuracy on real "
                                        "test data while training", x_title="step",
                                        y_title="accuracy", height=220), key="pg_probe_chart")

    _draw_samples(view)
    if status == RunStatus.FINISHED:
        _draw_summary(m)


def _draw_samples(view: dict) -> None:
    cfg = view["config"]
    samples = view["samples"]
    png = view["artifacts"].get("samples.png")
    if cfg_kind(cfg) == "image":
        if samples is not None:
            x, y = samples
            st.image(image_grid(x, y, per_row=10, scale=grid_scale(x.shape[-1])),
                     caption=f"synthetic samples, one row per class (step {view['step']:,})")
        elif png is not None:
            st.image(str(png), caption="synthetic samples (final)")
        return
    if samples is None:
        if png is not None:
            st.image(str(png), caption="synthetic marginals (final)")
        return
    data = load_dataset(cfg["dataset"], options_key(cfg.get("data_options") or {}))
    x, _ = samples
    names = [c.name for c in data.columns]
    col = st.selectbox("Column", names, key="pg_marginal_col")
    j = names.index(col)
    c = data.columns[j]
    b = marginal_bins(data.x_train[:, j], x[:, j],
                      categories=c.categories if c.kind == "cat" else None)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=list(b["x"]), y=list(b["real"]), name=REAL_NOTE, opacity=0.55))
    fig.add_trace(go.Bar(x=list(b["x"]), y=list(b["synthetic"]), name="synthetic",
                         opacity=0.55))
    fig.update_layout(barmode="overlay", height=280, margin=dict(l=10, r=10, t=36, b=10),
                      title=dict(text=f"Marginal of {col}: real vs synthetic", font=dict(size=14)),
                      legend=dict(orientation="h", y=-0.25), yaxis_title="fraction")
    st.plotly_chart(fig, key="pg_marginal_chart")


def cfg_kind(cfg: dict) -> str:
    kinds = {d["name"]: d["kind"] for d in dataset_infos()}
    return kinds.get(cfg["dataset"], "image")


def _draw_summary(m: dict) -> None:
    rows = []
    for k, v in sorted(m.items()):
        if k.startswith("synthetic/") and k.count("/") == 1:
            clf = k.split("/", 1)[1]
            real = m.get(f"real/{clf}")
            rows.append({"classifier": clf, "trained on synthetic → real test": round(v, 4),
                         f"trained on real → real test ({REAL_NOTE})":
                             None if real is None else round(real, 4)})
    if rows:
        st.markdown("**Downstream accuracy** — the same classifier trained on synthetic "
                    "data and on the real training data, both tested on real test data.")
        st.table(rows)


__all__ = ["draw", "run_view"]
