"""A study's trials run on a real local Ray cluster (engine/jobs/ray_backend.py): the study
queues ordinary runs, and a JobManager pointed at Ray trains them on its nodes. The
stand-in trainer (tests/job_fakes.py, mode "where") reports whether it ran inside a Ray
worker; one trial is a real tiny DP-MERF run, charged to the head's ledger."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.jobs.study import Study, ledger_totals, sweep_name
from engine.runs.study_space import build_spec
from engine.store.records import RunStatus
from engine.store.runs import RunStore
from job_fakes import scripted

from conftest import TINY_DPMERF

ray = pytest.importorskip("ray", reason="ray is not installed (requirements.txt pins it)")


@pytest.fixture(scope="module")
def cluster_address():
    # Ray's worker processes inherit this environment: the stand-in trainer's module
    # (tests/job_fakes.py) must import there, as the engine package travels with the job.
    patch = pytest.MonkeyPatch()
    patch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    patch.undo()


def _manager(root, address, **kw) -> JobManager:
    return JobManager(RunStore(root), ray_address=address, heartbeat_s=0.5,
                      slots_per_device=1, **kw)


def test_a_studys_trials_train_on_the_ray_cluster(cluster_address, tmp_path):
    jm = _manager(tmp_path, cluster_address, execute=scripted, full_eval=False)
    try:
        assert jm.slots == 1  # until the worker has seen the cluster
        spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                    params={"do": "where"}),
                          ["lr=1e-3:1e-1:log"], trials=3, sampler="random")
        res = Study(spec, "on-ray", jm).run()
    finally:
        jm.shutdown()
    assert [t.state for t in res.trials] == ["COMPLETE"] * 3, [t.message for t in res.trials]
    runs = jm.store.list_runs(sweep=sweep_name("on-ray"))
    assert len(runs) == 3 and all(r.metrics["on_ray"] == 1.0 for r in runs)
    assert jm.slots == 2  # the cluster's CPUs: later trials fanned out over both


def test_a_real_trial_on_ray_is_charged_to_the_heads_ledger(cluster_address, tmp_path):
    jm = _manager(tmp_path, cluster_address, full_eval=True)
    try:
        spec = build_spec(RunConfig(method="dpmerf", dataset="digits", device="cpu",
                                    params=dict(TINY_DPMERF)),
                          ["lr=1e-3:1e-1:log"], trials=1, sampler="tpe")
        res = Study(spec, "real-on-ray", jm).run()
    finally:
        jm.shutdown()
    (trial,) = res.trials
    assert trial.state == "COMPLETE" and 0 < trial.value <= 1
    assert jm.store.get_run(trial.run_id).status == RunStatus.FINISHED
    led = ledger_totals(tmp_path, spec, "real-on-ray")
    assert led["study_runs"] == 1 and led["study_epsilon"] == pytest.approx(1.0, rel=0.05)
