"""The small CNN classifier of the DataLens evaluation: train on synthetic, test on real.

Architecture (the Keras MNIST example that G-PATE/DataLens evaluate with): conv3×3 32 +
ReLU → conv3×3 64 + ReLU → max-pool 2 → dropout .25 → FC 128 + ReLU → dropout .5 → FC C.
Padding 1 keeps it valid for 8×8 digits as well as 28×28 images.

Model selection uses a validation split of the SYNTHETIC data only: the number of epochs
is chosen there, never on the real test set (the official code's defect). The synthetic
data is already DP, so this costs no privacy; the test set is touched once, at the end.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Generator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.core.errors import InputError

BATCH = 128


class SmallCNN(nn.Module):
    def __init__(self, in_channels: int, n_classes: int, side: tuple[int, int]):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * (side[0] // 2) * (side[1] // 2), 128)
        self.fc2 = nn.Linear(128, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        h = F.dropout(h, 0.25, self.training).flatten(1)
        h = F.dropout(F.relu(self.fc1(h)), 0.5, self.training)
        return self.fc2(h)


def _accuracy(model, x, y, device, chunk=2000) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), chunk):
            xb = torch.as_tensor(x[i:i + chunk], device=device)
            correct += int((model(xb).argmax(1).cpu().numpy() == y[i:i + chunk]).sum())
    return correct / max(len(x), 1)


MAX_EPOCHS = 10
PATIENCE = 2  # epochs without a better validation accuracy before training stops


@dataclass(frozen=True)
class Epoch:
    """Progress of one CNN fit: `epoch` of at most `max_epochs` is done."""

    epoch: int
    max_epochs: int
    val_accuracy: float
    fit: str = "synthetic"  # which training set: "synthetic", or "real" (the reference)


def run_to_end(fit: Generator):
    """The return value of a generator, its yields (progress) dropped."""
    while True:
        try:
            next(fit)
        except StopIteration as done:
            return done.value


def cnn_accuracy(x_syn, y_syn, x_test, y_test, **kwargs) -> dict:
    """`scored_epochs` run to its end, for callers that need no progress."""
    return run_to_end(scored_epochs(x_syn, y_syn, x_test, y_test, **kwargs))


def scored_epochs(x_syn, y_syn, x_test, y_test, *, device="cpu", seed: int = 0,
                  max_epochs: int = MAX_EPOCHS, patience: int = PATIENCE,
                  val_fraction: float = 0.1, batch_size: int = BATCH, lr: float = 1e-3,
                  n_classes: int | None = None, fit: str = "synthetic"
                  ) -> Generator[Epoch, None, dict]:
    """Train SmallCNN on (x_syn, y_syn), pick the epoch with the best accuracy on a held-out
    part of the synthetic data, and report that model's accuracy on the real test set.

    Yields an `Epoch` after each epoch (for a progress bar); its return value (the value of
    `yield from`) is {"accuracy", "epochs_chosen", "val_accuracy", "epochs_run"}. Training
    stops after `patience` epochs without a better validation accuracy, and after
    `max_epochs` at the latest: that bound is what `estimate_seconds` prices.

    x arrays are float32 (n, c, h, w) in [0, 1]; y int labels.
    """
    x_syn = np.asarray(x_syn, dtype=np.float32)
    y_syn = np.asarray(y_syn, dtype=np.int64)
    x_test = np.asarray(x_test, dtype=np.float32)
    y_test = np.asarray(y_test, dtype=np.int64)
    if x_syn.ndim != 4 or x_test.ndim != 4 or x_syn.shape[1:] != x_test.shape[1:]:
        raise InputError(f"cnn_accuracy needs images shaped (n, c, h, w) on both sides; got "
                         f"{x_syn.shape} and {x_test.shape}.")
    if len(x_syn) < 2 or len(x_syn) != len(y_syn):
        raise InputError(f"cnn_accuracy needs at least 2 labelled synthetic images; got {len(x_syn)}.")
    if max_epochs < 1 or patience < 1:
        raise InputError(f"max_epochs and patience must be >= 1. Got {max_epochs!r}, {patience!r}.")
    device = torch.device(device)
    k = n_classes or int(max(y_syn.max(), y_test.max())) + 1
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(x_syn))
    n_val = max(1, int(round(val_fraction * len(x_syn))))
    val, tr = perm[:n_val], perm[n_val:]
    torch.manual_seed(seed)
    model = SmallCNN(x_syn.shape[1], k, x_syn.shape[2:]).to(device)
    opt = torch.optim.Adam(model.parameters(), lr)
    xt = torch.as_tensor(x_syn[tr], device=device)
    yt = torch.as_tensor(y_syn[tr], device=device)
    best = (-1.0, 0, None)
    epoch = 0
    for epoch in range(1, max_epochs + 1):
        _train_epoch(model, opt, xt, yt, rng, batch_size)
        acc = _accuracy(model, x_syn[val], y_syn[val], device)
        if acc > best[0]:
            best = (acc, epoch, copy.deepcopy(model.state_dict()))
        yield Epoch(epoch, max_epochs, acc, fit)
        if epoch - best[1] >= patience:
            break
    model.load_state_dict(best[2])
    return {"accuracy": _accuracy(model, x_test, y_test, device), "epochs_chosen": best[1],
            "val_accuracy": best[0], "epochs_run": epoch}


def _train_epoch(model, opt, xt, yt, rng, batch_size: int, *, max_batches: int | None = None) -> int:
    """One pass over (xt, yt) in a random order; returns the number of batches run."""
    model.train()
    order = torch.as_tensor(rng.permutation(len(xt)), device=xt.device)
    batches = 0
    for i in range(0, len(xt), batch_size):
        idx = order[i:i + batch_size]
        loss = F.cross_entropy(model(xt[idx]), yt[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        batches += 1
        if max_batches is not None and batches >= max_batches:
            break
    return batches


def fit_batches(n_images: int, max_epochs: int = MAX_EPOCHS) -> float:
    """Training batches a fit of `n_images` runs at most, counting the forward-only
    validation and test passes as a third of a batch each (no backward, no update)."""
    per_epoch = math.ceil(n_images / BATCH) + math.ceil(0.1 * n_images / BATCH) / 3
    return per_epoch * max_epochs


_BATCH_SECONDS = None  # a TimedCache on disk, made on first use (engine/store/cost_cache.py)


def estimate_seconds(n_images: int, image_shape: tuple[int, int, int], n_classes: int, *,
                     device="cpu", max_epochs: int = MAX_EPOCHS, threads: int | None = None,
                     away=None) -> float | None:
    """Seconds one `scored_epochs` fit of `n_images` takes at most (all `max_epochs`): a
    training batch timed on this machine (cached like the trainers' rates), times
    `fit_batches`. Early stopping usually ends it sooner; the bound is what a preview
    promises. `away(cache, key)` (engine/runs/cost_probe.away: the web server) answers from
    the cache instead of timing here, None while another process times it."""
    global _BATCH_SECONDS
    from engine.store import cost_cache

    if _BATCH_SECONDS is None:
        _BATCH_SECONDS = cost_cache.TimedCache("cnn")
    key = ("cnn-batch", tuple(int(v) for v in image_shape), int(n_classes), str(device),
           torch.get_num_threads() if threads is None else int(threads))
    per_batch = (away(_BATCH_SECONDS, key) if away is not None else
                 _BATCH_SECONDS.get(key, lambda: _time_batch(image_shape, n_classes, device)))
    return None if per_batch is None else per_batch * fit_batches(n_images, max_epochs)


def _time_batch(image_shape, n_classes: int, device, probe_batches: int = 5) -> float:
    """Seconds of one warm training batch on random images of this shape: no data is
    read, so timing costs no privacy."""
    rng = np.random.default_rng(0)
    device = torch.device(device)
    probe = (probe_batches + 1) * BATCH
    xt = torch.as_tensor(rng.random((probe, *image_shape), dtype=np.float32), device=device)
    yt = torch.as_tensor(rng.integers(0, n_classes, probe), device=device)
    model = SmallCNN(image_shape[0], n_classes, image_shape[1:]).to(device)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    _train_epoch(model, opt, xt, yt, rng, BATCH, max_batches=1)  # warm-up: allocator, kernels
    t0 = time.perf_counter()
    timed = _train_epoch(model, opt, xt, yt, rng, BATCH, max_batches=probe_batches)
    return (time.perf_counter() - t0) / timed
