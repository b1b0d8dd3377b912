"""DataLens networks: a stacked ensemble of conditional teacher discriminators and the
conditional DCGAN-style student generator.

Teachers follow the official code's conditional DCGAN discriminator (label maps
concatenated at every layer): [x; y maps] → conv5×5 s2 (w1) + lReLU(0.2) → [·; y maps] →
conv5×5 s2 (w2) + norm + lReLU → [flatten; y] → FC w3 + norm + lReLU → [·; y] → FC.
Two deliberate departures, both from this project's prototype (4,000 vectorised MLP
teachers on Fashion-MNIST at ε = 1, 149 iterations, a 2-core CPU):

* the last layer has one output per class and a teacher reads the output of the record's
  label (projection-style conditioning); a single logit never made the student
  class-conditional in the prototype;
* the official batch norm is replaced by a per-record normalisation (layer norm over each
  record's features, per-teacher affine, no running statistics). Batch statistics across
  4,000 vmapped teachers are awkward, and per-record normalisation makes the gradient of
  a teacher's loss w.r.t. one synthetic record depend on that record alone.

All N teachers live in stacked tensors and run in one pass: convolutions as grouped
convolutions (teachers folded into channels, `groups=N`), fully connected layers as
batched matmuls. There is no Python loop over teachers, and one optimizer step updates
every teacher at once (Adam is elementwise, so stacking changes nothing per teacher).

Privacy assumption: teacher i must only ever see partition i (enforced by the caller);
the networks themselves hold no data.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

_SLOPE = 0.2  # leaky ReLU slope of DCGAN discriminators
_INIT_STD = 0.02  # DCGAN initialisation


def _normal(gen: torch.Generator, *shape) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=gen) * _INIT_STD)


def _conv_out(n: int) -> int:
    return (n + 1) // 2  # 5×5 kernel, stride 2, padding 2


class TeacherEnsemble(nn.Module):
    """N conditional discriminators with stacked parameters.

    forward(x, y) takes x (N, B, c, h, w) — teacher i scores x[i] — and integer labels
    y (N, B); it returns logits (N, B) for "real".
    """

    def __init__(self, n_teachers: int, image_shape: tuple[int, int, int], n_classes: int,
                 widths: tuple[int, int, int] = (11, 42, 256), *, seed: int = 0, center: float = 0.0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        n, (c, h, w), k = n_teachers, image_shape, n_classes
        c1, c2, f = widths
        self.n, self.k, self.c1, self.c2, self.center = n, k, c1, c2, center
        self.h1, self.w1_ = _conv_out(h), _conv_out(w)
        self.h2, self.w2_ = _conv_out(self.h1), _conv_out(self.w1_)
        flat = c2 * self.h2 * self.w2_
        # Grouped-conv layout: output channels of teacher i are rows i*c_out .. (i+1)*c_out.
        self.conv1_w = _normal(gen, n * c1, c + k, 5, 5)
        self.conv1_b = nn.Parameter(torch.zeros(n * c1))
        self.conv2_w = _normal(gen, n * c2, c1 + k, 5, 5)
        self.conv2_b = nn.Parameter(torch.zeros(n * c2))
        self.norm2_g = nn.Parameter(torch.ones(n, 1, flat))
        self.norm2_b = nn.Parameter(torch.zeros(n, 1, flat))
        self.fc3_w = _normal(gen, n, flat + k, f)
        self.fc3_b = nn.Parameter(torch.zeros(n, 1, f))
        self.norm3_g = nn.Parameter(torch.ones(n, 1, f))
        self.norm3_b = nn.Parameter(torch.zeros(n, 1, f))
        self.fc4_w = _normal(gen, n, f + k, k)  # one output per class
        self.fc4_b = nn.Parameter(torch.zeros(n, 1, k))

    def _label_maps(self, weight: torch.Tensor, y: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """The label-map part of a conv layer, (N, B, c_out, H, W).

        Concatenating one-hot label maps and convolving equals adding, per class, the
        convolution of an all-ones map with that class's kernel slice (zero padding makes
        it vary near the border). Computing it once per class instead of once per record
        removes k input channels per teacher from the expensive grouped convolution.
        """
        n, k = self.n, self.k
        c_out = weight.shape[0] // n
        ones = weight.new_ones(1, 1, *size)
        per_class = F.conv2d(ones, weight[:, -k:].reshape(-1, 1, 5, 5), stride=2, padding=2)
        per_class = per_class.view(n, c_out, k, *per_class.shape[2:]).transpose(1, 2)  # (N, k, c_out, H, W)
        return per_class[torch.arange(n, device=y.device)[:, None], y]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n, b, c, hh, ww = x.shape
        x = x - self.center  # as MLPTeacherEnsemble: a public constant
        onehot = F.one_hot(y, self.k).to(x.dtype)  # (N, B, k)
        # Grouped conv layout: (B, N*channels, H, W), teacher i's channels contiguous.
        h = F.conv2d(x.transpose(0, 1).reshape(b, n * c, hh, ww), self.conv1_w[:, :c],
                     self.conv1_b, stride=2, padding=2, groups=n)
        h = h.view(b, n, self.c1, self.h1, self.w1_) + self._label_maps(self.conv1_w, y, (hh, ww)).transpose(0, 1)
        h = F.leaky_relu(h, _SLOPE).reshape(b, n * self.c1, self.h1, self.w1_)
        h = F.conv2d(h, self.conv2_w[:, :self.c1], self.conv2_b, stride=2, padding=2, groups=n)
        h = h.view(b, n, self.c2, self.h2, self.w2_) + self._label_maps(
            self.conv2_w, y, (self.h1, self.w1_)).transpose(0, 1)
        h = h.reshape(b, n, -1).transpose(0, 1)  # (N, B, c2*h2*w2)
        h = F.leaky_relu(_record_norm(h) * self.norm2_g + self.norm2_b, _SLOPE)
        h = torch.baddbmm(self.fc3_b, torch.cat([h, onehot], dim=2), self.fc3_w)  # (N, B, f)
        h = F.leaky_relu(_record_norm(h) * self.norm3_g + self.norm3_b, _SLOPE)
        out = torch.baddbmm(self.fc4_b, torch.cat([h, onehot], dim=2), self.fc4_w)  # (N, B, k)
        return out.gather(2, y.unsqueeze(2)).squeeze(2)  # the output of the record's class


class MLPTeacherEnsemble(nn.Module):
    """N small conditional teachers with stacked parameters: x → FC hidden + lReLU(0.2) →
    FC with one output per class; a teacher reads the output of the record's label.

    Sized for the 15-odd records a teacher sees (tens of thousands of parameters, not
    the official conv net's 562k), so thousands of them fit in a CPU's memory. Both
    layers are batched matmuls over the teacher dimension: no loop over teachers.
    forward(x, y) takes x (N, B, c, h, w) and labels y (N, B); returns logits (N, B).

    Pixels are shifted by `center` (a public constant, not a statistic of the data) before
    the first layer: random features of all-positive images are nearly parallel, so slow
    teachers, which stay close to their random first layer, tell images apart far better
    on centred pixels (docs/datalens.md: centring the teachers' input).
    """

    def __init__(self, n_teachers: int, image_shape: tuple[int, int, int], n_classes: int,
                 hidden: int = 64, *, seed: int = 0, center: float = 0.0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        d = image_shape[0] * image_shape[1] * image_shape[2]
        self.n, self.center = n_teachers, center
        self.fc1_w = _normal(gen, n_teachers, d, hidden)
        self.fc1_b = nn.Parameter(torch.zeros(n_teachers, 1, hidden))
        # The output layer starts at zero: an untrained teacher has no opinion (its input
        # gradient is 0), so the vote sums carry what teachers learned from their data,
        # not thousands of random initial directions.
        self.fc2_w = nn.Parameter(torch.zeros(n_teachers, hidden, n_classes))
        self.fc2_b = nn.Parameter(torch.zeros(n_teachers, 1, n_classes))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.baddbmm(self.fc1_b, x.flatten(2) - self.center, self.fc1_w)  # (N, B, hidden)
        h = F.leaky_relu(h, _SLOPE)
        out = torch.baddbmm(self.fc2_b, h, self.fc2_w)  # (N, B, k)
        return out.gather(2, y.unsqueeze(2)).squeeze(2)


def _record_norm(h: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Normalise each record's feature vector (last dim); no batch statistics."""
    mean = h.mean(dim=-1, keepdim=True)
    var = h.var(dim=-1, unbiased=False, keepdim=True)
    return (h - mean) * torch.rsqrt(var + eps)


class ClassBatchNorm(nn.Module):
    """Batch norm whose gain and shift are looked up per class (conditional batch norm,
    as in class-conditional GAN generators): the label rescales every feature of its
    records instead of entering only as concatenated inputs. Starts as plain batch norm
    (gain 1, shift 0 for every class)."""

    def __init__(self, num_features: int, n_classes: int, spatial: bool = False):
        super().__init__()
        self.norm = (nn.BatchNorm2d if spatial else nn.BatchNorm1d)(num_features, affine=False)
        self.gain = nn.Parameter(torch.ones(n_classes, num_features))
        self.shift = nn.Parameter(torch.zeros(n_classes, num_features))

    def forward(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        gain, shift = self.gain[y], self.shift[y]
        if h.dim() == 4:
            gain, shift = gain[:, :, None, None], shift[:, :, None, None]
        return self.norm(h) * gain + shift


class _SharedBatchNorm(nn.Module):
    """The official student's batch norm (one affine for all classes), with the label
    argument ClassBatchNorm takes, so the student has one code path."""

    def __init__(self, num_features: int, n_classes: int, spatial: bool = False):
        super().__init__()
        self.norm = (nn.BatchNorm2d if spatial else nn.BatchNorm1d)(num_features)

    def forward(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.norm(h)


class Student(nn.Module):
    """Conditional DCGAN generator: [z; y] → FC f0 + BN → FC ch·s·s + BN → deconv ×2
    (with label maps concatenated before each) → sigmoid image in [0, 1].

    For 28×28 with widths (1024, 128): the official MNIST generator (s = 7). The input
    side must be divisible by 4. BatchNorm is used in training mode throughout (as the
    official code): without it the prototype's student stayed at chance (LogReg .53 on
    Fashion-MNIST with it). `class_norm` gives each batch norm a gain and shift per class
    (ClassBatchNorm); the official student shares one (docs/datalens.md: class-conditional batch
    norm on held-out Fashion-MNIST records).
    """

    def __init__(self, latent: int, n_classes: int, image_shape: tuple[int, int, int],
                 widths: tuple[int, int] = (1024, 128), *, class_norm: bool = False):
        super().__init__()
        c, h, w = image_shape
        f0, ch = widths
        self.k, self.ch, self.s = n_classes, ch, (h // 4, w // 4)
        s_area = self.s[0] * self.s[1]
        norm = ClassBatchNorm if class_norm else _SharedBatchNorm
        self.fc0 = nn.Linear(latent + n_classes, f0)
        self.bn0 = norm(f0, n_classes)
        self.fc1 = nn.Linear(f0 + n_classes, ch * s_area)
        self.bn1 = norm(ch * s_area, n_classes)
        self.up2 = nn.ConvTranspose2d(ch + n_classes, ch, 5, stride=2, padding=2, output_padding=1)
        self.bn2 = norm(ch, n_classes, spatial=True)
        self.up3 = nn.ConvTranspose2d(ch + n_classes, c, 5, stride=2, padding=2, output_padding=1)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.ConvTranspose2d)):
                nn.init.normal_(m.weight, 0.0, _INIT_STD)
                nn.init.zeros_(m.bias)

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.training and len(z) == 1:
            # Batch norm in training mode needs two records: pair the latent with its
            # mirror −z (also in U(−1, 1)^latent) and return the first output only.
            return self.forward(torch.cat([z, -z]), y.repeat(2))[:1]
        onehot = F.one_hot(y, self.k).to(z.dtype)

        def maps(t):
            return torch.cat([t, onehot[:, :, None, None].expand(-1, -1, *t.shape[2:])], dim=1)

        h = F.relu(self.bn0(self.fc0(torch.cat([z, onehot], 1)), y))
        h = F.relu(self.bn1(self.fc1(torch.cat([h, onehot], 1)), y))
        h = h.view(-1, self.ch, *self.s)
        h = F.relu(self.bn2(self.up2(maps(h)), y))
        return torch.sigmoid(self.up3(maps(h)))


def make_teachers(params, image_shape: tuple[int, int, int], n_classes: int, *, seed: int = 0,
                  n_teachers: int | None = None) -> nn.Module:
    """The ensemble `params.teacher` names ("small" or "official"), params.teachers strong
    unless `n_teachers` says otherwise (the cost probe builds a few of the same shape)."""
    n = n_teachers or params.teachers
    if params.teacher == "official":
        return TeacherEnsemble(n, image_shape, n_classes, tuple(params.teacher_widths), seed=seed,
                               center=params.teacher_center)
    return MLPTeacherEnsemble(n, image_shape, n_classes, params.teacher_hidden, seed=seed,
                              center=params.teacher_center)


def make_student(params, image_shape: tuple[int, int, int], n_classes: int) -> Student:
    """The student `params` describe (latent size, widths, class_norm)."""
    return Student(params.latent, n_classes, image_shape, tuple(params.student_widths),
                   class_norm=params.class_norm)


def sample_latent(n: int, latent: int, *, gen: torch.Generator | None = None, device="cpu") -> torch.Tensor:
    """z ~ U(−1, 1)^latent, as the official code. Model randomness, not DP noise."""
    return torch.rand(n, latent, generator=gen, device=device) * 2 - 1
