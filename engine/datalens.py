"""DataLens (Wang et al., CCS 2021): a PATE-style DP generator with compressed teacher votes.

Algorithm 1 — N teacher discriminators, teacher i trained only on part i of a disjoint
partition of the private training set; a student generator that never sees data. Per
iteration: the teachers take `teacher_steps` steps on real vs synthetic; every teacher
computes the gradient of its generator loss w.r.t. each of `batch` synthetic records;
Algorithm 2 (`topk_sto_sign`) turns each gradient into a k-sparse ±1 vote vector;
Algorithm 3 (`top_agg`) sums the votes, adds Gaussian noise and thresholds; the student
moves toward G(z) + γ·ĝ with an MSE loss.

Privacy assumption (replace-one neighbours): one private record lives in exactly one
teacher's partition (`partition` is disjoint), so changing it changes at most that
teacher's vote vector for each synthetic record: two k-sparse ±1 vectors differ by at
most 2√k in L2. Each step therefore releases `batch` Gaussian mechanisms with
sensitivity 2√k and std σ; `engine.privacy` composes them and training stops before the
step that would exceed ε. Thresholding and the student update are post-processing.
Noise comes from `engine.privacy.gaussian_noise` only (OS entropy, never the seed).
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import asdict, dataclass, replace
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from engine import privacy
from engine.errors import InputError
from engine.events import Event, TrainResult

TITLE = "DataLens"

_DIGITS_HINT = (
    "DataLens needs many records per teacher: on digits (1,437 training images) it stays "
    "near chance at epsilon=1 whatever the settings (LogReg about .3 at epsilon=10), "
    "while DP-MERF reaches about .8 at epsilon=1. That is the expected teaching point, not a bug."
)


_RECORDS_PER_TEACHER = 15  # the paper's 60,000 / 4,000
_MAX_TEACHERS = 4000  # the paper's; more cost time linearly for little gain at ε=1
_DEFAULT_MEMORY = 8e9  # defaults stay under this estimate; users may go higher
_BUILTIN_SIZES = {"digits": (1437, (1, 8, 8)), "mnist": (60000, (1, 28, 28)),
                  "fashion_mnist": (60000, (1, 28, 28))}


@dataclass(frozen=True)
class Params:
    """DataLens knobs. Class defaults are the paper's (Fashion-)MNIST setting at ε=1 with
    small teachers; `derived` sizes them for other data."""

    teachers: int = 4000  # more teachers = more votes against the same noise
    top_k: int = 200  # votes per teacher per record; sensitivity 2√k
    sigma: float = 5000.0  # std of the Gaussian noise on each vote sum
    clip: float = 1e-5  # c; gradients are batch means, hence tiny (official code)
    beta: float = 0.7  # keep a coordinate when |noisy votes| ≥ β·N
    gamma: float = 1.0  # step toward G(z)+γ·ĝ; Adam makes its scale nearly irrelevant
    latent: int = 50  # z ~ U(−1, 1)^latent
    batch: int | None = None  # synthetic records per step; None = partition size (official)
    teacher_steps: int = 2  # teacher updates per iteration (official: 2)
    first_teacher_steps: int = 10  # in the first iteration (official: 10)
    lr_teacher: float = 2e-4  # official 1e-3; DESIGN's prototype learned better with 2e-4
    lr_student: float = 1e-3
    max_steps: int = 300  # cap on iterations; the fixed step count when ε = inf
    accountant: str = "exact"  # "exact" (tight) or "rdp" (the paper's kind of count)
    probe_every: int = 0  # quick downstream probe every n steps; 0 = never
    sample_every: int = 5  # attach a sample grid to every n-th train event
    teacher: str = "small"  # "small" (MLP, fits a CPU) or "official" (conv, for a GPU)
    teacher_hidden: int = 64  # hidden units of a small teacher
    teacher_widths: tuple = (11, 42, 256)  # official teacher: conv1, conv2, FC channels
    student_widths: tuple = (1024, 128)  # FC width, deconv channels (official)
    records_per_teacher: int | None = None  # cap per teacher; None = all (n_train // teachers)

    @classmethod
    def for_dataset(cls, name: str) -> "Params":
        """Defaults for a built-in dataset, derived from its size and image shape (the same
        rule as `for_data`); a name without a known size gets the paper's setting."""
        size = _BUILTIN_SIZES.get(name)
        return cls.derived(*size) if size else cls()

    @classmethod
    def for_data(cls, dataset) -> "Params":
        """Defaults derived from this dataset's n_train and image shape (e.g. a user's NPZ)."""
        if dataset.kind != "image" or dataset.image_shape is None:
            return cls()  # validate() explains that DataLens needs images
        return cls.derived(dataset.n_train, tuple(dataset.image_shape))

    @classmethod
    def derived(cls, n_train: int, image_shape: tuple[int, int, int]) -> "Params":
        """Settings that scale with the data, anchored on the paper's 60,000 28×28 images:
        15 records per teacher and up to 4,000 teachers (fewer when memory would exceed
        _DEFAULT_MEMORY); top-k a quarter of the pixels (200 of 784); σ = 1.25·N and
        β = 0.7, the paper's noise-to-teachers ratio, so the noisy vote sums keep the
        paper's signal-to-noise whatever N is — and a small N then buys few steps at a
        small ε, which is the honest answer for small data. Small images get the smaller
        student."""
        from engine.datalens_cost import memory_bytes

        c, h, w = image_shape
        d = c * h * w
        base = cls(top_k=max(1, min(d, round(200 * d / 784))), records_per_teacher=_RECORDS_PER_TEACHER)
        if d <= 256:
            base = replace(base, latent=20, student_widths=(128, 32), first_teacher_steps=5)
        teachers = max(1, min(_MAX_TEACHERS, n_train // _RECORDS_PER_TEACHER))
        while teachers > 1:  # memory is linear in the teachers at a fixed part size
            need = memory_bytes(replace(base, teachers=teachers), image_shape, 10, n_train)["total"]
            if need <= _DEFAULT_MEMORY:
                break
            teachers = max(1, int(teachers * 0.95 * _DEFAULT_MEMORY / need))
        return replace(base, teachers=teachers, sigma=float(max(1, round(1.25 * teachers))))

    def validate(self, dataset) -> "Params":
        def bad(name, rule, value):
            raise InputError(f"The '{name}' parameter of DataLens must be {rule}. Got {value!r} instead.")

        if dataset.kind != "image" or dataset.image_shape is None:
            raise InputError(f"DataLens here supports image datasets only; {dataset.name!r} is "
                             f"{dataset.kind}. Use DP-MERF for tabular data.")
        c, h, w = dataset.image_shape
        if h % 4 or w % 4:
            raise InputError(f"DataLens's generator needs image sides divisible by 4; got {h}x{w}.")
        dim, n = c * h * w, dataset.n_train
        if not _is_int(self.teachers) or not 1 <= self.teachers <= n:
            bad("teachers", f"an int in [1, {n}] (the number of training records)", self.teachers)
        if not _is_int(self.top_k) or not 1 <= self.top_k <= dim:
            bad("top_k", f"an int in [1, {dim}] (the data dimension)", self.top_k)
        if not self.sigma > 0:
            bad("sigma", "a float > 0", self.sigma)
        if not self.clip > 0:
            bad("clip", "a float > 0", self.clip)
        if not 0 <= self.beta <= 1:
            bad("beta", "a float in [0, 1] (a fraction of the teachers)", self.beta)
        if not 0 < self.gamma <= 1e3:
            bad("gamma", "a float in (0, 1000]", self.gamma)
        for name in ("latent", "teacher_steps", "first_teacher_steps", "max_steps", "sample_every"):
            if not _is_int(getattr(self, name)) or getattr(self, name) < 1:
                bad(name, "an int >= 1", getattr(self, name))
        if not _is_int(self.probe_every) or self.probe_every < 0:
            bad("probe_every", "an int >= 0 (0 = never)", self.probe_every)
        for name in ("lr_teacher", "lr_student"):
            if not 0 < getattr(self, name) < 1:
                bad(name, "a float in (0, 1)", getattr(self, name))
        if self.accountant not in privacy.ACCOUNTANTS:
            bad("accountant", f"one of {', '.join(privacy.ACCOUNTANTS)}", self.accountant)
        m = self.partition_size(n)
        if self.records_per_teacher is not None and (not _is_int(self.records_per_teacher)
                                                     or self.records_per_teacher < 1):
            bad("records_per_teacher", "an int >= 1 or None (= all records)", self.records_per_teacher)
        if self.batch is not None and (not _is_int(self.batch) or self.batch < 1):
            bad("batch", "an int >= 1 or None (= partition size)", self.batch)
        if m < 1:
            bad("teachers", f"at most {n} so that each teacher gets a record", self.teachers)
        if len(self.teacher_widths) != 3 or len(self.student_widths) != 2 or \
                min(*self.teacher_widths, *self.student_widths) < 1:
            bad("teacher_widths/student_widths", "3 and 2 positive ints", (self.teacher_widths, self.student_widths))
        return self

    def partition_size(self, n_train: int) -> int:
        """Records per teacher: n_train // teachers, capped at records_per_teacher."""
        return min(self.records_per_teacher or n_train, n_train // self.teachers)

    def synthetic_batch(self, n_train: int) -> int:
        return self.batch or self.partition_size(n_train)


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


# ------------------------------------------------------------------ Algorithms 2–3


def partition(n_records: int, n_teachers: int, seed: int = 0, size: int | None = None) -> np.ndarray:
    """Disjoint equal parts: (n_teachers, size) record indices, each record at most once.

    `size` defaults to n_records // n_teachers; the remainder is left unused (equal sizes
    keep the teachers stackable). A random permutation split into blocks can never put a
    record in two teachers — the official code's overlap broke the 2√k bound. The seed is
    model randomness, not DP noise.
    """
    size = size or n_records // n_teachers
    if n_teachers < 1 or size < 1 or size * n_teachers > n_records:
        raise InputError(f"cannot split {n_records} records into {n_teachers} parts of {size}.")
    perm = np.random.default_rng(seed).permutation(n_records)
    return perm[: n_teachers * size].reshape(n_teachers, size)


def topk_sto_sign(grads: torch.Tensor, k: int, c, *, gen: torch.Generator | None = None) -> torch.Tensor:
    """Algorithm 2 on the last dimension: keep the k largest |g|, clip to [−c, c], and
    replace each kept g by +1 with probability ½ + g/(2c), else −1.

    Returns an int8 tensor of grads' shape with exactly k nonzeros (±1) per vector;
    E[vote · c] = g for |g| ≤ c. `c` is a float or a tensor broadcastable to
    grads[..., :1] (per-teacher clip). Not DP noise: its randomness may come from a
    seeded generator.
    """
    _, idx = grads.abs().topk(k, dim=-1, sorted=False)  # order is irrelevant; unsorted is faster
    g = grads.gather(-1, idx)
    c = torch.as_tensor(c, dtype=g.dtype, device=g.device)
    p_plus = 0.5 + torch.clamp(g, -c, c) / (2 * c)
    u = torch.rand(g.shape, generator=gen, device=g.device, dtype=g.dtype)
    signs = torch.where(u < p_plus, 1, -1).to(torch.int8)
    return torch.zeros(grads.shape, dtype=torch.int8, device=grads.device).scatter_(-1, idx, signs)


def top_agg(votes: torch.Tensor, sigma: float, beta: float) -> torch.Tensor:
    """Algorithm 3's aggregation: ṽ = Σ_i votes_i + N(0, σ²) on every coordinate, then
    sign(ṽ_j) where |ṽ_j| ≥ β·N, else 0. `votes` is (N, ..., d); returns float (..., d).

    The sum is the only data-dependent release (sensitivity 2√k per record); the threshold
    is post-processing. σ = 0 means no noise (non-private runs only).
    """
    n = votes.shape[0]
    total = votes.sum(dim=0, dtype=torch.float32)
    noisy = total + privacy.gaussian_noise(total.shape, sigma, device=total.device)
    return torch.where(noisy.abs() >= beta * n, torch.sign(noisy), torch.zeros_like(noisy))


# ------------------------------------------------------------------- accounting


def _schedule(config, params: Params, n_train: int) -> tuple[int, int]:
    """(steps to run, records released per step). Stops before the budget is exceeded."""
    batch = params.synthetic_batch(n_train)
    if not config.private:
        return params.max_steps, batch
    steps = privacy.datalens_affordable_steps(
        epsilon=config.epsilon, delta=config.delta, top_k=params.top_k, sigma=params.sigma,
        batch=batch, accountant=params.accountant)
    return min(steps, params.max_steps), batch


def _spent(config, params: Params, steps: int, batch: int) -> float:
    if not config.private:
        return math.inf
    return privacy.datalens_epsilon(steps=steps, top_k=params.top_k, sigma=params.sigma,
                                    batch=batch, delta=config.delta, accountant=params.accountant)


def _params(config, data) -> Params:
    from engine.registry import make_params

    return make_params("datalens", data, config.params)


def privacy_preview(config, data) -> dict:
    """What the UI and CLI show before training: affordable steps, noise, accountant, the
    settings derived from the data, and the estimated cost; "refuse" (one line with the
    fix) when the estimate exceeds the machine."""
    from engine.datalens_cost import memory_bytes, refusal, seconds_per_iteration
    from engine.device import resolve_device

    p = _params(config, data)
    steps, batch = _schedule(config, p, data.n_train)
    out = {
        "affordable steps": steps,
        "noise multiplier": privacy.datalens_noise_multiplier(sigma=p.sigma, top_k=p.top_k)
        if config.private else 0.0,
        "accountant": privacy.ACCOUNTANTS[p.accountant] if config.private else "none (non-private run)",
        "teachers": p.teachers,
        "records per teacher": p.partition_size(data.n_train),
        "synthetic records per step": batch,
        "vote threshold": p.beta * p.teachers,
    }
    device = resolve_device(config.device)
    need = memory_bytes(p, data.image_shape, data.n_classes, data.n_train)["total"]
    out["estimated memory (GB)"] = round(need / 1e9, 2)
    refuse = refusal(need, device)
    if refuse:
        out["refuse"] = refuse
        return out  # timing a run that cannot fit would itself not fit
    cost = seconds_per_iteration(p, data.image_shape, data.n_classes, data.n_train, device)
    out["estimated s / iteration"] = round(cost["iteration"], 3)
    out["estimated seconds"] = round(cost["first iteration"] + max(steps - 1, 0) * cost["iteration"], 1)
    if config.private and steps == 0:
        out["hint"] = "The budget does not afford one step: raise sigma or epsilon, or lower top_k/batch."
    elif not config.private and p.beta > 0.1:
        # Without noise few coordinates win a β·N majority of independent stochastic
        # votes, so the student barely moves; on digits β=0.05 reached LogReg .62.
        out["hint"] = ("Non-private run: lower beta (e.g. 0.05); with no noise to out-vote, "
                       "a high threshold drops almost every vote.")
    elif config.private and steps == p.max_steps:
        spent = _spent(config, p, steps, batch)
        out["hint"] = (f"max_steps ({p.max_steps}) stops the run at epsilon {spent:.3g}, below the "
                       f"target: lower sigma (paper at epsilon=10: sigma=900, beta=0.2) to spend the "
                       f"rest on less noise.")
    elif data.name == "digits":
        out["hint"] = _DIGITS_HINT
    return out


# --------------------------------------------------------------------- training


def train(config, data, device, stop) -> Iterator[Event]:
    """Algorithm 1. Yields "train" events (loss, ε spent, samples), optional "probe"
    events, and a final "done" event with n_synthetic labelled images."""
    from engine.datalens_nets import Student, make_teachers, sample_latent
    from engine.datalens_step import teacher_update, teacher_votes

    t0 = time.time()
    p = _params(config, data)
    total, batch = _schedule(config, p, data.n_train)
    n, k_cls = p.teachers, data.n_classes
    m = p.partition_size(data.n_train)
    device = torch.device(device)
    torch.manual_seed(config.seed)
    gen = torch.Generator(device=device).manual_seed(config.seed)  # model randomness only

    parts = partition(data.n_train, n, config.seed, m)  # (N, m), disjoint
    x_real = torch.as_tensor(data.x_train[parts], device=device)  # (N, m, c, h, w)
    y_real = torch.as_tensor(data.y_train[parts], device=device)  # (N, m)
    teachers = make_teachers(p, data.image_shape, k_cls, seed=config.seed).to(device)
    student = Student(p.latent, k_cls, data.image_shape, tuple(p.student_widths)).to(device)
    # One fused Adam over the stacked teacher tensors = N independent Adams, one kernel set.
    opt_t = torch.optim.Adam(teachers.parameters(), p.lr_teacher, betas=(0.5, 0.999), fused=True)
    opt_s = torch.optim.Adam(student.parameters(), p.lr_student, betas=(0.5, 0.999))
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
        votes = teacher_votes(teachers, x_syn, y_syn, p.top_k, p.clip, gen)
        g_hat = top_agg(votes, sigma, p.beta).view_as(x_syn)
        del votes
        # 4. student: move toward G(z) + γ·ĝ
        loss_s = F.mse_loss(x_syn, (x_syn + p.gamma * g_hat).detach())
        opt_s.zero_grad(set_to_none=True)
        loss_s.backward()
        opt_s.step()
        info_votes.append(float((g_hat != 0).float().mean()))

        eps = _spent(config, p, step, batch)
        samples = None
        if step % p.sample_every == 0 or step == total:
            samples = _sample(student, 100, p.latent, k_cls, gen, device)
        # Only the student loss (synthetic data only) is reported: the teachers' loss is a
        # statistic of the real partitions and is never released (issue 11).
        yield Event("train", step, total, eps, loss=float(loss_s.detach()), samples=samples,
                    metrics={"vote_density": info_votes[-1]})
        if probe and p.probe_every and step % p.probe_every == 0:
            xs, ys = _sample(student, min(2000, data.n_train), p.latent, k_cls, gen, device)
            yield Event("probe", step, total, eps, metrics=dict(probe(xs, ys, data)))

    n_out = config.n_synthetic or data.n_train
    x_out, y_out = _sample(student, n_out, p.latent, k_cls, gen, device)
    spent = _spent(config, p, step, batch) if step else 0.0
    priv = {
        "epsilon_target": config.epsilon,
        "epsilon_spent": spent,
        "delta": config.delta,
        "noise_multiplier": privacy.datalens_noise_multiplier(sigma=p.sigma, top_k=p.top_k) if config.private else 0.0,
        "accountant": privacy.ACCOUNTANTS[p.accountant] if config.private else "none (non-private run: no noise added)",
        "releases": [{"name": "teacher votes (one per synthetic record per step)",
                      "sensitivity": 2 * math.sqrt(p.top_k), "count": step * batch, "sigma": sigma}],
        "steps": step,
    }
    info = {
        "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(p).items()},
        "teachers": n, "records_per_teacher": m, "unused_records": data.n_train - n * m,
        "synthetic_batch": batch, "affordable_steps": total, "steps": step, "stopped": stopped,
        "mean_vote_density": float(np.mean(info_votes)) if info_votes else 0.0,
        "teacher_norm": "per-record layer norm with per-teacher affine (no batch statistics)",
        "teacher_conditioning": "label maps at every layer + one output per class",
    }
    if data.name == "digits":
        info["hint"] = _DIGITS_HINT
    result = TrainResult(x_out, y_out, priv, info, time.time() - t0)
    yield Event("done", step, total, spent, result=result,
                message="stopped early" if stopped else f"{step} steps")


def _sample(student, n, latent, k_cls, gen, device, chunk=1000):
    """n images with (near) uniform labels: balanced, in a seeded shuffled order."""
    from engine.datalens_nets import sample_latent

    y = torch.arange(n, device=device) % k_cls
    y = y[torch.randperm(n, generator=gen, device=device)]
    xs = []
    with torch.no_grad():  # BN stays in training mode (official); chunks keep stats sane
        for i in range(0, n, chunk):
            yy = y[i:i + chunk]
            if len(yy) == 1:  # BatchNorm needs two records in training mode
                xs.append(student(sample_latent(2, latent, gen=gen, device=device), yy.repeat(2))[:1])
            else:
                xs.append(student(sample_latent(len(yy), latent, gen=gen, device=device), yy))
    return torch.cat(xs).cpu().numpy().astype(np.float32), y.cpu().numpy().astype(np.int64)


def _quick_probe():
    try:
        from engine.evaluate import quick_probe
    except ImportError:
        return None
    return quick_probe
