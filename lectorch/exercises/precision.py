"""Exercises of chapter 01, precision (dtypes).

Expected values are sealed; the plain values, the references of the function cases (torch's
byte count and log_softmax) and the hidden cases live in ``grading/topics/precision.py``.
"""

from __future__ import annotations

from lectorch.i18n import tr


import torch

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import mismatch, public_cases

# asked as functions of their setting: the page's numbers are the public case (sealed); the
# grader tries hidden integers and steps (grading/topics/precision.py)
_BF16_257 = Sealed.stored("precision-bf16-257")
_STALL = Sealed.stored("precision-bf16-stall")

_DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn,
           torch.float8_e5m2, torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool)


register(
    Exercise(
        id="precision-tensor-bytes",
        title="tensor_nbytes(shape, dtype): bytes of a dense tensor",
        kind="function",
        refuse_what="the byte count",
        refuse=(
            "lectorch.memory.tensor_bytes",
            "lectorch.memory.bytes_of",
            "lectorch.dtypes.bytes_per_element",
        ),
        no_tensors=True,
        hint=("a tensor's bytes are its number of elements times the bytes of one element.",
              "an empty shape () is one element (a scalar); dtype.itemsize is the bytes of one element."),
        slips={8.0: "that counts bits, not bytes."},
        rtol=0.0,
        cases=public_cases("precision-tensor-bytes", tuple(
            Case(args=(shape, dtype), description=desc)
            for shape, dtype, desc in [
                ((4, 8), torch.float32, "a small float32 matrix"),
                ((4 * 12288, 12288), torch.bfloat16, "a GPT-3 feed-forward matrix in bfloat16"),
                ((2, 3, 5), torch.float8_e4m3fn, "a 3-d fp8 tensor"),
                ((), torch.float16, "a 0-d tensor (a scalar)"),
                ((0, 1024), torch.float32, "an empty tensor"),
            ]
        )),
        summary="runs your function on 5 shapes and dtypes (hidden ones when graded), exactly",
    )
)

register(
    Exercise(
        id="precision-bf16-257",
        title="bf16_stores(n): what bfloat16 stores for the integer n",
        kind="value",
        expected=_BF16_257,
        cases=(Case(args=(257,), expected=_BF16_257, description="257"),),
        rtol=0.0,
        refuse_what="what bfloat16 stores",
        no_tensors=True,
        refuse=("lectorch.dtypes.round_to", "lectorch.dtypes.bracket", "lectorch.dtypes.next_up",
                "lectorch.dtypes.next_down", "lectorch.dtypes.spacing", "lectorch.dtypes.float_bits"),
        hint=("find how far apart neighbouring bf16 values are in the power-of-two interval that holds 257.",
              "bf16 keeps 8 significant bits (1 implicit + 7 stored); round to the nearest neighbour, and "
              "a tie goes to the neighbour whose last mantissa bit is 0 (round half to even)."),
        slips={
            "bf16-cannot-store": "bf16 cannot store 257 exactly: it has only 8 significant bits.",
            "257-lies-exactly": "257 lies exactly halfway between two bf16 values: which way does a tie go?",
        },
    )
)

register(
    Exercise(
        id="precision-bf16-stall",
        title="stall_of(step): where a bf16 running sum of step stops growing",
        kind="prediction",
        expected=_STALL,
        cases=(Case(args=(0.01,), expected=_STALL, description="adding 0.01"),),
        rtol=_STALL.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        refuse=("lectorch.dtypes.round_to", "lectorch.dtypes.bracket", "lectorch.dtypes.next_up",
                "lectorch.dtypes.next_down", "lectorch.dtypes.spacing", "lectorch.dtypes.float_bits"),
        hint=("an addition rounds the exact sum to the nearest bf16 value: it changes nothing once the "
              "step is less than half the gap between neighbours.",
              "the gap between bf16 neighbours in [2**k, 2**(k+1)) is 2**k × 2**-7: find the first interval "
              "where half the gap exceeds 0.01."),
        slips={
            "exact-sum-bf16": ("that is the exact sum: bf16 rounds every partial sum, and the sum stops growing "
                               "early."),
            "2-4-gap": "at 2 half the gap is still below 0.01: the additions still move the sum there.",
            "at-value-predict": "at the value you predict, half the gap is already larger than 0.01.",
            "1-0-001": "1 + 0.001 stays 1 (the chapter), but 0.01 is ten times larger: it still moves 1.",
        },
    )
)


#: one tolerance, as torch.isclose: |got - expected| <= atol + rtol·|expected| (float32 arithmetic
#: of the stable formula passes; the unstable one overflows or loses the bf16 digits)
LOGSOFTMAX_RTOL, LOGSOFTMAX_ATOL = 1e-5, 1e-4


def compare_log_probs(got, expected) -> str | None:
    """Log-probabilities: a float32 tensor of the input's shape, finite, close to torch's
    (``expected``: torch.log_softmax in float32, plain or its seal)."""
    if not isinstance(got, torch.Tensor):
        return tr("return a tensor, got {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != tuple(expected.shape):
        return tr("your result has shape {shape}; it must have the input's shape.").format(shape=tuple(got.shape))
    if got.dtype != torch.float32:
        return tr("your result has dtype {dtype}; return float32 log-probabilities.").format(dtype=got.dtype)
    got = got.detach().cpu()
    finite = torch.isfinite(got)
    if not finite.all():
        return (tr("{bad} of your {n} log-probabilities are inf or NaN (an overflow or a log of 0?).").format(bad=int((~finite).sum()), n=got.numel()))
    wrong = int(mismatch(got, expected, rtol=LOGSOFTMAX_RTOL, atol=LOGSOFTMAX_ATOL).sum())
    if wrong:
        return (tr("{wrong} of your {n} log-probabilities are off by more than the tolerance (1e-5 of the "
               "value, at least 1e-4).").format(wrong=wrong, n=got.numel()))
    return None


def _logits(rows, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.tensor(rows, dtype=torch.float32) + torch.randn(len(rows), 8, generator=g)).to(dtype)


_BIG = torch.tensor([[1.0e4, 9.99e3, 1.0e4 - 64, 9.9e3], [-3.0e3, 2.0e4, 1.99e4, -1.0e4]], dtype=torch.bfloat16)
_OFFSETS = _logits([[1e4], [-1e4], [0.0]], torch.bfloat16, seed=1)
_SMALL = torch.randn(3, 5, generator=torch.Generator().manual_seed(2)) * 3
_SMALL_BF16 = (torch.randn(4, 6, generator=torch.Generator().manual_seed(3)) * 3).to(torch.bfloat16)
_BATCHED = torch.randn(2, 3, 7, generator=torch.Generator().manual_seed(4)) * 50

register(
    Exercise(
        id="precision-log-softmax",
        title="log_softmax(logits): numerically stable log-probabilities",
        kind="function",
        refuse_what="the stable log-softmax",
        refuse=(
            "torch.log_softmax",
            "torch.Tensor.log_softmax",
            "torch.nn.functional.log_softmax",
            "torch.special.log_softmax",
            "torch._log_softmax",
            "torch.nn.LogSoftmax",
            "torch.logsumexp",
            "torch.Tensor.logsumexp",
            "torch.special.logsumexp",
            "torch.softmax",
            "torch.Tensor.softmax",
            "torch.nn.functional.softmax",
            "torch.special.softmax",
            # softmax under another name: the checker cannot see a call made inside another torch function
            "torch.nn.functional.softmin",
            "torch.nn.Softmin",
            "torch.nn.Softmax",
            "torch.nn.functional.cross_entropy",
            "torch.nn.functional.nll_loss",
        ),
        hint=("exp overflows float32 and bf16 for arguments above about 88.7; log-softmax does not change "
              "when the same constant is added to every logit of a row.",
              "each row may need its own constant; and bf16 keeps only 8 significant bits: in which "
              "precision should the arithmetic happen?"),
        compare=compare_log_probs,
        rtol=LOGSOFTMAX_RTOL,
        atol=LOGSOFTMAX_ATOL,
        cases=public_cases("precision-log-softmax", tuple(
            Case(args=(x,), description=desc)
            for x, desc in [
                (_SMALL, "small float32 logits"),
                (_SMALL_BF16, "small bf16 logits"),
                (_BIG, "bf16 logits of magnitude 1e4"),
                (_OFFSETS, "rows around +1e4, -1e4 and 0"),
                (_BATCHED, "a (2, 3, 7) batch: classes on the last dimension"),
                (torch.full((2, 1), 5.0), "a single class"),
            ]
        )),
        summary=("runs your function on 6 logit tensors (hidden ones when graded): float32, the "
                 "input's shape, finite, within 1e-5 of the value (at least 1e-4) of torch's log_softmax"),
    )
)
