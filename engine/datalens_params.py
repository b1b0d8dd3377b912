"""DataLens's knobs: the `Params` dataclass, its validation, and defaults derived from the
data's size and image shape (not from the dataset's name).

Nothing here touches private records: the derivation reads only n_train and the image
shape, which the neighbouring relation treats as public (replace-one, n public).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from engine import privacy
from engine.errors import InputError

TEACHERS = ("small", "official")  # a CPU-sized MLP ensemble; the official conv nets (GPU)
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
    lr_teacher: float = 2e-4  # official 1e-3; the prototype: LogReg .53 → .60 with 2e-4
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
        if self.teacher not in TEACHERS:
            bad("teacher", f"one of {', '.join(TEACHERS)}", self.teacher)
        if not _is_int(self.teacher_hidden) or self.teacher_hidden < 1:
            bad("teacher_hidden", "an int >= 1", self.teacher_hidden)
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
