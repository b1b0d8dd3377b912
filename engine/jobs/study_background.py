"""Studies driven in the background of the app's process, for the Tune page: start one,
see whether it runs (here or in another process), its error, and stop it.

A driver is a thread that runs `Study.run` (engine/jobs/study.py); the training happens in
the worker, as for any run, so the thread only asks, queues and tells. A page reloaded,
or an app restarted, calls `resume`, which starts a driver for a study left unfinished
when no live driver holds it (each driver leaves a heartbeat in the study's storage).
Only the study's owner (the browser session that started it) or an instructor may stop
it, as for runs (engine/jobs/manager.may_control).
"""

from __future__ import annotations

import threading

from engine.core.errors import InputError
from engine.jobs.manager import JobManager, NotOwner, may_control
from engine.jobs.public_study import final, final_pending
from engine.jobs.study import Study, StudyResult, load_spec
from engine.runs.study_space import StudySpec

_lock = threading.Lock()
_drivers: dict[tuple[str, str], threading.Thread] = {}
_errors: dict[tuple[str, str], str] = {}


def _key(jm: JobManager, name: str) -> tuple[str, str]:
    return str(jm.store.root), name


def _drive(study: Study, key: tuple[str, str]) -> None:
    try:
        study.run()
    except Exception as err:  # shown on the page, in one line, instead of a traceback
        _errors[key] = f"{type(err).__name__}: {err}" if not isinstance(err, InputError) \
            else str(err)


def _launch(study: Study, key: tuple[str, str]) -> None:
    _errors.pop(key, None)
    t = threading.Thread(target=_drive, args=(study, key), daemon=True,
                         name=f"dpsynth-study-{study.name}")
    _drivers[key] = t
    t.start()


def start(spec: StudySpec, name: str, jm: JobManager, *, session: str | None) -> None:
    """Start driving a new study (or continue one with the same spec)."""
    key = _key(jm, name)
    with _lock:
        if running(jm, name):
            raise InputError(f"the study {name!r} is already running.")
        _launch(Study(spec, name, jm, session=session), key)


def running(jm: JobManager, name: str) -> bool:
    """A driver holds the study: a thread of this process, or a fresh heartbeat."""
    t = _drivers.get(_key(jm, name))
    if t is not None and t.is_alive():
        return True
    spec = load_spec(jm.store.root, name)
    return spec is not None and Study(spec, name, jm).driver_alive()


def resume(jm: JobManager, name: str) -> bool:
    """Drive a study left unfinished without a driver (after a restart); True if started."""
    spec = load_spec(jm.store.root, name)
    if spec is None:
        return False
    with _lock:
        if running(jm, name):
            return False
        study = Study(spec, name, jm, session=None)
        res = study.result()
        # a tune-on study is unfinished until its one private run is
        if res.stopped or (len(res.done) >= spec.trials and not final_pending(study)):
            return False
        study.session = study.owner  # its runs stay the owner's
        _launch(study, _key(jm, name))
        return True


def final_of(jm: JobManager, name: str) -> dict | None:
    """A tune-on study's one private run as the board shows it (engine/jobs/public_study.py
    `final`); None for an ordinary study or an unknown name."""
    spec = load_spec(jm.store.root, name)
    return None if spec is None else final(Study(spec, name, jm))


def error(jm: JobManager, name: str) -> str | None:
    return _errors.get(_key(jm, name))


def result(jm: JobManager, name: str) -> StudyResult | None:
    spec = load_spec(jm.store.root, name)
    return None if spec is None else Study(spec, name, jm).result()


def stop(jm: JobManager, name: str, *, session: str | None, instructor: bool = False) -> None:
    """Ask the study's driver to stop (its queued and running trials are stopped and told
    FAIL); only its owner or an instructor may (NotOwner otherwise)."""
    spec = load_spec(jm.store.root, name)
    if spec is None:
        raise InputError(f"no study {name!r} in this run store.")
    study = Study(spec, name, jm)
    if not may_control(study.owner, session=session, instructor=instructor):
        raise NotOwner(f"the study {name!r} belongs to another participant; only its owner "
                       "or an instructor can stop it.")
    study.request_stop()
