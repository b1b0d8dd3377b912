"""What a DataLens run will need before it starts: peak memory, and the refusal when the
machine has less.

Memory is counted from the shapes the trainer allocates (float32): the stacked teacher
parameters with their gradients and Adam's two moments, the gathered real partitions,
and the largest transient of one iteration (a teacher step's activations, or the
per-record gradients with their top-k and vote tensors), plus the student. Nothing here
reads private records: only the knobs and the data's public shape.
"""

from __future__ import annotations

import os
from dataclasses import fields

import torch

_F32 = 4
_REFUSE_SHARE = 0.9  # leave a tenth of the machine to the OS and the app itself


# A preview asks several times per rerun (the params, the preview, the cost) and building
# the nets takes ~50 ms at 28×28: each net's size is counted once per settings and shape.
_NUMEL: dict[tuple, int] = {}


def _numel(which: str, params, image_shape, n_classes) -> int:
    settings = tuple((f.name, tuple(v) if isinstance(v, list) else v)
                     for f in fields(params) for v in [getattr(params, f.name)])
    key = (which, settings, tuple(image_shape), int(n_classes))
    if key not in _NUMEL:
        from engine.methods.datalens.nets import make_student, make_teachers

        net = (make_teachers(params, image_shape, n_classes, n_teachers=1) if which == "teacher"
               else make_student(params, image_shape, n_classes))
        _NUMEL[key] = sum(t.numel() for t in net.parameters())
    return _NUMEL[key]


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
        "teacher state": 4 * _F32 * n * _numel("teacher", params, image_shape, n_classes),
        "real partitions": n * m * (_F32 * d + 8),
        "iteration transient": max(step, votes),
        "student": 4 * _F32 * _numel("student", params, image_shape, n_classes),
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
