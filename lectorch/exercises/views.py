"""Exercises of chapter 03, strides, views and contiguity."""

from __future__ import annotations

import numbers
from typing import Any

import torch

from lectorch.exercises import Case, Exercise, register
from lectorch.views import shares_storage


# --- 1. predict the strides after a transpose -------------------------------------------------------
def _compare_strides(got: Any, expected: tuple[int, ...]) -> str | None:
    if not isinstance(got, (tuple, list)) or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in got):
        return f"return the strides as a tuple of ints, got {type(got).__name__} {got!r}."
    got = tuple(int(s) for s in got)
    if got == tuple(expected):
        return None
    if len(got) != len(expected):
        return f"your strides have {len(got)} entries; a transpose keeps the number of dims."
    if sorted(got) == sorted(expected):
        return "the right numbers in the wrong order: only the strides of dim0 and dim1 trade places."
    return "these are not the strides torch reports: start from the strides of a fresh tensor of that shape."


_TRANSPOSE_CASES = [
    (((4, 4), 0, 1), "a 4×4 matrix, .T"),
    (((2, 3, 4), 0, 2), "a 3-D tensor, first and last dims"),
    (((2, 3, 4), 1, 2), "a 3-D tensor, last two dims (as for attention heads)"),
    (((2, 3, 4, 5), -1, 0), "negative dims count from the end"),
    (((7,), 0, 0), "a dim swapped with itself"),
]

register(
    Exercise(
        id="views-transpose-strides",
        title="transposed_strides(shape, dim0, dim1): the strides of a transposed fresh tensor",
        kind="function",
        hint="a fresh tensor has row-major strides (the product of the sizes to the right); a transpose "
             "swaps two entries of the stride tuple and moves no data.",
        compare=_compare_strides,
        cases=tuple(
            Case(args=args, expected=tuple(torch.empty(args[0]).transpose(args[1], args[2]).stride()), description=desc)
            for args, desc in _TRANSPOSE_CASES
        ),
    )
)


# --- 2. the storage index of an element of a strided slice -----------------------------------------
_X = torch.arange(48).view(6, 8)
_Y = _X[1:, 2::3]
_INDEX = int(_Y.storage_offset() + 2 * _Y.stride(0) + 1 * _Y.stride(1))

register(
    Exercise(
        id="views-storage-index",
        title="the storage index that y[2, 1] reads, for y = x[1:, 2::3] of a contiguous 6×8 x",
        kind="value",
        expected=_INDEX,
        hint="find y's storage offset (where y[0, 0] lives) and y's strides (a step in a slice multiplies "
             "the stride), then use offset + i·stride[0] + j·stride[1].",
        slips={
            (2 * 8 + 1 * 3) / _INDEX: "you left out the storage offset: y[0, 0] is not at storage index 0.",
            (10 + 2 * 8 + 1) / _INDEX: "the slice 2::3 takes every third column: its stride is 3 × 1.",
            (10 + 1 * 8 + 2 * 3) / _INDEX: "row index 2 goes with stride[0], column index 1 with stride[1].",
        },
    )
)


# --- 3. which operations copy? ----------------------------------------------------------------------
#: the operations of the exercise, applied to x = torch.arange(16.).view(4, 4)
COPY_QUIZ = {
    "a": ("x[1]", lambda x: x[1]),
    "b": ("x[:, 1]", lambda x: x[:, 1]),
    "c": ("x.T", lambda x: x.T),
    "d": ("x.view(2, 8)", lambda x: x.view(2, 8)),
    "e": ("x.contiguous()", lambda x: x.contiguous()),
    "f": ("x.T.contiguous()", lambda x: x.T.contiguous()),
    "g": ("x.reshape(16)", lambda x: x.reshape(16)),
    "h": ("x.T.reshape(16)", lambda x: x.T.reshape(16)),
    "i": ("x[:, ::2].reshape(8)", lambda x: x[:, ::2].reshape(8)),
    "j": ("x * 1", lambda x: x * 1),
    "k": ("torch.triu(x)", lambda x: torch.triu(x)),
}


def copying_ops() -> set[str]:
    """The letters of :data:`COPY_QUIZ` whose result has new storage (asked to torch, not hard-coded)."""
    x = torch.arange(16.0).view(4, 4)
    return {letter for letter, (_, op) in COPY_QUIZ.items() if not shares_storage(x, op(x))}


def _compare_letters(got: Any, expected: set[str]) -> str | None:
    if isinstance(got, str):
        got = [c for c in got if not c.isspace() and c != ","]
    if not isinstance(got, (set, frozenset, list, tuple)) or not all(isinstance(c, str) for c in got):
        return f"answer with letters, e.g. 'ab' or {{'a', 'b'}}; got {type(got).__name__}."
    letters = {c.strip().lower() for c in got}
    unknown = sorted(letters - set(COPY_QUIZ))
    if unknown:
        return f"there is no operation {', '.join(map(repr, unknown))}; use the letters a to {max(COPY_QUIZ)}."
    if letters == expected:
        return None
    views, missing = len(letters - expected), len(expected - letters)
    parts = []
    if views:
        parts.append(f"{views} of your letters {'is a view' if views == 1 else 'are views'} (shared storage)")
    if missing:
        parts.append(f"{missing} copying operation{' is' if missing == 1 else 's are'} missing")
    return "; ".join(parts) + "."


register(
    Exercise(
        id="views-which-copy",
        title="which operations allocate new storage",
        kind="value",
        expected=copying_ops(),
        compare=_compare_letters,
        hint="indexing, slicing, .T and .view never copy; .contiguous() and .reshape copy only when the "
             "strides force them to; element-wise ops always write a new tensor.",
    )
)


# --- 4. a causal attention mask ---------------------------------------------------------------------
def _reference_mask(seq_len: int) -> torch.Tensor:
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)


def _compare_mask(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"return a tensor, got {type(got).__name__}."
    if got.dtype != torch.bool:
        return f"return a bool tensor (True = hidden), got dtype {got.dtype}; add dtype=torch.bool or .bool()."
    if got.shape != expected.shape:
        return f"your mask has shape {tuple(got.shape)}; it needs one row per query and one column per key."
    got = got.detach().cpu()
    if torch.equal(got, expected):
        return None
    if torch.equal(got, ~expected):
        return "this marks the positions a token MAY attend to; the mask must be True where attention is hidden."
    if torch.equal(got, torch.triu(torch.ones_like(expected), diagonal=0)):
        return "the diagonal is hidden too, but a token may attend to itself: shift the triangle by one."
    if torch.equal(got, expected.T):
        return "this hides the past and shows the future: row i is the query, column j the key."
    return "the shape and dtype are right but the pattern is not causal."


register(
    Exercise(
        id="views-causal-mask",
        title="causal_mask(seq_len): True where query i must not see key j",
        kind="function",
        compare=_compare_mask,
        hint="token i may look at tokens 0..i; the hidden ones (j > i) form the strict upper triangle: torch.triu.",
        cases=tuple(Case(args=(n,), expected=_reference_mask(n), description=desc) for n, desc in [
            (4, "four tokens"), (7, "seven tokens"), (1, "a single token")]),
    )
)
