"""What a DP-MERF run will cost on this machine, before it starts: steps, seconds, memory.

Seconds come from a tiny timed calibration, not from a table: the first preview of a
shape (features, batch, generator, projection precision, device) builds the same
generator and random-feature map the run will use and times a few real training steps
on a zero target, and a chunk of the release matmul and of sampling once warm (a cold
chunk, scaled to 60,000 records, overestimated Fashion-MNIST runs); the rates are cached,
on disk, until they are old or the machine's load changed (engine/store/cost_cache.py), and the
seconds are corrected by the measured / timed ratio of this store's finished runs. The
calibration touches no private data (the release chunk is uniform noise of the data's
shape), so it costs no privacy. Measured "now": on a loaded machine the estimate is
slower, as the run will be. Timing is training, which the web server never does: there
the rates come from engine/runs/cost_probe.py's process (`away`); the CLI and the
trainers time in their own process.

Memory is a formula, not a measurement: the largest arrays the run holds at once (the
training set, the release chunk's features, one step's features and their gradients,
the synthetic set), plus the process' PyTorch baseline.
"""

from __future__ import annotations

import math
import time

import torch

from engine.core.processes import TORCH_BASELINE_GB
from engine.store import cost_cache
from engine.methods.dpmerf import method as dpmerf
from engine.methods.dpmerf.plan import make_plan
from engine.data.catalog import Dataset
from engine.methods.preview import MEASURING

_RATES = cost_cache.TimedCache("dpmerf")  # on disk: engine/runs/cost_probe.py fills it
_WARMUP, _MIN_STEPS, _MAX_STEPS, _MIN_SECONDS = 2, 7, 60, 1.0  # timed training steps
_CHUNK = 1024  # rows timed for the release and the sampling
_REPEATS = 2  # warm timings of the release and sampling chunks; the fastest is kept


def _rate_key(data: Dataset, params: "dpmerf.Params", projection: str, device,
              threads: int) -> tuple:
    return (data.kind, tuple(data.x_train.shape[1:]), data.n_classes, params.n_features,
            params.batch_size, params.latent, params.gen_hidden, tuple(params.gen_channels),
            params.upsample, params.labels, params.pixel_weight, projection, str(device),
            threads)


def measured_rates(data: Dataset, params: "dpmerf.Params", device, *,
                   threads: int | None = None, away=None) -> dict[str, float] | None:
    """Seconds per training step, per released record and per sampled record (cached),
    for a run with `threads` torch threads (default: this process's). `away(cache, key)`
    (engine/runs/cost_probe.away, the web server) answers instead of timing here: the cached
    rates, or None while another process times them."""
    projection, _ = dpmerf.projection_precision(params.projection, device)
    key = _rate_key(data, params, projection, device,
                    torch.get_num_threads() if threads is None else threads)
    if away is not None:
        return away(_RATES, key)
    return _RATES.get(key, lambda: _calibrate(data, params, projection, torch.device(device)))


def _warm_min(work, repeats: int = _REPEATS) -> float:
    """Seconds of `work()` once warm: one untimed call, then the fastest of `repeats`.
    The first call of a shape pays for allocations and kernel set-up (6× a warm call for
    Fashion-MNIST's release chunk); the run pays that once for 60,000 records, so scaling
    a cold chunk by the record count overestimated the release (issue 32: +47 %)."""
    work()
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - t)
    return best


@torch.no_grad()
def _time_release(plan, rows: torch.Tensor, x_cat) -> float:
    def work():
        feats = plan.features(rows) if plan.kind == "image" else plan.features(rows, x_cat)
        float(feats.sum())  # forces the work on lazy devices
    return _warm_min(work) / len(rows)


def _calibrate(data: Dataset, params, projection: str, device: torch.device) -> dict[str, float]:
    gen_seed = torch.Generator().manual_seed(0)  # public random numbers only
    plan = make_plan(data, params, gen_seed, projection)
    plan.w = plan.w.to(device)
    n = min(_CHUNK, data.n_train)
    noise_rows = torch.rand(n, *plan.x.shape[1:], device=device)  # no private records
    x_cat = (torch.zeros(n, plan.x_cat.shape[1], device=device)
             if plan.x_cat is not None else None)
    plan.x = plan.x_cat = None
    if plan.bounds is not None:  # bounds the run would release: any public stand-in times the same
        plan.bounds = [b if b is not None else (0.0, 1.0) for b in plan.bounds]
    release_s = _time_release(plan, noise_rows, x_cat)

    labelled = params.labels != "none"
    k = data.n_classes
    gen = dpmerf._make_generator(plan, data, params, k if labelled else 0).to(device)
    opt = torch.optim.Adam(gen.parameters(), lr=params.lr)
    probs = torch.full((k,), 1.0 / k, device=device)
    labels = torch.multinomial(probs, params.batch_size, replacement=True)
    cols = k if labelled else 1
    target = None
    times: list[float] = []
    start = time.perf_counter()
    # The first steps warm up allocators and kernels (several times slower): skip two,
    # then time until both enough steps and enough wall time have passed.
    while len(times) < _MIN_STEPS or (time.perf_counter() - start < _MIN_SECONDS
                                      and len(times) < _MAX_STEPS):
        t = time.perf_counter()
        emb = dpmerf.generated_embedding(gen, plan, params, labels, probs, k)
        if target is None:
            target = torch.zeros(emb.shape[0], cols, device=device)
        loss = ((target - emb) ** 2).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        float(loss.detach())
        times.append(time.perf_counter() - t)
    times = times[_WARMUP:]
    sample_labels = torch.multinomial(probs, n, replacement=True)
    sample_s = _warm_min(lambda: dpmerf._to_records(gen, data, plan, sample_labels, params,
                                                    device, labelled)) / n
    return {"step": sorted(times)[len(times) // 2], "release_per_record": release_s,
            "sample_per_record": sample_s}


def estimate(config, data: Dataset, params, device, *, threads: int | None = None,
             away=None) -> dict:
    """The preview's cost keys: steps, seconds (whole training: release, steps,
    sampling; not the evaluation) and memory in GB. Without rates yet (`away` given and
    the probe still running) the seconds are missing and the basis says "measuring…"."""
    m = data.n_train
    steps = max(1, math.ceil(params.epochs * m / params.batch_size))
    n_syn = config.n_synthetic or m
    cost = {"estimated steps": steps, "estimated memory (GB)": memory_gb(data, params, n_syn)}
    rates = measured_rates(data, params, device, threads=threads, away=away)
    if rates is None:
        return {**cost, cost_cache.BASIS_KEY: MEASURING}
    seconds = (m * rates["release_per_record"] + steps * rates["step"]
               + n_syn * rates["sample_per_record"])
    return cost_cache.correct({**cost, "estimated seconds": float(seconds),
                               "estimated s / step": float(rates["step"])},
                              config.method, config.dataset,
                              data_options=config.data_options)


def run_memory_gb(config, data: Dataset, params) -> float:
    """The registry's memory formula of a run (engine/runs/slots.py reads it)."""
    return memory_gb(data, params, config.n_synthetic or data.n_train)


def memory_gb(data: Dataset, params, n_synthetic: int) -> float:
    """Peak resident memory of a run, roughly (see the module docstring)."""
    f32 = 4
    d = int(math.prod(data.x_train.shape[1:]))
    half = params.n_features // 2
    data_b = data.n_train * d * f32
    w_b = d * half * f32
    release_b = min(4096, data.n_train) * half * f32 * 4  # x·W, cos, sin, concatenated
    step_b = params.batch_size * half * f32 * 8  # the same, kept for backward, + grads
    synth_b = n_synthetic * d * f32 * 3  # chunks, their concatenation, the saved copy
    return TORCH_BASELINE_GB + (data_b + w_b + max(release_b, step_b) + synth_b) / 1e9
