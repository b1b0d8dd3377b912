"""DataLens (Wang et al., CCS 2021): a PATE-style DP generator with compressed teacher votes.

Algorithm 1 — N teacher discriminators, teacher i trained only on part i of a disjoint
partition of the private training set; a student generator that never sees data. Per
iteration: the teachers take `teacher_steps` steps on real vs synthetic; every teacher
computes the gradient of its generator loss w.r.t. each of `batch` synthetic records
(averaged over `vote_pool`×`vote_pool` pixel blocks: fewer coordinates, less noise each);
Algorithm 2 (`topk_sto_sign`) turns each gradient into a k-sparse ±1 vote vector;
Algorithm 3 (`top_agg`) sums the votes, adds Gaussian noise and thresholds; the student
moves toward G(z) + γ·ĝ with an MSE loss (`student_steps` Adam steps per released ĝ).
The released generator is the mean of the student's weights over the later steps,
sampled with z scaled by `sample_temperature`, its images blurred by `blur` pixels.

Privacy assumption (replace-one neighbours): one private record lives in exactly one
teacher's partition (`partition` is disjoint), so changing it changes at most that
teacher's vote vector for each synthetic record: two k-sparse ±1 vectors differ by at
most 2√k in L2. Each step therefore releases `batch` Gaussian mechanisms with
sensitivity 2√k and std σ (engine/methods/datalens/accounting.py); `engine.privacy.accountant` composes
them and training stops before the step that would exceed ε. Thresholding, the student
update, the weight average and sampling are post-processing. Algorithms 2–3 and their
noise (engine/privacy/noise.py: OS entropy, never the seed) are in engine/methods/datalens/votes.py.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from engine.privacy import accountant as privacy
from engine.methods.datalens import accounting
from engine.methods.datalens.params import TITLE, Params, small_data_warning  # noqa: F401  (TITLE, Params: the registry's contract)
from engine.methods.datalens.votes import partition, top_agg, unpool  # Algorithms 2–3
from engine.methods.events import Event, TrainResult

DATA_KINDS = ("image",)  # what it models: teachers are conv/MLP nets on images

# The method's other parts, found through engine/methods/registry.py (its checklist).
AUDIT = "engine.methods.datalens.audit"
COST = "engine.methods.datalens.cost"
# Fashion-MNIST is ~1,070 iterations over the gallery's six ε at ~3 s each on a 2-core
# CPU, about an hour: built only on request (python -m engine gallery --fashion-datalens).
GALLERY_SLOW_DATASETS = ("fashion_mnist",)
# Without noise, with nothing to out-vote, β = 0.5 drops almost every vote and the
# student barely moves; the Playground's hint says to lower β, and so does the gallery.
GALLERY_NONPRIVATE = {"beta": 0.05}
TINY_PARAMS = dict(teachers=60, records_per_teacher=5, top_k=6, sigma=80.0, beta=0.3, latent=8,
                   teacher_widths=[4, 8, 16], student_widths=[32, 8], first_teacher_steps=2,
                   teacher_steps=1, sample_every=2, max_steps=3)


def starting(params: Params) -> str:
    """What a run does before its first step (the live view): the teachers take a while."""
    return (f"building {params.teachers:,} teachers ({params.first_teacher_steps} updates "
            "each before the first student step)")

_TEACHER_NOTES = {
    "small": "MLP (pixels -> hidden, leaky ReLU -> one output per class), stacked over teachers",
    "official": "official conditional conv net (label maps at every layer, one output per class, "
                "per-record layer norm instead of batch norm)",
}

# ------------------------------------------------------------------- accounting


def _spent(config, params: Params, steps: int, batch: int) -> float:
    if not config.private:
        return math.inf
    return accounting.spent_epsilon(steps=steps, top_k=params.top_k, sigma=params.sigma,
                                    batch=batch, delta=config.delta, accountant=params.accountant)


def privacy_preview(config, p: Params, data) -> dict:
    """What the UI and CLI show before training: affordable steps, noise, accountant, the
    settings derived from the data, and the estimated cost; "refuse" (one line with the
    fix) when the estimate exceeds the machine. `p` are the run's validated Params."""
    from engine.methods.datalens.memory import memory_bytes, refusal
    from engine.core.device import resolve_device

    steps, batch = accounting.schedule(config, p, data.n_train)
    out = {
        "affordable steps": steps,
        "noise multiplier": accounting.noise_multiplier(sigma=p.sigma, top_k=p.top_k)
        if config.private else 0.0,
        "accountant": privacy.ACCOUNTANTS[p.accountant] if config.private else privacy.NON_PRIVATE,
        "teachers": p.teachers,
        "records per teacher": p.partition_size(data.n_train),
        "synthetic records per step": batch,
        "coordinates voted on": f"{p.voted_coordinates(data.image_shape)} "
                                f"({p.vote_pool}×{p.vote_pool} pixel blocks)",
        "vote threshold": p.beta * p.teachers,
    }
    warning = small_data_warning(config, p, steps, data.n_train)  # δ's: engine/methods/preview.py
    if warning:
        out["warning"] = warning
    # The memory is a formula; the time is timed where training happens (its COST
    # module's estimate, through engine/methods/registry.estimate_cost), never in the web server.
    need = memory_bytes(p, data.image_shape, data.n_classes, data.n_train)["total"]
    out["estimated memory (GB)"] = round(need / 1e9, 2)
    refuse = refusal(need, resolve_device(config.device))
    if refuse:
        out["refuse"] = refuse
        return out
    out["faster with"] = "fewer teachers, or a lower max_steps (fewer iterations)"
    if config.private and steps == 0:
        out["hint"] = "The budget does not afford one step: raise sigma or epsilon, or lower top_k/batch."
    elif not config.private and p.beta > 0.1:
        # Without noise few coordinates win a β·N majority of independent stochastic
        # votes, so the student barely moves; on digits β=0.05 reached LogReg .62.
        out["hint"] = ("Non-private run: lower beta (e.g. 0.05); with no noise to out-vote, "
                       "a high threshold drops almost every vote.")
    elif config.private and steps == p.max_steps and (
            spent := _spent(config, p, steps, batch)) < 0.95 * config.epsilon:
        # The defaults calibrate σ to spend ε at max_steps (Params.for_budget); a σ the
        # user set may still leave most of the budget unspent.
        out["hint"] = (f"max_steps ({p.max_steps}) stops the run at epsilon {spent:.3g}, below the "
                       f"target: lower sigma (paper at epsilon=10: sigma=900, beta=0.2) to spend the "
                       f"rest on less noise.")
    return out


# --------------------------------------------------------------------- training


def train(config, p: Params, data, device, stop) -> Iterator[Event]:
    """Algorithm 1. Yields "train" events (loss, ε spent, samples), optional "probe"
    events, and a final "done" event with n_synthetic labelled images. `p` are the
    run's validated Params (engine.methods.registry.make_params)."""
    from torch.optim.swa_utils import AveragedModel

    from engine.methods.datalens.nets import make_student, make_teachers, sample_latent
    from engine.methods.datalens.step import teacher_update, teacher_votes

    t0 = time.time()
    total, batch = accounting.schedule(config, p, data.n_train)
    n, k_cls = p.teachers, data.n_classes
    m = p.partition_size(data.n_train)
    device = torch.device(device)
    torch.manual_seed(config.seed)
    gen = torch.Generator(device=device).manual_seed(config.seed)  # model randomness only

    parts = partition(data.n_train, n, config.seed, m)  # (N, m), disjoint
    x_real = torch.as_tensor(data.x_train[parts], device=device)  # (N, m, c, h, w)
    y_real = torch.as_tensor(data.y_train[parts], device=device)  # (N, m)
    teachers = make_teachers(p, data.image_shape, k_cls, seed=config.seed).to(device)
    student = make_student(p, data.image_shape, k_cls).to(device)
    # One fused Adam over the stacked teacher tensors = N independent Adams, one kernel set.
    opt_t = torch.optim.Adam(teachers.parameters(), p.lr_teacher, betas=(0.5, 0.999), fused=True)
    opt_s = torch.optim.Adam(student.parameters(), p.lr_student, betas=(0.5, 0.999))
    # Each student step follows mostly noise (σ ≫ the vote sums' signal); the equal-weight
    # mean of its weights over the later steps keeps the drift and averages the noise
    # (docs/datalens.md: measurements on held-out Fashion-MNIST records).
    average, average_after = AveragedModel(student), int(p.average_from * total)

    def released():
        return average.module if step > average_after else student
    sigma = p.sigma if config.private else 0.0
    probe = _quick_probe()

    def fakes_for_teachers(z):
        # Official code: teacher i's fakes are G(z_b, y_ib) with its own real labels and
        # one shared z batch. With a shared z there are only k_cls·m distinct fakes, so
        # make those once and gather — exact, and cheap for 4,000 teachers.
        with torch.no_grad():
            zz = z.repeat(k_cls, 1)
            pool = student(zz, torch.arange(k_cls, device=device).repeat_interleave(m)).view(k_cls, m, *data.image_shape)
        return pool[y_real, torch.arange(m, device=device)]  # (N, m, c, h, w)

    step, stopped, info_votes = 0, False, []
    for step in range(1, total + 1):
        if stop is not None and stop.is_set():
            stopped, step = True, step - 1
            break
        z = sample_latent(max(m, batch), p.latent, gen=gen, device=device)
        # 1. teachers: real (own partition) vs fakes carrying the same labels
        for _ in range(p.first_teacher_steps if step == 1 else p.teacher_steps):
            teacher_update(teachers, opt_t, x_real, y_real, fakes_for_teachers(z[:m]))
        # 2–3. every teacher's compressed vote per synthetic record; noisy aggregate
        y_syn = torch.randint(0, k_cls, (batch,), generator=gen, device=device)
        x_syn = student(z[:batch], y_syn)  # (batch, c, h, w)
        votes = teacher_votes(teachers, x_syn, y_syn, p.top_k, p.clip, gen, p.vote_pool)
        g_hat = unpool(top_agg(votes, sigma, p.beta), p.vote_pool, data.image_shape)
        del votes
        # 4. student: move toward G(z) + γ·ĝ, student_steps times; the target is fixed
        # once ĝ is released, so extra steps read only released values (post-processing)
        target = (x_syn + p.gamma * g_hat).detach()
        for extra in range(p.student_steps):
            if extra:
                x_syn = student(z[:batch], y_syn)
            loss_s = F.mse_loss(x_syn, target)
            opt_s.zero_grad(set_to_none=True)
            loss_s.backward()
            opt_s.step()
        if step > average_after:
            average.update_parameters(student)
        info_votes.append(float((g_hat != 0).float().mean()))

        eps = _spent(config, p, step, batch)
        samples = None
        if step % p.sample_every == 0 or step == total:
            samples = _sample(released(), 100, p, k_cls, gen, device)
        # Only the student loss (synthetic data only) is reported: the teachers' loss is a
        # statistic of the real partitions and is never released (issue 11).
        yield Event("train", step, total, eps, loss=float(loss_s.detach()), samples=samples,
                    metrics={"vote_density": info_votes[-1]})
        if probe and p.probe_every and step % p.probe_every == 0:
            xs, ys = _sample(released(), min(2000, data.n_train), p, k_cls, gen, device)
            yield Event("probe", step, total, eps, metrics=dict(probe(xs, ys, data)))

    n_out = config.n_synthetic or data.n_train
    x_out, y_out = _sample(released(), n_out, p, k_cls, gen, device)
    report = accounting.run_report(config, p, steps=step, batch=batch)
    info = {
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(p).items()},
        "teachers": n, "records_per_teacher": m, "unused_records": data.n_train - n * m,
        "synthetic_batch": batch, "affordable_steps": total, "steps": step,
        "mean_vote_density": float(np.mean(info_votes)) if info_votes else 0.0,
        "teacher": _TEACHER_NOTES[p.teacher],
    }
    hint = small_data_warning(config, p, total, data.n_train)
    if hint:
        info["hint"] = hint
    result = TrainResult(x_out, y_out, report, info, time.time() - t0, stopped=stopped)
    yield Event("done", step, total, report.epsilon_spent, result=result,
                message="stopped early" if stopped else f"{step} steps")


def _sample(student, n, p: Params, k_cls, gen, device, chunk=1000):
    """n images with (near) uniform labels: balanced, in a seeded shuffled order, with
    z scaled by p.sample_temperature and blurred by p.blur (post-processing: it reads
    only the student)."""
    from engine.methods.datalens.nets import sample_latent

    def z(count):
        return sample_latent(count, p.latent, gen=gen, device=device) * p.sample_temperature

    y = torch.arange(n, device=device) % k_cls
    y = y[torch.randperm(n, generator=gen, device=device)]
    xs = []
    with torch.no_grad():  # BN stays in training mode (official); chunks keep stats sane
        for i in range(0, n, chunk):
            yy = y[i:i + chunk]
            xs.append(blur(student(z(len(yy)), yy), p.blur))
    return torch.cat(xs).cpu().numpy().astype(np.float32), y.cpu().numpy().astype(np.int64)


def blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Gaussian blur of (n, c, h, w) images, σ in pixels (0 = unchanged). The student
    learns from noisy votes on pixel blocks and its images carry a speckle that a
    classifier trained on them fits instead of the shapes (docs/datalens.md: blurring the released
    samples)."""
    if sigma <= 0:
        return x
    from torchvision.transforms.v2.functional import gaussian_blur

    radius = min(math.ceil(3 * sigma), min(x.shape[-2:]) - 1)  # reflect padding needs < side
    return gaussian_blur(x, [2 * radius + 1] * 2, [sigma] * 2)


def _quick_probe():
    try:
        from engine.evaluation.utility import quick_probe
    except ImportError:
        return None
    return quick_probe
