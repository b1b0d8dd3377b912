"""A tuning study: Optuna proposes, the run queue trains, the result is told back.

Ask-and-tell (optuna.Study.ask / tell): each trial is an ordinary run submitted through
the JobManager (engine/jobs/manager.py) with sweep "study:NAME", so it waits in the same
queue, trains in the same worker (local slots or Ray), is charged to the same ledger and
shows on Runs & Compare like any sweep. As many trials run at once as the queue has
slots; Optuna's TPE uses its "constant liar" for the ones still running.

State lives in Optuna's RDB storage beside the run store (`<run store>/studies.db`,
SQLite): the spec, each trial's settings and its run id. A study driven again (the CLI's
`--study NAME`, the page after a restart) re-attaches to the runs its trials left queued
or running and goes on from there. A trial whose run fails, is stopped or has no score
for the objective is told FAIL, never a made-up value.

Privacy: a study tunes on the private records, and every trial is charged in full by the
ledger when its run starts (engine/privacy/ledger.py); picking the best trial by its
real-data score is post-processing of those charged runs, not a private selection. The
private alternative is repeat-and-select (engine/runs/private_search.py), shown beside
it in the preview (engine/runs/study_preview.py).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.core.errors import InputError
from engine.core.jsonsafe import dumps
from engine.core.processes import OWNER
from engine.jobs.manager import JobManager
from engine.runs.study_objectives import directions, second_value
from engine.runs.study_space import StudySpec
from engine.store.records import RunStatus

STORAGE = "studies.db"
POLL_S = 0.5
DRIVER_STALE_S = 15.0  # a driver silent this long is gone; another may take the study over
SQLITE_TIMEOUT_S = 60.0  # wait for a busy studies.db instead of "database is locked"


def sweep_name(name: str) -> str:
    return f"study:{name}"


@dataclass(frozen=True)
class TrialInfo:
    number: int
    state: str  # RUNNING, COMPLETE, FAIL (Optuna's names); WAITING before its run is queued
    params: dict[str, Any]
    value: float | None = None
    run_id: str | None = None
    message: str = ""  # why a trial failed (its run's message)
    second: float | None = None  # the second objective (seconds or ε spent), when the study has one


@dataclass(frozen=True)
class StudyResult:
    name: str
    spec: StudySpec
    trials: list[TrialInfo] = field(default_factory=list)
    stopped: bool = False

    @property
    def done(self) -> list[TrialInfo]:
        return [t for t in self.trials if t.state in ("COMPLETE", "FAIL")]

    @property
    def best(self) -> TrialInfo | None:
        scored = [t for t in self.trials if t.state == "COMPLETE" and t.value is not None]
        if not scored:
            return None
        sign = 1 if self.spec.direction == "maximize" else -1
        return max(scored, key=lambda t: sign * t.value)

    @property
    def pareto(self) -> list[TrialInfo]:
        """With a second objective: the finished trials no other trial beats on both (the
        objective and its cost), cheapest first; [] without one."""
        from engine.runs.pareto import non_dominated

        scored = [t for t in self.trials if t.state == "COMPLETE" and t.second is not None]
        if not self.spec.second or not scored:
            return []
        keep = non_dominated([t.second for t in scored], [t.value for t in scored],
                             y_direction=self.spec.direction)
        return sorted((t for t, k in zip(scored, keep) if k), key=lambda t: t.second)

    def to_dict(self) -> dict:
        best = self.best
        return {"study": self.name, "spec": self.spec.to_dict(), "stopped": self.stopped,
                "trials": [t.__dict__ for t in self.trials],
                "best": None if best is None else best.__dict__,
                **({"pareto": [t.number for t in self.pareto]} if self.spec.second else {})}


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the CLI prints its own lines
    return optuna


_STORAGES: OrderedDict[tuple[int, str], Any] = OrderedDict()
_STORAGES_LOCK = threading.Lock()
KEEP_STORAGES = 8  # run stores whose storage stays open (a server has one; tests many)


def storage(root: str | os.PathLike):
    """Optuna's RDB storage in the run store's folder; SQLite waits when busy. One per
    file and process: opening one (an engine, Optuna's schema check) took 0.1-0.2 s,
    and the Tune board opened four on each of its two-second redraws. SQLAlchemy's pool
    is shared by threads; a forked process opens its own (the pid is in the key). The
    least recently used past KEEP_STORAGES closes its idle connections (a holder still
    works: SQLAlchemy opens new ones on demand)."""
    optuna = _optuna()
    url = f"sqlite:///{Path(root).resolve() / STORAGE}"
    with _STORAGES_LOCK:
        key = (os.getpid(), url)
        if key not in _STORAGES:
            _STORAGES[key] = optuna.storages.RDBStorage(
                url, engine_kwargs={"connect_args": {"timeout": SQLITE_TIMEOUT_S}})
            while len(_STORAGES) > KEEP_STORAGES:
                _STORAGES.popitem(last=False)[1].engine.dispose()
        _STORAGES.move_to_end(key)
        return _STORAGES[key]


def sampler(spec: StudySpec):
    """The spec's sampler, unseeded (a trial's settings are not DP noise, but nothing
    needs them reproducible). TPE starts with a third of the trials random (at most
    Optuna's usual 10), so a short study still gets some guided trials."""
    optuna = _optuna()
    if spec.sampler == "grid":
        return _told_grid(optuna)({k.name: k.grid() for k in spec.knobs})
    if spec.sampler == "random":
        return optuna.samplers.RandomSampler()
    if spec.sampler == "cmaes":
        return optuna.samplers.CmaEsSampler(warn_independent_sampling=False)
    return optuna.samplers.TPESampler(n_startup_trials=max(2, min(10, spec.trials // 3)))


def _told_grid(optuna):
    """Optuna's grid sampler for ask-and-tell. Its `after_trial` calls `Study.stop()` once
    the grid is covered, which works only inside `Study.optimize` and raises in `tell`
    here: every grid study that covered its grid crashed at its last trial. This study's
    own loop ends at the grid's size (study_space caps the trials), so nothing needs it."""
    class ToldGrid(optuna.samplers.GridSampler):
        def after_trial(self, study, trial, state, values) -> None:
            pass
    return ToldGrid


def distributions(spec: StudySpec) -> dict:
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)

    out = {}
    for k in spec.knobs:
        if k.kind == "int":  # Optuna has no log scale with a step: snapped in `values`
            step = 1 if k.log else k.step
            out[k.name] = IntDistribution(int(k.lo), int(k.hi), log=k.log, step=step)
        elif k.kind == "float":
            out[k.name] = FloatDistribution(float(k.lo), float(k.hi), log=k.log)
        else:
            out[k.name] = CategoricalDistribution(list(k.choices))
    return out


def values(spec: StudySpec, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's knob values as its run gets them (ints snapped to their multiple)."""
    ranges = {k.name: k for k in spec.knobs}
    return {n: ranges[n].snap(v) if ranges[n].kind == "int" else v for n, v in params.items()}


def load_spec(root: str | os.PathLike, name: str) -> StudySpec | None:
    """The spec a study was started with, or None when the store has no such study."""
    if not (Path(root) / STORAGE).exists():
        return None
    optuna = _optuna()
    try:
        study = optuna.load_study(study_name=name, storage=storage(root))
    except KeyError:
        return None
    d = study.user_attrs.get("spec")
    return StudySpec.from_dict(d) if d else None


def optuna_study(root: str | os.PathLike, name: str):
    """The study as Optuna holds it (for optuna.visualization's plots on the page)."""
    return _optuna().load_study(study_name=name, storage=storage(root))


def study_names(root: str | os.PathLike) -> list[str]:
    if not (Path(root) / STORAGE).exists():
        return []
    return [s.study_name for s in _optuna().get_all_study_summaries(storage(root))]


class Study:
    """One study on one run store, driven by `run` (any process; one at a time)."""

    def __init__(self, spec: StudySpec, name: str, jm: JobManager, *,
                 session: str | None = None) -> None:
        if not name or any(c in name for c in "/\\\n"):
            raise InputError(f"a study name is a word without slashes. Got {name!r}.")
        optuna = _optuna()
        self.spec, self.name, self.jm, self.session = spec, name, jm, session
        self.study = optuna.create_study(
            study_name=name, storage=storage(jm.store.root), load_if_exists=True,
            directions=directions(spec.direction, spec.second), sampler=sampler(spec))
        stored = self.study.user_attrs.get("spec")
        if stored is None:
            if spec.tune_on:  # checked again here, the boundary, however the spec was built:
                # a user's file must be the starter's own and marked public
                from engine.runs.public_tuning import check_tune_on

                check_tune_on(spec.base, spec.tune_on, spec.tune_on_options,
                              root=jm.store.root, owner=session)
            self.study.set_user_attr("spec", spec.to_dict())
            self.study.set_user_attr("session", session)
        elif stored != json.loads(dumps(spec.to_dict())):  # as stored: tuples are lists
            raise InputError(f"a study named {name!r} already exists with other settings; "
                             f"continue it with --study {name} alone, or pick another name.")
        self._trials: dict[int, Any] = {}  # trial number → optuna Trial asked here

    @property
    def owner(self) -> str | None:
        return self.study.user_attrs.get("session")

    def request_stop(self) -> None:
        self.study.set_user_attr("stop", time.time())

    def stop_requested(self) -> bool:
        return bool(self.study.user_attrs.get("stop"))

    def driver_alive(self) -> bool:
        """Another process (or thread) drives this study now (its heartbeat is fresh)."""
        beat = self.study.user_attrs.get("driver")
        return bool(beat) and time.time() - float(beat[1]) < DRIVER_STALE_S

    def result(self) -> StudyResult:
        out = []
        for t in self.study.get_trials(deepcopy=False):
            rid = t.user_attrs.get("run_id")
            rec = self.jm.store.get_run(rid) if rid else None
            state = t.state.name
            if state == "RUNNING" and not rid:
                state = "WAITING"  # asked, its run not queued yet
            msg = t.user_attrs.get("why") or (rec.message if rec and state == "FAIL" else "")
            vals = t.values or [None, None]  # (t.value raises on a two-objective study)
            out.append(TrialInfo(t.number, state, values(self.spec, t.params), vals[0], rid, msg,
                                 vals[1] if len(vals) > 1 else None))
        return StudyResult(self.name, self.spec, out, stopped=self.stop_requested())

    # ---------------------------------------------------------------- driving
    def run(self, *, on_trial: Callable[[TrialInfo, StudyResult], None] | None = None,
            stop: threading.Event | None = None) -> StudyResult:
        """Ask, queue, wait, tell until `spec.trials` trials are done (or a stop is
        asked: here, or by `request_stop` from any process). Returns the result."""
        optuna = _optuna()
        pending: dict[int, str] = {}  # trial number → run id
        for t in self.study.get_trials(deepcopy=False,
                                       states=(optuna.trial.TrialState.RUNNING,)):
            rid = t.user_attrs.get("run_id")
            if rid and self.jm.store.get_run(rid) is not None:
                pending[t.number] = rid  # re-attach: its run is queued, running or done
            else:
                self._fail(t.number, "its run was never queued (the study was interrupted)")
        try:
            while True:
                self.study.set_user_attr("driver", [OWNER or str(os.getpid()), time.time()])
                for number, info in self._collect(pending):
                    if on_trial is not None:
                        on_trial(info, self.result())
                if (stop is not None and stop.is_set()) or self.stop_requested():
                    self._stop(pending)
                    break
                done = len(self.study.get_trials(deepcopy=False, states=(
                    optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL)))
                while done + len(pending) < self.spec.trials and len(pending) < self.jm.slots:
                    if not self._start(pending):
                        break  # refused: the stop it asked for ends the study next round
                if not pending:
                    break
                time.sleep(POLL_S)
            if self.spec.tune_on:  # then the one private run (engine/jobs/public_study.py)
                from engine.jobs.public_study import run_final

                run_final(self, sweep_name(self.name), stop)
        finally:  # a driver that ends, even by an error, lets another take over at once
            self.study.set_user_attr("driver", None)
        return self.result()

    def _start(self, pending: dict[int, str]) -> bool:
        """Ask for a trial and queue its run; False (trial told FAIL) when refused."""
        trial = self.study.ask(distributions(self.spec))
        config = self.spec.config_for(values(self.spec, trial.params))
        try:
            rid = self.jm.submit(config, sweep=sweep_name(self.name), session=self.session)
        except InputError as err:  # e.g. the cap reached by runs started elsewhere
            trial.set_user_attr("why", str(err))
            self.study.tell(trial, state=_optuna().trial.TrialState.FAIL)
            self.request_stop()  # the next trials would be refused the same way
            return False
        trial.set_user_attr("run_id", rid)
        pending[trial.number] = rid
        self._trials[trial.number] = trial
        return True

    def _collect(self, pending: dict[int, str]):
        """Tell every trial whose run has ended; yields (number, TrialInfo)."""
        for number, rid in list(pending.items()):
            rec = self.jm.store.get_run(rid)
            if rec is not None and not rec.status.terminal:
                continue
            del pending[number]
            value = None if rec is None else rec.metrics.get(self.spec.objective)
            second, no_second = (None, "")
            if self.spec.second and rec is not None and rec.status == RunStatus.FINISHED:
                second, no_second = second_value(rec, self.spec.second)
            if rec is not None and rec.status == RunStatus.FINISHED and value is not None \
                    and (second is not None or not self.spec.second):
                self.study.tell(number, [float(value)] + ([second] if self.spec.second else []))
            else:
                why = ("its run is gone from the store" if rec is None else
                       f"no {self.spec.objective} score" if rec.status == RunStatus.FINISHED
                       and value is None else no_second if rec.status == RunStatus.FINISHED
                       else rec.message or rec.status.value)
                self._fail(number, why)
            info = next(t for t in self.result().trials if t.number == number)
            yield number, info

    def _fail(self, number: int, why: str) -> None:
        trial = self._trials.get(number)
        if trial is not None:
            trial.set_user_attr("why", why)
        self.study.tell(number, state=_optuna().trial.TrialState.FAIL)

    def _stop(self, pending: dict[int, str]) -> None:
        """Stop the study's queued and running runs; their trials are told FAIL."""
        for number, rid in list(pending.items()):
            self.jm.cancel(rid)
            self.jm.wait(rid, timeout=60)
        list(self._collect(pending))


def defaults_score(spec: StudySpec, store) -> tuple[float | None, str]:
    """The objective of the method's defaults at the study's ε on its dataset, and where
    it comes from: finished runs in the store with no knob set (their mean), else the
    gallery's precomputed run (engine/runs/gallery.py). (None, why) without either."""
    from engine.runs import gallery
    from engine.store.records import metrics_from_file

    base = spec.base
    same = [r.metrics[spec.objective] for r in store.list_runs(method=base.method,
                                                               dataset=base.dataset)
            if r.status == RunStatus.FINISHED and r.epsilon == base.epsilon
            and not r.config.params and spec.objective in r.metrics]
    if same:
        return sum(same) / len(same), f"mean of {len(same)} finished run(s) with the defaults"
    for name, config, metrics, _ in gallery.entries():
        if (config.method, config.dataset, config.epsilon) == (base.method, base.dataset,
                                                               base.epsilon) \
                and not config.params and spec.objective in metrics_from_file(metrics):
            return metrics_from_file(metrics)[spec.objective], f"the gallery's {name}"
    return None, "no run with the defaults at this ε in the store or the gallery"


def ledger_totals(root, spec: StudySpec, name: str) -> dict[str, Any]:
    """The ledger after the study: its own trials composed, and the dataset's total."""
    from engine.privacy.ledger import Ledger, dataset_id

    ds = dataset_id(spec.base)
    for d in Ledger(root).datasets():
        if ds is not None and d["dataset"] == ds.key:
            mine = [s for s in d["sweeps"] if s["sweep"] == sweep_name(name)]
            return {"dataset": d["label"], "delta": d["delta"], "dataset_epsilon": d["epsilon"],
                    "study_epsilon": mine[0]["epsilon"] if mine else 0.0,
                    "study_runs": mine[0]["runs"] if mine else 0, "cap": d["cap"]}
    return {"dataset": None if ds is None else ds.label, "dataset_epsilon": 0.0,
            "study_epsilon": 0.0, "study_runs": 0}
