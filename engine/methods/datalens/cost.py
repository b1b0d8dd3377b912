"""What a DataLens run will take before it starts: seconds per iteration (its memory is
engine/methods/datalens/memory.py).

Time is measured, not guessed (and re-measured when old or when the load changed:
engine/store/cost_cache.py): one teacher step and one round of votes are timed on a
small ensemble of the same shape on the same device, using random images (no private
data is read), and scaled linearly in the number of teachers — every teacher-side
operation is one batched pass over the teacher dimension, so its cost is linear in N.
The student's share (the fakes for each teacher step, its updates) does not depend on N
and is timed on a student of the run's shape.
"""

from __future__ import annotations

import time

import torch

from engine.store import cost_cache
from engine.store.cost_cache import TimedCache

_TIMINGS = TimedCache("datalens")  # on disk: engine/runs/cost_probe.py fills it for the web server

# Enough teachers that per-call overhead and cache-resident weights do not flatter the
# timing: 96 small teachers timed ~30 % under a 4,000-teacher run, 384 ~20 % (Fashion-MNIST,
# 2-core CPU); the official ones are ten times larger, so fewer.
_PROBE_TEACHERS = {"small": 384, "official": 96}


def estimate(config, data, params, device, *, threads: int | None = None, away=None) -> dict:
    """The preview's time keys (engine/methods/registry.estimate_cost): seconds per iteration and for the
    whole training (every affordable step, the released set sampled), corrected from
    finished runs; {} for a run its memory refuses (timing it would not fit either).
    With `away` (the web server) nothing is timed here: the cached timings, or the basis
    "measuring…" while the cost probe times them."""
    from engine.methods.datalens.accounting import schedule
    from engine.methods.datalens.memory import memory_bytes, refusal
    from engine.methods.preview import MEASURING

    if refusal(memory_bytes(params, data.image_shape, data.n_classes, data.n_train)["total"],
               device):
        return {}
    cost = seconds_per_iteration(params, data.image_shape, data.n_classes, data.n_train, device,
                                 threads=threads, away=away)
    if cost is None:
        return {cost_cache.BASIS_KEY: MEASURING}
    steps, _ = schedule(config, params, data.n_train)
    n_out = config.n_synthetic or data.n_train  # the released set, sampled after the last step
    seconds = (cost["first iteration"] + max(steps - 1, 0) * cost["iteration"]
               + n_out * cost["per sample"])
    return cost_cache.correct({"estimated s / iteration": round(cost["iteration"], 3),
                               "estimated seconds": round(seconds, 1)},
                              config.method, config.dataset,
                              data_options=config.data_options)


def run_memory_gb(config, data, params) -> float:
    """The registry's memory formula of a run (engine/runs/slots.py reads it): the
    process's baseline plus the nets, votes and data of engine/methods/datalens/memory.py."""
    from engine.core.processes import TORCH_BASELINE_GB
    from engine.methods.datalens.memory import memory_bytes

    need = memory_bytes(params, data.image_shape, data.n_classes, data.n_train)["total"]
    return TORCH_BASELINE_GB + need / 1e9


def seconds_per_iteration(params, image_shape, n_classes, n_train, device: torch.device, *,
                          threads: int | None = None, away=None) -> dict[str, float] | None:
    """{"teacher step", "votes", "student", "iteration", "first iteration", "per sample"} in
    seconds: the teacher side measured on a small ensemble of the same shape on `device`
    and scaled to params.teachers; "teacher step" includes the student making that step's
    fakes, "student" is its updates toward one released aggregate, and "per sample" is
    one released image (the fakes' time per record). Timings are cached per thread count;
    `away(cache, key)` answers from the cache instead of timing (None: not timed yet)."""
    threads = torch.get_num_threads() if threads is None else int(threads)
    probe_n = min(params.teachers, _PROBE_TEACHERS[params.teacher])
    key = (params.teacher, params.teacher_hidden, tuple(params.teacher_widths), tuple(image_shape),
           n_classes, params.partition_size(n_train), params.synthetic_batch(n_train), params.top_k,
           params.vote_pool, probe_n, str(device))
    skey = (params.latent, tuple(params.student_widths), params.class_norm, tuple(image_shape),
            n_classes, params.partition_size(n_train), params.synthetic_batch(n_train), str(device))
    if away is not None:
        teacher, student = away(_TIMINGS, ("teacher", *key, threads)), \
            away(_TIMINGS, ("student", *skey, threads))
        if teacher is None or student is None:
            return None
    else:
        teacher = _TIMINGS.get(("teacher", *key, threads), lambda: list(_probe(*key)))
        student = _TIMINGS.get(("student", *skey, threads), lambda: list(_probe_student(*skey)))
    (t_step, t_votes), (t_fakes, t_update) = teacher, student
    scale = params.teachers / probe_n
    step, votes = t_step * scale + t_fakes, t_votes * scale
    student = params.student_steps * t_update
    return {"teacher step": step, "votes": votes, "student": student,
            "iteration": params.teacher_steps * step + votes + student,
            "first iteration": params.first_teacher_steps * step + votes + student,
            "per sample": t_fakes / (n_classes * params.partition_size(n_train))}


def _probe(teacher, hidden, widths, image_shape, n_classes, m, batch, top_k, pool, n, device_name):
    from dataclasses import replace

    from engine.methods.datalens.params import Params
    from engine.methods.datalens.votes import top_agg
    from engine.methods.datalens.nets import make_teachers
    from engine.methods.datalens.step import teacher_update, teacher_votes

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

    from engine.methods.datalens.nets import Student, sample_latent

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
