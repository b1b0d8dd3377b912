"""Tune on public data, spend privacy once: a study's trials run on a public stand-in
(`tune_on`: a built-in dataset whose records are declared public, digits_public or
fashion_public; or a CSV / NPZ its uploader marked public, engine/store/uploads.py) and its
best settings get ONE run on the private dataset at the study's ε. The ledger (engine/privacy/ledger.dataset_id) neither charges nor caps a public
dataset, so the trials cost the private records nothing; the one private run is charged
like any run. Driving it (the trials, then the private run) is engine/jobs/public_study.py.

The three ways to tune the same knobs at the same ε, side by side (`path_epsilons` before
anything runs; engine/jobs/three_paths.py measures them):

(a) tune on the private data itself: every trial is a run charged in full, and picking
    the best by its real-data score is not a private selection — the ledger's total is
    the composition of every trial;
(b) private repeat-and-select (engine/runs/private_search.py): E[K] = trials candidates
    on the private data, only the best released, charged once by its own bound;
(c) tune on public, one private run: the private records pay for one run.

Settings found on public data transfer only as well as the stand-in resembles the private
data; nothing here claims they do, the measured rows say how well they did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from engine.core.config import FILE_DATASETS, PUBLIC_DATASETS, RunConfig
from engine.core.errors import InputError
from engine.privacy.ledger import declared_public
from engine.store import uploads

PATHS = ("a", "b", "c")
PATH_WORDS = {
    "a": "tune on the private data (every trial charged)",
    "b": "private repeat-and-select (charged once, its own bound)",
    "c": "tune on public, one private run",
}
SEARCH_MAX_MEAN = 100  # the private search's E[K] limit (engine/privacy/search_plan.py)


def check_tune_on(base: RunConfig, tune_on: str, options: dict | None = None, *,
                  root=None, owner: str | None = None) -> dict:
    """Refuse (InputError, with the fix) a stand-in that is not public, is the private
    dataset itself, or holds another kind of data than the private dataset. A user's file
    (`tune_on` "csv" or "npz", its path in `options`) must also be `owner`'s upload in
    the store at `root`, marked public, and laid out as the private data (same columns and
    label, or the same image shape). Returns the data options the trials run with."""
    from engine.data.catalog import DATASETS, dataset_kind

    if tune_on not in DATASETS:
        raise InputError(f"unknown dataset {tune_on!r} to tune on; the public stand-ins are "
                         f"{', '.join(PUBLIC_DATASETS)} or a file of yours marked public.")
    if declared_public(base):
        raise InputError(f"{_name(base.dataset, base.data_options)} is itself public: tune on "
                         "it directly (no stand-in), nothing is charged.")
    if tune_on in FILE_DATASETS:
        return _check_public_file(base, tune_on, options or {}, root, owner)
    if tune_on not in PUBLIC_DATASETS:
        raise InputError(f"{tune_on} is not declared public (its runs are charged), so tuning "
                         f"on it spends privacy; tune on one of {', '.join(PUBLIC_DATASETS)}.")
    if dataset_kind(tune_on) != dataset_kind(base.dataset):
        raise InputError(f"{tune_on} holds {dataset_kind(tune_on)} data and {base.dataset} "
                         f"{dataset_kind(base.dataset)} data: settings tuned on one do not "
                         "apply to the other; pick a stand-in of the same kind.")
    return {}


def _name(dataset: str, options: dict | None) -> str:
    path = (options or {}).get("path")
    return uploads.display_name(path) if dataset in FILE_DATASETS and path else dataset


def tune_on_words(tune_on: str, options: dict | None) -> str:
    """A stand-in as the board and the CLI name it."""
    if tune_on in FILE_DATASETS:
        return f"{_name(tune_on, options)} (a {tune_on} file marked public)"
    return tune_on


def _check_public_file(base: RunConfig, kind: str, options: dict, root, owner) -> dict:
    from engine.data.catalog import dataset_kind

    path = options.get("path")
    name = _name(kind, options)
    if not path:
        raise InputError(f"tuning on a {kind} file needs the file: mark your upload public on "
                         "the Tune page and pick it under \"trials run on\" (the command line "
                         f"tunes on a built-in stand-in: {', '.join(PUBLIC_DATASETS)}).")
    if not uploads.owns(root, owner, path):
        raise InputError(f"only the participant who uploaded {name} can tune on it; upload "
                         "your own file (Playground), mark it public, or tune on a built-in "
                         f"stand-in ({', '.join(PUBLIC_DATASETS)}).")
    if not uploads.is_public(path):
        raise InputError(f"{name} is not marked public, so trials on it would spend its "
                         "records' privacy; tick \"this file is public\" beside it on the Tune "
                         "page (its records then get no privacy protection), or tune on a "
                         f"built-in stand-in ({', '.join(PUBLIC_DATASETS)}).")
    if dataset_kind(kind) != dataset_kind(base.dataset):
        raise InputError(f"{name} holds {dataset_kind(kind)} data and {base.dataset} "
                         f"{dataset_kind(base.dataset)} data: settings tuned on one do not "
                         "apply to the other; pick a file of the same kind.")
    private = _layout(base.dataset, _key(base.data_options))
    if kind == "npz":
        public = _layout(kind, _key({"path": str(path)}))
        if public != private:
            raise InputError(f"{name} holds images of shape {public[1]} and {base.dataset} "
                             f"{private[1]} (channels, height, width): settings tuned on one "
                             "do not fit the other; save images of the private data's shape.")
        return {"path": str(path)}
    label = _table_label(path, name, base, private)
    public = _layout(kind, _key({"path": str(path), "label": label}))
    if public != private:
        missing, extra = sorted(set(private[1]) - set(public[1])), \
            sorted(set(public[1]) - set(private[1]))
        raise InputError(f"{name}'s columns are not {base.dataset}'s: "
                         + (f"missing {missing}" if missing else "")
                         + ("; " if missing and extra else "")
                         + (f"extra {extra}" if extra else "")
                         + ". The public file needs the same feature columns and label.")
    return {"path": str(path), "label": label}


def _table_label(path, name: str, base: RunConfig, private: tuple) -> str:
    """The public CSV's label column: the private CSV's, else (a built-in table, whose
    label has no column name) the one column of the file that is not a private feature."""
    import pandas as pd

    label = (base.data_options or {}).get("label")
    if label:
        return str(label)
    try:
        cols = [str(c).strip() for c in pd.read_csv(path, nrows=0).columns]
    except Exception as err:  # an unreadable header: say so in one line
        raise InputError(f"{name} could not be read as CSV ({type(err).__name__}).") from None
    extra = [c for c in cols if c not in private[1]]
    if len(extra) != 1:
        raise InputError(f"{name} needs {base.dataset}'s {len(private[1])} feature columns "
                         f"plus one label column; it has {len(extra)} other column(s)"
                         + (f": {extra[:5]}" if extra else "") + ".")
    return extra[0]


def _key(options: dict | None) -> str:
    """Options as a cache key; a file's size and time in it, so a changed file is re-read."""
    opts = dict(options or {})
    path = opts.get("path")
    if path and Path(str(path)).is_file():
        st = Path(str(path)).stat()
        opts["_stamp"] = [st.st_size, st.st_mtime_ns]
    return json.dumps(opts, sort_keys=True, default=str)


@lru_cache(maxsize=32)
def _layout(dataset: str, options_key: str) -> tuple:
    """What settings transfer along: ("image", (c, h, w)) or ("tabular", sorted feature
    names). Public facts (the image size, the column names), read by loading the data."""
    from engine.data.catalog import load

    opts = {k: v for k, v in json.loads(options_key).items() if k != "_stamp"}
    data = load(dataset, options=opts)
    if data.kind == "image":
        return "image", tuple(data.image_shape)
    return "tabular", tuple(sorted(c.name for c in data.columns or ()))


def trial_config(base: RunConfig, tune_on: str, options: dict | None = None) -> RunConfig:
    """A trial's run on the stand-in: the same method, ε, δ, seed and knobs."""
    return replace(base, dataset=tune_on, data_options=dict(options or {}))


@dataclass(frozen=True)
class PathPlan:
    path: str
    words: str
    epsilon: float  # what the private records pay, at the base's δ
    private_runs: str  # how many runs touch the private records


def path_epsilons(base: RunConfig, trials: int, grid: dict[str, list]) -> list[PathPlan]:
    """What each path charges the private records, before anything runs, from the
    accountant: (a) `trials` runs at base.epsilon composed exactly (Gaussian DP); (b) a
    repeat-and-select search of E[K] = trials (geometric) whose total is base.epsilon;
    (c) one run at base.epsilon. Each run is charged as the ledger plans it (one
    Gaussian mechanism meeting its target: engine.privacy.charges.planned)."""
    from engine.privacy.charges import planned, total_epsilon
    from engine.privacy.search_plan import plan_search

    if not base.private:
        raise InputError("the three paths compare what tuning costs at a finite ε; "
                         "at ε = ∞ every path spends everything.")
    one = planned(base)
    a = total_epsilon(one * trials, delta=base.delta)
    mean = float(min(trials, SEARCH_MAX_MEAN))
    b = plan_search(epsilon=base.epsilon, delta=base.delta, mean=mean,
                    distribution="geometric", grid=grid)
    c = total_epsilon(one, delta=base.delta)
    return [PathPlan("a", PATH_WORDS["a"], a, f"{trials}"),
            PathPlan("b", PATH_WORDS["b"], b.epsilon,
                     f"random K, E[K] = {mean:g} (each candidate ε = {b.candidate_epsilon:.3g})"),
            PathPlan("c", PATH_WORDS["c"], c, "1")]
