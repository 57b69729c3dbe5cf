"""Exercises of chapter 03, strides, views and contiguity.

- ``views-transpose-strides`` (implement): the strides of a transposed fresh tensor, without one.
- ``views-storage-index`` (derive): the storage index an element of a stepped slice reads.
- ``views-which-copy`` (classify): which of eleven operations allocate new storage, as a function of
  the shape of ``x``.
- ``views-permute-slice`` (derive): strides and offset after a permute, slices and an index.
- ``views-merge-heads`` (debug): a ``.view`` on a transposed tensor raises; fix it.

Expected values are sealed; the plain values and the hidden cases live in ``grading/topics/views.py``.
Function cases take their expected values from torch itself (a transposed tensor's strides; the
heads concatenated with ``torch.cat``), computed in ``grading/topics/views.py`` (``REFERENCE``); the
package holds the public cases' results only as seals.
"""

from __future__ import annotations

from lectorch.i18n import tr

import numbers
from typing import Any

import torch

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, public_cases

# --- 1. predict the strides after a transpose -------------------------------------------------------


def _compare_strides(got: Any, expected: dict) -> str | None:
    """``expected``: ``ndim`` (in clear), the strides torch reports and the same sorted (plain or sealed)."""
    if not isinstance(got, (tuple, list)) or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in got):
        return tr("return the strides as a tuple of ints, got {type} {got!r}.").format(type=type(got).__name__, got=got)
    got = tuple(int(s) for s in got)
    if close(got, expected["strides"]):
        return None
    if len(got) != expected["ndim"]:
        return tr("your strides have {n_got} entries; a transpose keeps the number of dims.").format(n_got=len(got))
    if close(tuple(sorted(got)), expected["sorted"]):
        return tr("the right numbers in the wrong order.")
    return tr("these are not the strides torch reports for this shape and these dims.")


def transpose_case(shape, dim0, dim1, description: str) -> Case:
    """A case; the strides torch reports for ``torch.empty(shape).transpose(dim0, dim1)`` are the
    grader's (sealed in the package)."""
    return Case(args=(tuple(shape), dim0, dim1), expected={"ndim": len(shape)}, description=description)


register(
    Exercise(
        id="views-transpose-strides",
        title="transposed_strides(shape, dim0, dim1): the strides of a transposed fresh tensor",
        kind="function",
        refuse_what="the strides",
        refuse=(
            "lectorch.views.contiguous_strides",
            "lectorch.views.describe_view",
            "lectorch.views.element_offset",
            "lectorch.views.Layout",
        ),
        no_tensors=True,
        hint=(("start from the strides of a fresh (row-major) tensor of that shape: each is the "
              "product of the sizes to its right."),
              "a transpose moves no data: it only changes which stride belongs to which dim."),
        compare=_compare_strides,
        rtol=0.0,
        cases=public_cases("views-transpose-strides", (
            transpose_case((4, 4), 0, 1, "a 4×4 matrix, .T"),
            transpose_case((2, 3, 4), 1, 2, "a 3-D tensor, last two dims"),
            transpose_case((5, 2, 3), -1, 0, "negative dims count from the end"))),
        summary="runs your function on 3 shapes and dim pairs (hidden ones when graded), exactly",
    )
)


# --- 2. the storage index of an element of a strided slice -----------------------------------------
#: asked as a function of its setting: the page's slice is the public case (sealed); the grader tries
#: hidden shapes, slices and elements (grading/topics/views.py), read from torch
_STORAGE_INDEX = Sealed.stored("views-storage-index")

register(
    Exercise(
        id="views-storage-index",
        title=("storage_index(shape, row_start, col_start, col_step, i, j): the storage index that y[i, j] "
               "reads, for y = x[row_start:, col_start::col_step] of a contiguous x"),
        kind="value",
        expected=_STORAGE_INDEX,
        cases=(Case(args=((6, 8), 1, 2, 3, 2, 1), expected=_STORAGE_INDEX,
                    description="y = x[1:, 2::3] of a contiguous 6×8 x, element y[2, 1]"),),
        rtol=_STORAGE_INDEX.rtol,
        refuse_what="the storage index",
        no_tensors=True,
        refuse=("lectorch.views.element_offset", "lectorch.views.describe_view", "lectorch.views.contiguous_strides",
                "lectorch.views.Layout"),
        hint=("where does y[0, 0] live? That is y's storage offset.",
              "a step in a slice multiplies that dim's stride; then offset + i·stride[0] + j·stride[1]."),
        slips={
            "left-out-storage": "you left out the storage offset: y[0, 0] is not at storage index 0.",
            "slice-2-3": "the slice 2::3 takes every third column: its stride is 3 × 1.",
            "row-index-2": "row index 2 goes with stride[0], column index 1 with stride[1].",
        },
    )
)


# --- 3. which operations copy? ----------------------------------------------------------------------
#: the operations of the exercise, applied to x = torch.arange(float(rows * cols)).view(rows, cols)
COPY_QUIZ = {
    "a": ("x[0]", lambda x: x[0]),
    "b": ("x[:, 0]", lambda x: x[:, 0]),
    "c": ("x.T", lambda x: x.T),
    "d": ("x.view(cols, rows)", lambda x: x.view(x.shape[1], x.shape[0])),
    "e": ("x.contiguous()", lambda x: x.contiguous()),
    "f": ("x.T.contiguous()", lambda x: x.T.contiguous()),
    "g": ("x.reshape(-1)", lambda x: x.reshape(-1)),
    "h": ("x.T.reshape(-1)", lambda x: x.T.reshape(-1)),
    "i": ("x[:, ::2].reshape(-1)", lambda x: x[:, ::2].reshape(-1)),
    "j": ("x * 1", lambda x: x * 1),
    "k": ("torch.triu(x)", lambda x: torch.triu(x)),
}


def letters_of(answer: Any) -> str | None:
    """An answer of letters ('FH j', {'f', 'h'}, ['f']) as sorted lower-case letters, or None."""
    if isinstance(answer, str):
        answer = [c for c in answer if not c.isspace() and c != ","]
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(c, str) for c in answer):
        return None
    letters = {c.strip().lower() for c in answer}
    if not letters <= set(COPY_QUIZ):
        return None
    return "".join(sorted(letters))


class _LetterSeal(Sealed):
    """A seal of sorted letters that accepts any spelling of the same set (case, commas, a set)."""

    def __eq__(self, other: object) -> bool:  # the same seal as a plain Sealed of that token
        return isinstance(other, Sealed) and other.token == self.token

    __hash__ = Sealed.__hash__

    def matches(self, exercise_id: str, answer: Any) -> bool:
        letters = letters_of(answer)
        return letters is not None and super().matches(exercise_id, letters)


def compare_letters(got: Any, expected: str) -> str | None:
    """The grader's comparison on a hidden shape: the same set of letters, in any spelling."""
    letters = letters_of(got)
    if letters is None:
        return tr("return a string of letters from a to k, such as \"ab\"; got {got!r}.").format(got=got)
    return None if letters == expected else tr("{got!r} is not the set of operations that copy for this shape.").format(got=got)


#: asked as a function of x's shape: the page's 4×4 x is the public case (sealed); the grader tries
#: hidden shapes, rows or columns of 1 and odd widths among them (grading/topics/views.py), read from torch
_WHICH_COPY = _LetterSeal(Sealed.stored("views-which-copy").token)

register(
    Exercise(
        id="views-which-copy",
        title=("copies(rows, cols): which operations allocate new storage, for "
               "x = torch.arange(float(rows * cols)).view(rows, cols)"),
        kind="value",
        expected=_WHICH_COPY,
        cases=(Case(args=(4, 4), expected=_WHICH_COPY, description="x = torch.arange(16.).view(4, 4)"),),
        compare=compare_letters,
        rtol=0.0,
        refuse_what="which operations copy",
        no_tensors=True,
        hint=("indexing, slicing, .T and .view never copy: they only write new metadata.",
              (".contiguous() and .reshape copy only when the strides force them to; element-wise "
              "ops always write a new tensor. Decide each from the strides, as the chapter does."),
              ("a dim of size 1 has no stride that matters: which shapes make x.T contiguous already? "
               "And when do the strides (cols, 2) of x[:, ::2] merge into one?")),
    )
)


# --- 4. strides and offset after a permute, slices and an index ------------------------------------
#: asked as a function of x's shape: the page's shape is the public case (sealed); the grader tries
#: hidden 4-D shapes (grading/topics/views.py), read from torch
_PERMUTE_SLICE = Sealed.stored("views-permute-slice")


def _as_layout(answer: Any):
    """A (strides, offset) answer as ((int, ...), int), or None when it is not one."""
    if not isinstance(answer, (tuple, list)) or len(answer) != 2 or not isinstance(answer[0], (tuple, list)):
        return None
    strides, offset = answer
    ints = [*strides, offset]
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in ints):
        return None
    return tuple(int(v) for v in strides), int(offset)


def compare_layout(got: Any, expected: Any) -> str | None:
    """The grader's comparison on a hidden shape: the same strides and offset, exactly."""
    layout = _as_layout(got)
    if layout is None:
        return tr("return a pair (strides, offset) of ints, like ((6, 2, 1), 0); got {got!r}.").format(got=got)
    return None if layout == _as_layout(expected) else tr("{got!r} is not the expected (strides, offset).").format(got=got)


register(
    Exercise(
        id="views-permute-slice",
        title=("permute_slice_layout(shape): strides and storage offset of "
               "x.permute(3, 1, 0, 2)[::2, 1:, :, 1] for a fresh x of that shape"),
        kind="value",
        expected=_PERMUTE_SLICE,
        cases=(Case(args=((2, 3, 4, 5),), expected=_PERMUTE_SLICE, description="x = torch.empty(2, 3, 4, 5)"),),
        compare=compare_layout,
        refuse_what="the strides",
        no_tensors=True,
        refuse=("lectorch.views.contiguous_strides", "lectorch.views.describe_view", "lectorch.views.element_offset",
                "lectorch.views.Layout"),
        hint=("first write x's strides; .permute(3, 1, 0, 2) reorders them (it computes nothing new).",
              ("a step k multiplies that dim's stride by k; a start s adds s·stride to the offset; "
              "an integer index adds index·stride to the offset and removes the dim.")),
        summary=("runs your function on the page's shape (hidden ones when graded) and checks the "
                 "(strides, offset) pair exactly"),
    )
)


# --- 5. debug: .view on a transposed tensor ---------------------------------------------------------
def _compare_merged(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return tr("expected a tensor, got {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != tuple(expected.shape):
        return tr("your tensor has shape {shape}, not (batch, seq, heads * width).").format(shape=tuple(got.shape))
    if close(got, expected):
        return None
    return (tr("right shape, wrong values: out[b, s, h * width + j] must be x[b, h, s, j] (a reshape alone "
           "regroups the elements in storage order, which is not this order)."))


def merge_case(shape, description: str, *, seed: int, transposed_input: bool = False) -> Case:
    """A case on a random tensor of ``shape`` (batch, heads, seq, width); with ``transposed_input``
    the tensor itself is a non-contiguous view (made by swapping its last two dims). The expected
    result is the grader's (sealed in the package)."""
    g = torch.Generator().manual_seed(seed)
    b, h, s, w = shape
    x = torch.randn(b, h, w, s, generator=g).transpose(2, 3) if transposed_input else torch.randn(*shape, generator=g)
    return Case(args=(x,), description=description)


register(
    Exercise(
        id="views-merge-heads",
        title="merge_heads(x): (batch, heads, seq, width) -> (batch, seq, heads * width)",
        kind="function",
        hint=(("after the transpose, can the two last dims be merged with strides over the old storage? "
              "Read the error message."),
              "make the elements contiguous first (a copy), or let torch decide when to copy."),
        compare=_compare_merged,
        rtol=0.0,
        cases=public_cases("views-merge-heads", (
            merge_case((2, 3, 4, 5), "a (2, 3, 4, 5) tensor", seed=0),
            merge_case((1, 2, 1, 3), "one token (seq = 1)", seed=1),
            merge_case((2, 2, 3, 4), "a non-contiguous input", seed=2, transposed_input=True))),
        summary="runs merge_heads on 3 tensors (hidden ones when graded), exactly",
    )
)
