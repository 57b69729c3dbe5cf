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


# --- Refusing allocations that cannot fit (chapter 02) --------------------------------------------


class NotEnoughMemory(ValueError, MemoryError):
    """A requested allocation is larger than the memory the device has free.

    It is both a ``ValueError`` (a bad size, shown as a message by widgets) and a ``MemoryError``.
    """


def ensure_fits(
    nbytes: int,
    device: str | torch.device = "cpu",
    *,
    fraction: float = 0.9,
    free_bytes: int | None = None,
    what: str = "the allocation",
) -> int:
    """Return ``nbytes`` if it fits in ``fraction`` of ``device``'s free memory, else refuse clearly.

    Call it before allocating a size chosen by a user (a slider, an argument): a refused request
    is an exception you can show, while an allocation larger than RAM can get the whole process
    killed by the operating system. ``free_bytes`` overrides the reading (for tests and budgets).

    >>> ensure_fits(4096, "cpu")
    4096
    >>> ensure_fits(2**40, "cpu", free_bytes=2**30)
    Traceback (most recent call last):
    ...
    lectorch.memory.NotEnoughMemory: the allocation needs 1.10 TB (1.00 TiB) but cpu has 1.07 GB (1.00 GiB) free; at most 90% of it (966.37 MB (921.60 MiB)) may be used: choose a smaller size or dtype
    """
    from lectorch.device import check_device, free_memory_bytes

    nbytes = _validate.non_negative_int("nbytes", nbytes)
    fraction = _validate.fraction("fraction", fraction)
    dev = check_device(device)
    free = free_memory_bytes(dev) if free_bytes is None else _validate.non_negative_int("free_bytes", free_bytes)
    limit = int(fraction * free)
    if nbytes > limit:
        raise NotEnoughMemory(
            f"{what} needs {format_bytes(nbytes)} but {dev} has {format_bytes(free)} free; "
            f"at most {fraction:.0%} of it ({format_bytes(limit)}) may be used: choose a smaller size or dtype"
        )
    return nbytes
