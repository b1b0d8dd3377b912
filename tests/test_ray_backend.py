"""Runs on a real Ray cluster (engine/jobs/ray_backend.py): a local one (`ray.init(num_cpus=2)`)
and Ray's own two-node test cluster (`ray.cluster_utils.Cluster`). Tiny runs only: the
marginals baseline on breast_cancer, DP-MERF on digits for the long runs that are stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.store.records import RunStatus
from engine.store.runs import RunStore

ray = pytest.importorskip("ray", reason="ray is not installed (requirements.txt pins it)")

ROOT = Path(__file__).resolve().parents[1]
HANG_S = 240.0  # generous: Ray starts workers, each imports torch, on 2 shared cores
SMALL = dict(method="marginals", dataset="breast_cancer", epsilon=1.0, device="cpu")
# Long enough to be stopped (or lose its node) mid-run; never left to finish.
LONG = RunConfig(method="dpmerf", dataset="digits", epsilon=1.0, device="cpu",
                 params={"n_features": 500, "epochs": 200})


def _wait_for(cond, timeout=HANG_S):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def _training(jm: JobManager, run_id: str) -> bool:
    row = jm.store.get_run(run_id)
    return row.status == RunStatus.RUNNING and row.step > 0


def _shape(value):
    """A metrics.json's keys, nested, without the values (which differ run to run)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__ if value is not None else None


def test_nothing_set_never_imports_ray(tmp_path):
    """The embedded default: the app's modules and a local worker run, without Ray."""
    env = {k: v for k, v in os.environ.items() if k != "DPSYNTH_RAY_ADDRESS"}
    env["PYTHONPATH"] = str(ROOT)
    script = """
import sys, tempfile
import engine.jobs.manager, engine.jobs.worker, engine.runs.runner, engine.store.runs, engine.cli.commands, ui.common
from engine.core.config import RunConfig
from engine.jobs.manager import JobManager
from engine.store.runs import RunStore
if __name__ == "__main__":
    jm = JobManager(RunStore(tempfile.mkdtemp()), full_eval=False)
    assert jm.settings.ray_address is None
    rid = jm.submit(RunConfig(method="marginals", dataset="breast_cancer", device="cpu"))
    print(jm.wait(rid, timeout=240).value)
    jm.shutdown()
    assert "ray" not in sys.modules, "ray was imported"
    print("no ray")
"""
    path = tmp_path / "no_ray.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, text=True,
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["finished", "no", "ray"]


# ------------------------------------------------------------ one-machine cluster


@pytest.fixture(scope="module")
def cluster_address():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def on_ray(cluster_address, tmp_path_factory):
    # one local slot: on Ray the cluster's CPUs decide (test_the_pages_count_the_clusters_slots)
    jm = JobManager(RunStore(tmp_path_factory.mktemp("ray")), full_eval=False,
                    ray_address=cluster_address, heartbeat_s=0.5, slots_per_device=1)
    yield jm
    jm.shutdown()


def test_sweep_of_six_matches_the_local_worker(on_ray, tmp_path):
    ids = [on_ray.submit(RunConfig(seed=s, **SMALL), sweep="six") for s in range(6)]
    for rid in ids:
        assert on_ray.wait(rid, timeout=HANG_S) == RunStatus.FINISHED, \
            on_ray.store.get_run(rid).message
    local = JobManager(RunStore(tmp_path / "local"), full_eval=False)
    try:
        lid = local.submit(RunConfig(seed=0, **SMALL), sweep="one")
        assert local.wait(lid, timeout=HANG_S) == RunStatus.FINISHED
        want = json.loads((local.store.artifact_dir(lid) / "metrics.json").read_text())
        want_files = sorted(local.store.artifacts(lid))
    finally:
        local.shutdown()
    for rid in ids:
        got = json.loads((on_ray.store.artifact_dir(rid) / "metrics.json").read_text())
        assert _shape(got) == _shape(want)
        assert got["status"] == "finished"
        assert got["epsilon_spent"] == pytest.approx(want["epsilon_spent"])
        assert got["privacy"]["releases"] == want["privacy"]["releases"]  # same σ each
        assert sorted(on_ray.store.artifacts(rid)) == want_files
        # the head's ledger was charged: the sweep's runs add up on one dataset
        assert got["ledger"]["dataset"] == want["ledger"]["dataset"]
    last = json.loads((on_ray.store.artifact_dir(ids[-1]) / "metrics.json").read_text())
    assert last["ledger"]["runs"] == 6


def test_the_pages_count_the_clusters_slots(on_ray):
    """"N of M slots busy" on Ray: M is what the worker found the cluster offers (2 CPUs,
    1 per run), not the app machine's local slots (1 here)."""
    assert on_ray.slots_per_device == 1
    on_ray.wait(on_ray.submit(RunConfig(seed=50, **SMALL)), timeout=HANG_S)
    assert on_ray.occupancy()[1] == 2
    assert on_ray.occupancy_line().endswith("of 2 training slots busy")


def test_stop_cancels_the_task(on_ray):
    rid = on_ray.submit(LONG)
    _wait_for(lambda: _training(on_ray, rid))
    assert on_ray.cancel(rid)
    assert on_ray.wait(rid, timeout=30) == RunStatus.CANCELLED
    assert "stopped" in on_ray.store.get_run(rid).message


def test_a_users_csv_trains_where_the_file_never_was(on_ray, tmp_path):
    """The head sends the file's bytes; the node gets a bare name and writes its own
    copy, so the original can be gone before the task starts."""
    from sklearn.datasets import load_breast_cancer

    from engine.jobs import ray_backend

    csv = tmp_path / "upload" / "patients.csv"
    csv.parent.mkdir()
    load_breast_cancer(as_frame=True).frame.iloc[:, -6:].to_csv(csv, index=False)
    config = RunConfig(method="marginals", dataset="csv", device="cpu",
                       data_options={"path": str(csv), "label": "target"})
    node_config, files = ray_backend.pack(config)
    assert node_config.data_options["path"] == "patients.csv"  # no head path travels
    assert files == {"patients.csv": csv.read_bytes()}
    csv.unlink()  # the node can only have what was sent
    gen = ray_backend._train_on_node.remote(node_config.to_dict(), "r1", files, False, 1)
    last, artifacts = None, {}
    for ref in gen:
        last, artifacts = ray.get(ref)
    assert last.phase == "done"
    assert b"target" in artifacts["synthetic.csv"].splitlines()[0]
    assert json.loads(artifacts["metrics.json"])["status"] == "finished"


def test_a_users_csv_through_the_app(on_ray, tmp_path):
    from sklearn.datasets import load_breast_cancer

    csv = tmp_path / "mine.csv"
    load_breast_cancer(as_frame=True).frame.iloc[:, -6:].to_csv(csv, index=False)
    rid = on_ray.submit(RunConfig(method="marginals", dataset="csv", device="cpu",
                                  data_options={"path": str(csv), "label": "target"}))
    assert on_ray.wait(rid, timeout=HANG_S) == RunStatus.FINISHED, \
        on_ray.store.get_run(rid).message
    out = on_ray.store.artifact_dir(rid)
    assert (out / "synthetic.csv").read_text().splitlines()[0].endswith("target")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ledger"]["dataset"].startswith("csv:")  # charged to the user's file


# ------------------------------------------------------------ two-node cluster


def test_overhead_bench_tiny(cluster_address):
    """bench/ray_overhead.py in its tiny configuration, so the bench cannot rot (on this
    module's cluster: starting one more would only time Ray's start-up). It stands
    before `two_nodes`, which ends that cluster."""
    out = subprocess.run([sys.executable, "bench/ray_overhead.py", "--tiny",
                          "--address", cluster_address], cwd=ROOT,
                         text=True, capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert any(line.startswith("ray ") for line in lines)
    assert any(line.startswith("local ") for line in lines)
    assert "Ray overhead, start to first event" in out.stdout


@pytest.fixture
def two_nodes(on_ray):
    """Ray's multi-node test cluster: a head without CPUs and two 1-CPU nodes, so each
    of two runs trains on a node of its own."""
    from ray.cluster_utils import Cluster

    on_ray.shutdown()  # the module's one-machine cluster is not needed past this point
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    yield cluster, nodes
    cluster.shutdown()


def test_a_node_that_dies_fails_its_run_only(two_nodes, tmp_path):
    cluster, nodes = two_nodes
    jm = JobManager(RunStore(tmp_path), full_eval=False, ray_address=cluster.address,
                    heartbeat_s=0.5)
    try:
        ids = [jm.submit(LONG), jm.submit(RunConfig.from_dict(LONG.to_dict() | {"seed": 1}))]
        _wait_for(lambda: all(_training(jm, r) for r in ids))
        cluster.remove_node(nodes[0])
        _wait_for(lambda: any(jm.status(r) == RunStatus.FAILED for r in ids), timeout=60)
        failed = [r for r in ids if jm.status(r) == RunStatus.FAILED]
        (alive,) = [r for r in ids if r not in failed]
        assert "node" in jm.store.get_run(failed[0]).message
        assert not (jm.store.artifact_dir(failed[0]) / "metrics.json").exists()
        step = jm.store.get_run(alive).step
        _wait_for(lambda: jm.store.get_run(alive).step > step, timeout=60)  # still training
        assert jm.status(alive) == RunStatus.RUNNING
        # the surviving node still takes new work
        small = jm.submit(RunConfig(**SMALL))
        jm.cancel(alive)
        assert jm.wait(alive, timeout=30) == RunStatus.CANCELLED
        assert jm.wait(small, timeout=HANG_S) == RunStatus.FINISHED
    finally:
        jm.shutdown()


def test_cpus_per_run_setting():
    from engine.jobs import ray_backend
    from engine.core.errors import InputError

    assert ray_backend.cpus_per_run({}) == 1
    assert ray_backend.cpus_per_run({"DPSYNTH_RAY_CPUS": "4"}) == 4
    for bad in ("0", "two", "-1"):
        with pytest.raises(InputError, match="DPSYNTH_RAY_CPUS"):
            ray_backend.cpus_per_run({"DPSYNTH_RAY_CPUS": bad})


def test_the_whole_engine_package_travels_with_a_job():
    """py_modules ships ENGINE_DIR: the `engine` package itself, not the folder that
    ray_backend.py happens to live in (a node imports engine.runs.runner, engine.methods…)."""
    import engine
    from engine.jobs import ray_backend

    assert ray_backend.ENGINE_DIR == Path(engine.__file__).resolve().parent
    assert ray_backend.ENGINE_DIR.name == "engine"
    assert (ray_backend.ENGINE_DIR / "runs" / "runner.py").is_file()
