"""A tune-on study's one private run (engine/runs/public_tuning.py says why): once the
trials on the public stand-in are done, the best trial's settings are queued ONCE on the
private dataset at the study's ε, through the same queue and ledger as every run, with
the study's sweep (so the ledger's line for the study is that one charge).

The run's id is kept in the study's Optuna storage (user attribute FINAL) before the
driver waits for it, so a driver started again after a restart (engine/jobs/study.py
`Study.run`, engine/jobs/study_background.resume) waits for that same run instead of
queueing a second one: the private records are charged once.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from engine.core.errors import InputError
from engine.core.processes import OWNER

FINAL = "final_run"  # the private run's id
FINAL_TRIAL = "final_trial"  # the trial whose settings it uses
FINAL_WHY = "final_why"  # why there is none (no scored trial, refused at the cap)
POLL_S = 0.5


def _attrs(study) -> dict:
    return study.study.user_attrs


def final_pending(study) -> bool:
    """A tune-on study whose private run is still to queue or to finish."""
    if not study.spec.tune_on or study.stop_requested() or _attrs(study).get(FINAL_WHY):
        return False
    rid = _attrs(study).get(FINAL)
    rec = study.jm.store.get_run(rid) if rid else None
    return rec is None or not rec.status.terminal


def run_final(study, sweep: str, stop: threading.Event | None = None) -> str | None:
    """Queue the best trial's settings on the private dataset (once, in the study's
    `sweep`) and wait for the run; its id, or None when there is none (see `final`'s
    "why"). `study` is an engine.jobs.study.Study, which calls this: nothing here imports
    it back."""
    spec, jm = study.spec, study.jm
    if not spec.tune_on or study.stop_requested():
        return None
    rid = _attrs(study).get(FINAL)
    if rid is None or jm.store.get_run(rid) is None:
        res = study.result()
        if len(res.done) < spec.trials:
            return None  # stopped early: no private run
        best = res.best
        if best is None:
            study.study.set_user_attr(FINAL_WHY, "no trial on the public data finished with a "
                                                 "score, so there are no settings to run")
            return None
        try:
            rid = jm.submit(spec.final_config(best.params), sweep=sweep,
                            session=study.session)
        except InputError as err:  # the private dataset's cap, reached meanwhile
            study.study.set_user_attr(FINAL_WHY, str(err))
            return None
        study.study.set_user_attr(FINAL, rid)
        study.study.set_user_attr(FINAL_TRIAL, best.number)
    while True:
        # the same heartbeat as Study.run's, so no other driver takes the study over
        study.study.set_user_attr("driver", [OWNER or str(os.getpid()), time.time()])
        rec = jm.store.get_run(rid)
        if rec is None or rec.status.terminal:
            return rid
        if (stop is not None and stop.is_set()) or study.stop_requested():
            jm.cancel(rid)
            jm.wait(rid, timeout=60)
            return rid
        time.sleep(POLL_S)


def final(study) -> dict[str, Any] | None:
    """The private run as the CLI and the board show it; None for an ordinary study."""
    spec = study.spec
    if not spec.tune_on:
        return None
    attrs = _attrs(study)
    rid = attrs.get(FINAL)
    rec = study.jm.store.get_run(rid) if rid else None
    out = {"tune_on": spec.tune_on_words, "dataset": spec.base.dataset, "epsilon": spec.base.epsilon,
           "run_id": rid, "trial": attrs.get(FINAL_TRIAL), "why": attrs.get(FINAL_WHY),
           "status": None if rec is None else rec.status.value, "value": None,
           "params": None if rec is None else
           {k: v for k, v in rec.config.params.items() if k in {x.name for x in spec.knobs}},
           "seconds": None}
    if rec is not None:
        out["value"] = rec.metrics.get(spec.objective)
        if rec.started and rec.ended:
            out["seconds"] = rec.ended - rec.started
        if rec.status.terminal and out["value"] is None and not out["why"]:
            out["why"] = rec.message or f"no {spec.objective} score"
    return out
