"""Exercises of chapter 01, precision (dtypes)."""

import torch

from lectorch.dtypes import float_format
from lectorch.exercises import Case, Exercise, register
from lectorch.memory import tensor_bytes


def _exact(got, expected):
    """Exact comparison of floats (a dtype stores one exact value; close is not enough)."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return f"expected a number, got {type(got).__name__}."
    if got == expected:
        return None
    if got != got:
        return "you gave NaN."
    return f"{got!r} is {'too large' if got > expected else 'too small'}."


register(
    Exercise(
        id="precision-tensor-bytes",
        title="tensor_nbytes(shape, dtype): bytes of a dense tensor",
        kind="function",
        hint="multiply the sizes of all dimensions (an empty shape is one element) by the bytes of one element "
             "(dtype.itemsize, or torch.finfo(dtype).bits // 8).",
        slips={8.0: "that is bits, not bytes: divide by 8."},
        cases=tuple(
            Case(args=(shape, dtype), expected=tensor_bytes(shape, dtype), description=desc)
            for shape, dtype, desc in [
                ((4, 8), torch.float32, "a small float32 matrix"),
                ((4 * 12288, 12288), torch.float32, "a GPT-3 feed-forward matrix"),
                ((4 * 12288, 12288), torch.bfloat16, "the same matrix in bfloat16"),
                ((2, 3, 5), torch.float8_e4m3fn, "a 3-d fp8 tensor"),
                ((7,), torch.float64, "a float64 vector"),
                ((), torch.float16, "a 0-d tensor (a scalar)"),
                ((0, 1024), torch.float32, "an empty tensor"),
            ]
        ),
    )
)

register(
    Exercise(
        id="precision-fp16-smallest",
        title="the smallest positive float16 value",
        kind="value",
        expected=float_format(torch.float16).smallest_subnormal,
        rtol=1e-9,
        hint="the smallest positive value has every bit zero except the last mantissa bit (a subnormal): "
             "its value is 2**(1 - bias) × 2**-mantissa_bits.",
        slips={
            2.0**10: "that is the smallest *normal* value (torch.finfo(...).tiny); subnormals go further down.",
            0.5: "count the subnormal exponent as 1 - bias, not -bias.",
        },
    )
)

register(
    Exercise(
        id="precision-bf16-257",
        title="what bfloat16 stores for 257",
        kind="value",
        expected=256.0,
        compare=_exact,
        hint="bf16 keeps 8 significant bits (1 implicit + 7 stored): find how far apart bf16 values are in the "
             "power-of-two interval that holds 257, then round to the nearest; a tie goes to the neighbour whose "
             "last mantissa bit is 0 (round half to even).",
    )
)

register(
    Exercise(
        id="precision-e4m3-max",
        title="the largest finite float8_e4m3fn value",
        kind="value",
        expected=float_format(torch.float8_e4m3fn).max,
        rtol=0.0,
        hint="E4M3FN has no infinity: the all-ones exponent (1111) holds ordinary numbers, and only the pattern "
             "S.1111.111 is NaN. Take the largest mantissa that is not NaN.",
        slips={
            480 / 448: "mantissa 111 with exponent 1111 is NaN in E4M3FN, not a number.",
            240 / 448: "in E4M3FN the all-ones exponent is not reserved for inf/NaN: it holds numbers.",
            57344 / 448: "that is E5M2's largest value; E4M3 has one exponent bit less.",
        },
    )
)
