"""One run, one shape: `RunRecord` is what the store's reads return, what a job snapshot
extends with its live-only fields (engine/jobs/manager.py), and what the pages draw.

Metrics are a plain `{key: float}` dict, whatever the evaluator returned
(engine/evaluation/utility.py): "synthetic/<clf>" is the accuracy of a classifier trained on the
synthetic data and tested on real test data, "synthetic/<clf>/<score>" another score of it
(tabular data: "roc_auc", "f1_macro"), "real/…" the same classifier trained on the real
training data (NOT private: it describes the data), "probe/…" a quick score while training.
No column of the store is tied to one of them, so a new score shows up without a schema
change. Every figure here is computed on real records without noise: it is a reading of
the released synthetic data, outside the run's ε (metrics.json's `disclosures` says so).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from engine.core.config import RunConfig


class RunStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED,
                      RunStatus.INTERRUPTED})
ACTIVE = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})


def numeric_metrics(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of a metrics mapping; notes, None and NaN (a score that could
    not be computed, e.g. ROC-AUC with a class missing from the test split) are left out."""
    out = {}
    for k, v in values.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[str(k)] = float(v)
    return out


def metrics_from_file(metrics_json: Mapping[str, Any]) -> dict[str, float]:
    """A run's metrics dict from its metrics.json (written by engine/runs/runner.py): the
    scores under "accuracy". The one place that reads scores out of that file's layout."""
    return numeric_metrics(metrics_json.get("accuracy") or {})


def headline_key(metrics: Mapping[str, float]) -> str | None:
    """The score a run is summarised by where there is room for one: logistic regression's
    accuracy (every finished run reports it), else the first other classifier's, else a
    probe's while training is under way; None without any."""
    accuracies = sorted(k for k in metrics if k.startswith("synthetic/") and k.count("/") == 1)
    if "synthetic/logreg" in metrics:
        return "synthetic/logreg"
    if accuracies:
        return accuracies[0]
    probes = sorted(k for k in metrics if k.startswith("probe"))
    return "probe/logreg" if "probe/logreg" in metrics else (probes[0] if probes else None)


def real_key(key: str) -> str | None:
    """The real-data reference of a synthetic score: synthetic/mlp/roc_auc → real/mlp/roc_auc."""
    return "real/" + key.split("/", 1)[1] if key.startswith("synthetic/") else None


@dataclass(frozen=True)
class RunRecord:
    """A run as stored: its config (written once), status, progress and metrics."""

    run_id: str
    config: RunConfig
    status: RunStatus
    created: float
    started: float | None = None
    ended: float | None = None
    heartbeat: float | None = None
    sweep: str | None = None
    session: str | None = None  # the browser session that owns it (None: CLI, gallery)
    owner: str | None = None  # "pid:start-time" of the process running it
    device: str = "cpu"  # the queue it waits in
    phase: str = ""  # last event phase: release, train, probe, evaluate, ...
    step: int = 0
    total: int = 0
    epsilon_spent: float | None = None  # None: nothing spent yet, or ∞ (no noise)
    metrics: dict[str, float] = field(default_factory=dict)
    message: str = ""
    eval_started: float | None = None
    stop_requested: float | None = None  # when someone pressed Stop

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def dataset(self) -> str:
        return self.config.dataset

    @property
    def epsilon(self) -> float:
        return self.config.epsilon

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def fraction(self) -> float:
        return min(1.0, self.step / self.total) if self.total else 0.0

    @property
    def evaluating(self) -> bool:
        return self.status == RunStatus.RUNNING and self.phase == "evaluate"

    @property
    def seconds(self) -> float | None:
        """Wall time from start to end (or to the last heartbeat while active)."""
        if self.started is None:
            return None
        return max(0.0, (self.ended or self.heartbeat or self.started) - self.started)

    @property
    def headline(self) -> float | None:
        """The value of `headline_key`: the one score shown where there is room for one."""
        key = headline_key(self.metrics)
        return None if key is None else self.metrics[key]


def record_fields(record: RunRecord) -> dict[str, Any]:
    """The stored fields of a record, to build a record's subclass (a job snapshot) from it."""
    return {f.name: getattr(record, f.name) for f in fields(RunRecord)}
