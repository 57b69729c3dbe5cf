"""Grading bundle of chapter 03 (views): plain expected values and hidden cases.

Not part of the student package. Every value is asked to torch here, not typed in.
"""

from __future__ import annotations

import dataclasses
import random

import torch

from lectorch.exercises import views as ex
from lectorch.views import shares_storage


def storage_index() -> int:
    y = torch.arange(48).view(6, 8)[1:, 2::3]
    return int(y.storage_offset() + 2 * y.stride(0) + 1 * y.stride(1))


def copying_letters() -> str:
    x = torch.arange(16.0).view(4, 4)
    return "".join(sorted(k for k, (_, op) in ex.COPY_QUIZ.items() if not shares_storage(x, op(x))))


def permute_slice_layout() -> tuple[tuple[int, ...], int]:
    y = torch.empty(2, 3, 4, 5).permute(3, 1, 0, 2)[::2, 1:, :, 1]
    return tuple(y.stride()), int(y.storage_offset())


EXPECTED = {
    "views-storage-index": storage_index(),
    "views-which-copy": copying_letters(),
    "views-permute-slice": permute_slice_layout(),
}


# --- references: the expected results of the function exercises, from torch itself --------------


def torch_strides(case) -> dict:
    shape, dim0, dim1 = case.args
    strides = tuple(torch.empty(shape, device="meta").transpose(dim0, dim1).stride())
    return {"strides": strides, "sorted": tuple(sorted(strides))}


def heads_side_by_side(x: torch.Tensor) -> torch.Tensor:
    """What merge_heads must return, built another way: each head's (batch, seq, width) block,
    concatenated along the features (``torch.cat``)."""
    return torch.cat([x[:, h] for h in range(x.shape[1])], dim=-1)


REFERENCE = {
    "views-transpose-strides": torch_strides,
    "views-merge-heads": lambda case: heads_side_by_side(case.args[0]),
}


def _with_expected(exercise_id: str, cases: list) -> list:
    out = []
    for c in cases:
        result = REFERENCE[exercise_id](c)
        out.append(dataclasses.replace(c, expected={**c.expected, **result} if isinstance(c.expected, dict) else result))
    return out


def random_transpose_cases(rng: random.Random, n: int = 4) -> list:
    cases = []
    for _ in range(n):
        shape = tuple(rng.randint(1, 9) for _ in range(rng.randint(2, 5)))
        d0, d1 = rng.randrange(len(shape)), rng.randrange(len(shape))
        if rng.random() < 0.4:
            d1 -= len(shape)  # a negative dim
        cases.append(ex.transpose_case(shape, d0, d1, f"shape {shape}, dims ({d0}, {d1})"))
    return cases


def random_merge_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        shape = (rng.randint(1, 3), rng.randint(2, 5), rng.randint(2, 7), rng.randint(1, 6))
        t = rng.random() < 0.5
        cases.append(ex.merge_case(shape, f"a random {shape} tensor" + (", non-contiguous" if t else ""),
                                   seed=rng.randrange(2**31), transposed_input=t))
    return cases


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "views-transpose-strides":
        return _with_expected(exercise_id, [
            ex.transpose_case((2, 3, 4), 0, 2, "a 3-D tensor, first and last dims"),
            ex.transpose_case((2, 3, 4, 5), -1, 0, "negative dims count from the end"),
            ex.transpose_case((7,), 0, 0, "a dim swapped with itself"),
            ex.transpose_case((3, 1, 4), 0, 1, "a dim of size 1"),
            *random_transpose_cases(rng, 4)])
    if exercise_id == "views-merge-heads":
        return _with_expected(exercise_id, [
            ex.merge_case((2, 1, 5, 3), "one head", seed=10),
            ex.merge_case((1, 4, 4, 4), "heads == seq == width", seed=11),
            ex.merge_case((2, 3, 4, 2), "a non-contiguous input", seed=12, transposed_input=True),
            *random_merge_cases(rng, 3)])
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "views-storage-index": {
        "left-out-storage": 19.0,
        "slice-2-3": 27.0,
        "row-index-2": 24.0,
    },
}
