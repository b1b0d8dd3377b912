"""Naming a process for good: a pid plus its start time, so a reused pid never passes
for the process that died (the store marks runs of dead processes INTERRUPTED); the cores
this process may use, and the memory a trainer process needs before its run; and starting
the engine's own processes (worker, trainers, attack jobs, cost probes) with `start_child`.

Those processes are forked from a fork server (multiprocessing's "forkserver") that has
imported the heavy third-party libraries once (`PRELOAD`): spawned, each spent about 5 s of
CPU importing them before its first line of work (5.2 s measured here for torch, numpy,
scipy, pandas and scikit-learn; the engine on top 0.3 s), for every trainer, every cost
timing and every restart after a Stop. The server only imports: no library has started a
thread pool or touched CUDA when it forks. The engine itself is imported by each child,
never preloaded, because its modules name the process they run in at import
(`OWNER` below) and a forked copy would name the server.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import time
import types
from pathlib import Path

# Peak RSS of a process that imported torch, the engine and scikit-learn and loaded
# digits: 0.69 GB here (resource.getrusage ru_maxrss after those imports). Every run's
# memory formula starts from it (engine/methods/registry.run_memory_gb).
TORCH_BASELINE_GB = 0.7
TRAINER_NICE = 5  # added to the app's nice value for trainer (and attack) processes


def process_token(pid: int) -> str | None:
    """"pid:start-time" names one process for good (a pid alone can be reused);
    None when no live process has that pid (a zombie counts as dead)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        if sys.platform.startswith("linux"):
            return None
        try:  # no /proc: fall back to "is some process with this pid alive"
            os.kill(pid, 0)
        except OSError:
            return None
        return f"{pid}:?"
    return None if fields[0] in ("Z", "X") else f"{pid}:{fields[19]}"


OWNER = process_token(os.getpid())  # this process


def cores() -> int:
    """Cores this process may run on (the affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def die_with(parent: str) -> None:
    """End this process as soon as the process `parent` (a `process_token`) is gone
    (checked twice a second)."""
    pid = int(parent.split(":")[0])

    def watch() -> None:
        while process_token(pid) == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="dpsynth-parent-watch", daemon=True).start()


# ------------------------------------------------------------------ starting processes

# What a trainer, a cost timing or an attack job imports besides the engine (module docstring).
# torchvision brings torch._dynamo (1.5 s), which every torch optimizer imports when it is
# built: without it here (tried), each DP-MERF or DataLens trainer paid those 1.5 s
# itself, more in a suite run than the fork servers saved.
PRELOAD = ["numpy", "scipy.stats", "pandas", "torch", "torchvision", "sklearn.linear_model",
           "sklearn.ensemble", "sklearn.neighbors", "threadpoolctl"]


def _context():
    # Linux only: macOS's system frameworks are not safe to fork once loaded (why Python
    # spawns there by default), and Windows has no fork. Those spawn, as before.
    if not sys.platform.startswith("linux"):
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


CTX = _context()  # its Event and Pipe too: what a child shares with its starter
_starting = threading.Lock()


def start_child(target, args: tuple = (), *, name: str, dies_with_me: bool = True):
    """Start a process that runs `target(*args)` with this process's environment as it is
    now and, if `dies_with_me`, ends when this process does; returns it. Forked from the
    fork server, a child would otherwise carry the server's environment (a test's or a
    user's DPSYNTH_RUNS set later would not reach it) and outlive its starter, since its
    parent is the server.

    The starter's `__main__` is hidden while the child starts: multiprocessing rebuilds it
    in every child, and under Streamlit `__main__` is the page script, which each worker,
    trainer and cost timing would otherwise run again (a job manager of its own included)
    before its own work. An engine child runs an engine function and needs none of it."""
    proc = CTX.Process(target=_as_child, name=name,
                       args=(dict(os.environ), OWNER if dies_with_me else None, target, args))
    with _starting:
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            proc.start()
        finally:
            sys.modules["__main__"] = main
    return proc


def warm() -> None:
    """Start the fork server now, in the background: its imports (about 5 s) are then done
    before the first child starts, which would otherwise wait for them."""
    # not in a process still rebuilding its starter's __main__ (multiprocessing refuses
    # to start one then; that process is on its way to other work)
    if CTX.get_start_method() == "forkserver" and not getattr(mp.current_process(),
                                                              "_inheriting", False):
        from multiprocessing import forkserver

        forkserver._forkserver.ensure_running()


def _as_child(environ: dict, parent: str | None, target, args: tuple) -> None:
    os.environ.clear()
    os.environ.update(environ)
    _share_the_server()
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit():
        # the pools were loaded by the server, before these variables: apply them now, as a
        # spawned child's pools would have started with them (engine/jobs/worker.serve)
        from threadpoolctl import threadpool_limits

        threadpool_limits(int(threads))
    if parent:
        die_with(parent)
    target(*args)


def _share_the_server() -> None:
    """Let this child start its own children (a worker its trainers) from the fork server
    it came from. multiprocessing starts a new server in any process that did not start
    one itself, and a new server imports everything again (about 5 s of CPU per worker),
    though the fork left this process the server's address and a handle that keeps it
    alive. Where those are not as expected (another Python), nothing changes."""
    if CTX.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver, resource_tracker

    server = forkserver._forkserver
    if (getattr(server, "_forkserver_address", None)
            and getattr(server, "_forkserver_alive_fd", None) is not None
            and getattr(server, "_forkserver_pid", 0) is None):
        server.ensure_running = resource_tracker.ensure_running  # what it does when running
