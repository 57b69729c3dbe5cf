"""Exercises of chapter 04, einsum and einops.

- ``einsum-summed-dims`` (the warm-up): which dimensions a pattern sums over.
- ``einsum-layer-crossover`` (derive): the sequence length at which attention's FLOPs equal the rest
  of a Llama-3-8B-like layer (grouped-query attention, a SwiGLU MLP), a case the chapter does not do.
- ``einsum-gqa-scores`` (implement): attention scores for grouped-query attention with einsum.
- ``einsum-center-tokens`` (debug): a ``reduce`` whose result broadcasts against the wrong axis.

Expected values are sealed; the plain values and the hidden cases live in ``grading/topics/einsum.py``.
Function cases take their expected values from torch (``repeat_interleave`` + ``@``; ``mean``).
"""

from __future__ import annotations

from lectorch.i18n import tr

from typing import Any

import torch

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, mismatch, public_cases


# --- 1. which dimensions are summed (warm-up) -------------------------------------------------------
def dim_names(answer: Any) -> str | None:
    """Dimension names ('s h', {'s'}, ['s']) as one sorted, space-separated string, or None."""
    if isinstance(answer, str):
        return " ".join(sorted(set(answer.replace(",", " ").split())))
    if isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(d, str) for d in answer):
        return " ".join(sorted({d.strip() for d in answer}))
    return None


class _NamesSeal(Sealed):
    """A seal of sorted dimension names that accepts a set, a list or a spaced string."""

    def __eq__(self, other: object) -> bool:  # the same seal as a plain Sealed of that token
        return isinstance(other, Sealed) and other.token == self.token

    __hash__ = Sealed.__hash__

    def matches(self, exercise_id: str, answer: Any) -> bool:
        names = dim_names(answer)
        return names is not None and super().matches(exercise_id, names)


#: the public case of einsum-summed-dims (its answer is sealed); the grader tries hidden patterns
SUMMED_PATTERN = "b s h1, b s h2 -> b h1 h2"
_SUMMED = _NamesSeal(Sealed.stored("einsum-summed-dims").token)


def compare_names(got: Any, expected: str) -> str | None:
    """The grader's comparison on a hidden pattern: the same set of names, exactly."""
    names = dim_names(got)
    if names is None:
        return tr("return a set of dimension names (or one string with spaces), got {type}.").format(type=type(got).__name__)
    return None if names == expected else tr("{got!r} is not the expected set of dimensions.").format(got=got)


register(
    Exercise(
        id="einsum-summed-dims",
        title="summed_dims(pattern): the dimensions an einsum pattern sums over",
        kind="value",
        expected=_SUMMED,
        cases=(Case(args=(SUMMED_PATTERN,), expected=_SUMMED, description=repr(SUMMED_PATTERN)),),
        compare=compare_names,
        refuse_what="the pattern's dimensions",
        no_tensors=True,
        refuse=("lectorch.contractions.parse_pattern", "lectorch.contractions.analyze"),
        hint="a dimension is summed exactly when it appears in an operand but not in the output.",
        summary=("runs your function on the page's pattern (hidden ones when graded) and checks the "
                 "set of names exactly"),
    )
)


# --- 2. derive: where attention's FLOPs equal the rest of a layer -----------------------------------
#: the layer of the exercise (Llama 3 8B's shapes)
LAYER = {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "mlp_width": 14336}

#: asked as a function of the layer's shapes: the page's layer is the public case (sealed); the
#: grader tries hidden layers (grading/topics/einsum.py), counted by FlopCounterMode on the meta device
_CROSSOVER = Sealed.stored("einsum-layer-crossover")

register(
    Exercise(
        id="einsum-layer-crossover",
        title=("crossover_seq(hidden, heads, kv_heads, head_dim, mlp_width): the sequence length where "
               "attention's FLOPs equal the projections' and the MLP's"),
        kind="value",
        expected=_CROSSOVER,
        cases=(Case(args=tuple(LAYER.values()), expected=_CROSSOVER, description="a layer of Llama 3 8B"),),
        rtol=_CROSSOVER.rtol,
        refuse_what="the FLOP count",
        no_tensors=True,
        refuse=("lectorch.flops.count_flops", "lectorch.contractions.analyze"),
        hint=(("write both sides as FLOPs per layer at s tokens: the projections and the MLP grow like "
              "s, the scores and the mixing like s²; then solve for s."),
              ("K and V project hidden to kv_heads · head_dim, not to hidden; the SwiGLU MLP has three "
              "hidden × mlp_width matrices; every query head computes its own scores.")),
        slips={
            "k-v-project": "K and V project onto the 8 key/value heads only (4096 → 1024), not onto 32 heads.",
            "swiglu-mlp-three": "a SwiGLU MLP has three matrices (gate, up and down), not two.",
            "standard-layer-with": "that is a standard layer with a 4× MLP and full K/V: this layer differs.",
            "mlp-14336-wide": "this MLP is 14336 wide (3.5 × hidden), not 8/3 × hidden.",
            "mixing-einsum-weights": "the mixing einsum (weights @ V) costs as much as the scores.",
            "grouped-query-attention": ("grouped-query attention shares K and V, but each of the 32 query heads still "
                                        "computes its own s × s scores."),
        },
        summary=("runs your function on the page's layer (hidden ones when graded): the sequence "
                 "length within ±1 %"),
    )
)


# --- 3. implement: grouped-query attention scores ---------------------------------------------------
#: one tolerance, as torch.isclose (float32 inputs; any order of the sums passes)
GQA_RTOL, GQA_ATOL = 1e-4, 1e-5


def _compare_scores(got: Any, expected: dict) -> str | None:
    """``expected``: torch's ``scores`` and their ``direction`` (divided by their norm), plain or sealed."""
    want = expected["scores"]
    if not isinstance(got, torch.Tensor):
        return tr("expected a tensor, got {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != tuple(want.shape):
        return tr("your tensor has shape {shape}, not (batch, heads, seq1, seq2).").format(shape=tuple(got.shape))
    tol = dict(rtol=GQA_RTOL, atol=GQA_ATOL)
    wrong = mismatch(got, want, **tol)
    if not wrong.any():
        return None
    if got.shape[-1] == got.shape[-2] and close(got.transpose(-2, -1).contiguous(), want, **tol):
        return tr("rows and columns are swapped: rows follow seq1 (the queries), columns seq2 (the keys).")
    norm = got.detach().double().norm()
    if norm > 0 and close((got.detach().double() / norm), expected["direction"], **tol):
        return tr("your scores are a constant multiple of the right ones: check the scaling.")
    for h in range(want.shape[1]):
        if wrong[:, h].any():
            return (tr("query head {h} has wrong scores: which key head does it use? Consecutive query heads share one "
                   "key head (or check the scaling).").format(h=h))
    return tr("your tensor has the right shape but different values.")


def gqa_case(batch, heads, kv_heads, seq1, seq2, hidden, description: str, *, seed: int) -> Case:
    """A case of random float32 q and k; the expected scores are the grader's (sealed in the package)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, seq1, hidden, generator=g)
    k = torch.randn(batch, kv_heads, seq2, hidden, generator=g)
    return Case(args=(q, k), expected={}, description=description)


register(
    Exercise(
        id="einsum-gqa-scores",
        title="gqa_scores(q, k): attention scores of grouped-query attention",
        kind="function",
        refuse_what="the grouped-query scores",
        refuse=("lectorch.backprop.attention", "torch.nn.functional.scaled_dot_product_attention"),
        hint=(("name a group dimension: split the query heads into (kv_heads group) with rearrange, "
              "so each key head meets its own group of query heads in one einsum."),
              ("consecutive query heads share a key head: in '(kv group)' the group varies fastest. "
              "Merge the two back at the end, and divide by √hidden.")),
        compare=_compare_scores,
        rtol=GQA_RTOL,
        atol=GQA_ATOL,
        cases=public_cases("einsum-gqa-scores", (
            gqa_case(2, 4, 2, 3, 5, 8, "4 query heads, 2 key heads", seed=0),
            gqa_case(1, 3, 3, 4, 4, 2, "as many key heads as query heads", seed=1),
            gqa_case(1, 6, 2, 2, 3, 4, "6 query heads in groups of 3", seed=2))),
        summary=("runs gqa_scores on 3 cases (hidden ones when graded) against torch's grouped-query "
                 "scores, within 1e-4 of the value (at least 1e-5)"),
    )
)


# --- 4. debug: a reduce that broadcasts against the wrong axis ----------------------------------
#: one tolerance, as torch.isclose (float32 inputs)
CENTER_RTOL, CENTER_ATOL = 1e-5, 1e-6


def _compare_centered(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return tr("expected a tensor, got {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != tuple(expected.shape):
        return tr("your tensor has shape {shape}, not the shape of x.").format(shape=tuple(got.shape))
    if close(got, expected, rtol=CENTER_RTOL, atol=CENTER_ATOL):
        return None
    means = got.detach().double().mean(dim=-1)
    if torch.allclose(means, torch.zeros_like(means), atol=1e-5):
        return (tr("each token now has mean 0, but the values are not x minus that token's mean: centring "
               "subtracts each token's own mean and changes nothing else (no scaling)."))
    return (tr("right shape, wrong values: each token's features should now average 0. Which axis did the "
           "subtracted means line up with?"))


def center_case(shape, description: str, *, seed: int) -> Case:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return Case(args=(x,), description=description)


register(
    Exercise(
        id="einsum-center-tokens",
        title="center(x): subtract each token's mean over its features",
        kind="function",
        hint=(("the means have shape (batch, seq); broadcasting lines shapes up from the right. "
              "Against which of x's dims does (batch, seq) line up?"),
              "keep a dimension of size 1 where the features were, so the means broadcast over them."),
        compare=_compare_centered,
        rtol=CENTER_RTOL,
        atol=CENTER_ATOL,
        cases=public_cases("einsum-center-tokens", (
            center_case((4, 4, 4), "the (4, 4, 4) tensor its author tried", seed=0),
            center_case((2, 8, 16), "a (2, 8, 16) tensor", seed=1))),
        summary="runs center on 2 tensors (hidden ones when graded), within 1e-5 of the value (at least 1e-6)",
    )
)
