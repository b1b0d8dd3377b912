"""The three ways to tune one study's knobs at its ε, measured side by side on one run
store (engine/runs/public_tuning.py describes them):

(c) the tune-on study itself: its trials on the public stand-in, then one private run;
(a) the same study (same knobs, sampler, trials, ε) on the private dataset: study NAME~a;
(b) a private repeat-and-select search over the same knobs (each range's grid points),
    E[K] = trials, total ε = the study's ε, queued as one run with sweep study:NAME~b.

All three go through the same queue, worker and ledger as every run. A row reports the
objective (LogReg accuracy by default) of what each path hands over, on the private
dataset's real test part (a NON-private diagnostic, as every run's); what the private
records paid, from the ledger (per sweep, composed at the ledger's δ); and seconds, from
the first of the path's runs starting to the last one ending.

Path (a) picks its best trial by that same test score, so its figure is the maximum of
`trials` noisy draws: optimistic. (b) picks by a noisy validation score and (c) by the
public data's score, so theirs are one honest draw each.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from engine.core.errors import InputError
from engine.jobs.manager import JobManager
from engine.jobs.study import Study, load_spec, sweep_name
from engine.runs.public_tuning import PATH_WORDS, SEARCH_MAX_MEAN, path_epsilons

SEARCH_RUN = "path_b_run"  # the tune-on study's user attribute: path (b)'s run id


def companion(name: str, path: str) -> str:
    """The name under which path (a) or (b) of the tune-on study `name` is stored."""
    return f"{name}~{path}"


def _spec(jm: JobManager, name: str):
    spec = load_spec(jm.store.root, name)
    if spec is None:
        raise InputError(f"no study {name!r} in this run store.")
    if not spec.tune_on:
        raise InputError(f"the study {name!r} tunes on its private data; the three paths "
                         "start from a study with a public stand-in (--tune-on).")
    return spec


def search_config(spec):
    """Path (b)'s run: repeat-and-select over the knobs' grid points at the study's ε."""
    from engine.privacy.search_plan import search_config as _search

    grid = {k.name: k.grid() for k in spec.knobs}
    return _search(spec.base, grid, epsilon=spec.base.epsilon,
                   mean=float(min(spec.trials, SEARCH_MAX_MEAN)))


def measure(jm: JobManager, name: str, *, paths=("c", "a", "b"), session: str | None = None,
            stop: threading.Event | None = None, timeout: float | None = None) -> None:
    """Run what is missing of the paths, one after the other (so their seconds are not
    shared): the tune-on study (c), its twin on the private data (a), the search (b).
    Each is stored, so a second call (or a restart) goes on from what is there."""
    spec = _spec(jm, name)
    study = Study(spec, name, jm, session=session)
    for path in paths:
        if stop is not None and stop.is_set():
            return
        if path == "c":
            study.run(stop=stop)
        elif path == "a":
            Study(replace(spec, tune_on=None, tune_on_options=None), companion(name, "a"), jm,
                  session=session).run(stop=stop)
        elif path == "b":
            rid = study.study.user_attrs.get(SEARCH_RUN)
            if rid is None or jm.store.get_run(rid) is None:
                rid = jm.submit(search_config(spec), sweep=sweep_name(companion(name, "b")),
                                session=session, reuse=False)
                study.study.set_user_attr(SEARCH_RUN, rid)
            jm.wait(rid, timeout=timeout)
        else:
            raise InputError(f"a path is a, b or c. Got {path!r}.")


def _span(jm: JobManager, sweep: str) -> tuple[float | None, float | None]:
    """(wall seconds from the first run's start to the last one's end, the runs' own
    seconds added up): the first counts waits between runs, the second does not."""
    runs = [r for r in jm.store.list_runs(sweep=sweep) if r.started and r.ended]
    if not runs:
        return None, None
    return (max(r.ended for r in runs) - min(r.started for r in runs),
            sum(r.ended - r.started for r in runs))


def rows(jm: JobManager, name: str) -> list[dict[str, Any]]:
    """One row per path: what it hands over scores (objective on the private test part),
    what the private records paid (the ledger, and the accountant's plan before it ran),
    seconds, and whether it has run. A path not yet measured has value None."""
    from engine.jobs.public_study import final
    from engine.privacy.ledger import Ledger, dataset_id

    spec = _spec(jm, name)
    plans = {p.path: p for p in path_epsilons(spec.base, spec.trials,
                                              {k.name: k.grid() for k in spec.knobs})}
    key = dataset_id(spec.base).key
    books = [d for d in Ledger(jm.store.root).datasets() if d["dataset"] == key]
    sweeps = {s["sweep"]: s for d in books for s in d["sweeps"]}
    charged = {r["run_id"]: r for d in books for r in d["runs"]}
    study = Study(spec, name, jm)
    out = []
    for path in ("a", "b", "c"):
        sweep = sweep_name(companion(name, path) if path != "c" else name)
        row = {"path": path, "words": PATH_WORDS[path], "objective": spec.objective,
               "value": None, "settings": None, "planned_epsilon": plans[path].epsilon,
               "private_runs": plans[path].private_runs,
               "ledger_epsilon": sweeps.get(sweep, {}).get("epsilon", 0.0),
               "state": "not run", "note": ""}
        row["seconds"], row["run_seconds"] = _span(jm, sweep)
        if path == "a":
            sa = load_spec(jm.store.root, companion(name, "a"))
            res = Study(sa, companion(name, "a"), jm).result() if sa else None
            best = res.best if res else None
            if res is not None:
                row["state"] = f"{len(res.done)} of {sa.trials} trials done"
            if best is not None:
                row.update(value=best.value, settings=best.params,
                           note="best of the trials by this same test score: optimistic")
        elif path == "b":
            rid = study.study.user_attrs.get(SEARCH_RUN)
            rec = jm.store.get_run(rid) if rid else None
            if rec is not None:
                row["state"] = rec.status.value
                row["value"] = rec.metrics.get(spec.objective)
                k = len(charged.get(rid, {}).get("mechanisms") or [])  # one per candidate
                row["note"] = (f"the released candidate of K = {k} (drawn at random); its "
                               "settings stay private to the run")
        else:
            fin = final(study) or {}
            row["state"] = fin.get("status") or f"{len(study.result().done)} of " \
                                                f"{spec.trials} public trials done"
            row.update(value=fin.get("value"), settings=fin.get("params"),
                       note=fin.get("why") or f"settings of the best of {spec.trials} trials "
                                              f"on {spec.tune_on_words}")
        out.append(row)
    return out


# ---------------------------------------------------------- for the Tune board
_measuring: dict[tuple[str, str], threading.Thread] = {}
_errors: dict[tuple[str, str], str] = {}


def start_measuring(jm: JobManager, name: str, *, session: str | None,
                    instructor: bool = False) -> None:
    """Measure paths (a) and (b) in a thread of this process (their runs train in the
    worker). They spend privacy on the private dataset, so only the study's owner or an
    instructor may start them (NotOwner otherwise)."""
    from engine.jobs.manager import NotOwner, may_control

    spec = _spec(jm, name)
    if not may_control(Study(spec, name, jm).owner, session=session, instructor=instructor):
        raise NotOwner(f"the study {name!r} belongs to another participant; only its owner "
                       "or an instructor can spend privacy on its other two paths.")
    key = (str(jm.store.root), name)
    if measuring(jm, name):
        raise InputError(f"paths (a) and (b) of {name!r} are already being measured.")
    _errors.pop(key, None)

    def drive() -> None:
        try:
            measure(jm, name, paths=("a", "b"), session=session)
        except Exception as err:  # shown on the board in one line
            _errors[key] = str(err) if isinstance(err, InputError) else \
                f"{type(err).__name__}: {err}"

    t = threading.Thread(target=drive, daemon=True, name=f"dpsynth-paths-{name}")
    _measuring[key] = t
    t.start()


def measuring(jm: JobManager, name: str) -> bool:
    t = _measuring.get((str(jm.store.root), name))
    return t is not None and t.is_alive()


def error(jm: JobManager, name: str) -> str | None:
    return _errors.get((str(jm.store.root), name))
