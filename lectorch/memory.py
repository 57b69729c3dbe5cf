"""Bytes: what a tensor of a given shape and dtype costs, and how to print it.

>>> tensor_bytes((4, 8), torch.float32)
128
>>> format_bytes(2415919104)
'2.42 GB (2.25 GiB)'
"""

from __future__ import annotations

import math

import torch

from lectorch import _validate
from lectorch.dtypes import as_dtype


def tensor_bytes(shape, dtype: torch.dtype | str = torch.float32) -> int:
    """Bytes of a dense tensor: ``numel × element_size``.

    >>> tensor_bytes((4 * 12288, 12288), "float32") / 2**20   # one GPT-3 feed-forward matrix, MiB
    2304.0
    """
    dims = _validate.shape("shape", shape)
    return math.prod(dims) * as_dtype(dtype).itemsize


def bytes_of(tensor: torch.Tensor) -> int:
    """Bytes of the elements a tensor addresses (``numel × element_size``), views included.

    >>> bytes_of(torch.zeros(4, 8))
    128
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    return tensor.numel() * tensor.element_size()


_SI = ["B", "kB", "MB", "GB", "TB", "PB", "EB"]
_IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


def _scaled(n: float, base: int, units: list[str]) -> str:
    i = 0
    while abs(n) >= base and i < len(units) - 1:
        n /= base
        i += 1
    return f"{n:.0f} {units[i]}" if i == 0 else f"{n:.2f} {units[i]}"


def format_bytes(n: float, *, binary: bool | None = None) -> str:
    """Human-readable bytes. By default both SI (GB = 1e9) and binary (GiB = 2**30) units.

    >>> format_bytes(128)
    '128 B'
    >>> format_bytes(80e9, binary=False)
    '80.00 GB'
    """
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        raise TypeError(f"n must be a number of bytes, got {type(n).__name__}")
    if n < 0 or not math.isfinite(n):
        raise ValueError(f"n must be a finite number of bytes >= 0, got {n}")
    if binary is None:
        si, iec = _scaled(n, 1000, _SI), _scaled(n, 1024, _IEC)
        return si if si == iec else f"{si} ({iec})"
    return _scaled(n, 1024, _IEC) if binary else _scaled(n, 1000, _SI)
