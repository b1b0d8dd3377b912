"""Pure-Python helpers for the Playground's method knobs: widget bounds and their URL form
(no Streamlit here, so it is testable). Setting choices, tables and pictures live in ui/.

The Playground keeps its settings in the URL (Streamlit's `bind="query-params"`): every
value is a short string so a copied link restores it exactly; `config_from_settings`
turns those strings back into a validated RunConfig.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from engine.config import RunConfig
from engine.errors import InputError


@dataclass(frozen=True)
class Knob:
    """How to show one method parameter: widget kind and bounds."""

    name: str
    kind: str  # "int", "float", "choice", "bool", "optional_float", "optional_int"
    default: Any
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    choices: tuple = ()
    help: str = ""
    main: bool = False  # shown up front; others go under "Advanced"


# Bounds that make sense for each known knob; hi values scale with the dataset default.
_KNOWN: dict[str, dict[str, Any]] = {
    # DP-MERF
    "n_features": dict(kind="int", lo=100, hi=50_000, step=100, main=True,
                       help="Random features D. The noise per coordinate is fixed, so "
                            "small datasets want smaller D."),
    "length_scale": dict(kind="optional_float", lo=0.01, hi=100.0, main=True,
                         help="Gaussian-kernel length scale ℓ; empty = the dataset's "
                              "public default (no privacy cost)."),
    "epochs": dict(kind="int", lo=1, hi=1000, step=1, main=True,
                   help="Generator training length. Free after the release (post-processing)."),
    "lr": dict(kind="float", lo=1e-5, hi=0.5, main=True, help="Adam learning rate."),
    "batch_size": dict(kind="int", lo=2, hi=10_000, step=1),
    "latent": dict(kind="int", lo=1, hi=256, step=1),
    "labels": dict(kind="choice", choices=("balanced", "counts", "none")),
    "counts_share": dict(kind="float", lo=0.01, hi=0.99),
    "bounds_share": dict(kind="float", lo=0.01, hi=0.99),
    "accountant": dict(kind="choice", choices=("exact", "rdp")),
    "projection": dict(kind="choice", choices=("auto", "float32", "bfloat16"),
                       help="Precision of the random-feature matmul; auto = bf16 only "
                            "where this machine has fast bf16 (GPU, AVX512-BF16, AMX)."),
    "sample_every": dict(kind="int", lo=1, hi=10_000, step=1),
    "probe_every": dict(kind="int", lo=0, hi=100_000, step=1),
    # DataLens
    "teachers": dict(kind="int", lo=1, hi=10_000, step=1, main=True,
                     help="Teachers, each on its own disjoint slice of the data."),
    "top_k": dict(kind="int", lo=1, hi=10_000, step=1, main=True,
                  help="Coordinates each teacher votes on; sensitivity grows as 2√k."),
    "sigma": dict(kind="float", lo=0.0, hi=1e6, main=True,
                  help="Noise std added to the summed votes."),
    "beta": dict(kind="float", lo=0.0, hi=1.0, main=True,
                 help="Threshold: keep a coordinate when |noisy votes| ≥ β·teachers."),
    "clip": dict(kind="float", lo=1e-12, hi=1e3, main=True,
                 help="Gradient clip c before stochastic signs."),
    "gamma": dict(kind="float", lo=1e-3, hi=1e3),
    "batch": dict(kind="optional_int", lo=1, hi=100_000,
                  help="Synthetic records per step; empty = records per teacher."),
    "records_per_teacher": dict(kind="optional_int", lo=1, hi=100_000,
                                help="Empty = all records, split evenly."),
    "teacher_steps": dict(kind="int", lo=1, hi=100, step=1),
    "first_teacher_steps": dict(kind="int", lo=1, hi=1000, step=1),
    "lr_teacher": dict(kind="float", lo=1e-6, hi=0.5),
    "lr_student": dict(kind="float", lo=1e-6, hi=0.5),
    "max_steps": dict(kind="int", lo=1, hi=1_000_000, step=1,
                      help="Cap on iterations (the budget may stop training earlier)."),
}


def knobs(params, *, n_train: int | None = None, n_dims: int | None = None) -> list[Knob]:
    """Widget specs for a method's Params instance (its defaults are the dataset's).

    `n_train` / `n_dims` cap knobs that cannot exceed the data (teachers, top-k).
    Structural knobs (tuples of layer widths) are not shown.
    """
    out = []
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        if isinstance(v, (tuple, list, dict)):
            continue
        spec = dict(_KNOWN.get(f.name, {}))
        if f.name == "teachers" and n_train:
            spec["hi"] = n_train
        if f.name == "top_k" and n_dims:
            spec["hi"] = n_dims
        if not spec:  # unknown knob: infer from the default's type
            if isinstance(v, bool):
                spec = dict(kind="bool")
            elif isinstance(v, int):
                spec = dict(kind="int", lo=0, step=1)
            elif isinstance(v, float):
                spec = dict(kind="float", lo=0.0)
            elif v is None:
                spec = dict(kind="optional_float", lo=0.0)
            else:
                spec = dict(kind="choice", choices=(v,))
        if spec["kind"] == "choice" and v not in spec.get("choices", ()):
            spec["choices"] = tuple(spec.get("choices", ())) + (v,)
        if spec["kind"] in ("int", "float") and isinstance(v, (int, float)):
            # Keep the default reachable whatever the table says.
            if spec.get("lo") is not None and v < spec["lo"]:
                spec["lo"] = v
            if spec.get("hi") is not None and v > spec["hi"]:
                spec["hi"] = v
        out.append(Knob(name=f.name, default=v, **spec))
    return out


def config_from_settings(*, dataset: str, method: str, eps: str, delta: str, seed: int,
                         params: dict[str, Any], data_options: dict | None = None,
                         device: str = "auto") -> RunConfig:
    """The Playground's strings → a validated RunConfig (raises InputError)."""
    from engine.config import parse_epsilon

    try:
        delta_v = float(delta)
    except (TypeError, ValueError):
        raise InputError(f"delta must be a number such as 1e-5. Got {delta!r}.") from None
    return RunConfig(method=method, dataset=dataset, epsilon=parse_epsilon(eps),
                     delta=delta_v, seed=int(seed), device=device,
                     data_options=dict(data_options or {}),
                     params={k: v for k, v in params.items()}).validate()


def knob_key(method: str, name: str) -> str:
    """The Playground's widget key (and URL name) of a method knob: dpmerf_epochs."""
    return f"{method}_{name}"


def changed_params(params, values: dict[str, Any]) -> dict[str, Any]:
    """Only the knobs that differ from the dataset's defaults (short configs, clean URLs)."""
    out = {}
    for f in dataclasses.fields(params):
        if f.name in values and values[f.name] != getattr(params, f.name):
            out[f.name] = values[f.name]
    return out
