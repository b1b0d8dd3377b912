"""Pictures of synthetic data as PNGs (PIL only, so the CLI needs no plotting stack)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont


def image_grid(x: np.ndarray, y: np.ndarray, class_names: list[str], *, per_class: int = 10,
               cell: int = 40) -> Image.Image:
    """One row per class (label on the left), up to `per_class` images per row."""
    n_classes = len(class_names)
    font = ImageFont.load_default()
    label_w = 12 + 7 * max(len(str(c)) for c in class_names)
    grid = Image.new("RGB", (label_w + per_class * cell, n_classes * cell), "white")
    draw = ImageDraw.Draw(grid)
    for c in range(n_classes):
        draw.text((4, c * cell + cell // 2 - 6), str(class_names[c]), fill="black", font=font)
        for j, idx in enumerate(np.flatnonzero(y == c)[:per_class]):
            grid.paste(_to_pil(x[idx]).resize((cell - 2, cell - 2), Image.NEAREST),
                       (label_w + j * cell + 1, c * cell + 1))
    return grid


def _to_pil(img: np.ndarray) -> Image.Image:
    arr = (np.clip(img, 0, 1) * 255).astype(np.uint8)  # (c, h, w)
    if arr.shape[0] == 1:
        return Image.fromarray(arr[0], mode="L").convert("RGB")
    return Image.fromarray(np.moveaxis(arr[:3], 0, -1), mode="RGB")


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
