"""What a DataLens run will take before it starts: seconds per iteration (its memory is
engine/datalens_memory.py).

Time is measured, not guessed (and re-measured when old or when the load changed:
engine/cost_cache.py): one teacher step and one round of votes are timed on a
small ensemble of the same shape on the same device, using random images (no private
data is read), and scaled linearly in the number of teachers — every teacher-side
operation is one batched pass over the teacher dimension, so its cost is linear in N.
The student's share (the fakes for each teacher step, its updates) does not depend on N
and is timed on a student of the run's shape.
"""

from __future__ import annotations

import time

import torch

from engine.cost_cache import TimedCache

_TIMINGS = TimedCache()

# Enough teachers that per-call overhead and cache-resident weights do not flatter the
# timing: 96 small teachers timed ~30 % under a 4,000-teacher run, 384 ~20 % (Fashion-MNIST,
# 2-core CPU); the official ones are ten times larger, so fewer.
_PROBE_TEACHERS = {"small": 384, "official": 96}


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
