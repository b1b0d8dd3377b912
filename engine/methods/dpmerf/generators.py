"""Generators for DP-MERF: a conditional conv generator for images (as in the official
code) and an MLP with numeric and categorical heads for tabular data."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class ConvCondGenerator(nn.Module):
    """[z; onehot(y)] → FC → FC (16 × h/4 × w/4) → two 2× upsampling conv stages.

    upsample="nearest" is the official DP-MERF generator (noise 5 + one-hot 10 → FC 200 →
    FC 784 → two nearest-upsample + 5×5 conv stages); upsample="transposed" replaces each
    stage by one stride-2 transposed 4×4 conv, which does the same job in one op and is
    2–3× faster on a CPU. Any (c, h, w); pixels come out in [0, 1].
    """

    def __init__(self, image_shape: tuple[int, int, int], n_labels: int, latent: int = 5,
                 hidden: int = 200, channels: tuple[int, int] = (16, 8), kernel: int = 5,
                 upsample: str = "nearest"):
        super().__init__()
        self.image_shape, self.n_labels, self.latent = image_shape, n_labels, latent
        c, h, w = image_shape
        self.base = (math.ceil(h / 4), math.ceil(w / 4))
        self.c0 = channels[0]
        self.fc = nn.Sequential(
            nn.Linear(latent + n_labels, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, self.c0 * self.base[0] * self.base[1]), nn.BatchNorm1d(self.c0 * self.base[0] * self.base[1]), nn.ReLU(),
        )
        self.upsample = upsample
        if upsample == "transposed":
            self.conv1 = nn.ConvTranspose2d(channels[0], channels[1], 4, stride=2, padding=1)
            self.conv2 = nn.ConvTranspose2d(channels[1], c, 4, stride=2, padding=1)
        else:
            pad = kernel // 2
            self.conv1 = nn.Conv2d(channels[0], channels[1], kernel, padding=pad)
            self.conv2 = nn.Conv2d(channels[1], c, kernel, padding=pad)

    def forward(self, z: torch.Tensor, y_onehot: torch.Tensor | None = None) -> torch.Tensor:
        inp = z if y_onehot is None or self.n_labels == 0 else torch.cat([z, y_onehot], 1)
        x = self.fc(inp).view(-1, self.c0, *self.base)
        if self.upsample == "transposed":
            x = self.conv2(F.relu(self.conv1(x)))
        else:
            x = F.relu(self.conv1(F.interpolate(x, scale_factor=2)))
            x = self.conv2(F.interpolate(x, scale_factor=2))
        if x.shape[-2:] != self.image_shape[1:]:
            x = F.interpolate(x, size=self.image_shape[1:], mode="bilinear", align_corners=False)
        return torch.sigmoid(x)


class TabularGenerator(nn.Module):
    """[z; onehot(y)] → MLP → numeric head (sigmoid, in the [0,1]-scaled public box) and
    one softmax head per categorical column (probabilities during training, so the
    linear kernel on one-hot codes sees their expectation; sampled at release)."""

    def __init__(self, n_num: int, cat_sizes: list[int], n_labels: int, latent: int = 10,
                 hidden: int = 256):
        super().__init__()
        self.n_num, self.cat_sizes, self.n_labels, self.latent = n_num, cat_sizes, n_labels, latent
        self.body = nn.Sequential(
            nn.Linear(latent + n_labels, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        )
        self.num_head = nn.Linear(hidden, n_num)
        self.cat_head = nn.Linear(hidden, sum(cat_sizes)) if cat_sizes else None

    def forward(self, z: torch.Tensor, y_onehot: torch.Tensor | None = None):
        inp = z if y_onehot is None or self.n_labels == 0 else torch.cat([z, y_onehot], 1)
        h = self.body(inp)
        x_num = torch.sigmoid(self.num_head(h))
        if self.cat_head is None:
            return x_num, None
        logits = self.cat_head(h).split(self.cat_sizes, dim=1)
        return x_num, torch.cat([F.softmax(part, dim=1) for part in logits], dim=1)

    def sample_categories(self, probs: torch.Tensor, generator=None) -> torch.Tensor:
        """Draw one category per column from the softmax heads: (n, n_cat) integer codes."""
        codes = [torch.multinomial(p, 1, generator=generator).squeeze(1)
                 for p in probs.split(self.cat_sizes, dim=1)]
        return torch.stack(codes, dim=1)
