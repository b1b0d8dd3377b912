"""How many runs the local worker trains at once, and with how many threads each.

The machine is shared with the web server, so two things keep pages responsive: every
trainer runs at a lower CPU priority (engine/jobs/worker.py, TRAINER_NICE), and the number of
threads of all slots together never exceeds the cores this process may use. Within
that, the worker fills the machine while its queue is non-empty: one slot per core by
default, each with `cores // slots` threads (small runs barely gain from a second thread,
but two small runs side by side take half the time of two in a row).

A second run starts beside a running one only when memory allows: each run's memory
formula (its method's, through engine/methods/registry.run_memory_gb) is read for the
run, and the sum over the slots must stay under 90 % of the machine's memory and the new
run under 90 % of what is available now. `DPSYNTH_SLOTS` overrides the slot count.
No data leaves this module: it reads public shapes only, so it costs no privacy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from engine.core.errors import InputError
from engine.core.processes import cores  # noqa: F401 (slots.cores: the cores a plan divides)
from engine.core.jsonsafe import dumps

ENV = "DPSYNTH_SLOTS"
SHARE = 0.9  # of the machine's memory the runs may plan to use together


@dataclass(frozen=True)
class Plan:
    slots: int  # runs trained at once per device
    threads: int  # torch threads of each run


def plan(n_cores: int | None = None, env: Mapping[str, str] | None = None,
         slots: int | None = None) -> Plan:
    """Slots and threads per run: `slots` if given, else $DPSYNTH_SLOTS, else one per core."""
    n_cores = cores() if n_cores is None else max(1, int(n_cores))
    env = os.environ if env is None else env
    if slots is None and env.get(ENV, "").strip():
        raw = env[ENV].strip()
        try:
            slots = int(raw)
        except ValueError:
            raise InputError(f"{ENV} must be a whole number of slots >= 1. Got {raw!r}.") from None
    slots = n_cores if slots is None else slots
    if slots < 1:
        raise InputError(f"{ENV} (slots per device) must be >= 1. Got {slots!r}.")
    return Plan(slots=slots, threads=max(1, n_cores // slots))


def occupancy_line(busy: int, slots: int) -> str:
    """"1 of 2 slots busy": what the queue strip shows."""
    return f"{busy} of {slots} training slot{'s' if slots != 1 else ''} busy"


def memory_available_gb() -> tuple[float, float]:
    """(total, available now) memory of the machine in GB, from /proc/meminfo."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return total, int(line.split()[1]) * 1024 / 1e9
    except OSError:
        pass
    return total, total / 2  # unknown: assume half is free rather than all of it


_MEMORY: dict[str, float | None] = {}


def run_memory_gb(config) -> float | None:
    """Peak memory of a run by its method's cost-preview formula (cached per shape);
    None when it cannot be computed (the caller then does not start it beside another)."""
    d = config.to_dict()
    key = dumps({k: d.get(k) for k in ("method", "dataset", "params", "data_options",
                                             "n_synthetic")}, sort_keys=True)
    if key not in _MEMORY:
        _MEMORY[key] = _memory_gb(config)
    return _MEMORY[key]


def _memory_gb(config) -> float | None:
    try:
        from engine.data import catalog as datasets
        from engine.methods.registry import params_for, run_memory_gb

        data = datasets.load(config.dataset, seed=config.seed, options=config.data_options)
        return run_memory_gb(config, data, params_for(config, data))
    except Exception:  # an unknown shape: never promise memory we cannot count
        return None


def fits(candidate_gb: float | None, running_gb: list[float | None],
         memory: tuple[float, float] | None = None) -> bool:
    """May a run needing `candidate_gb` start beside runs needing `running_gb`?"""
    if candidate_gb is None or any(g is None for g in running_gb):
        return False
    total, available = memory_available_gb() if memory is None else memory
    return (candidate_gb + sum(running_gb) <= SHARE * total  # type: ignore[arg-type]
            and candidate_gb <= SHARE * available)
