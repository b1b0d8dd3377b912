"""DP-MERF: differentially private mean embeddings with random features (Harder et al.).

The private data is touched exactly once: its random-feature mean embedding (and, when
asked, its class counts and numeric bounds) is released with the Gaussian mechanism.
The generator then trains against that noisy embedding for as many steps as it likes —
post-processing, no further privacy cost. Sensitivities are in engine/methods/dpmerf/features.py;
the knobs and their data-derived defaults in engine/methods/dpmerf/params.py; how records
become features (frequencies, length scale, bounds) in engine/methods/dpmerf/plan.py.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from engine.data import column_kinds
from engine.privacy import dp_bounds
from engine.methods.dpmerf import features as fx
from engine.methods.dpmerf.plan import Plan, make_plan, tabular_parts
from engine.core.config import RunConfig
from engine.data.catalog import Dataset
from engine.core.device import fast_bf16
from engine.methods.dpmerf.params import TITLE, Params  # TITLE, Params: the registry's contract
from engine.core.errors import InputError
from engine.methods.events import Event, TrainResult
from engine.methods.dpmerf.generators import ConvCondGenerator, TabularGenerator
from engine.privacy.noise import snap
from engine.privacy.noise import gaussian_noise
from engine.privacy.accountant import PrivacyReport, Release, calibrate_releases

# The method's other parts, found through engine/methods/registry.py (its checklist).
AUDIT = "engine.methods.dpmerf.audit"
COST = "engine.methods.dpmerf.cost"
GALLERY_DATASETS = ("fashion_mnist",)  # where installed: minutes per run on two cores
TINY_PARAMS = {"n_features": 300, "epochs": 2, "batch_size": 100, "sample_every": 5}


def projection_precision(choice: str, device) -> tuple[str, str]:
    """The dtype the random-feature projection runs in on `device`, and why."""
    if choice != "auto":
        return choice, "set explicitly"
    fast, why = fast_bf16(device)
    return ("bfloat16" if fast else "float32"), f"auto: {why}"


def _releases(params: Params, m: int, *, heterogeneous: bool,
              n_private_bounds: int) -> list[Release]:
    """Every Gaussian release this run makes, with its sensitivity and budget share."""
    out, share = [], 1.0
    if n_private_bounds:
        out.append(Release("numeric bounds histogram", dp_bounds.sensitivity(n_private_bounds),
                           share=params.bounds_share))
        share -= params.bounds_share
    if params.labels == "counts":
        out.append(Release("class counts", fx.COUNTS_SENSITIVITY, share=params.counts_share))
        share -= params.counts_share
    if share <= 0:
        raise InputError("counts_share + bounds_share must leave part of the budget for the embedding.")
    sens = fx.HETEROGENEOUS_SENSITIVITY if heterogeneous else fx.EMBEDDING_SENSITIVITY
    out.append(Release("mean embedding", sens / m, share=share))
    return out


def _release_plan(data: Dataset, params: Params) -> list[Release]:
    if data.kind == "image":
        return _releases(params, data.n_train, heterogeneous=False, n_private_bounds=0)
    _, cat, _ = tabular_parts(data)
    private = len(dp_bounds.columns_without_bounds(data))
    return _releases(params, data.n_train, heterogeneous=bool(cat), n_private_bounds=private)


def _calibrate(config: RunConfig, data: Dataset, params: Params) -> tuple[PrivacyReport, dict]:
    """(privacy report, {release name: noise std}) for this run's releases; the one place
    training, the preview and engine/audit/lower_bound.py get their sigmas from."""
    report = calibrate_releases(epsilon=config.epsilon, delta=config.delta,
                                releases=_release_plan(data, params), accountant=params.accountant)
    return report, report.sigmas()


def privacy_preview(config: RunConfig, params: Params, data: Dataset) -> dict:
    """Derived figures for the UI before training: the noise each release will get. The
    run's cost is engine/methods/dpmerf/cost.py's (its COST module), the δ warning
    engine/methods/preview.py's.
    `params` are the run's validated Params (engine.methods.registry.make_params)."""
    data = column_kinds.model_view(data)
    report, _ = _calibrate(config, data, params)
    emb = report.releases[-1]
    from engine.core.device import resolve_device

    device = resolve_device(config.device)
    projection, why = projection_precision(params.projection, device)
    out = {"noise multiplier (sigma)": emb.noise_multiplier,
           "noise std per embedding entry": emb.sigma,
           "releases": ", ".join(r.name for r in report.releases),
           "accountant": report.accountant,
           "faster with": "fewer epochs or random features (n_features)",
           "projection": f"{projection} ({why})" if data.kind == "image" else "float32"}
    out["hint"] = ("DP-MERF releases one noisy summary of the data (its random-feature mean "
                   "embedding), then trains the generator as long as it likes for free: more "
                   "epochs cost time, not privacy.")
    return out


# ---------------------------------------------------------------------- training


def train(config: RunConfig, params: Params, data: Dataset, device: torch.device,
          stop: threading.Event | None = None) -> Iterator[Event]:
    """Release the noisy embedding once, then fit the generator to it; yield Events.
    `params` are the run's validated Params (engine.methods.registry.make_params)."""
    t0 = time.perf_counter()
    original, data = data, column_kinds.model_view(data)  # + point-mass flags (column_kinds)
    torch.manual_seed(config.seed)  # model init only; DP noise has its own OS-entropy generator
    model_gen = torch.Generator().manual_seed(config.seed)
    projection, projection_why = projection_precision(params.projection, device)
    plan = make_plan(data, params, model_gen, projection)
    report, sigma = _calibrate(config, data, params)
    m, n_classes = data.n_train, data.n_classes
    plan.w = plan.w.to(device)  # the frequencies are public; both sides use them

    labelled = params.labels != "none"
    emb, label_probs, _ = _release(plan, data, params, sigma, device, labelled)
    yield Event("release", 0, 0, report.epsilon_spent,
                message=f"released {', '.join(sigma)} ({report.accountant})")

    # Everything below sees only the released statistics: post-processing.
    gen = _make_generator(plan, data, params, n_classes if labelled else 0).to(device)
    opt = torch.optim.Adam(gen.parameters(), lr=params.lr)
    total = max(1, math.ceil(params.epochs * m / params.batch_size))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, total) if params.lr_decay else None

    def draw_labels(n: int) -> torch.Tensor:
        if not labelled:
            return torch.zeros(n, dtype=torch.long, device=device)
        return torch.multinomial(label_probs, n, replacement=True)

    def gen_embedding(labels: torch.Tensor) -> torch.Tensor:
        return generated_embedding(gen, plan, params, labels, label_probs, n_classes)

    show_labels = (torch.arange(n_classes, device=device).repeat_interleave(10) if labelled
                   else draw_labels(100))
    stopped, step = False, 0
    for step in range(1, total + 1):
        if stop is not None and stop.is_set():
            stopped, step = True, step - 1
            break
        loss = ((emb - gen_embedding(draw_labels(params.batch_size))) ** 2).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        samples = None
        if step % params.sample_every == 0 or step == total:
            samples = _to_records(gen, data, plan, show_labels, params, device, labelled)
        yield Event("train", step, total, report.epsilon_spent, loss=loss.item(),
                    samples=samples)
        if params.probe_every and step % params.probe_every == 0:
            from engine.evaluation.utility import quick_probe

            x_p, y_p = _to_records(gen, data, plan, draw_labels(2000), params, device, labelled)
            yield Event("probe", step, total, report.epsilon_spent,
                        metrics=quick_probe(x_p, y_p, original))

    n_syn = config.n_synthetic or m
    x_syn, y_syn = _to_records(gen, data, plan, draw_labels(n_syn), params, device, labelled)
    info = {
        "method": TITLE, "params": asdict(params), "steps": step,
        "length_scale": plan.length_scale,
        # Which matmul path ran (bf16 is only fast on some hardware): see engine/core/device.py.
        "projection": projection if plan.kind == "image" else "float32",
        "projection_reason": projection_why if plan.kind == "image" else "tabular: float32",
        "length_scale_source": plan.length_scale_source,
        "labelled": labelled, "released_label_distribution": label_probs.cpu().tolist(),
    }
    if plan.kind == "tabular":
        info["numeric_bounds"] = plan.bounds
        info["numeric_bounds_source"] = plan.bounds_source
        info["category_domain_source"] = data.notes.get(
            "category_domain", "public metadata (fixed category lists)")
    result = TrainResult(x_syn, y_syn, report, info, seconds=time.perf_counter() - t0,
                         stopped=stopped)
    yield Event("done", info["steps"], total, report.epsilon_spent, result=result)


def generated_embedding(gen, plan: Plan, params: Params, labels: torch.Tensor,
                        label_probs: torch.Tensor, n_classes: int) -> torch.Tensor:
    """The generator's side of the loss: the embedding of a fresh batch with `labels`."""
    z = torch.randn(len(labels), params.latent, device=labels.device)
    if params.labels == "none":
        return plan.features(*_as_tuple(gen(z))).mean(0, keepdim=True).T
    onehot = F.one_hot(labels, n_classes).float()
    emb_gen = plan.features(*_as_tuple(gen(z, onehot))).T @ onehot / len(labels)
    if params.labels == "counts":
        # Labels are drawn with the released class shares p̃_c; dividing by them
        # turns each column into a class mean, matching the reweighted data side.
        emb_gen = emb_gen / label_probs[None, :]
    return emb_gen


def _release(plan: Plan, data: Dataset, params: Params, sigma: dict, device,
             labelled: bool) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """The only code that reads private records: release numeric bounds (if not public),
    the noisy mean embedding and, if asked, noisy class counts. Returns the embedding the
    generator will match, the label distribution it will sample from, and the raw noisy
    statistics as released ({release name: tensor}; engine/methods/dpmerf/audit.py audits
    those and checks that the first two are `_post_process` of them, nothing else).

    Batch-safe: where the module's `gaussian_noise` returns a leading trials axis (the
    audit), every output carries it."""
    m, n_classes = data.n_train, data.n_classes
    if plan.private_bounds_cols:
        cols = plan.private_bounds_cols
        released = dp_bounds.release_bounds(plan.x[:, cols].double().numpy(),
                                            noise_std=sigma["numeric bounds histogram"],
                                            dates=plan.private_dates or None,
                                            masses=plan.private_masses or None)
        for j, b in zip(cols, released):
            plan.bounds[j] = b
    x = plan.x
    if plan.kind == "tabular":
        lo = torch.tensor([b[0] for b in plan.bounds], dtype=torch.float32)
        hi = torch.tensor([b[1] for b in plan.bounds], dtype=torch.float32)
        span = torch.where(hi > lo, hi - lo, torch.ones_like(hi))
        x = ((x - lo) / span).clamp(0, 1)  # into the public [0,1] box
        if plan.x_cat is not None:
            x = torch.cat([x, plan.x_cat], 1)
    y_train = torch.as_tensor(data.y_train)
    y_onehot = F.one_hot(y_train, n_classes).float() if labelled else torch.ones(m, 1)
    d_num, has_cat = plan.x.shape[1], plan.x_cat is not None

    def feature_fn(xb):  # the same map the generator's samples go through
        if plan.kind == "image":
            return plan.features(xb)
        return plan.features(xb[:, :d_num], xb[:, d_num:] if has_cat else None)

    emb = fx.chunked_embedding(x.to(device), y_onehot.to(device), feature_fn)
    std = sigma["mean embedding"]
    # Snapped to the noise's public grid and added in float64, the sum is exact: DP as
    # computed (engine/privacy/noise.py; float64 on the CPU, which every device can hand back).
    out = {"mean embedding": snap(emb.cpu(), std) + gaussian_noise(emb.shape, std,
                                                                     dtype=torch.float64)}
    if params.labels == "counts":
        out["class counts"] = _noisy_counts(y_train, n_classes, sigma["class counts"])
    plan.x = plan.x_cat = None  # nothing after the release may see private records
    emb, label_probs = _post_process(out, m, n_classes)
    return emb.to(device), label_probs.to(device), out


def _post_process(released: dict, m: int, n_classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The embedding and label distribution from the released statistics alone (public m):
    with class counts, each class column is reweighted to a per-class mean, so each class
    counts equally, and labels follow the released shares; else labels are uniform."""
    emb = released["mean embedding"].float()
    if "class counts" not in released:
        return emb, torch.full((n_classes,), 1.0 / n_classes)
    noisy = released["class counts"].clamp(min=1.0)
    emb = emb * (m / noisy.float()).unsqueeze(-2)
    return emb, (noisy / noisy.sum(-1, keepdim=True)).float()


def _noisy_counts(y_train: torch.Tensor, n_classes: int, std: float) -> torch.Tensor:
    """The class-counts release: counts + N(0, std²), sensitivity fx.COUNTS_SENSITIVITY."""
    counts = torch.bincount(y_train, minlength=n_classes).double()
    return counts + gaussian_noise(counts.shape, std, dtype=torch.float64)


def _make_generator(plan: Plan, data: Dataset, params: Params, n_labels: int):
    if plan.kind == "image":
        return ConvCondGenerator(data.image_shape, n_labels, latent=params.latent,
                                 hidden=params.gen_hidden, channels=tuple(params.gen_channels),
                                 upsample=params.upsample)
    _, _, sizes = tabular_parts(data)
    return TabularGenerator(len(plan.bounds), sizes, n_labels, latent=params.latent)


def _as_tuple(out) -> tuple:
    """Image generators return a tensor, tabular ones (numeric, categorical)."""
    return out if isinstance(out, tuple) else (out,)


@torch.no_grad()
def _to_records(gen, data: Dataset, plan: Plan, labels: torch.Tensor, params: Params,
                device, labelled: bool, chunk: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Generate records in the dataset's own domain (images in [0,1]; tabular raw units).

    The generator samples in eval mode: batch norm uses its running statistics, so each
    record depends only on its own z and label, and a low temperature really shrinks z
    (in training mode batch norm would rescale it back).
    """
    was_training = gen.training
    gen.eval()
    try:
        return _draw_records(gen, data, plan, labels, params, device, labelled, chunk)
    finally:
        gen.train(was_training)


def _draw_records(gen, data, plan, labels, params, device, labelled, chunk):
    """_to_records' body: chunks of z through the generator, mapped to the data's domain."""
    n_classes = data.n_classes
    xs = []
    for start in range(0, len(labels), chunk):
        lab = labels[start:start + chunk].to(device)
        z = torch.randn(len(lab), params.latent, device=device) * params.sample_temperature
        onehot = F.one_hot(lab, n_classes).float() if labelled else None
        out = gen(z, onehot)
        if plan.kind == "image":
            xs.append(out.cpu().numpy())
            continue
        x_num, probs = out
        lo = np.array([b[0] for b in plan.bounds])
        hi = np.array([b[1] for b in plan.bounds])
        num = lo + x_num.cpu().numpy().astype(np.float64) * (hi - lo)
        codes = gen.sample_categories(probs).cpu().numpy() if probs is not None else None
        rec = np.zeros((len(lab), len(data.columns)))
        num_idx, cat_idx, _ = tabular_parts(data)
        rec[:, num_idx] = num
        if codes is not None:
            rec[:, cat_idx] = codes
        xs.append(rec)
    x = np.concatenate(xs)
    y = labels.cpu().numpy().astype(np.int64) if labelled else np.full(len(labels), -1, np.int64)
    # Tabular: back to the data's own columns, kinds enforced (post-processing).
    return x.astype(np.float32) if plan.kind == "image" else column_kinds.restore(x, data), y
