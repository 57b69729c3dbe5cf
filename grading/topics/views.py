"""Grading bundle of chapter 03 (views): plain expected values and hidden cases.

Not part of the student package. Every value is asked to torch here, not typed in.
"""

from __future__ import annotations

import random

from grading.case_seals import with_results

import torch

from lectorch.exercises import Case
from lectorch.exercises import views as ex
from lectorch.views import shares_storage
from grading.topics import Topic


def storage_index(shape=(6, 8), row_start=1, col_start=2, col_step=3, i=2, j=1) -> int:
    """The storage index that y[i, j] reads, y = x[row_start:, col_start::col_step], asked to torch."""
    # on the meta device: shapes too large to create (the hidden cases have some) are no trouble
    y = torch.empty(shape, device="meta")[row_start:, col_start::col_step]
    return int(y.storage_offset() + i * y.stride(0) + j * y.stride(1))


def _storage_index_cases(rng: random.Random) -> list:
    settings = [((6, 8), 0, 0, 1, 4, 5), ((4, 10), 2, 1, 4, 1, 2), ((9, 3), 3, 2, 5, 4, 0)]
    for _ in range(3):
        rows, cols = rng.randint(3, 12), rng.randint(4, 16)
        row_start, col_start, col_step = rng.randrange(rows - 1), rng.randrange(cols - 1), rng.randint(1, 4)
        width = len(range(col_start, cols, col_step))
        settings.append(((rows, cols), row_start, col_start, col_step,
                         rng.randrange(rows - row_start), rng.randrange(width)))
    # an x far too large to create (about 10¹¹ to 10¹² elements): the index comes from the strides
    rows, cols = rng.randint(10**5, 10**6), rng.randint(10**5, 10**6)
    row_start, col_start, col_step = rng.randrange(rows // 2), rng.randrange(cols // 2), rng.randint(2, 9)
    width = len(range(col_start, cols, col_step))
    settings.append(((rows, cols), row_start, col_start, col_step, rng.randrange(rows - row_start), rng.randrange(width)))
    return [Case(args=s, expected=storage_index(*s), description="a hidden slice") for s in settings]


def copying_letters(rows: int = 4, cols: int = 4) -> str:
    """The letters of the operations that allocate new storage for that x, asked to torch."""
    x = torch.arange(float(rows * cols)).view(rows, cols)
    return "".join(sorted(k for k, (_, op) in ex.COPY_QUIZ.items() if not shares_storage(x, op(x))))


def _which_copy_cases(rng: random.Random) -> list:
    # a row or a column of 1 (x.T is contiguous already), odd and even widths (x[:, ::2] merges or not)
    shapes = [(1, 5), (6, 1), (3, 5), (5, 2), (2, 6), (1, 1)]
    while len(shapes) < 9:
        shape = (rng.randint(1, 7), rng.randint(1, 11))
        if shape not in shapes and shape != (4, 4):  # never the page's x
            shapes.append(shape)
    return [Case(args=s, expected=copying_letters(*s), description="a hidden shape") for s in shapes]


def permute_slice_layout(shape=(2, 3, 4, 5)) -> tuple[tuple[int, ...], int]:
    y = torch.empty(shape, device="meta").permute(3, 1, 0, 2)[::2, 1:, :, 1]
    return tuple(y.stride()), int(y.storage_offset())


def _permute_slice_cases(rng: random.Random) -> list:
    # every dim at least 2, so that [1:] and the index 1 keep something
    shapes = [(5, 4, 3, 2), (2, 2, 2, 2), (3, 7, 2, 6)] + [tuple(rng.randint(2, 9) for _ in range(4)) for _ in range(3)]
    return [Case(args=(s,), expected=permute_slice_layout(s), description="a hidden shape") for s in shapes]


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
    return with_results(REFERENCE[exercise_id], cases)


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
    if exercise_id == "views-storage-index":
        return _storage_index_cases(rng)
    if exercise_id == "views-permute-slice":
        return _permute_slice_cases(rng)
    if exercise_id == "views-which-copy":
        return _which_copy_cases(rng)
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


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "views-storage-index": lambda: [Case(args=s, expected=storage_index(*s), description=d) for s, d in [
        (((5, 7), 2, 1, 2, 1, 2), "a (5, 7) x, y = x[2:, 1::2], y[1, 2]"),
        (((3, 9), 0, 4, 4, 2, 1), "a (3, 9) x, y = x[0:, 4::4], y[2, 1]"),
        (((200_000, 300_000), 7, 5, 3, 1000, 2000), "a (200000, 300000) x, too large to create, "
                                                     "y = x[7:, 5::3], y[1000, 2000]")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
