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

import torch
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
    return matmul_flops(batch, in_features, out_features)


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
    by_op = {str(op).removeprefix("aten."): int(n) for op, n in mode.get_flop_counts()["Global"].items()}
    return FlopCount(total=int(mode.get_total_flops()), by_operator=by_op, result=result)
