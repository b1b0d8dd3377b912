import os

# Two cores: keep the test processes from oversubscribing them. `make test` runs two
# pytest-xdist workers, so each takes its share of the cores, and so does every process a
# test starts (a CLI, a bench, an app server): they inherit these variables. Set before
# torch and numpy load their pools. Without them, two workers each spinning pools of both
# cores took 25 CPU s for two tiny attack benches side by side, against 17 s.
# (The job worker's trainers still get their slot's threads: engine/jobs/worker.py.)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_SHARE = max(1, min(2, os.cpu_count() or 1) // _WORKERS)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    # an xdist worker sets its own: it inherits the controller's, set for one process
    if os.environ.get("PYTEST_XDIST_WORKER") or _var not in os.environ:
        os.environ[_var] = str(_SHARE)

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(_SHARE)

# Tests wait on conditions (a run ending, a page showing a figure), never on a clock; this
# timeout only stops a test that hangs. Speed is measured by the bench/ scripts instead.
HANG_S = 600

# Tiny DP-MERF settings that still learn something on digits in a few seconds.
TINY_DPMERF = {"n_features": 300, "epochs": 10, "batch_size": 100, "sample_every": 5}
# The same, as the command line takes them.
TINY_DPMERF_ARGS = [a for k, v in TINY_DPMERF.items() for a in ("--param", f"{k}={v}")]


@pytest.fixture
def drawn(monkeypatch):
    """The std of every DP noise draw, recorded where all of them go (engine/privacy/noise.py)."""
    from engine.privacy import noise

    stds, real = [], noise.gaussian

    def recording(shape, std, **kw):
        stds.append(float(std))
        return real(shape, std, **kw)

    monkeypatch.setattr(noise, "gaussian", recording)
    return stds


@pytest.fixture(scope="session")
def digits():
    from engine.data.catalog import load

    return load("digits")


@pytest.fixture
def runs_root(tmp_path, monkeypatch):
    """A fresh run store for the app under test (DPSYNTH_RUNS), never the user's."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("DPSYNTH_RUNS", str(root))
    return root


@pytest.fixture(autouse=True)
def _own_store_home(tmp_path_factory):
    """Every run is charged to a run store's privacy ledger (engine/privacy/ledger.py); a test that
    trains outside `runs_root` (the CLI, the runner) charges a throwaway store, never the
    user's ~/.local/share/dp-synth-lab. Its own MonkeyPatch: a test's monkeypatch.undo()
    must not undo it."""
    patch = pytest.MonkeyPatch()
    if not os.environ.get("DPSYNTH_RUNS"):
        patch.setenv("DPSYNTH_HOME", str(tmp_path_factory.mktemp("dpsynth-home")))
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def _shared_cache(tmp_path_factory):
    """What the machine measured once (cost timings, the real-data reference scores:
    engine/store/cost_cache.cache_root) is shared by this worker's tests and the processes
    they start, as by a user's runs, instead of measured again in every test's fresh store.
    Tests of the measuring itself take `cold_cache`."""
    # one folder per xdist worker: a timing the other worker writes mid-test would change
    # a figure a test reads twice
    patch = pytest.MonkeyPatch()
    patch.setenv("DPSYNTH_CACHE", str(tmp_path_factory.getbasetemp() / "machine-cache"))
    yield
    patch.undo()


@pytest.fixture
def cold_cache(monkeypatch):
    """Nothing measured before: this test's cost timings and real-data reference live
    beside its own run store, as on a machine that never ran anything (the default)."""
    monkeypatch.delenv("DPSYNTH_CACHE", raising=False)


@pytest.fixture
def cancer():
    """breast_cancer's first four columns: a table small enough for AIM's cost tests."""
    from dataclasses import replace

    from engine.data.catalog import load

    data = load("breast_cancer")
    return replace(data, x_train=data.x_train[:, :4], x_test=data.x_test[:, :4],
                   columns=data.columns[:4])


@pytest.fixture(scope="session")
def breast_cancer():
    from engine.data.catalog import load

    return load("breast_cancer")


@pytest.fixture(scope="session")
def fashion_mnist():
    """Fashion-MNIST when this machine has it (the Debian dataset package, or a copy under
    DPSYNTH_DATA); never downloaded at test time."""
    from engine.data.catalog import load_fashion_mnist
    from engine.core.errors import InputError

    try:
        return load_fashion_mnist(download=False)
    except InputError as err:
        pytest.skip(f"Fashion-MNIST is not on this machine ({err})")


@pytest.fixture(autouse=True)
def _quiet_machine(monkeypatch):
    """Cost timings read the load average and this process's CPU share to refuse a timing
    a load spike met (engine/store/cost_cache.py); on a busy test machine every timing
    would look spiked and be re-timed, so tests see a quiet machine unless they pin
    these readings themselves (tests/test_cost_cache.py)."""
    import time

    from engine.store import cost_cache

    monkeypatch.setattr(cost_cache, "_load", lambda: 0.0)
    monkeypatch.setattr(cost_cache, "_lasting_load", lambda: 0.0)
    monkeypatch.setattr(cost_cache, "_cpu", time.perf_counter)  # CPU share 1: never starved
