"""Pictures of synthetic data: the class-per-row sample grid the app shows and the PNGs a
run writes (numpy and PIL only, so the CLI needs no plotting stack)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from engine.core.errors import InputError


def grid_scale(h: int, target: int = 28) -> int:
    """Integer upscaling so small images (digits are 8×8) are visible without blur."""
    return max(1, round(target / max(1, h)))


def class_rows(x: np.ndarray, y: np.ndarray, n_classes: int, *, per_class: int = 10,
               pad: int = 1, scale: int = 1) -> np.ndarray:
    """Images (n, c, h, w) in [0, 1] → one uint8 picture with a row per class (the first
    `per_class` images of each, each upscaled `scale`×), on white: (H, W) for grey images,
    (H, W, 3) for colour. The app shows it as it is; `image_grid` labels it for a PNG."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 4 or x.shape[1] not in (1, 3, 4):
        raise InputError(f"images must have shape (n, c, h, w) with c in 1, 3 or 4; "
                         f"got {x.shape}.")
    y = np.asarray(y)
    c = 1 if x.shape[1] == 1 else 3
    h, w = x.shape[2] * scale, x.shape[3] * scale
    grid = np.ones((c, n_classes * (h + pad) + pad, per_class * (w + pad) + pad), np.float32)
    for k in range(n_classes):
        for j, idx in enumerate(np.flatnonzero(y == k)[:per_class]):
            img = np.clip(x[idx, :c], 0.0, 1.0).repeat(scale, axis=1).repeat(scale, axis=2)
            top, left = pad + k * (h + pad), pad + j * (w + pad)
            grid[:, top:top + h, left:left + w] = img
    img = (grid * 255).round().astype(np.uint8)
    return img[0] if c == 1 else np.transpose(img, (1, 2, 0))


def image_grid(x: np.ndarray, y: np.ndarray, class_names: list[str], *, per_class: int = 10,
               cell: int = 40) -> Image.Image:
    """`class_rows` with each class's name on the left of its row, images about `cell`
    pixels tall (for samples.png)."""
    rows = class_rows(x, y, len(class_names), per_class=per_class, pad=2,
                      scale=grid_scale(x.shape[-2], cell - 2))
    picture = Image.fromarray(rows).convert("RGB")
    font = ImageFont.load_default()
    label_w = 12 + 7 * max(len(str(c)) for c in class_names)
    out = Image.new("RGB", (label_w + picture.width, picture.height), "white")
    out.paste(picture, (label_w, 0))
    draw = ImageDraw.Draw(out)
    row_h = (picture.height - 2) / len(class_names)
    for k, name in enumerate(class_names):
        draw.text((4, 1 + k * row_h + row_h / 2 - 6), str(name), fill="black", font=font)
    return out


def table_image(rows: list[list[str]], header: list[str]) -> Image.Image:
    """A plain text table (tabular samples), first rows only."""
    font = ImageFont.load_default()
    widths = [max(len(str(v)) for v in [h] + [r[i] for r in rows]) for i, h in enumerate(header)]
    line = lambda vals: "  ".join(str(v).rjust(w) for v, w in zip(vals, widths))  # noqa: E731
    text = [line(header)] + [line(r) for r in rows]
    img = Image.new("RGB", (12 + 7 * max(len(t) for t in text), 12 + 14 * len(text)), "white")
    draw = ImageDraw.Draw(img)
    for i, t in enumerate(text):
        draw.text((6, 6 + 14 * i), t, fill="black", font=font)
    return img
