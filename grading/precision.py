"""Instructor's grading data for chapter 01 (precision): plain expected values, hidden cases.

Never shipped to students (see lectorch.exercises: the package holds only seals).
"""

from __future__ import annotations

import math
import random

import torch

from lectorch import dtypes
from lectorch.exercises import Case

# bf16 rounds 257 (a tie between 256 and 258) to the even mantissa
_BF16_257 = torch.tensor(257.0, dtype=torch.bfloat16).item()


def _stall_of(step: float, dtype: str = "bf16") -> float:
    """The first value v = 2**k at which half the spacing exceeds ``step``: additions stop there."""
    k = -20
    while dtypes.spacing(2.0**k, dtype) / 2 <= step:
        k += 1
    return 2.0**k


EXPECTED = {
    "precision-bf16-257": _BF16_257,
    "precision-bf16-stall": _stall_of(0.01),
}


def bf16_stores(n):
    """What bfloat16 stores for the integer ``n`` (round to nearest, ties to even)."""
    return torch.tensor(float(n), dtype=torch.bfloat16).item()


def _bf16_cases(rng: random.Random) -> list[Case]:
    ns = [255, 2**15 + 2**7]  # exact below 256; a tie that rounds down, to the even mantissa
    for k in rng.sample(range(8, 16), 3):  # in [2**k, 2**(k+1)) the spacing is 2**(k-7)
        ns.append(2**k + rng.randrange(1, 2**k))
    k = rng.randrange(9, 16)
    ns.append(2**k + (2 * rng.randrange(2**6) + 1) * 2**(k - 8))  # a tie
    return [Case(args=(n,), expected=bf16_stores(n), description="a hidden integer") for n in ns]


def _stall_cases(rng: random.Random) -> list[Case]:
    steps = []
    while len(steps) < 4:
        step = round(10 ** rng.uniform(-3.5, -0.5), 5)
        # away from powers of two: there half a gap equals the step, and the step's own bf16 rounding decides
        if abs(math.log2(step) - round(math.log2(step))) > 0.05:
            steps.append(round(step, 5))
    return [Case(args=(s,), expected=_stall_of(s), description="a hidden step") for s in steps]



def tensor_nbytes(shape, dtype):
    """The reference solution of precision-tensor-bytes."""
    return math.prod(shape) * dtype.itemsize


def log_softmax(logits):
    """The reference solution of precision-log-softmax: shift each row by its max, in float32."""
    x = logits.float()
    shifted = x - x.amax(dim=-1, keepdim=True)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def _tensor_cases(rng: random.Random) -> list[Case]:
    out = []
    for shape, dtype in [((3, 0, 5), torch.float64), ((1,), torch.bool), ((12288, 4 * 12288), torch.float32),
                         ((2, 2, 2, 2, 2), torch.float8_e5m2), ((), torch.int64), ((100, 3), torch.int8)]:
        t = torch.empty(shape, dtype=dtype, device="meta")
        out.append(Case(args=(shape, dtype), expected=t.numel() * t.element_size(), description="a hidden tensor"))
    return out


def _logit_cases(rng: random.Random) -> list[Case]:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    xs = [
        torch.tensor([[3e4, -3e4, 0.0], [1e4, 1e4, 1e4]], dtype=torch.bfloat16),  # ties at a large value
        (torch.randn(5, 50, generator=g) * 2).to(torch.bfloat16),
        torch.tensor([[60000.0, 59000.0, -60000.0]], dtype=torch.float16),
        torch.randn(4, 3, 9, generator=g) * 1e4,
        torch.tensor([[-1e4, -1e4 + 1, -1e4 + 2]]),  # every logit very negative: exp underflows
    ]
    return [Case(args=(x,), expected=torch.log_softmax(x.float(), dim=-1), description="hidden logits") for x in xs]


HIDDEN = {"precision-tensor-bytes": _tensor_cases, "precision-log-softmax": _logit_cases,
          "precision-bf16-257": _bf16_cases, "precision-bf16-stall": _stall_cases}

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "precision-bf16-257": {
        "bf16-cannot-store": 257.0,
        "257-lies-exactly": 258.0,
    },
    "precision-bf16-stall": {
        "exact-sum-bf16": 10.0,
        "2-4-gap": 2.0,
        "at-value-predict": 8.0,
        "1-0-001": 1.0,
    },
}
