"""DataLens on Fashion-MNIST at ε=1, δ=1e-5: CNN accuracy on the real test set (paper .6478),
wall time, peak memory, teachers per second, affordable steps exact vs RDP.

Not a test. Full paper setting on a GPU (4,000 teachers, 149 steps with the exact accountant):
    python -m bench.datalens_fashion --device cuda
A reduced run that fits a 2-core CPU in about ten minutes:
    python -m bench.datalens_fashion --device cpu --teachers 300 --records-per-teacher 15 --steps 40
Digits (the app's default dataset) with its own defaults:
    python -m bench.datalens_fashion --dataset digits --epsilon 10
"""

from __future__ import annotations

import argparse
import gzip
import math
import resource
import threading
import time
from pathlib import Path

import numpy as np
import torch

from engine import datalens, privacy
from engine.config import RunConfig
from engine.data import Dataset

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
PAPER = {"fashion_mnist": 0.6478, "mnist": 0.7123}


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_dataset(name: str) -> Dataset:
    from engine import data

    if name in data.DATASETS:
        return data.load(name)
    if name != "fashion_mnist":
        raise SystemExit(f"dataset {name!r} is not available here")
    # engine.data has no Fashion loader yet: read the Debian package's idx files directly.
    x = {s: (_idx(FASHION_DIR / f"{s}-images-idx3-ubyte.gz")[:, None] / 255.0).astype(np.float32)
         for s in ("train", "t10k")}
    y = {s: _idx(FASHION_DIR / f"{s}-labels-idx1-ubyte.gz").astype(np.int64) for s in ("train", "t10k")}
    names = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
             "Ankle boot"]
    return Dataset("fashion_mnist", "image", x["train"], y["train"], x["t10k"], y["t10k"], names, (1, 28, 28))


def steps_exact_vs_rdp(*, epsilon, delta, top_k, sigma, batch) -> dict:
    return {acc: privacy.datalens_affordable_steps(epsilon=epsilon, delta=delta, top_k=top_k, sigma=sigma,
                                                   batch=batch, accountant=acc) for acc in privacy.ACCOUNTANTS}


def teacher_memory_gb(params: datalens.Params, data: Dataset) -> float:
    """Parameters + gradients + two Adam moments of the stacked teachers, float32."""
    from engine.datalens_nets import TeacherEnsemble

    one = sum(p.numel() for p in TeacherEnsemble(1, data.image_shape, data.n_classes,
                                                 tuple(params.teacher_widths)).parameters())
    return one * params.teachers * 4 * 4 / 1e9


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="fashion_mnist")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--teachers", type=int, help="default: the dataset's (4000 for Fashion)")
    ap.add_argument("--records-per-teacher", type=int, help="cap per teacher (default: n_train // teachers)")
    ap.add_argument("--steps", type=int, help="cap on iterations (default: what the budget affords)")
    ap.add_argument("--sigma", type=float)
    ap.add_argument("--top-k", type=int)
    ap.add_argument("--beta", type=float)
    ap.add_argument("--accountant", default="exact", choices=list(privacy.ACCOUNTANTS))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--n-synthetic", type=int, help="default: n_train")
    ap.add_argument("--cnn-epochs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="write the synthetic set to this .npz")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    from engine.device import resolve_device

    device = resolve_device(a.device)
    data = load_dataset(a.dataset)
    over = {"accountant": a.accountant}
    for key, val in (("teachers", a.teachers), ("records_per_teacher", a.records_per_teacher),
                     ("max_steps", a.steps), ("sigma", a.sigma), ("top_k", a.top_k), ("beta", a.beta)):
        if val is not None:
            over[key] = val
    if a.steps is None and not math.isfinite(a.epsilon):
        over["max_steps"] = 200
    cfg = RunConfig(method="datalens", dataset=data.name, epsilon=a.epsilon, delta=a.delta, seed=a.seed,
                    n_synthetic=a.n_synthetic, params=over)
    p = datalens._params(cfg, data)
    batch = p.synthetic_batch(data.n_train)
    print(f"dataset {data.name}: {data.n_train} train, {len(data.y_test)} test; device {device}")
    print(f"teachers {p.teachers} x {p.partition_size(data.n_train)} records, top_k {p.top_k}, sigma {p.sigma}, "
          f"beta {p.beta}, clip {p.clip}, batch {batch}")
    print("preview:", datalens.privacy_preview(cfg, data))
    if math.isfinite(a.epsilon):
        print("affordable steps, this run:", steps_exact_vs_rdp(epsilon=a.epsilon, delta=a.delta, top_k=p.top_k,
                                                                sigma=p.sigma, batch=batch))
    print("affordable steps, paper setting (k=200, sigma=5000, 15 records/step, eps=1):",
          steps_exact_vs_rdp(epsilon=1.0, delta=1e-5, top_k=200, sigma=5000.0, batch=15))
    print(f"stacked-teacher memory (params+grads+Adam): {teacher_memory_gb(p, data):.2f} GB for {p.teachers}; "
          f"{teacher_memory_gb(datalens.Params(), data):.2f} GB for the paper's 4000")

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    result, last_print = None, 0.0
    for ev in datalens.train(cfg, data, device, threading.Event()):
        if ev.phase == "train" and (time.time() - last_print > 20 or ev.step == ev.total):
            last_print = time.time()
            print(f"  step {ev.step}/{ev.total} eps {ev.epsilon_spent:.4f} teacher loss {ev.loss:.3f} "
                  f"vote density {ev.metrics['vote_density']:.3f} ({time.time() - t0:.0f}s)", flush=True)
        if ev.phase == "done":
            result = ev.result
    train_s = time.time() - t0
    steps = result.privacy["steps"]
    teacher_updates = p.teachers * (p.first_teacher_steps + p.teacher_steps * max(steps - 1, 0)) if steps else 0
    print(f"train: {steps} steps in {train_s:.1f}s ({train_s / max(steps, 1):.2f}s/step); "
          f"{teacher_updates / train_s:.0f} teacher-updates/s; eps spent {result.privacy['epsilon_spent']:.4f} "
          f"({result.privacy['accountant']})")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"
          + (f", peak CUDA {torch.cuda.max_memory_allocated() / 1e9:.2f} GB" if device.type == "cuda" else ""))
    if a.save:
        np.savez_compressed(a.save, x=result.x, y=result.y)

    from sklearn.linear_model import LogisticRegression

    from engine.cnn import cnn_accuracy

    t1 = time.time()
    cnn = cnn_accuracy(result.x, result.y, data.x_test, data.y_test, device=device, seed=a.seed,
                       max_epochs=a.cnn_epochs, n_classes=data.n_classes)
    flat = result.x.reshape(len(result.x), -1)
    logreg = LogisticRegression(max_iter=300).fit(flat, result.y).score(
        data.x_test.reshape(len(data.x_test), -1), data.y_test)
    paper = PAPER.get(data.name)
    print(f"CNN accuracy on real test {cnn['accuracy']:.4f} (epochs {cnn['epochs_chosen']} chosen on synthetic "
          f"validation, val acc {cnn['val_accuracy']:.3f})" + (f"; paper {paper}" if paper else "")
          + f"; LogReg {logreg:.4f}; eval {time.time() - t1:.0f}s")


if __name__ == "__main__":
    main()
