"""Draws one run — live from its job snapshot, or afterwards from the store.

Used by the Playground's polling fragment. Reads only; never starts or stops anything.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from engine.store import RunStatus
from engine.ui_state import format_epsilon, grid_scale, image_grid, marginal_bins
from ui.common import REAL_NOTE, dataset_infos, line_figure, load_dataset, options_from_key, options_key

_BADGE = {"queued": ":orange-badge[queued]", "running": ":blue-badge[training]",
          "finished": ":green-badge[finished]", "failed": ":red-badge[failed]",
          "cancelled": ":gray-badge[cancelled]", "interrupted": ":orange-badge[interrupted]"}


def _view_from_store(store, run_id: str) -> dict | None:
    row = store.get_run(run_id)
    if row is None:
        return None
    hist = store.metric_history(run_id)
    eps = [(s, v) for s, v in hist.get("epsilon_spent", []) if v is not None]
    loss = [(s, v) for s, v in hist.get("loss", []) if v is not None]
    return {"run_id": run_id, "status": RunStatus(row["status"]), "step": row["step"] or 0,
            "total": row["total"] or 0, "epsilon_spent": row["epsilon_spent"],
            "eps_curve": eps, "loss_curve": loss, "metrics": row["summary"] or {},
            "message": row["message"] or "", "samples": None, "eta_s": None,
            "probe_curve": [(s, {"probe/logreg": v}) for s, v in hist.get("probe/logreg", [])
                            if v is not None],
            "config": row["config"], "artifacts": store.artifacts(run_id)}


def _view_from_snapshot(store, snap) -> dict:
    return {"run_id": snap.run_id, "status": snap.status, "step": snap.step,
            "total": snap.total, "epsilon_spent": snap.epsilon_spent,
            "eps_curve": snap.eps_curve, "loss_curve": snap.loss_curve,
            "metrics": snap.metrics, "message": snap.message, "samples": snap.samples,
            "probe_curve": snap.probe_curve,
            "eta_s": snap.eta_s, "config": snap.config.to_dict(),
            "artifacts": store.artifacts(snap.run_id) if snap.status.terminal else {}}


def run_view(jobs, run_id: str) -> dict | None:
    snap = jobs.snapshot(run_id)
    if snap is not None:
        return _view_from_snapshot(jobs.store, snap)
    return _view_from_store(jobs.store, run_id)


def draw(view: dict) -> None:
    cfg = view["config"]
    status = view["status"]
    eps_target = cfg["epsilon"]
    st.markdown(f"**Run `{view['run_id']}`** · {cfg['method']} on {cfg['dataset']} · "
                f"target ε = {format_epsilon(float(eps_target))}, δ = {cfg['delta']:g} · "
                f"{_BADGE.get(status.value, status.value)}")
    if status == RunStatus.FAILED:
        st.error(view["message"] or "the run failed", icon="⚠️")
    elif view["message"] and status.terminal and status != RunStatus.FINISHED:
        st.warning(view["message"])

    total, step = view["total"], view["step"]
    frac = min(1.0, step / total) if total else (1.0 if status.terminal else 0.0)
    eta = view["eta_s"]
    text = f"step {step:,} of {total:,}" if total else status.value
    if eta is not None:
        text += f" · about {eta:,.0f} s left"
    st.progress(frac, text=text)

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
            xs, ys = zip(*view["eps_curve"])
            ys = [y if math.isfinite(y) else None for y in ys]
            st.plotly_chart(line_figure({"ε spent": (xs, ys)}, title="Privacy budget spent",
                                        x_title="step", y_title="ε"), key="pg_eps_chart")
    with right:
        if view["loss_curve"]:
            xs, ys = zip(*view["loss_curve"])
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


__all__ = ["draw", "run_view", "options_from_key"]
