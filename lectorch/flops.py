"""FLOPs: what matrix multiplications cost, and what torch itself counts.

A FLOP here is one floating-point addition or multiplication, so a multiply-add is 2 FLOPs.

>>> matmul_flops(2, 3, 4)          # (2, 3) @ (3, 4)
48
>>> a, b = torch.ones(2, 3), torch.ones(3, 4)
>>> count_flops(torch.matmul, a, b).total
48
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch  # noqa: F401 - the doctests use it
from torch.utils.flop_counter import FlopCounterMode

from lectorch import _validate


def matmul_flops(m: int, k: int, n: int, *, batch: int = 1) -> int:
    """FLOPs of ``batch`` products of an (m, k) by a (k, n) matrix: ``2·batch·m·k·n``.

    >>> matmul_flops(8192, 8192, 8192) / 1e12
    1.099511627776
    """
    m = _validate.positive_int("m", m)
    k = _validate.positive_int("k", k)
    n = _validate.positive_int("n", n)
    batch = _validate.positive_int("batch", batch)
    return 2 * batch * m * k * n


def linear_flops(batch: int, in_features: int, out_features: int) -> int:
    """Forward FLOPs of a linear map of a (batch, in_features) input: ``2·B·D·K``.

    A bias adds B·K additions, which FlopCounterMode (and this function) leave out: they are
    negligible next to the matmul.

    >>> linear_flops(4, 1024, 256)
    2097152
    """
    batch = _validate.positive_int("batch", batch)
    in_features = _validate.positive_int("in_features", in_features)
    out_features = _validate.positive_int("out_features", out_features)
    return matmul_flops(batch, in_features, out_features)


def forward_flops(tokens: float, params: float) -> float:
    """Forward-pass FLOPs of a model whose work is its matmuls: ``2 × tokens × params``.

    Exact for a stack of bias-free linear layers (each weight element does one multiply-add per
    token); a good approximation for transformers at moderate sequence lengths.

    >>> forward_flops(tokens=8, params=1000)
    16000.0
    """
    tokens = _validate.positive_number("tokens", tokens)
    return 2.0 * tokens * _validate.positive_number("params", params)


def elementwise_flops(numel: int, *, flops_per_element: float = 1) -> float:
    """FLOPs of an element-wise op (add, ReLU, scaling, ...) over ``numel`` elements.

    One FLOP per element by default; a GELU or a normalisation costs a few more. Note that
    FlopCounterMode counts *only* matmul-like operators, so it reports 0 for these.

    >>> elementwise_flops(4 * 256)                     # ReLU on a (4, 256) activation
    1024.0
    >>> count_flops(torch.relu, torch.ones(4, 256)).total
    0
    """
    numel = _validate.positive_int("numel", numel)
    return _validate.positive_number("flops_per_element", flops_per_element) * numel


def matmul_to_elementwise_ratio(batch: int, in_features: int, out_features: int, *, flops_per_element: float = 1) -> float:
    """How many times the FLOPs of a (B, D) @ (D, K) linear map exceed one element-wise op on its
    (B, K) output: ``2·B·D·K / (B·K) = 2·D`` per FLOP per element. It grows with the width D.

    >>> matmul_to_elementwise_ratio(16, 4096, 4096)
    8192.0
    """
    out = elementwise_flops(_validate.positive_int("batch", batch) * _validate.positive_int("out_features", out_features),
                            flops_per_element=flops_per_element)
    return linear_flops(batch, in_features, out_features) / out


def format_flops(value: float, *, per_s: bool = False) -> str:
    """A FLOP count (or, with ``per_s=True``, a rate) with an SI prefix, keeping "FLOPs" and "FLOP/s" apart.

    The one formatter of FLOPs in lectorch (widgets and chapters use it): 4 significant digits.

    >>> format_flops(3.15e23), format_flops(989.5e12, per_s=True), format_flops(0)
    ('315 ZFLOPs', '989.5 TFLOP/s', '0 FLOPs')
    """
    value = _validate.non_negative_number("value", value)
    unit = "FLOP/s" if per_s else "FLOPs"
    for prefix, scale in (("Y", 1e24), ("Z", 1e21), ("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


@dataclass(frozen=True)
class FlopCount:
    """FLOPs torch counted while running a function, in total and per operator."""

    total: int
    by_operator: dict[str, int] = field(default_factory=dict)
    result: Any = field(default=None, repr=False, compare=False)


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> FlopCount:
    """Run ``fn(*args, **kwargs)`` under ``torch.utils.flop_counter.FlopCounterMode``.

    Backward passes run inside ``fn`` are counted too.

    >>> count_flops(torch.nn.Linear(8, 4, bias=False), torch.ones(2, 8)).total
    128
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    with FlopCounterMode(display=False) as mode:
        result = fn(*args, **kwargs)
    by_op = {str(op).removeprefix("aten."): int(n) for op, n in mode.get_flop_counts().get("Global", {}).items()}
    return FlopCount(total=int(mode.get_total_flops()), by_operator=by_op, result=result)
