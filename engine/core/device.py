"""Device choice: CUDA when present, else CPU; the user can always override.

Also whether bfloat16 matmuls are fast here. On CUDA and on CPUs with AVX512-BF16 or AMX
they are several times cheaper than float32; on CPUs without them PyTorch emulates
bf16 and the same matmul is about 30× *slower* (measured on an AVX2 machine: the
Fashion-MNIST DP-MERF default took ~15 min before its first step). So bf16 is only
chosen where `fast_bf16` says so.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from engine.core.errors import InputError

# /proc/cpuinfo flags that give native bf16 dot products (AVX512-BF16, Intel AMX).
FAST_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


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


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def fast_bf16(device: torch.device | str) -> tuple[bool, str]:
    """(whether bf16 matmuls are fast on `device`, the reason in words)."""
    device = torch.device(device)
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return ok, "CUDA GPU with bf16" if ok else "CUDA GPU without bf16 support"
    flags = cpu_flags()
    have = [f for f in FAST_BF16_FLAGS if f in flags]
    if have:
        return True, f"CPU has {', '.join(have)}"
    return False, "CPU lacks avx512_bf16/amx_bf16 (bf16 would be emulated, ~30× slower)"
