"""What a run writes into its folder (config.json is written by the runner): the folder
claimed safely, metrics.json as strict JSON, the synthetic records as CSV or NPZ, and a
picture of the first samples. Used by the runner and by the private search
(engine/runs/private_search.py), which writes only its best candidate's records.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.data import catalog as datasets
from engine.core.errors import InputError
from engine.methods.events import TrainResult
from engine.core.jsonsafe import write_json
from engine.data.render import image_grid, table_image

# What a run writes; `claim_out_dir` clears only these.
ARTIFACTS = ("config.json", "metrics.json", "synthetic.npz", "synthetic.csv", "samples.png",
             "attack.json")  # attack.json: engine/audit/membership_run.py's diagnostic, not released


def check_out_dir(out_dir: str | Path, *, overwrite: bool) -> list[str]:
    """The names a run would have to clear from `out_dir`, or InputError with the fix that
    works: a folder holding anything but a run's artifacts is always refused (so
    --overwrite can never delete the user's files); one holding a run's artifacts needs
    `overwrite`. Reads the folder only, so it can run before the data is loaded."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {str(out)!r} is a file; give a folder for the run's artifacts.")
    present = sorted(p.name for p in out.iterdir()) if out.exists() else []
    other = [n for n in present if n not in ARTIFACTS or not (out / n).is_file()]
    if other:
        raise InputError(f"--out folder {str(out)!r} holds files that are not a run's artifacts "
                         f"({', '.join(other[:5])}); choose a new or empty folder.")
    if present and not overwrite:
        raise InputError(f"--out folder {str(out)!r} already holds a run ({', '.join(present[:5])}); "
                         "pass --overwrite to replace that run, or choose a new folder.")
    return present


def claim_out_dir(out_dir: str | Path, *, overwrite: bool) -> Path:
    """The folder for one run, empty: `check_out_dir`, then the old run's artifacts deleted."""
    out = Path(out_dir)
    for name in check_out_dir(out, overwrite=overwrite):
        (out / name).unlink()
    return out


def write_metrics(out: Path, metrics: dict) -> None:
    write_json(out / "metrics.json", metrics, indent=2, sort_keys=True)


def write_synthetic(out: Path, result: TrainResult, data: datasets.Dataset) -> Path:
    if data.kind == "image":
        path = out / "synthetic.npz"
        np.savez_compressed(path, x=result.x.astype(np.float32), y=result.y)
        return path
    labelled = (result.y >= 0).any()
    frame = datasets.tabular_to_frame(result.x, data.columns,
                                      y=result.y if labelled else None,
                                      class_names=data.class_names,
                                      label=data.notes.get("label", "label"))
    path = out / "synthetic.csv"
    frame.to_csv(path, index=False)
    return path


def write_samples_png(path: Path, result: TrainResult, data: datasets.Dataset) -> None:
    if data.kind == "image":
        labels = result.y if (result.y >= 0).any() else np.zeros(len(result.y), int)
        names = data.class_names if (result.y >= 0).any() else ["samples"]
        image_grid(result.x, labels, names).save(path)
        return
    frame = datasets.tabular_to_frame(result.x[:20], data.columns).round(3)
    header = list(frame.columns) + ["label"]
    rows = [list(map(str, r)) + [data.class_names[lab] if lab >= 0 else ""]
            for r, lab in zip(frame.values.tolist(), result.y[:20])]
    table_image(rows, header).save(path)
