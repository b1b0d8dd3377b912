"""Method registry: a name maps to a method module. A method is one folder,
engine/methods/<name>/, plus one line in METHODS; the app, the CLI, the runner, the
worker, the gallery, the audit and the contract tests find everything else from the
method module's declarations, and nothing outside the folder names the method.

The checklist of a new method:

  [ ] engine/methods/<name>/method.py (the module the registry line names) defines
      - `TITLE`: a human name;
      - `DATA_KINDS` (optional): the kinds of data it models, e.g. ("image",) or
        ("tabular",); default both (engine/runs/gallery.py picks its datasets from it);
      - `Params`: a frozen dataclass whose every field is declared with
        `engine.methods.knobs.knob(...)` (kind, bounds, choices, help, main/advanced: the
        Playground draws its widgets from these), with
          `for_data(dataset) -> Params`: defaults derived from the data's public shape
          (n_train, kind, image shape, columns), never from its name or values;
          optionally `for_budget(dataset, epsilon, delta, settings) -> Params`: the
          defaults for the (ε, δ) asked (public too), so a larger ε never gets a worse
          default run, derived around the user's own `settings` (a dict of knob values,
          possibly empty: DataLens calibrates σ to the user's max_steps) (default:
          `for_data`; `params_for` below is every caller's way in);
          `validate(dataset) -> Params`: `engine.methods.knobs.check_knobs` plus the checks
          that depend on the data or on several fields; raises InputError;
      - `privacy_preview(config, params, data) -> dict`: what the app and CLI show before
        training (no private data touched). Numbers are drawn as metrics; the optional keys
        "estimated memory (GB)", "estimated s / iteration", "estimated seconds" are the
        cost, "refuse" a one-line reason the run cannot start here, "warning" a caution
        (settings that will not learn; the δ warning is added for every method by
        engine/methods/preview.py) and "hint" a teaching note.
        engine/methods/preview.from_method turns it into the typed Preview the page and the
        CLI read (engine.runs.runner.preview);
      - `train(config, params, data, device, stop) -> Iterator[Event]`: `params` are the
        validated Params from `make_params` (built once per run by engine.runs.runner);
        yields Events and ends with one whose `result` is an
        `engine.methods.events.TrainResult`:
          `privacy`: an `engine.privacy.accountant.PrivacyReport` of the releases as they
          ran, its ε composed by engine.privacy.accountant (never by the method),
          ≤ config.epsilon, equal to what `privacy_preview` announced for a run that is not
          stopped; with ε = ∞ no noise is drawn and ε spent is ∞;
          `stopped`: True when `stop.is_set()` (checked between steps) ended the run early;
          the result then holds what was released so far, and no crash;
          every noise draw goes through `engine.privacy.noise.gaussian_noise`;
      - `AUDIT`: the dotted path of its audit module (engine/methods/<name>/audit.py),
        which defines `RELEASES` {audit name: scores(trials, *, epsilon, delta, **kw) ->
        (scores on D0, scores on D1, claimed noise multiplier)}, every release its run
        makes driven through the run's own code (engine/methods/audit_harness.py), and
        optionally `DRAWS` {name: draws(trials) -> [audit_harness.Draws]} for the noise
        checks (engine/audit/noise.py);
      - optional parts, each with a default:
          `COST`: the dotted path of a cost module timed on this machine: `estimate(config,
            data, params, device, threads=None, away=None) -> dict` of the cost keys above
            (kept apart from the method so the web server can leave the timing to another
            process: engine/runs/cost_probe.py), and optionally `run_memory_gb(config, data,
            params) -> float`, the run's peak memory with torch loaded (engine/runs/slots.py;
            default: `core.processes.TORCH_BASELINE_GB` plus three copies of the data);
          `starting(params) -> str`: what a run does before its first step, for the live
            view ("building 4,000 teachers"; default "preparing");
          `GALLERY_DATASETS`: further datasets its gallery runs train on where installed;
            `GALLERY_SLOW_DATASETS`: those built only on request (hours);
            `GALLERY_NONPRIVATE`: knob overrides of its ε = ∞ gallery runs;
          `TINY_PARAMS`: knob overrides for a run of a few seconds on two cores
            (tests/test_method_contract.py; default: the dataset's defaults).
  [ ] one line in METHODS below.

tests/test_method_contract.py checks the contract for every method listed here (and for a
toy method that lives only under tests/), tests/test_audit.py runs every declared audit.
A registry string (or a declared module path) that does not import is an InputError
naming it, never a method quietly dropped. Modules are imported lazily so listing methods
stays cheap, and no method imports this module (the runner hands it its params).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any
from dataclasses import fields, replace
from types import ModuleType

from engine.core.config import resolved_settings
from engine.core.errors import InputError

METHODS: dict[str, str] = {
    "dpmerf": "engine.methods.dpmerf.method",
    "datalens": "engine.methods.datalens.method",
    "marginals": "engine.methods.marginals.method",
    "aim": "engine.methods.aim.method",
}


def _import(path: str, what: str) -> ModuleType:
    """`path` imported; an InputError naming it when it does not import."""
    try:
        return importlib.import_module(path)
    except ImportError as e:
        raise InputError(f"{what} is registered as {path!r}, which does not import: {e}") from e


def available_methods() -> list[str]:
    """Every registered method; a registry line whose module cannot be found is an
    InputError naming it (checked without importing the module)."""
    for name, path in METHODS.items():
        try:
            found = importlib.util.find_spec(path) is not None
        except ImportError:  # its package is missing
            found = False
        if not found:
            raise InputError(f"method {name!r} is registered as {path!r}, which does not import: "
                             "no such module (engine/methods/registry.py METHODS).")
    return list(METHODS)


def get_method(name: str) -> ModuleType:
    if name not in METHODS:
        raise InputError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}.")
    return _import(METHODS[name], f"method {name!r}")


def part(method: str, attr: str, default: Any = None) -> Any:
    """The method's optional declaration `attr` (module docstring), or `default`."""
    return getattr(get_method(method), attr, default)


def part_module(method: str, attr: str) -> ModuleType | None:
    """The module the method declares by dotted path under `attr` (AUDIT, COST), imported;
    None when it declares none."""
    path = part(method, attr)
    return None if path is None else _import(path, f"{method}'s {attr}")


def default_params(method: str, dataset, epsilon: float | None = None,
                   delta: float | None = None, settings: dict | None = None):
    """The method's defaults for this loaded dataset and, where the budget is given, for
    that (ε, δ) and around the user's own `settings` (its `Params.for_budget`; ε, δ and
    the settings are public): a user's max_steps changes the σ that spends ε in them.
    The settings themselves are not applied here (make_params does). Not validated: a
    method that does not support the data says so in `validate`."""
    params = get_method(method).Params
    if epsilon is None or delta is None or not hasattr(params, "for_budget"):
        return params.for_data(dataset)
    return params.for_budget(dataset, float(epsilon), float(delta), dict(settings or {}))


def make_params(method: str, dataset, overrides: dict | None = None, *,
                epsilon: float | None = None, delta: float | None = None):
    """The method's defaults for this dataset (for the budget, where given), updated with
    the user's overrides, validated."""
    known = {f.name for f in fields(get_method(method).Params)}
    unknown = set(overrides or {}) - known
    if unknown:
        raise InputError(
            f"unknown {method} parameter(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(known))}."
        )
    params = default_params(method, dataset, epsilon, delta, overrides)
    return replace(params, **(overrides or {})).validate(dataset)


def params_for(config, dataset):
    """The validated params of a run of `config` on `dataset`: the defaults for its ε and
    δ, with its own settings on top. Every place that builds a run's params calls this."""
    return make_params(config.method, dataset, config.params, epsilon=config.epsilon,
                       delta=config.delta)


def estimate_cost(config, dataset, params, **timing) -> dict:
    """The cost keys of `config`'s method from its cost module (COST), {} if it has none,
    the scoring time after training (engine/methods/scoring_cost.py) and the CNN's when the run
    asks for it.
    `timing`: `threads` and `away`, where not to time (engine/runs/cost_probe.away)."""
    from engine.core.device import resolve_device

    device = resolve_device(config.device)
    cost = part_module(config.method, "COST")
    out = {} if cost is None else cost.estimate(config, dataset, params, device, **timing)
    if config.cnn_eval and dataset.kind == "image":
        out["estimated CNN seconds (at most)"] = _cnn_cost(config, dataset, device, **timing)
    return {**out, **_scoring_cost(config, dataset, **timing)}


def run_memory_gb(config, dataset, params) -> float:
    """Peak memory of a run of `config` (GB, torch loaded): its cost module's
    `run_memory_gb`, else the baseline plus three copies of the data."""
    from engine.core.processes import TORCH_BASELINE_GB

    cost = part_module(config.method, "COST")
    if cost is not None and hasattr(cost, "run_memory_gb"):
        return float(cost.run_memory_gb(config, dataset, params))
    return TORCH_BASELINE_GB + float(getattr(dataset.x_train, "nbytes", 0)) * 3 / 1e9


def _scoring_cost(config, dataset, **timing) -> dict:
    """Scoring after training (LogReg, MLP, RF; engine/methods/scoring_cost.py). A process that
    times here (a trainer, the CLI) knows whether it fitted the real-data reference
    already; the web server (`away`) does not, and counts it."""
    from engine.methods import scoring_cost

    fitted = False
    if timing.get("away") is None:
        from engine.evaluation.utility import real_reference_fitted

        fitted = real_reference_fitted(dataset, seed=config.seed)
    return scoring_cost.estimate(config, dataset, real_fitted=fitted, **timing)


def _cnn_cost(config, dataset, device, **timing) -> float | None:
    """The CNN's scoring time at most: a fit on the synthetic images and one on the real
    training split (the reference; engine/evaluation/utility.cnn_scores), every epoch."""
    from engine.evaluation.cnn import estimate_seconds

    shape, k = dataset.x_train.shape[1:], dataset.n_classes
    fits = [estimate_seconds(n, shape, k, device=device, **timing)
            for n in (config.n_synthetic or dataset.n_train, dataset.n_train)]
    return None if None in fits else sum(fits)


def settings_for(config) -> str | None:
    """`resolved_settings` of `config` on its dataset (loaded here); None when they
    cannot be resolved (a private search job, or settings the run itself will refuse):
    such a request is never answered with an older run."""
    from engine.data import catalog as datasets

    try:  # a private search's params (engine/privacy/search_plan.SPEC) are no method's: None
        data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
        return resolved_settings(config, params_for(config, data))
    except InputError:
        return None
