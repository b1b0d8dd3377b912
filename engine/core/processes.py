"""Naming a process for good: a pid plus its start time, so a reused pid never passes
for the process that died (the store marks runs of dead processes INTERRUPTED); and the
cores this process may use, and the memory a trainer process needs before its run."""

from __future__ import annotations

import os
import sys
import threading
import time
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


def die_with(parent_pid: int) -> None:
    """End this process as soon as its parent is gone (checked twice a second)."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="dpsynth-parent-watch", daemon=True).start()
