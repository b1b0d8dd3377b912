"""DataLens's knobs: the `Params` dataclass, its validation, and defaults derived from the
data's size and image shape (not from the dataset's name).

Nothing here touches private records: the derivation reads only n_train and the image
shape, which the neighbouring relation treats as public (replace-one, n public).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from engine.privacy import accountant as privacy
from engine.core.errors import InputError
from engine.methods.knobs import check_knobs, knob

TITLE = "DataLens"
TEACHERS = ("small", "official")  # a CPU-sized MLP ensemble; the official conv nets (GPU)
_RECORDS_PER_TEACHER = 15  # the paper's 60,000 / 4,000
_MAX_TEACHERS = 4000  # the paper's; more cost time linearly for little gain at ε=1
_DEFAULT_MEMORY = 8e9  # defaults stay under this estimate; users may go higher
# β follows σ down when a large ε lowers σ: β ∝ σ^a, a fitted to the two measured Fashion
# settings (ε = 1: σ 2500, β .35; ε = 10: σ 450, β .1, LogReg .705; docs/datalens.md)
_BETA_EXPONENT = math.log(0.35 / 0.1) / math.log(2500 / 450)


@dataclass(frozen=True)
class Params:
    """DataLens knobs. Class defaults are the paper's (Fashion-)MNIST setting at ε=1 with
    small teachers; `derived` sizes them for other data."""

    teachers: int = knob(4000, lo=1, hi="n_train", main=True,
                         help="Teachers, each on its own disjoint slice of the data: more "
                              "teachers = more votes against the same noise.")
    top_k: int = knob(200, lo=1, hi="dim", main=True,
                      help="Coordinates each teacher votes on per record (at most the pooled "
                           "image's size); sensitivity 2√k.")
    sigma: float = knob(5000.0, lo=0.0, lo_open=True, main=True,
                        help="Std of the Gaussian noise added to each vote sum.")
    clip: float = knob(1e-5, lo=0.0, lo_open=True, main=True,
                       help="Gradient clip c before stochastic signs; gradients are batch "
                            "means, hence tiny (official code).")
    beta: float = knob(0.7, lo=0.0, hi=1.0, main=True,
                       help="Threshold: keep a coordinate when |noisy votes| ≥ β·teachers.")
    vote_pool: int = knob(1, lo=1, main=True,
                          help="Teachers vote on p×p blocks of pixels (the block's mean "
                               "gradient) and the student moves a block's pixels alike: with "
                               "p² fewer coordinates, top_k and σ can shrink for the same ε.")
    gamma: float = knob(1.0, lo=0.0, lo_open=True, hi=1e3,
                        help="Step toward G(z)+γ·ĝ; Adam makes its scale nearly irrelevant.")
    latent: int = knob(50, lo=1, help="z ~ U(−1, 1)^latent.")
    batch: int | None = knob(None, kind="int", lo=1, none="the partition size",
                             help="Synthetic records per step; empty = records per teacher "
                                  "(official).")
    teacher_steps: int = knob(2, lo=1, help="Teacher updates per iteration (official: 2).")
    first_teacher_steps: int = knob(40, lo=1, help="Teacher updates in the first iteration "
                                                   "(official: 10; 40 lets slow teachers learn the data first).")
    lr_teacher: float = knob(2e-5, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                             help="Teachers' Adam lr (official 1e-3). Slow teachers keep their "
                                  "votes pointing at the data; fast ones chase the student, which "
                                  "then collapses to black (Fashion, docs/datalens.md).")
    lr_student: float = knob(1e-3, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                             help="Student's Adam lr.")
    student_steps: int = knob(5, lo=1, hi=20,
                              help="Student updates toward each released aggregate (official: "
                                   "1). The extra steps reuse the noisy votes already paid "
                                   "for: post-processing, no privacy cost (Fashion, docs/datalens.md).")
    average_from: float = knob(0.4, lo=0.0, hi=1.0, hi_open=True,
                               help="Release the mean of the student's weights over the steps "
                                    "after this fraction of the run: it averages out the vote "
                                    "noise (post-processing, free).")
    sample_temperature: float = knob(0.75, lo=0.0, lo_open=True, hi=1.0,
                                     help="Scale of z for the released samples: below 1 "
                                          "trades diversity for typical samples.")
    blur: float = knob(0.5, lo=0.0, hi=2.0,
                       help="Gaussian blur (σ in pixels) of the released samples: it removes "
                            "the speckle the noisy votes leave (post-processing, free; "
                            "Fashion, docs/datalens.md). 0 = off.")
    max_steps: int = knob(300, lo=1, help="Cap on iterations (the budget may stop training "
                                          "earlier; the defaults lower σ so that a large ε "
                                          "is spent in these steps); the fixed step count "
                                          "when ε = ∞.")
    accountant: str = knob("exact", choices=tuple(privacy.ACCOUNTANTS),
                           help="How the per-step releases are composed: " + "; ".join(
                               f"{k} = {v}" for k, v in privacy.ACCOUNTANTS.items()))
    probe_every: int = knob(0, lo=0, help="Quick downstream probe every n steps; 0 = never.")
    sample_every: int = knob(5, lo=1, help="Attach a sample grid to every n-th step.")
    teacher: str = knob("small", choices=TEACHERS,
                        help="small: MLP teachers that fit a CPU; official: the paper's conv "
                             "nets (for a GPU).")
    teacher_hidden: int = knob(64, lo=1, help="Hidden units of a small teacher.")
    teacher_center: float = knob(0.5, lo=0.0, hi=1.0,
                                 help="Teachers see every pixel minus this public constant: slow "
                                      "teachers keep near-random first layers, whose features of "
                                      "all-positive images are nearly parallel; centred pixels "
                                      "tell images apart (Fashion and digits, docs/datalens.md). 0 = off.")
    teacher_widths: tuple = knob((11, 42, 256), lo=1)  # official teacher: conv1, conv2, FC
    student_widths: tuple = knob((1024, 128), lo=1)  # FC width, deconv channels (official)
    class_norm: bool = knob(False, help="Student batch norms with a gain and shift per class "
                                        "(conditional batch norm); off = the official shared one, "
                                        "labels entering only as concatenated inputs. It helped "
                                        "1,000 teachers on Fashion-MNIST but not 3,333 (docs/datalens.md).")
    records_per_teacher: int | None = knob(None, kind="int", lo=1,
                                           none="all records, split evenly",
                                           help="Cap on each teacher's records; empty = all "
                                                "(training records // teachers).")

    @classmethod
    def for_data(cls, dataset) -> "Params":
        """Defaults derived from this dataset's n_train and image shape (e.g. a user's NPZ)."""
        if dataset.kind != "image" or dataset.image_shape is None:
            return cls()  # validate() explains that DataLens needs images
        return cls.derived(dataset.n_train, tuple(dataset.image_shape))

    @classmethod
    def for_budget(cls, dataset, epsilon: float, delta: float,
                   settings: dict | None = None) -> "Params":
        """`for_data`'s defaults, with σ (and β) lowered where they would stop at
        `max_steps` with budget left (`spending`), computed with the user's own
        `settings` (max_steps, top_k, teachers, batch, …) in place: a user who asks for
        600 steps gets the σ that spends ε in 600, not the one for the default 300. A σ
        the user set is theirs: nothing is calibrated. ε, δ and settings are public.
        Returns the defaults only; the caller lays the settings on top (registry)."""
        base = cls.for_data(dataset)
        settings = dict(settings or {})
        if (dataset.kind != "image" or dataset.image_shape is None
                or not math.isfinite(epsilon) or "sigma" in settings):
            return base
        try:
            tuned = replace(base, **settings).spending(epsilon, delta, dataset.n_train)
        except (TypeError, ValueError, ZeroDivisionError, InputError):
            return base  # settings the run's validation will refuse, with its message
        return replace(base, sigma=tuned.sigma, beta=tuned.beta)

    def spending(self, epsilon: float, delta: float, n_train: int) -> "Params":
        """These settings with σ calibrated (engine.privacy.accountant) so that `max_steps`
        iterations spend at most ε, and β lowered with it (`_BETA_EXPONENT`), when σ would
        afford more steps than `max_steps`: the run then uses its whole budget instead of
        stopping at the cap (Fashion-MNIST at ε = 10 stopped at ε 1.47). Unchanged when
        the budget, not the cap, ends the run (a small ε, small data)."""
        from engine.methods.datalens import accounting

        batch = self.synthetic_batch(n_train)
        steps = accounting.affordable_steps(epsilon=epsilon, delta=delta, top_k=self.top_k,
                                            sigma=self.sigma, batch=batch,
                                            accountant=self.accountant)
        if steps <= self.max_steps:
            return self
        z = privacy.calibrate_noise_multiplier(epsilon=epsilon, delta=delta,
                                               compositions=self.max_steps * batch,
                                               accountant=self.accountant)
        # rounded up to 3 significant digits: a readable σ that never overshoots ε
        exact = z * accounting.vote_sensitivity(self.top_k)
        digits = 2 - math.floor(math.log10(exact))
        sigma = min(self.sigma, math.ceil(exact * 10 ** digits) / 10 ** digits)
        beta = self.beta * (sigma / self.sigma) ** _BETA_EXPONENT
        return replace(self, sigma=float(sigma), beta=float(f"{beta:.3g}"))

    @classmethod
    def derived(cls, n_train: int, image_shape: tuple[int, int, int]) -> "Params":
        """Settings that scale with the data, anchored on the paper's 60,000 28×28 images:
        15 records per teacher and up to 4,000 teachers (fewer when memory would exceed
        _DEFAULT_MEMORY); votes on 2×2 pixel blocks for images above 256 pixels; top-k a
        quarter of the voted coordinates (50 of 196 blocks; the paper: 200 of 784 pixels);
        σ = 1.25·N and β = 0.7, the paper's noise-to-teachers ratio, both divided by the
        block side, so the noisy vote sums keep the paper's signal-to-noise whatever N is —
        and a small N then buys few steps at a small ε, which is the honest answer for
        small data. Small images get a smaller student, faster teachers, no blocks and no
        blur."""
        from engine.methods.datalens.memory import memory_bytes

        c, h, w = image_shape
        d = c * h * w
        pool = 1 if d <= 256 else 2
        base = cls(vote_pool=pool, records_per_teacher=_RECORDS_PER_TEACHER)
        voted = base.voted_coordinates(image_shape)
        base = replace(base, top_k=max(1, min(voted, round(200 * voted / 784))))
        if d <= 256:
            # a smaller student and faster teachers for digits' 95 teachers of 15 (measured
            # there, docs/datalens.md); the student's steps and sampling are Fashion's (held-out digits)
            base = replace(base, latent=20, student_widths=(128, 32), first_teacher_steps=5,
                           lr_teacher=2e-4, blur=0.0)
        teachers = max(1, min(_MAX_TEACHERS, n_train // _RECORDS_PER_TEACHER))
        while teachers > 1:  # memory is linear in the teachers at a fixed part size
            need = memory_bytes(replace(base, teachers=teachers), image_shape, 10, n_train)["total"]
            if need <= _DEFAULT_MEMORY:
                break
            teachers = max(1, int(teachers * 0.95 * _DEFAULT_MEMORY / need))
        # top_k/p² votes have sensitivity 2√k/p: σ/p keeps the noise multiplier (so the
        # steps a given ε affords) and β/p the threshold-to-noise ratio.
        return replace(base, teachers=teachers, sigma=float(max(1, round(1.25 * teachers / pool))),
                       beta=base.beta / pool)

    def validate(self, dataset) -> "Params":
        """Each knob against its declaration (teachers ≤ n_train, top_k ≤ the data
        dimension), then what depends on the data's kind and shape."""
        if dataset.kind != "image" or dataset.image_shape is None:
            raise InputError(f"DataLens here supports image datasets only; {dataset.name!r} is "
                             f"{dataset.kind}. Use DP-MERF for tabular data.")
        _, h, w = dataset.image_shape
        if h % 4 or w % 4:
            raise InputError(f"DataLens's generator needs image sides divisible by 4; got {h}x{w}.")
        check_knobs(self, TITLE, dataset)
        p = self.vote_pool
        if h % p or w % p:
            raise InputError(f"DataLens: vote_pool={p} must divide the image sides ({h}x{w}).")
        voted = self.voted_coordinates(dataset.image_shape)
        if self.top_k > voted:
            raise InputError(f"DataLens: top_k={self.top_k} is above the {voted} "
                             f"coordinates teachers vote on ({h}x{w} pixels in {p}x{p} blocks); "
                             f"lower top_k or vote_pool.")
        return self

    def voted_coordinates(self, image_shape: tuple[int, int, int]) -> int:
        """Length of a teacher's vote vector: the pixels counted in vote_pool² blocks."""
        c, h, w = image_shape
        return c * (h // self.vote_pool) * (w // self.vote_pool)

    def partition_size(self, n_train: int) -> int:
        """Records per teacher: n_train // teachers, capped at records_per_teacher."""
        return min(self.records_per_teacher or n_train, n_train // self.teachers)

    def synthetic_batch(self, n_train: int) -> int:
        return self.batch or self.partition_size(n_train)


# ------------------------------------------------------------------ small data

# Below this many teachers the vote sums drown in noise at small ε (a prototype: 1,000 teachers
# learned far worse than 4,000 under the same noise; digits' 95 stay at chance at ε = 1).
_FEW_TEACHERS = 1000

# What DataLens reached on digits with the current defaults (docs/datalens.md, digits table: 10 seeds
# at ε = 1 and 10, 3 without noise), quoted by the small-data warning and the Learn page so
# the figures live in one place; accuracies as the app writes them (.55). Re-measure:
# python -m bench.datalens_fashion --dataset digits
DIGITS_MEASURED = {"records": 1437, "teachers": 95, "steps at epsilon=10": 59,
                   "CNN at epsilon=1": ".1", "CNN at epsilon=10": ".55", "CNN without noise": ".89",
                   "DP-MERF at epsilon=1": ".8"}


def small_data_warning(config, params: Params, steps: int, n_train: int) -> str | None:
    """The teaching point for small data, from the run's own numbers (not the dataset's
    name); None when there are enough teachers or no noise."""
    if not config.private or params.teachers >= _FEW_TEACHERS:
        return None
    m = DIGITS_MEASURED
    return (f"DataLens needs tens of thousands of records: these {n_train:,} make "
            f"{params.teachers:,} teachers of {params.partition_size(n_train)}, and epsilon="
            f"{config.epsilon:g} affords {steps} step{'s' * (steps != 1)} against their noise. "
            f"Measured on digits ({m['records']:,} records, {m['teachers']} teachers; chance is "
            f".1): CNN {m['CNN at epsilon=1']} at epsilon=1 (1 step: near chance), "
            f"{m['CNN at epsilon=10']} at epsilon=10 ({m['steps at epsilon=10']} steps, 10 seeds), "
            f"{m['CNN without noise']} without noise; DP-MERF reaches {m['DP-MERF at epsilon=1']} "
            f"at epsilon=1. That is the method's limit on small data, not a bug.")
