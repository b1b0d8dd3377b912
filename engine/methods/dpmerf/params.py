"""DP-MERF's knobs: the `Params` dataclass (every field a declared knob, engine/methods/knobs.py),
its validation, and defaults derived from the data's public shape (not its name).

Nothing here touches private records: the derivation reads only n_train, the kind of
data and the pixel count, which the neighbouring relation treats as public.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.data.catalog import Dataset
from engine.core.errors import InputError
from engine.methods.knobs import check_knobs, knob
from engine.privacy.accountant import ACCOUNTANTS

TITLE = "DP-MERF"
LABEL_MODES = ("balanced", "counts", "none")
PROJECTIONS = ("auto", "float32", "bfloat16")

# Steps the generator trains for by default, by the kind of data (free: post-processing).
# 28×28 images with the wider generator: LogReg plateaus by 240 steps of 500 (probes at
# 120–600 steps agree within run-to-run noise). Small images (digits): ~1,000 steps of 200
# (150 epochs). Tabular (breast_cancer): ~700 steps of 200 (300 epochs).
_STEPS = {"large_image": 240, "small_image": 1000, "tabular": 700}
_LARGE_IMAGE = 784  # pixels from which an image set gets the Fashion-MNIST settings


@dataclass(frozen=True)
class Params:
    n_features: int = knob(10_000, lo=2, multiple_of=2, main=True,
                           help="Random features D. The noise per coordinate is fixed, so "
                                "small datasets want smaller D.")
    length_scale: float | None = knob(None, kind="float", lo=0.0, lo_open=True, main=True,
                                      none="the dataset's public default",
                                      help="Gaussian-kernel length scale ℓ; empty = the "
                                           "dataset's public default (no privacy cost).")
    epochs: int = knob(5, lo=1, main=True,
                       help="Generator training length (epochs · records / batch size steps). "
                            "Free after the release (post-processing).")
    batch_size: int = knob(500, lo=2, help="Generated records per step (batch norm needs two).")
    lr: float = knob(0.01, lo=0.0, lo_open=True, main=True, help="Adam learning rate.")
    lr_decay: bool = knob(False, help="Cosine-anneal lr to 0 over the run (settles the last "
                                      "samples).")
    # Scale of z when drawing the released samples (not in training): below 1 trades
    # diversity for typical samples, which downstream classifiers learn better from.
    sample_temperature: float = knob(1.0, lo=0.0, lo_open=True, hi=10.0,
                                     help="Scale of z for the released samples: below 1 "
                                          "trades diversity for typical samples.")
    latent: int = knob(5, lo=1, help="Generator noise dimension.")
    gen_hidden: int = knob(200, lo=1, help="Image generator: FC width (official 200).")
    gen_channels: tuple = knob((16, 8), lo=1)  # image generator: conv channels (official 16, 8)
    upsample: str = knob("transposed", choices=("nearest", "transposed"),
                         help="Image generator upsampling: nearest (+5×5 conv, the official "
                              "one) or transposed convolutions.")
    # Precision of the random-feature projection x·W (the costly matmul): "bfloat16" is
    # several times faster on GPUs and CPUs with AVX512-BF16/AMX, ~30× slower elsewhere;
    # "auto" picks it only where it is fast (engine.core.device.fast_bf16). The features keep
    # unit norm either way.
    projection: str = knob("float32", choices=PROJECTIONS,
                           help="Precision of the random-feature matmul; auto = bf16 only "
                                "where this machine has fast bf16 (GPU, AVX512-BF16, AMX).")
    # Share of a linear kernel on pixels beside the Gaussian one (0 = the paper's DP-MERF);
    # it adds each class's mean image to the embedding at no cost in sensitivity.
    pixel_weight: float = knob(0.0, lo=0.0, hi=1.0, hi_open=True,
                               help="Share of a linear pixel kernel beside the Gaussian one "
                                    "(0 = the paper's DP-MERF); no cost in sensitivity.")
    labels: str = knob("balanced", choices=LABEL_MODES,
                       help="balanced: one release, uniform labels; counts: also release "
                            "class counts and reweight (imbalanced data); none: unlabelled.")
    counts_share: float = knob(0.05, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                               help="Budget share for the class counts (they tolerate noise).")
    bounds_share: float = knob(0.1, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                               help="Budget share for numeric bounds that are not public.")
    accountant: str = knob("exact", choices=tuple(ACCOUNTANTS),
                           help="How the releases are composed: " + "; ".join(
                               f"{k} = {v}" for k, v in ACCOUNTANTS.items()))
    sample_every: int = knob(25, lo=1, help="Steps between live sample grids.")
    probe_every: int = knob(0, lo=0, help="Steps between quick downstream probes; 0 = never.")

    @classmethod
    def for_data(cls, data: Dataset) -> "Params":
        """Defaults derived from the data's public shape: n_train, kind and pixel count
        (never its name or values). Anchored on the settings measured for digits (1,437
        8×8 images), Fashion-MNIST (60,000 28×28) and breast_cancer (455 records):

        - D ≈ n_train / 6 in thousands, between 1,000 and 10,000: the noise per embedding
          coordinate falls as 1/n while the signal per coordinate falls as 1/√D, so small
          data wants a small D (digits 1,000, Fashion 10,000);
        - epochs so the generator takes about _STEPS steps, rounded to a readable value;
        - images of _LARGE_IMAGE pixels or more get Fashion's wider generator, batch 500,
          sampling temperature 0.5 and the bf16 projection where it is fast; tabular data
          gets latent 10 and released class counts (real tables are often imbalanced).
        """
        d = int(np.prod(data.x_train.shape[1:]))
        m = max(1, data.n_train)
        n_features = int(min(10_000, max(1_000, round(m / 6, -3))))
        if data.kind != "image":
            return cls(n_features=n_features, batch_size=200, latent=10, labels="counts",
                       epochs=_readable(_STEPS["tabular"] * 200 / m))
        if d >= _LARGE_IMAGE:
            # Temperature 0.5 and the wider generator: chosen on held-out real *training*
            # records, never on the test split (docs/results.md, "What moved accuracy").
            return cls(n_features=n_features, batch_size=500, projection="auto",
                       sample_temperature=0.5, gen_hidden=400, gen_channels=(32, 16),
                       epochs=_readable(_STEPS["large_image"] * 500 / m))
        return cls(n_features=n_features, batch_size=200, sample_every=10,
                   epochs=_readable(_STEPS["small_image"] * 200 / m))

    def validate(self, data: Dataset) -> "Params":
        """Each knob against its declaration, then what depends on the data."""
        check_knobs(self, TITLE, data)
        if self.labels != "none" and data.n_classes < 2:
            raise InputError("DP-MERF needs at least two classes for labelled generation; "
                             "use labels='none' for unlabelled data.")
        return self


def _readable(epochs: float) -> int:
    """The nearest value (in ratio) on a 1-1.5-2-3-5-7.5 ladder, at least 1."""
    ladder = sorted({int(m * 10 ** k) for k in range(6) for m in (1, 1.5, 2, 3, 5, 7.5)
                     if m * 10 ** k >= 1 and float(m * 10 ** k).is_integer()})
    return min(ladder, key=lambda v: abs(math.log(v / max(epochs, 1e-9))))
