"""Exercises of chapter 04, einsum and einops."""

from __future__ import annotations

import math
from typing import Any

import torch

from lectorch.contractions import analyze
from lectorch.exercises import Case, Exercise, register


def _dim_set(answer: Any) -> set[str] | None:
    if isinstance(answer, str):
        return set(answer.replace(",", " ").split())
    if isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(d, str) for d in answer):
        return set(answer)
    return None


def _compare_dims(got: Any, expected: set[str]) -> str | None:
    names = _dim_set(got)
    if names is None:
        return f"expected dimension names (a str like 'a b' or a set like {{'a', 'b'}}), got {type(got).__name__}."
    if names == expected:
        return None
    return "that is not the set of summed dimensions."


register(
    Exercise(
        id="einsum-summed-dims",
        title="the dimensions 'b s h1, b s h2 -> b h1 h2' sums over",
        kind="value",
        expected={"s"},
        compare=_compare_dims,
        hint="a dimension is summed exactly when it appears in an operand but not in the output.",
    )
)

SCORES_PATTERN = "batch heads seq1 hidden, batch heads seq2 hidden -> batch heads seq1 seq2"
SCORES_SIZES = {"batch": 8, "heads": 12, "seq1": 1024, "seq2": 1024, "hidden": 64}

register(
    Exercise(
        id="einsum-flops",
        title="FLOPs of the multi-head attention scores einsum",
        kind="value",
        expected=analyze(SCORES_PATTERN, SCORES_SIZES).flops,
        hint="one multiply and one add for every combination of all distinct dimensions: 2 × their product.",
        slips={
            0.5: "a multiply-add is 2 FLOPs.",
            1 / 1024: "the loop runs over seq1 AND seq2: every distinct dimension counts.",
            1 / 64: "the summed dimension (hidden) is part of the work too.",
            1 / 12: "you left out the heads.",
            1 / 8: "you left out the batch.",
        },
    )
)


def _gen_tensors(seed: int, *shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


def _scores_reference(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _compare_scores(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}."
    if got.shape != expected.shape:
        return f"your tensor has shape {tuple(got.shape)}, which is not the expected shape (..., seq1, seq2)."
    if torch.allclose(got, expected, rtol=1e-4, atol=1e-5):
        return None
    if got.shape[-1] == got.shape[-2] and torch.allclose(got, expected.transpose(-2, -1), rtol=1e-4, atol=1e-5):
        return "rows and columns are swapped: rows should follow seq1 (the queries), columns seq2."
    ratio = got / expected
    if torch.allclose(ratio, ratio.flatten()[0].expand_as(ratio), rtol=1e-3, atol=1e-4):
        return "your scores are a constant multiple of the right ones: check the scaling by 1/√hidden."
    return "your tensor has the right shape but different values."


register(
    Exercise(
        id="einsum-attention-scores",
        title="scores(q, k): attention scores with einsum, for any leading dims",
        kind="function",
        hint="name the dimensions, let '...' stand for the leading ones, leave hidden out of the output "
        "(so it is summed), then divide by √hidden.",
        compare=_compare_scores,
        cases=tuple(
            Case(args=(q, k), expected=_scores_reference(q, k), description=desc)
            for (q, k), desc in [
                (_gen_tensors(1, (2, 3, 4), (2, 5, 4)), "(batch, seq, hidden) inputs"),
                (_gen_tensors(2, (2, 3, 4, 8), (2, 3, 6, 8)), "(batch, heads, seq, hidden) inputs"),
                (_gen_tensors(3, (2, 4, 4), (2, 4, 4)), "seq1 == seq2 == hidden"),
            ]
        ),
    )
)


def _split_heads_reference(x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, seq, width = x.shape
    return x.view(batch, seq, heads, width // heads).transpose(1, 2)


def _compare_heads(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"expected a tensor, got {type(got).__name__}."
    if got.shape != expected.shape:
        return f"your tensor has shape {tuple(got.shape)}, which is not (batch, heads, seq, hidden)."
    if torch.equal(got, expected):
        return None
    return "right shape, different values: in '(heads hidden)' heads is the outer part, hidden varies fastest."


register(
    Exercise(
        id="einsum-split-heads",
        title="split_heads(x, heads): (batch, seq, heads·hidden) -> (batch, heads, seq, hidden)",
        kind="function",
        hint="einops.rearrange with the group '(heads hidden)' on the left; pass heads=heads so einops can "
        "work out hidden.",
        compare=_compare_heads,
        cases=tuple(
            Case(args=(x, heads), expected=_split_heads_reference(x, heads), description=desc)
            for x, heads, desc in [
                (*_gen_tensors(4, (2, 3, 8)), 2, "2 heads"),
                (*_gen_tensors(5, (1, 5, 12)), 3, "3 heads"),
                (*_gen_tensors(6, (2, 4, 6)), 6, "one number per head"),
            ]
        ),
    )
)
