"""What a DataLens run will cost before it starts: peak memory and seconds per iteration.

Memory is counted from the shapes the trainer allocates (float32): the stacked teacher
parameters with their gradients and Adam's two moments, the gathered real partitions,
and the largest transient of one iteration (a teacher step's activations, or the
per-record gradients with their top-k and vote tensors), plus the student.

Time is measured, not guessed (and re-measured when old or when the load changed:
engine/cost_cache.py): one teacher step and one round of votes are timed on a
small ensemble of the same shape on the same device, using random images (no private
data is read), and scaled linearly in the number of teachers — every teacher-side
operation is one batched pass over the teacher dimension, so its cost is linear in N.
The student's share (the fakes for each teacher step, its updates) does not depend on N
and is timed on a student of the run's shape.
"""

from __future__ import annotations

import os
import time

import torch

from engine.cost_cache import TimedCache

_TIMINGS = TimedCache()

_F32 = 4
# Enough teachers that per-call overhead and cache-resident weights do not flatter the
# timing: 96 small teachers timed ~30 % under a 4,000-teacher run, 384 ~20 % (Fashion-MNIST,
# 2-core CPU); the official ones are ten times larger, so fewer.
_PROBE_TEACHERS = {"small": 384, "official": 96}
_REFUSE_SHARE = 0.9  # leave a tenth of the machine to the OS and the app itself


def _teacher_numel(params, image_shape, n_classes) -> int:
    from engine.datalens_nets import make_teachers

    return sum(t.numel() for t in make_teachers(params, image_shape, n_classes, n_teachers=1).parameters())


def _student_numel(params, image_shape, n_classes) -> int:
    from engine.datalens_nets import make_student

    return sum(t.numel() for t in make_student(params, image_shape, n_classes).parameters())


def _activations_per_row(params, image_shape, n_classes) -> int:
    """float32 values one teacher keeps per scored record for the backward pass."""
    c, h, w = image_shape
    d = c * h * w
    if params.teacher == "official":
        c1, c2, f = params.teacher_widths
        a1 = c1 * ((h + 1) // 2) * ((w + 1) // 2)
        a2 = c2 * ((h + 3) // 4) * ((w + 3) // 4)
        # input copy in the grouped-conv layout, conv outputs, label maps, activations, norms
        return 2 * d + 4 * a1 + 6 * a2 + 6 * f + 2 * n_classes
    return 4 * params.teacher_hidden + 3 * n_classes


def memory_bytes(params, image_shape, n_classes, n_train) -> dict[str, int]:
    """Estimated peak bytes of a run, by part; "total" is their sum."""
    n, m = params.teachers, params.partition_size(n_train)
    batch = params.synthetic_batch(n_train)
    d = image_shape[0] * image_shape[1] * image_shape[2]
    k, voted = params.top_k, params.voted_coordinates(image_shape)
    rows = _activations_per_row(params, image_shape, n_classes)
    # the fakes, real and fakes concatenated into one pass, that pass centred
    # (teacher_center), and their activations
    step = _F32 * n * m * (5 * d + 2 * rows)
    # teacher_votes: the input gradient, the pooled descent, its |·|, the zeroed int8
    # output, top-k values (4) and indices (8), the gathered, clipped, p, u values (4
    # each), int64 signs, then int8 votes (without pooling the descent is the gradient)
    pooled = _F32 * voted if params.vote_pool > 1 else 0
    votes = n * batch * (_F32 * d + pooled + _F32 * voted + voted + rows * _F32
                         + k * (4 + 8 + 4 * 4 + 8 + 1))
    parts = {
        "teacher state": 4 * _F32 * n * _teacher_numel(params, image_shape, n_classes),
        "real partitions": n * m * (_F32 * d + 8),
        "iteration transient": max(step, votes),
        "student": 4 * _F32 * _student_numel(params, image_shape, n_classes),
    }
    parts["total"] = sum(parts.values())
    return parts


def machine_memory(device: torch.device) -> int:
    """Total memory of the device the run would use: GPU memory on CUDA, else RAM."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[1]
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def refusal(need: int, device: torch.device) -> str | None:
    """One line saying why the run cannot fit, with the fix; None when it fits."""
    have = machine_memory(device)
    if need <= _REFUSE_SHARE * have:
        return None
    where = "GPU" if device.type == "cuda" else "machine"
    return (f"DataLens needs ~{need / 1e9:.1f} GB, this {where} has {have / 1e9:.0f} GB: "
            f"use fewer teachers, fewer records per teacher, or teacher='small'.")


def seconds_per_iteration(params, image_shape, n_classes, n_train, device: torch.device) -> dict[str, float]:
    """{"teacher step", "votes", "student", "iteration", "first iteration", "per sample"} in
    seconds: the teacher side measured on a small ensemble of the same shape on `device`
    and scaled to params.teachers; "teacher step" includes the student making that step's
    fakes, "student" is its updates toward one released aggregate, and "per sample" is
    one released image (the fakes' time per record)."""
    probe_n = min(params.teachers, _PROBE_TEACHERS[params.teacher])
    key = (params.teacher, params.teacher_hidden, tuple(params.teacher_widths), tuple(image_shape),
           n_classes, params.partition_size(n_train), params.synthetic_batch(n_train), params.top_k,
           params.vote_pool, probe_n, str(device))
    t_step, t_votes = _TIMINGS.get(("teacher", *key), lambda: _probe(*key))
    skey = (params.latent, tuple(params.student_widths), params.class_norm, tuple(image_shape),
            n_classes, params.partition_size(n_train), params.synthetic_batch(n_train), str(device))
    t_fakes, t_update = _TIMINGS.get(("student", *skey), lambda: _probe_student(*skey))
    scale = params.teachers / probe_n
    step, votes = t_step * scale + t_fakes, t_votes * scale
    student = params.student_steps * t_update
    return {"teacher step": step, "votes": votes, "student": student,
            "iteration": params.teacher_steps * step + votes + student,
            "first iteration": params.first_teacher_steps * step + votes + student,
            "per sample": t_fakes / (n_classes * params.partition_size(n_train))}


def _probe(teacher, hidden, widths, image_shape, n_classes, m, batch, top_k, pool, n, device_name):
    from dataclasses import replace

    from engine.datalens_params import Params
    from engine.datalens_votes import top_agg
    from engine.datalens_nets import make_teachers
    from engine.datalens_step import teacher_update, teacher_votes

    device = torch.device(device_name)
    p = replace(Params(), teacher=teacher, teacher_hidden=hidden, teacher_widths=widths, vote_pool=pool)
    gen = torch.Generator(device=device).manual_seed(0)
    teachers = make_teachers(p, image_shape, n_classes, n_teachers=n).to(device)
    opt = torch.optim.Adam(teachers.parameters(), 1e-4, fused=True)
    x = torch.rand(n, m, *image_shape, device=device)
    y = torch.randint(0, n_classes, (n, m), device=device)
    x_syn = torch.rand(batch, *image_shape, device=device)
    y_syn = torch.randint(0, n_classes, (batch,), device=device)

    t_step = _timed(lambda: teacher_update(teachers, opt, x, y, x.flip(1)), device)
    # votes and their aggregate (σ = 1 here: a timing of random votes on random images)
    k = min(top_k, p.voted_coordinates(image_shape))
    t_votes = _timed(lambda: top_agg(teacher_votes(teachers, x_syn, y_syn, k, 1e-5, gen, pool), 1.0, 0.5),
                     device)
    return t_step, t_votes


def _timed(fn, device: torch.device) -> float:
    """Seconds per call of fn, after one warm-up call (allocations, Adam's state, kernels)."""
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(2):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - t0) / 2


def _probe_student(latent, widths, class_norm, image_shape, n_classes, m, batch, device_name) -> tuple[float, float]:
    """(seconds for the fakes of one teacher step: the student on n_classes·m records
    without gradients; seconds for one student update on `batch` records). At 28×28 the
    student's share is ~0.5 s of a 4,000-teacher iteration on a 2-core CPU."""
    import torch.nn.functional as F

    from engine.datalens_nets import Student, sample_latent

    device = torch.device(device_name)
    gen = torch.Generator(device=device).manual_seed(0)
    student = Student(latent, n_classes, image_shape, widths, class_norm=class_norm).to(device)
    opt = torch.optim.Adam(student.parameters(), 1e-3, betas=(0.5, 0.999))
    y_all = torch.arange(n_classes, device=device).repeat_interleave(m)
    y = torch.arange(batch, device=device) % n_classes
    target = torch.rand(batch, *image_shape, generator=gen, device=device)

    def fakes():
        with torch.no_grad():
            student(sample_latent(len(y_all), latent, gen=gen, device=device), y_all)

    def update():
        loss = F.mse_loss(student(sample_latent(batch, latent, gen=gen, device=device), y), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return _timed(fakes, device), _timed(update, device)
