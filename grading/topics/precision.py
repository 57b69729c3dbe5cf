"""Instructor's grading data for chapter 01 (precision): plain expected values, hidden cases.

Never shipped to students (see lectorch.exercises: the package holds only seals).
"""

from __future__ import annotations

import math
import random

import torch

from lectorch import dtypes
from lectorch.exercises import Case
from grading.topics import Topic

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


_DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn,
           torch.float8_e5m2, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool)


def meta_bytes(shape, dtype) -> int:
    """Bytes of a dense tensor, as torch itself counts them (on the meta device: nothing allocated)."""
    t = torch.empty(shape, dtype=dtype, device="meta")
    return t.numel() * t.element_size()


def torch_log_probs(x) -> torch.Tensor:
    return torch.log_softmax(x.float(), dim=-1)


REFERENCE = {
    "precision-tensor-bytes": lambda case: meta_bytes(*case.args),
    "precision-log-softmax": lambda case: torch_log_probs(case.args[0]),
}


def _tensor_cases(rng: random.Random) -> list[Case]:
    out = []
    for shape, dtype in [((3, 0, 5), torch.float64), ((1,), torch.bool), ((12288, 4 * 12288), torch.float32),
                         ((2, 2, 2, 2, 2), torch.float8_e5m2), ((), torch.int64), ((100, 3), torch.int8)]:
        out.append(Case(args=(shape, dtype), expected=meta_bytes(shape, dtype), description="a hidden tensor"))
    for _ in range(6):
        shape = tuple(rng.choice([0, 1, 2, 3, 7, 64, 1000, 4096]) for _ in range(rng.randint(0, 4)))
        dtype = rng.choice(_DTYPES)
        out.append(Case(args=(shape, dtype), expected=meta_bytes(shape, dtype), description=f"shape {shape}, {dtype}"))
    return out


def _random_logits(rng: random.Random, n: int = 4) -> list[Case]:
    cases = []
    for _ in range(n):
        g = torch.Generator().manual_seed(rng.randrange(2**31))
        dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
        shape = (rng.randint(1, 6), rng.randint(1, 40)) if rng.random() < 0.7 else (
            rng.randint(1, 3), rng.randint(1, 4), rng.randint(2, 20))
        limit = 3e4 if dtype == torch.float16 else 1e4
        offsets = (torch.rand(shape[:-1] + (1,), generator=g) * 2 - 1) * limit
        spread = rng.choice([1.0, 10.0, 1e3])
        x = (offsets + torch.randn(shape, generator=g) * spread).to(dtype)
        cases.append(Case(args=(x,), expected=torch_log_probs(x), description=f"random {dtype} logits"))
    return cases


def _logit_cases(rng: random.Random) -> list[Case]:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    xs = [
        torch.tensor([[3e4, -3e4, 0.0], [1e4, 1e4, 1e4]], dtype=torch.bfloat16),  # ties at a large value
        (torch.randn(5, 50, generator=g) * 2).to(torch.bfloat16),
        torch.tensor([[60000.0, 59000.0, -60000.0]], dtype=torch.float16),
        torch.randn(4, 3, 9, generator=g) * 1e4,
        torch.tensor([[-1e4, -1e4 + 1, -1e4 + 2]]),  # every logit very negative: exp underflows
    ]
    return [Case(args=(x,), expected=torch_log_probs(x), description="hidden logits") for x in xs] + _random_logits(rng)


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


#: public practice settings (answers sealed in the package): integers where truncation and
#: round-to-nearest-even disagree (a tie that rounds up to the even neighbour, a plain round-up),
#: one stored exactly; steps on either side of the page's
PRACTICE = {
    "precision-bf16-257": lambda: [Case(args=(n,), expected=bf16_stores(n), description=d) for n, d in [
        (255, "255"), (259, "259: a tie"), (1003, "1003"), (4100, "4100")]],
    "precision-bf16-stall": lambda: [Case(args=(s,), expected=_stall_of(s), description=f"adding {s}")
                                     for s in (0.001, 0.1, 0.3)],
}


TOPIC = Topic(expected=EXPECTED, hidden=HIDDEN, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
