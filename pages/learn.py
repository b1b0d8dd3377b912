"""Learn: the ideas behind the app, each with a small live picture (numbers from
engine/teaching/demos.py and engine/privacy/accountant.py)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from engine.facade import DIGITS_MEASURED, demos
from ui.choices import DELTA_CHOICES, EPSILON_CHOICES, privacy_in_words
from ui.common import line_figure, session_id, store
from ui.game_view import game_panel, room_panel


def _demo_layout(fig: go.Figure, x_title: str, y_title: str, **extra) -> None:
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), xaxis_title=x_title,
                      yaxis_title=y_title, legend=dict(orientation="h", y=-0.3), **extra)


st.title("Learn")

t1, t5, t2, t3, t4 = st.tabs(["Differential privacy", "Membership game",
                              "DP-MERF: random features", "DataLens: top-k voting",
                              "Which method when?"])

with t1:
    st.markdown(
        "**Neighbouring datasets.** Two datasets are neighbours when they differ in one "
        "person's record. A mechanism is (ε, δ)-differentially private when, for every "
        "pair of neighbours, any output is at most e^ε times more likely under one than "
        "the other (up to a small slack δ). So an observer of the output cannot tell "
        "whether *your* record was used.\n\n"
        "**The Gaussian mechanism** adds normal noise to a statistic. Below: the average "
        "score of ten people (scores in [0, 1]) and its *worst-case* neighbour, where the "
        "person who scored 0 is replaced by someone who scored 1. No single record can "
        "move the mean further than that, Δ = 1/10, and the noise σ is calibrated to "
        "that Δ and your ε. The axes stay put as ε moves, so you see the noise itself "
        "grow and shrink.")
    c_eps, c_delta = st.columns(2)
    eps = c_eps.select_slider("ε", [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], value=1.0,
                              key="learn_eps")
    delta = float(c_delta.select_slider("δ", DELTA_CHOICES, value="1e-5", key="learn_delta",
                                        help="The chance the ε promise fails."))
    st.info(privacy_in_words(float(eps), delta))
    g = demos.gaussian_mechanism(float(eps), delta)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=g["x"], y=g["p"], name=f"output on D (mean {g['mean_d']:.3f})",
                             fill="tozeroy", mode="lines", line=dict(color="#2563eb")))
    fig.add_trace(go.Scatter(x=g["x"], y=g["q"], fill="tozeroy", mode="lines",
                             line=dict(color="#d97706"),
                             name=f"output on D′ (mean {g['mean_d2']:.3f})"))
    _demo_layout(fig, "released noisy mean", "density")
    fig.update_xaxes(range=list(g["x_range"]))
    fig.update_yaxes(range=[0, g["y_max"]])
    st.plotly_chart(fig, key="learn_gauss")
    st.caption(f"σ = {g['sigma']:.3f} (exact calibration, δ = {delta:g}). The curves differ by "
               f"{g['tv_distance']:.0%} in total variation: at best an observer guesses "
               "which dataset was used that much better than a coin flip. Smaller ε, "
               "more overlap, less to learn about any one person.")
    st.markdown(
        "**Composition.** Every release spends budget. Release the same noisy mean T "
        "times (as a generator does, step after step) and the ε of all of them together "
        "grows with T — roughly like √T — computed by the same accountant the runs use.")
    t = st.select_slider("releases T", [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], value=10,
                         key="learn_compose_t")
    c = demos.composition_curve(noise_multiplier=g["noise_multiplier"], delta=delta,
                                max_compositions=int(t), n_points=12)
    st.metric(f"ε after {t} releases (one costs ε = {eps:g})", f"{c['exact'][-1]:.3g}")
    st.plotly_chart(line_figure({"exact accountant": (c["T"], c["exact"])},
                                title="ε of T releases together", x_title="releases T",
                                y_title="ε", height=240, log_x=True), key="learn_compose")

with t5:
    st.markdown(
        "**Play the attacker.** Each round the app secretly puts a target person *in* a "
        "survey or *out* of it (replaced by someone else, as in this app's ε), releases the "
        "count of yes answers through the same Gaussian mechanism the methods use, and you "
        "guess. After a few rounds your (false-positive, true-positive) point appears next to "
        "the optimal attacker's (a likelihood-ratio test on the same releases). DP promises "
        "that nobody, however clever, gets above the curve.")
    game_panel(store(), session_id())
    if st.toggle("Room view (instructors): every session's point at one ε, live",
                 key="game_room_on"):
        room_panel(store())

with t2:
    st.markdown(
        "**DP-MERF** summarises the data by one vector: the average of a random-feature "
        "map φ(x) of each record, per class. Then φ(x)·φ(x′) approximates a Gaussian "
        "kernel, so matching those averages matches the whole distribution (maximum mean "
        "discrepancy). Every φ(x) has length exactly 1, so one record moves the average "
        "by at most 2/m: the summary is released once with Gaussian noise, and the "
        "generator trains against it as long as it likes without spending more budget.")
    d = st.select_slider("random features D", [4, 10, 20, 50, 100, 500, 1000, 5000],
                         value=20, key="learn_rff_d")
    k = demos.kernel_approximation(int(d))
    fig = line_figure({"Gaussian kernel": (k["distance"], k["exact"]),
                       f"random-feature estimate, D = {d}": (k["distance"], k["approx"])},
                      title="Kernel vs its random-feature approximation",
                      x_title="distance |x − x′| (in length scales)", y_title="similarity",
                      height=300)
    st.plotly_chart(fig, key="learn_rff")
    st.caption(f"Largest gap: {k['max_error']:.3f}. The error shrinks like 1/√D, but more "
               "features also means more noisy numbers to release: on small datasets a "
               "smaller D wins.")

with t3:
    st.markdown(
        "**DataLens** splits the private data among many *teachers*, each seeing only "
        "its own slice. To tell the generator which way to move a synthetic record, each "
        "teacher keeps only its top-k gradient coordinates and turns them into random "
        "±1 votes. The votes are summed, Gaussian noise is added, and only coordinates "
        "with a clear majority (|votes| ≥ β·teachers) are kept. One record can change "
        "one teacher's k votes, so the sum moves by at most 2√k.")
    c1, c2, c3 = st.columns(3)
    n = c1.slider("teachers", 5, 500, 100, key="learn_n")
    sigma = c2.slider("noise σ", 0.0, 100.0, 10.0, key="learn_sigma")
    beta = c3.slider("threshold β", 0.0, 1.0, 0.3, key="learn_beta")
    v = demos.top_k_voting(n_teachers=int(n), dim=40, top_k=10, sigma=float(sigma),
                           beta=float(beta), seed=1)
    fig = go.Figure()
    idx = list(range(len(v["noisy"])))
    fig.add_trace(go.Bar(x=idx, y=v["clean"], name="summed votes", opacity=0.5))
    fig.add_trace(go.Bar(x=idx, y=v["noisy"], name="with noise", opacity=0.7))
    fig.add_hline(y=v["threshold"], line_dash="dot")
    fig.add_hline(y=-v["threshold"], line_dash="dot", annotation_text="± β·teachers")
    _demo_layout(fig, "gradient coordinate", "votes", barmode="overlay")
    st.plotly_chart(fig, key="learn_votes")
    st.caption(f"{v['n_released']} of 40 coordinates pass the threshold; "
               f"{v['n_agree']} of them point the same way as the true gradient. "
               "The noise is fresh on every redraw. Few teachers or large σ: the noise "
               "drowns the votes.")

with t4:
    dig = DIGITS_MEASURED
    st.markdown(
        f"- **Small image data (digits, {dig['records']:,} training records):** use DP-MERF. "
        f"At ε = 1 it reaches about {dig['DP-MERF at epsilon=1']} downstream accuracy. "
        f"DataLens stays near chance ({dig['CNN at epsilon=1']}) at ε = 1, where its budget "
        f"affords a single step against the noise of {dig['teachers']} teachers of 15 records; "
        f"at ε = 10 ({dig['steps at epsilon=10']} steps) its CNN reaches about "
        f"{dig['CNN at epsilon=10']}, and {dig['CNN without noise']} without noise (ten and "
        "three seeds here). That is a limit of the method on small data, not a bug.\n"
        "- **MNIST / Fashion-MNIST (60,000 records):** both work. Published at ε = 1: "
        "DP-MERF .77 / .73 (logistic regression), DataLens .71 / .65 (CNN). DP-MERF "
        "trains in minutes; DataLens trains 4,000 small teachers, about 10 minutes at ε = 1 on "
        "a 2-core CPU (CNN .656–.669 over three runs here).\n"
        "- **Independent marginals (the baseline):** each column's histogram, released "
        "once with noise, columns drawn independently. Fast and hard to beat at very small "
        "ε; it knows nothing of how columns relate, so a generator that does not beat it "
        "has not learned anything more.\n"
        "- **Tabular data:** DP-MERF with its heterogeneous kernel (numeric + "
        "categorical). Numeric columns need public bounds or a share of the budget to "
        "release them.\n"
        "- **ε = ∞** trains the same method without noise: the gap between it and real "
        "data is the method's own limit; the gap between it and your ε is the price of "
        "privacy.\n"
        f"- **The Playground's ε** runs from {EPSILON_CHOICES[0]} (strong privacy, much "
        f"noise) to {EPSILON_CHOICES[-2]} on a log scale, plus ∞; ε = 1 is a common "
        "choice, ε ≥ 10 promises little.")

# What this app's ε covers: one self-contained section, outside the tabs above.
st.divider()
st.subheader("What ε covers here")
st.markdown(
    "**Neighbours in DP Synth Lab.** Two training sets are neighbours when one record is "
    "*replaced* by any other record. The number of training records n stays the same and is "
    "treated as public. ε then bounds what the synthetic data, the sample grids and every "
    "released statistic reveal about any one training record.\n\n"
    "**Not covered by ε:** accuracies measured on the real test split (and classifiers "
    "trained on real data), the test split itself, category lists and class names read "
    "from the training records when you do not give them as public (a value that occurs "
    "once can appear in the synthetic CSV), and defaults that were tuned on real training "
    "records (DP-MERF's sampling temperature, generator width and length scale for "
    "Fashion-MNIST/MNIST). Each run's metrics.json lists these under \"not private\".\n\n"
    "**δ** is the chance the guarantee may fail; keep it well below 1/n. DP-MERF's "
    "preview and the command line warn when δ ≥ 1/n; every run refuses δ > 0.1.")
