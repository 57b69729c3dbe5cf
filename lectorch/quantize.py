"""Post-training quantisation, the smallest version: symmetric int8 weights with a scale per channel.

Each channel (a row by default) is stored as int8 values q and one float scale s = max|w| / 127,
and read back as q·s. Rounding to the nearest step costs at most s/2 per element; the int8 matrix is
4× smaller than fp32 (plus one scale per channel). One scale per channel instead of one per tensor
keeps a channel of small weights from being crushed by another channel's outlier.

>>> w = torch.tensor([[0.25, -1.0], [0.03, 0.02]])
>>> q, scale = quantize_int8(w)
>>> q.tolist(), [round(s, 6) for s in scale.flatten().tolist()]
([[32, -127], [127, 85]], [0.007874, 0.000236])
>>> dequantize_int8(q, scale).sub(w).abs().max() <= scale.max() / 2
tensor(True)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Symmetric int8 uses -127 … 127 (not -128), so that 0 and ±max are exact and the range is symmetric.
QMAX = 127


def _check_weight(weight: torch.Tensor, axis: int | None) -> int | None:
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch.Tensor, got {type(weight).__name__}")
    if weight.ndim != 2:
        raise ValueError(f"weight must be a 2-D matrix, got shape {tuple(weight.shape)}")
    if not weight.is_floating_point():
        raise TypeError(f"weight must be floating point, got {weight.dtype}")
    if not torch.isfinite(weight).all():
        raise ValueError("weight contains inf or NaN, which int8 cannot represent")
    if axis is None:
        return None
    if isinstance(axis, bool) or axis not in (0, 1, -1, -2):
        raise ValueError(f"axis must be 0 (a scale per row), 1 (per column) or None (one per tensor), got {axis!r}")
    return axis % 2


def quantize_int8(weight: torch.Tensor, *, axis: int | None = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantise ``weight`` to int8 with a symmetric scale per slice along ``axis`` (None: one scale).

    Returns ``(q, scale)``: q int8 of weight's shape; scale float32, shaped to broadcast against q
    ((rows, 1) for axis=0, (1, cols) for axis=1, (1, 1) for None). An all-zero channel gets scale 1.

    >>> q, s = quantize_int8(torch.ones(3, 4), axis=1); q.dtype, tuple(s.shape)
    (torch.int8, (1, 4))
    """
    axis = _check_weight(weight, axis)
    w = weight.detach().float()
    if axis is None:
        amax = w.abs().amax().reshape(1, 1)
    else:
        amax = w.abs().amax(dim=1 - axis, keepdim=True)
    scale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    q = torch.round(w / scale).clamp_(-QMAX, QMAX).to(torch.int8)
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The float32 weight that ``(q, scale)`` stands for: ``q · scale``.

    >>> dequantize_int8(torch.tensor([[127, -64]], dtype=torch.int8), torch.tensor([[0.5]])).tolist()
    [[63.5, -32.0]]
    """
    if not isinstance(q, torch.Tensor) or q.dtype != torch.int8:
        raise TypeError(f"q must be an int8 tensor, got {getattr(q, 'dtype', type(q).__name__)}")
    if not isinstance(scale, torch.Tensor) or not scale.is_floating_point():
        raise TypeError("scale must be a floating-point tensor")
    if scale.numel() != 1 and scale.ndim != q.ndim:
        raise ValueError(f"scale of shape {tuple(scale.shape)} has {scale.ndim} dims but q has {q.ndim}: keep the "
                         "shape quantize_int8 returns ((rows, 1) or (1, cols)); a flattened scale would broadcast "
                         "along the wrong axis")
    try:
        torch.broadcast_shapes(q.shape, scale.shape)
    except RuntimeError:
        raise ValueError(f"scale of shape {tuple(scale.shape)} does not broadcast against q of shape {tuple(q.shape)}") from None
    return q.float() * scale.float()


@dataclass(frozen=True)
class QuantError:
    """How far the int8 copy is from the original, and what it saves."""

    max_abs_error: float  # largest |w - dequant(q)|
    bound: float  # largest s/2: the rounding bound the max error must respect
    relative_error: float  # ‖w - dequant‖ / ‖w‖ (Frobenius)
    fp32_bytes: int
    int8_bytes: int  # int8 values plus the float32 scales

    @property
    def compression(self) -> float:
        return self.fp32_bytes / self.int8_bytes


def quantization_error(weight: torch.Tensor, *, axis: int | None = 0) -> QuantError:
    """Quantise and dequantise ``weight``; report the error and the bytes.

    >>> e = quantization_error(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)))
    >>> e.max_abs_error <= e.bound, round(e.compression, 2)
    (True, 3.76)
    """
    q, scale = quantize_int8(weight, axis=axis)
    w = weight.detach().float()
    diff = w - dequantize_int8(q, scale)
    norm = float(torch.linalg.vector_norm(w))
    return QuantError(
        max_abs_error=float(diff.abs().max()),
        bound=float(scale.max()) / 2,
        relative_error=float(torch.linalg.vector_norm(diff)) / norm if norm > 0 else 0.0,
        fp32_bytes=w.numel() * 4,
        int8_bytes=q.numel() + scale.numel() * 4,
    )


__all__ = ["QMAX", "quantize_int8", "dequantize_int8", "QuantError", "quantization_error"]
