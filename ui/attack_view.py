"""Runs & Compare: membership attacks on one run, drawn inside the run's DP bound.

NOT PRIVATE: the attacks read the run's training records (engine/audit/membership_run.py); what
this shows is a diagnostic for the data owner, labelled so, and only the session that
started the run (or an instructor) can measure it or see what was measured. Measuring is
a job like training: the page queues it (JobManager.measure_attacks), the worker process
measures it (engine/jobs/attack_jobs.py), and a fragment reads its progress from the store
once a second; the web server never runs the attacks.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from engine.facade import InputError, attack_result, attack_sizes
from ui.common import SessionJobs, show_input_error

DIAGNOSTIC = ("Membership attacks — a **non-private diagnostic** for the data owner: "
              "computed from this run's real training records and its held-back records, "
              "not part of the release and outside its ε (saved apart, in attack.json).")
_COLOURS = {"dcr": "#2563eb", "dcr_calibrated": "#7c3aed", "domias": "#d97706"}


def attack_figure(result: dict, *, log_x: bool = False) -> go.Figure:
    """The DP bound's region (the run's own curve, filled, and the (ε, δ) curve) with
    each attack's measured points and their intervals. The raw ROC is left out: at FPRs
    below a few over n its steps are noise without an interval, and would cross the
    curve where nothing is measured."""
    fig = go.Figure()
    bounds = result["bounds"]
    own = bounds.get("report")
    if own:
        fig.add_trace(go.Scatter(x=own["curve"]["fpr"], y=own["curve"]["tpr"], mode="lines",
                                 fill="tozeroy", fillcolor="rgba(5,150,105,0.12)",
                                 line=dict(color="#059669"), name="DP bound: the run's own curve",
                                 hovertemplate="FPR %{x:.3g}<br>max TPR %{y:.3f}"))
    eps = bounds["epsilon"]
    fig.add_trace(go.Scatter(x=eps["curve"]["fpr"], y=eps["curve"]["tpr"], mode="lines",
                             line=dict(color="#059669", dash="dash"), name="DP bound from (ε, δ)",
                             hovertemplate="FPR %{x:.3g}<br>max TPR %{y:.3f}"))
    grid = eps["curve"]["fpr"]  # dense near 0, so the diagonal stays straight on log axes
    fig.add_trace(go.Scatter(x=grid, y=grid, mode="lines", name="chance (TPR = FPR)",
                             line=dict(color="gray", dash="dot", width=1), hoverinfo="skip"))
    for name, a in result["attacks"].items():
        colour = _COLOURS.get(name)
        pts = a["points"]
        fig.add_trace(go.Scatter(
            x=[p["fpr"] for p in pts], y=[p["tpr"] for p in pts], mode="markers",
            marker=dict(color=colour, size=8), name=f"{name} (AUC {a['auc']:.2f})",
            error_x=dict(type="data", symmetric=False, thickness=1, width=2,
                         array=[p["fpr_ci"][1] - p["fpr"] for p in pts],
                         arrayminus=[p["fpr"] - p["fpr_ci"][0] for p in pts]),
            error_y=dict(type="data", symmetric=False, thickness=1.5, width=3,
                         array=[p["tpr_ci"][1] - p["tpr"] for p in pts],
                         arrayminus=[p["tpr"] - p["tpr_ci"][0] for p in pts]),
            hovertemplate="FPR %{x:.3f}<br>TPR %{y:.3f}"))
    # Log–log shows the low-FPR corner, where attacks that matter live (TPR 0 drops out).
    scale = dict(type="log", range=[-3, 0.01]) if log_x else dict(type="linear", range=[0, 1.01])
    fig.update_xaxes(title="FPR: non-members called members", **scale)
    fig.update_yaxes(title="TPR: members caught", **scale)
    fig.update_layout(height=480, margin=dict(l=60, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.25),
                      title=dict(text="Measured attacks inside the DP bound (non-private "
                                      "diagnostic)", font=dict(size=14)))
    return fig


def rows(result: dict) -> list[dict]:
    """The table beside the chart: each attack's figures and the bound's."""
    b = result["bounds"]
    own = b.get("report", b["epsilon"])
    out = []
    for name, a in result["attacks"].items():
        (lo, hi), (tlo, thi) = a["auc_ci"], a["tpr_at_1pct_fpr_ci"]
        out.append({"attack": a.get("title", name),
                    "ROC-AUC [95% CI]": f"{a['auc']:.3f} [{lo:.3f}, {hi:.3f}]",
                    "TPR at 1% FPR [95% CI]": f"{a['tpr_at_1pct_fpr']:.3f} [{tlo:.3f}, {thi:.3f}]",
                    "bound: TPR at 1% FPR": f"{own['tpr_at_1pct_fpr']:.3f}",
                    "bound: largest AUC": f"{own['auc_max']:.3f}"})
    return out


def show_result(result: dict, key: str) -> None:
    if result["violations"]:
        st.error("A measured attack lies OUTSIDE the DP bound beyond its interval. That is a "
                 "bug in the code or in the accounting, not bad luck:\n\n- "
                 + "\n- ".join(result["violations"]), icon="🚨")
    g = result["game"]
    log_x = st.toggle("log–log axes (the low-FPR corner)", key=f"{key}_log")
    st.plotly_chart(attack_figure(result, log_x=log_x), key=f"{key}_chart")
    st.dataframe(rows(result), hide_index=True, key=f"{key}_table")
    st.caption(f"{g['members']:,} training records (members) and as many held-back records "
               f"(non-members) against {g['synthetic']:,} synthetic records; reference data: "
               f"other held-back records ({g['folds']} folds), never an evaluated one. Points at "
               "FPR 1, 5, 10, 25, 50 %: bars are 99 % Clopper–Pearson intervals (jointly per "
               f"attack); {result['seconds']:.1f} s. Source of the bound: "
               + result["bounds"].get("report", result["bounds"]["epsilon"])["source"] + ".")


def attack_section(jm: SessionJobs, run_id: str, *, allowed: bool) -> None:
    """The "Membership attacks" section for one finished run (`allowed`: may this
    session read its private records' diagnostic?)."""
    st.markdown(DIAGNOSTIC)
    if not allowed:
        st.caption("Only the session that started this run (or an instructor) can measure it "
                   "or see its result: the attacks read its private training records.")
        return
    key = f"runs_attack_{run_id}"
    job = jm.store.attack_job(run_id)
    if job is not None and job.active:
        _poll(jm, run_id)
        return
    if job is not None and job.error:
        show_input_error(InputError(job.error))
    folder = jm.store.artifact_dir(run_id)
    result = attack_result(folder)
    try:
        info = attack_sizes(folder)
        st.caption(f"Scores {info['members']:,} members and {info['non-members']:,} "
                   f"non-members against {info['synthetic']:,} synthetic records: about "
                   f"{max(1, round(info['estimated seconds'])):,} s.")
    except (OSError, ValueError, KeyError) as e:
        st.caption(f"cannot preview the cost ({e})")
    if st.button("Measure again" if result else "Measure membership attacks", key=f"{key}_go"):
        try:
            jm.measure_attacks(run_id)
        except InputError as e:
            show_input_error(e)
        else:
            st.rerun()
    if result:
        show_result(result, key)


def _poll(jm: SessionJobs, run_id: str) -> None:
    @st.fragment(run_every=1.0)
    def progress():
        job = jm.store.attack_job(run_id)
        if job is None or not job.active:
            st.rerun()  # the whole page: the result is in attack.json now, or the error
        st.progress(min(1.0, job.done / max(job.total, 1)),
                    text=f"measuring membership attacks… {job.message}")

    progress()
