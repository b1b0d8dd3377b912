"""Device choice: CUDA when present, else CPU; the user can always override."""

from __future__ import annotations

import torch

from engine.errors import InputError


def resolve_device(name: str = "auto") -> torch.device:
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise InputError(f"device must be 'auto', 'cpu' or 'cuda[:N]'. Got {name!r}.") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError("device 'cuda' was requested but no CUDA GPU is available here; use 'cpu'.")
    return dev
