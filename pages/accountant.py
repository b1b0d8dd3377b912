"""Accountant: σ ↔ ε for the Gaussian mechanism, composition, and DataLens's budget.

Every number comes from engine.privacy.accountant (autodp); this page only asks and draws.
"""

from __future__ import annotations

import streamlit as st

from engine.facade import InputError, datalens_accounting, demos, risk
from engine.facade import accountant as privacy
from ui.choices import DELTA_CHOICES
from ui.common import line_figure, log_axis, show_input_error
from ui.risk_view import epsilon_sentence, summary_metrics, tradeoff_figure

st.title("Accountant")
st.caption("How much noise buys how much privacy. Exact = autodp's analytic Gaussian "
           "with exact composition (tight); RDP = Rényi-DP composition (valid, looser).")


@st.cache_data(show_spinner=False, max_entries=64)
def _composition(z: float, delta: float, t_max: int) -> dict:
    return demos.composition_curve(noise_multiplier=z, delta=delta, max_compositions=t_max)


@st.cache_data(show_spinner=False, max_entries=64)
def _sigma_curve(delta: float, sensitivity: float) -> dict:
    return demos.sigma_epsilon_curve(delta=delta, sensitivity=sensitivity)


@st.cache_data(show_spinner=False, max_entries=64)
def _datalens(k: int, sigma: float, batch: int, delta: float, steps: int) -> dict:
    return demos.datalens_curve(top_k=k, sigma=sigma, batch=batch, delta=delta,
                                max_steps=steps)


tab1, tab2, tab3, tab4 = st.tabs(["σ ↔ ε (one release)", "Composition", "DataLens budget",
                                  "What ε means to an attacker"])

with tab1:
    c1, c2, c3 = st.columns(3)
    delta = float(c1.select_slider("δ", DELTA_CHOICES, value="1e-5", key="acc_delta"))
    sens = c2.number_input("Sensitivity Δ (L2)", min_value=1e-9, value=1.0, format="%g",
                           key="acc_sens",
                           help="How far one record can move the statistic; DP-MERF's "
                                "embedding has Δ = 2/m.")
    mode = c3.radio("I know…", ["ε → find σ", "σ → find ε"], key="acc_mode")
    try:
        if mode == "ε → find σ":
            eps = st.number_input("ε", min_value=0.01, max_value=1000.0, value=1.0,
                                  format="%g", key="acc_eps")
            z = privacy.calibrate_noise_multiplier(epsilon=eps, delta=delta)
            a, b = st.columns(2)
            a.metric("noise std σ", f"{z * sens:.4g}")
            b.metric("noise multiplier σ/Δ", f"{z:.4g}")
            st.caption(f"Smallest σ whose ε (exact accounting) is at most {eps:g} at δ = "
                       f"{delta:g}; the RDP accountant would need σ/Δ = "
                       f"{privacy.calibrate_noise_multiplier(epsilon=eps, delta=delta, accountant='rdp'):.4g}.")
        else:
            sigma = st.number_input("noise std σ", min_value=1e-9, value=5.0, format="%g",
                                    key="acc_sigma")
            z = sigma / sens
            e_exact = privacy.epsilon_for(z, delta=delta)
            e_rdp = privacy.epsilon_for(z, delta=delta, accountant="rdp")
            a, b = st.columns(2)
            a.metric("ε (exact)", f"{e_exact:.4g}")
            b.metric("ε (RDP)", f"{e_rdp:.4g}")
        curve = _sigma_curve(delta, float(sens))
        fig = line_figure({"σ needed": (curve["epsilon"], curve["sigma"])},
                          title=f"Noise needed for one release (Δ = {sens:g}, δ = {delta:g})",
                          x_title="ε", y_title="σ", log_x=True, height=320)
        log_axis(fig, "y", curve["sigma"])
        st.plotly_chart(fig, key="acc_sigma_chart")
    except InputError as e:
        show_input_error(e)

with tab2:
    c1, c2, c3 = st.columns(3)
    z = c1.number_input("noise multiplier σ/Δ", min_value=0.1, max_value=1e4, value=5.0,
                        format="%g", key="acc_comp_z")
    t_max = c2.number_input("up to T releases", min_value=1, max_value=100_000, value=1000,
                            step=10, key="acc_comp_t")
    delta2 = float(c3.select_slider("δ ", DELTA_CHOICES, value="1e-5", key="acc_comp_delta"))
    try:
        c = _composition(float(z), delta2, int(t_max))
        a, b = st.columns(2)
        a.metric(f"ε after {c['T'][-1]:,} (exact)", f"{c['exact'][-1]:.4g}")
        b.metric(f"ε after {c['T'][-1]:,} (RDP)", f"{c['rdp'][-1]:.4g}")
        fig = line_figure({"exact (tight)": (c["T"], c["exact"]),
                           "RDP": (c["T"], c["rdp"])},
                          title="ε after T Gaussian releases", x_title="T (releases)",
                          y_title="ε", log_x=True, height=340)
        st.plotly_chart(fig, key="acc_comp_chart")
        st.caption("Gaussian releases compose exactly: T releases at multiplier z equal one "
                   "release at z/√T. RDP bounds the same thing from above.")
    except InputError as e:
        show_input_error(e)

with tab3:
    c1, c2, c3, c4 = st.columns(4)
    k = c1.number_input("top-k", min_value=1, max_value=100_000, value=200, key="acc_dl_k")
    sig = c2.number_input("σ (vote noise)", min_value=1.0, value=5000.0, format="%g",
                          key="acc_dl_sigma")
    batch = c3.number_input("records per step", min_value=1, max_value=100_000, value=15,
                            key="acc_dl_batch",
                            help="Synthetic records whose votes are released each step.")
    eps_target = c4.number_input("budget ε", min_value=0.01, value=1.0, format="%g",
                                 key="acc_dl_eps")
    delta3 = float(st.select_slider("δ  ", DELTA_CHOICES, value="1e-5", key="acc_dl_delta"))
    try:
        steps = {acc: datalens_accounting.affordable_steps(
            epsilon=eps_target, delta=delta3, top_k=int(k), sigma=float(sig),
            batch=int(batch), accountant=acc) for acc in ("exact", "rdp")}
        a, b, c_ = st.columns(3)
        a.metric("steps affordable (exact)", f"{steps['exact']:,}")
        b.metric("steps affordable (RDP)", f"{steps['rdp']:,}")
        c_.metric("noise multiplier σ/(2√k)",
                  f"{datalens_accounting.noise_multiplier(sigma=float(sig), top_k=int(k)):.4g}")
        horizon = max(10, 2 * max(steps.values()) if max(steps.values()) else 100)
        curve = _datalens(int(k), float(sig), int(batch), delta3, int(min(horizon, 10**6)))
        fig = line_figure({"exact (tight)": (curve["steps"], curve["exact"]),
                           "RDP": (curve["steps"], curve["rdp"])},
                          title="DataLens: ε spent against training steps", x_title="steps",
                          y_title="ε", log_x=True, height=340)
        fig.add_hline(y=eps_target, line_dash="dot", annotation_text=f"budget ε = {eps_target:g}")
        st.plotly_chart(fig, key="acc_dl_chart")
        st.caption("Each step releases one noisy vote vector per synthetic record; one "
                   "record's votes move the sum by at most 2√k, so the multiplier is "
                   "σ/(2√k). Training stops when the budget is spent.")
    except InputError as e:
        show_input_error(e)

with tab4:
    c1, c2 = st.columns(2)
    eps4 = c1.number_input("ε", min_value=0.0, max_value=1000.0, value=1.0, format="%g",
                           key="acc_risk_eps")
    delta4 = float(c2.select_slider("δ   ", ["0", *DELTA_CHOICES], value="1e-5",
                                    key="acc_risk_delta"))
    try:
        bound = risk.for_epsilon(eps4, delta4)
        st.info(epsilon_sentence(eps4, delta4))
        st.markdown("**Any mechanism with this (ε, δ)**: the most any membership test can do.")
        summary_metrics(bound)
        curves = {f"any (ε, δ) = ({eps4:g}, {delta4:g}) mechanism": (bound, "bound")}
        if delta4 > 0 and eps4 > 0:
            # One Gaussian release calibrated to this (ε, δ), as DP-MERF releases its summary.
            own = risk.for_report(privacy.calibrate_releases(
                epsilon=eps4, delta=delta4, releases=[privacy.Release("one statistic", 1.0)]).to_dict())
            st.markdown(f"**One Gaussian release at this (ε, δ)** (μ = Δ/σ = {own.mu:.3g}), "
                        "whose own curve is tighter:")
            summary_metrics(own)
            curves = {"one Gaussian release": (own, "own"), **curves}
        st.plotly_chart(tradeoff_figure(curves, title="The most a membership test can reach"),
                        key="acc_risk_chart")
        st.caption("Each curve is the largest true-positive rate any test of “was this record "
                   "used?” can reach at each false-positive rate (Kairouz et al. 2015; f-DP, "
                   "Dong, Roth & Su 2019). Under the diagonal is worse than guessing.")
    except InputError as e:
        show_input_error(e)
