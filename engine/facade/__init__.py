"""The app's one door to the engine: every engine name that app.py, ui/ and pages/ use,
re-exported here and imported from nowhere else (tests/test_facade.py fails otherwise).

Grouped by what a page does with them. Nothing here trains, times or attacks: those run
in the worker's processes (engine/jobs), and importing this package imports no torch
(tests/test_light_imports.py), so the web server stays light. A page that needs a new
engine name adds it here, in its group, rather than reaching past the door.
"""

# Errors and the boundary: the page's text becomes a RunConfig once (ε and δ parsed here
# and carried as floats from then on: engine/core/config.py).
from engine.core.config import RunConfig, parse_delta, parse_epsilon
from engine.core.errors import InputError

# Participants: the owner key behind the browser's cookie.
from engine.core import identity

# Datasets: what can be loaded here, a dataset's public shape (read in a child process:
# the server never loads records), drawing images.
from engine.data.catalog import list_datasets
from engine.data.view import describe as describe_dataset
from engine.data.render import class_rows, grid_scale

# Methods: their names, knobs and defaults; the preview before training and its cost line.
from engine.methods.registry import available_methods, default_params, get_method, make_params, params_for
from engine.methods.registry import part as method_part
from engine.methods.knobs import KnobSpec, data_limits, knob_specs
from engine.methods.preview import MEASURING, Cost, cost_line, duration
from engine.methods.datalens import accounting as datalens_accounting
from engine.methods.datalens.params import DIGITS_MEASURED
from engine.runs.runner import preview

# Jobs: submit, stop, snapshot and queue (JobManager), who may see what, attack jobs.
from engine.jobs.manager import JobManager, JobSnapshot, Submission
from engine.jobs import visibility
from engine.store.attack_jobs import AttackJob

# The run store: records, statuses, the gallery, uploads, time estimates.
from engine.store.runs import RunStore, default_root
from engine.store.records import RunRecord, RunStatus, headline_key, real_key
from engine.store import uploads
from engine.store.eta import about
from engine.runs.gallery import SWEEP as GALLERY_SWEEP, load_into as load_gallery

# Sweeps and private search.
from engine.runs.sweeps import differing_settings, parse_values, settings_label, sweep_configs
from engine.privacy.search_plan import DISTRIBUTIONS, plan_search, search_config

# Tuning studies (Optuna ask-and-tell over the run queue; engine/jobs/study.py): the
# request, its preview before Start, and the background driver for the Tune page.
from engine.runs.study_space import (MAX_KNOBS, SAMPLERS, STUDY_DIRECTIONS, KnobRange,
                                     StudySpec, build_spec as build_study_spec)
from engine.runs.study_preview import StudyPreview, study_preview
from engine.jobs.study import (StudyResult, TrialInfo, defaults_score, ledger_totals,
                               optuna_study, study_names)
from engine.jobs import study_background as studies
# ... a second objective and ε as a searched knob, knob importance by a chosen evaluator,
# and the Pareto front over every stored run of a method on a dataset.
from engine.runs.study_objectives import (EPSILON_KNOB, SECOND_TITLES, SECONDS,
                                          searched_epsilon)
from engine.jobs.study_importance import (EVALUATORS as IMPORTANCE_EVALUATORS,
                                          EVALUATOR_TITLES as IMPORTANCE_TITLES,
                                          plot as importance_plot)
from engine.runs.pareto import AXES as PARETO_AXES, AXIS_TITLES as PARETO_AXIS_TITLES
from engine.runs.pareto import front as pareto_front
# Tune on public, spend privacy once: the stand-ins, a study's one private run, and the
# three paths (tune on private, private search, tune on public) side by side.
from engine.core.config import PUBLIC_DATASETS
from engine.jobs import three_paths

# Privacy: the accountant, risk in words, the budget ledger.
from engine.privacy import accountant, risk
from engine.privacy.ledger import (INFINITE_WORDS, PUBLIC_NOTE, Ledger, declared_public,
                                   epsilon_words)

# Membership attacks (measured by the worker: JobManager.measure_attacks): a run's saved
# result, whether it has a release to attack, and the preview of their cost.
from engine.audit.membership_run import released as attackable, run_sizes as attack_sizes
from engine.audit.membership_run import saved as attack_result

# Teaching: the Learn page's demos and the membership game.
from engine.teaching import demos, game

__all__ = [
    "RunConfig", "parse_delta", "parse_epsilon", "InputError", "identity",
    "list_datasets", "describe_dataset", "class_rows", "grid_scale",
    "available_methods", "default_params", "get_method", "make_params", "params_for",
    "method_part", "KnobSpec",
    "data_limits", "knob_specs", "MEASURING", "Cost", "cost_line", "duration",
    "datalens_accounting", "DIGITS_MEASURED", "preview",
    "JobManager", "JobSnapshot", "Submission", "visibility", "AttackJob",
    "RunStore", "default_root", "RunRecord", "RunStatus", "headline_key", "real_key",
    "uploads", "about", "GALLERY_SWEEP", "load_gallery",
    "differing_settings", "parse_values", "settings_label", "sweep_configs",
    "DISTRIBUTIONS", "plan_search", "search_config",
    "MAX_KNOBS", "SAMPLERS", "STUDY_DIRECTIONS", "KnobRange", "StudySpec", "build_study_spec",
    "StudyPreview", "study_preview", "StudyResult", "TrialInfo", "defaults_score",
    "ledger_totals", "optuna_study", "study_names", "studies",
    "EPSILON_KNOB", "SECOND_TITLES", "SECONDS", "searched_epsilon", "IMPORTANCE_EVALUATORS",
    "IMPORTANCE_TITLES", "importance_plot", "PARETO_AXES", "PARETO_AXIS_TITLES", "pareto_front",
    "PUBLIC_DATASETS", "three_paths",
    "accountant", "risk", "INFINITE_WORDS", "PUBLIC_NOTE", "Ledger", "declared_public",
    "epsilon_words",
    "attackable", "attack_sizes", "attack_result",
    "demos", "game",
]
