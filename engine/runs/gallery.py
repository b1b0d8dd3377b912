"""The gallery: precomputed runs, so a newcomer sees the privacy–utility tradeoff at once.

`python -m engine gallery` trains each registered method × ε ∈ {0.1, 0.3, 1, 3, 10, ∞} on digits,
and on the further datasets a method declares (`GALLERY_DATASETS`: DP-MERF on
Fashion-MNIST) where their files are installed; those it declares slow
(`GALLERY_SLOW_DATASETS`: DataLens on Fashion-MNIST, about an hour) only on request
(`--fashion-datalens`). A method's ε = ∞ runs take its `GALLERY_NONPRIVATE` knobs. Every
run goes through the project's own `runner.execute`, with the dataset's defaults, so a
gallery run is exactly what the Playground would have trained. Only the small files are
kept, committed under assets/gallery/<name>/: config.json, metrics.json, samples.png.

At app start-up `load_into(store)` registers each as a FINISHED run with id
"gallery-<name>" and sweep "gallery"; an id already in the store is skipped, so restarts
add nothing twice. The noise in these runs was drawn when they were built (OS entropy,
as always); their privacy guarantee is the one their metrics.json states.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import engine
from engine.core.config import RunConfig

GALLERY_DIR = Path(engine.__file__).resolve().parents[1] / "assets" / "gallery"
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, math.inf)
KEEP = ("config.json", "metrics.json", "samples.png")
SWEEP = "gallery"
ID_PREFIX = "gallery-"


def entry_name(config: RunConfig) -> str:
    eps = "inf" if math.isinf(config.epsilon) else f"{config.epsilon:g}"
    return f"{config.dataset}-{config.method}-eps{eps}-seed{config.seed}"


def _kinds(method: str) -> tuple[str, ...]:
    """The kinds of data a method models (its module's DATA_KINDS; both when unsaid)."""
    from engine.methods.registry import part

    return part(method, "DATA_KINDS", ("image", "tabular"))


def dataset_for(method: str) -> str:
    """The built-in a gallery entry of `method` trains on: digits if it models images."""
    return "digits" if "image" in _kinds(method) else "breast_cancer"


def plan(*, more: bool = True, slow: bool = False, seed: int = 0,
         only_available: bool = True) -> list[RunConfig]:
    """The gallery's runs: (dataset, method) pairs × EPSILONS, dataset defaults.

    `more`: also the further datasets methods declare (GALLERY_DATASETS), and with `slow`
    those they declare slow (GALLERY_SLOW_DATASETS). `only_available` drops a dataset
    this machine lacks (for building); False gives the whole plan, whatever the machine
    has (for checking entries)."""
    from engine.data.catalog import list_datasets

    from engine.methods.registry import METHODS, part

    # Every registered method: on digits, or on breast_cancer if it models tables only;
    # and every method that models tables on breast_cancer, so the privacy–utility chart
    # compares them on the same table.
    pairs = [(dataset_for(method), method) for method in METHODS]
    pairs += [("breast_cancer", method) for method in METHODS
              if ("breast_cancer", method) not in pairs and "tabular" in _kinds(method)]
    available = {d["name"] for d in list_datasets() if d["available"]}
    if more:
        for method in METHODS:
            extra = (*part(method, "GALLERY_DATASETS", ()),
                     *(part(method, "GALLERY_SLOW_DATASETS", ()) if slow else ()))
            pairs += [(d, method) for d in extra if d in available or not only_available]
    return [RunConfig(method=m, dataset=d, epsilon=e, seed=seed,
                      params=dict(part(m, "GALLERY_NONPRIVATE", {})) if math.isinf(e) else {})
            for d, m in pairs for e in EPSILONS]


def build(configs: list[RunConfig], out_dir: Path = GALLERY_DIR, *, rebuild: bool = False,
          log: Callable[[str], None] = print) -> list[Path]:
    """Train each config with runner.execute and keep its small files in out_dir/<name>/.

    Entries already built are kept unless `rebuild`; returns the folders written.
    """
    from engine.runs.runner import execute

    out_dir = Path(out_dir)
    written = []
    for config in configs:
        dest = out_dir / entry_name(config)
        if (dest / "metrics.json").exists() and not rebuild:
            log(f"{dest.name}: already built")
            continue
        with tempfile.TemporaryDirectory(prefix="dpsynth-gallery-") as tmp:
            t0 = time.perf_counter()
            for _ in execute(config, tmp):
                pass
            dest.mkdir(parents=True, exist_ok=True)
            for name in KEEP:
                shutil.copy2(Path(tmp) / name, dest / name)
        m = json.loads((dest / "metrics.json").read_text())
        acc = m["accuracy"].get("synthetic/logreg")
        log(f"{dest.name}: {time.perf_counter() - t0:.0f} s "
            f"(training {m['seconds']['train']:.0f} s), LogReg "
            f"{'n/a' if acc is None else f'{acc:.3f}'}")
        written.append(dest)
    return written


def entries(gallery_dir: Path = GALLERY_DIR) -> Iterator[tuple[str, RunConfig, dict, Path]]:
    """(name, config, metrics, folder) of each complete entry, in name order."""
    gallery_dir = Path(gallery_dir)
    if not gallery_dir.is_dir():
        return
    for folder in sorted(p for p in gallery_dir.iterdir() if p.is_dir()):
        if not all((folder / f).exists() for f in ("config.json", "metrics.json")):
            continue
        config = RunConfig.from_dict(json.loads((folder / "config.json").read_text()))
        yield folder.name, config, json.loads((folder / "metrics.json").read_text()), folder


def load_into(store, gallery_dir: Path = GALLERY_DIR) -> list[str]:
    """Register the gallery's runs in `store` (ids "gallery-<name>"); returns the ids
    added now. Runs already present are left alone, so calling it again adds nothing."""
    added = []
    for name, config, metrics, folder in entries(gallery_dir):
        run_id = ID_PREFIX + name
        if store.get_run(run_id) is not None:
            continue
        if not store.import_finished(run_id, config, metrics=metrics, sweep=SWEEP,
                                     message="gallery run (precomputed: python -m engine gallery)"):
            continue
        dest = store.artifact_dir(run_id)
        dest.mkdir(parents=True, exist_ok=True)
        for f in KEEP:
            if (folder / f).exists():
                shutil.copy2(folder / f, dest / f)
        added.append(run_id)
    return added
