"""Who may see what of a run: the one place the pages ask (no streamlit here).

Privacy assumption: a run on a participant's **uploaded file** (a CSV or NPZ) has two
kinds of output. Its DP outputs — synthetic data, sample grid, ε, δ and the releases —
are protected by ε and may be shown to anyone in the room. Everything else was computed
from the uploaded records without noise: fidelity histograms and dependence heatmaps,
classifiers trained on the real records (real/*), the accuracies measured on the real
test split, the trainer's data-derived settings (`info`), the file's name and server
path, category lists read from the records. Those are shown only to the run's owner and
to an instructor; others get the redacted views below. The owner may share the
synthetic-data scores (measured on real test records, not private) with the room.

Built-in datasets (digits, breast cancer, ...) are public data: nothing of their runs
is redacted. Runs without an owner (command line, gallery) on a file are the
instructor's alone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from engine.core.config import RunConfig
from engine.jobs.manager import may_control
from engine.core.config import FILE_DATASETS
from engine.store.records import RunRecord

UPLOAD_PLACEHOLDER = "(uploaded file, shown to its owner only)"
REDACTED_NOTE = ("redacted: this run trained on another participant's uploaded file; "
                 "only its DP outputs are shown (fidelity, real-data scores, the file's "
                 "name and path, and data-derived settings stay with its owner)")

# metrics.json keys a non-owner may read: the release and its accounting, sizes that the
# neighbouring relation makes public, timings. Anything else (fidelity, accuracy, info,
# disclosures with category lists, the ledger's file label, ...) is left out.
_PUBLIC_METRICS = ("status", "method", "dataset", "private", "epsilon_target",
                   "epsilon_spent", "delta", "accountant", "privacy", "n_train",
                   "n_synthetic", "seconds", "device", "note")


def on_private_records(config: RunConfig | dict) -> bool:
    """Did this run train on a participant's own file (not a built-in public dataset)?"""
    dataset = config["dataset"] if isinstance(config, dict) else config.dataset
    return dataset in FILE_DATASETS


def may_see_real(record: RunRecord, *, session: str | None, instructor: bool) -> bool:
    """May this viewer see what the run computed from real records without noise?
    (`session` is the viewer's owner key; None = a trusted caller, the command line.)"""
    return (not on_private_records(record.config)
            or may_control(record.session, session=session, instructor=instructor))


def public_score(key: str) -> bool:
    """A synthetic-data score (trained on synthetic, tested on real test records)."""
    return key.startswith("synthetic/")


def redact_metrics(metrics: dict[str, Any], *, share_scores: bool = False) -> dict[str, Any]:
    """metrics.json as a non-owner may see it (a new dict; the file is not changed)."""
    out = {k: metrics[k] for k in _PUBLIC_METRICS if k in metrics}
    acc = metrics.get("accuracy")
    if share_scores and isinstance(acc, dict):
        out["accuracy"] = {k: v for k, v in acc.items() if public_score(k)}
    out["redacted"] = REDACTED_NOTE + ("; the owner shares the synthetic-data scores"
                                       if share_scores else "")
    return out


def redact_config_dict(config: dict[str, Any]) -> dict[str, Any]:
    """config.json as a non-owner may see it: the upload's path replaced."""
    out = dict(config)
    opts = dict(out.get("data_options") or {})
    if "path" in opts:
        opts["path"] = UPLOAD_PLACEHOLDER
    out["data_options"] = opts
    return out


def redact_record(record: RunRecord, *, share_scores: bool = False) -> RunRecord:
    """A run's record for a non-owner: no path in its config, only the scores shared."""
    cfg = replace(record.config,
                  data_options=redact_config_dict(record.config.to_dict())["data_options"])
    metrics = ({k: v for k, v in record.metrics.items() if public_score(k)}
               if share_scores else {})
    # Its message may quote the file (a loader's error names the path or a column).
    return replace(record, config=cfg, metrics=metrics, message="")


def visible_record(record: RunRecord, *, session: str | None, instructor: bool,
                   shared: bool = False) -> RunRecord:
    """The record itself where the viewer may see real-data results, else redacted."""
    if may_see_real(record, session=session, instructor=instructor):
        return record
    return redact_record(record, share_scores=shared)


def artifact_bytes(name: str, data: bytes, record: RunRecord, *, session: str | None,
                   instructor: bool, shared: bool = False) -> bytes | None:
    """A run file as this viewer may download it: itself, a redacted copy (metrics.json,
    config.json), or None (not for this viewer: attack.json)."""
    if may_see_real(record, session=session, instructor=instructor):
        return data
    if name == "metrics.json":
        return json.dumps(redact_metrics(json.loads(data), share_scores=shared),
                          indent=2).encode()
    if name == "config.json":
        return json.dumps(redact_config_dict(json.loads(data)), indent=2).encode()
    if name in ("synthetic.npz", "synthetic.csv", "samples.png"):
        return data  # the DP release itself
    return None


def ledger_label(row: dict[str, Any], *, mine: set[str], instructor: bool) -> str:
    """A dataset's name on the budget table (`row`: engine.privacy.ledger.Ledger.datasets()):
    an uploaded file is named only to an instructor and to a participant with a run on
    it (`mine`: the viewer's run ids); others read "another participant's file"."""
    if row.get("public_treated_as_private", True) or instructor \
            or any(r["run_id"] in mine for r in row.get("runs", [])):
        return row["label"]
    kind = str(row["dataset"]).split(":", 1)[0]
    return f"another participant's {kind} file"
