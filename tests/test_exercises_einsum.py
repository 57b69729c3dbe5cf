"""Chapter 04's exercises: reference solutions pass, classic wrong answers are rejected with a
message that teaches, the plain values (counted by torch) agree with the seals."""

from __future__ import annotations

import math
import random

import pytest
from einops import reduce

import lectorch
from lectorch.exercises import Sealed, get_exercise, run_case
from lectorch.exercises import einsum as ex_einsum
from grading.topics import einsum as grading
from _practice import practised
from _answers.einsum import (
    gqa_scores, center_buggy, center,
)






def test_reference_solutions_pass():
    assert lectorch.check("einsum-summed-dims", lambda p: {"s"}).passed
    assert lectorch.check("einsum-summed-dims", lambda p: "s").passed
    assert lectorch.check("einsum-summed-dims", lambda p: ["s"]).passed
    assert lectorch.check("einsum-layer-crossover", practised("einsum-layer-crossover", 26624)).passed
    assert lectorch.check("einsum-layer-crossover", practised("einsum-layer-crossover", 6.5 * 4096 * 1.005)).passed  # within ±1 %
    assert lectorch.check("einsum-gqa-scores", gqa_scores).passed
    assert lectorch.check("einsum-center-tokens", center).passed
    assert lectorch.check("einsum-center-tokens", lambda x: x - x.mean(dim=-1, keepdim=True)).passed


def test_the_plain_values_are_counted_by_torch_and_agree_with_the_seals():
    g = grading
    assert g.EXPECTED["einsum-layer-crossover"] == 26624  # (2 + 2 + 0.5 + 21) / 4 · 4096
    # the chapter's standard layer (full K/V, 4x MLP as SwiGLU-free 2 matrices would be 16 s h²):
    attention, rest = g.layer_flops(768, hidden=768, heads=12, kv_heads=12, head_dim=64,
                                    mlp_width=4 * 768)
    assert attention == 4 * 768**3 and rest == (8 + 24) * 768**3  # SwiGLU: 3 matrices, not 2
    for ex_id, plain in g.EXPECTED.items():
        ex = get_exercise(ex_id)
        assert Sealed.of(ex_id, plain, rtol=ex.expected.rtol, atol=ex.expected.atol).token == ex.expected.token


def test_hidden_cases_pass_the_reference():
    g = grading
    for ex_id, good in [("einsum-gqa-scores", gqa_scores), ("einsum-center-tokens", center)]:
        ex = get_exercise(ex_id)
        for case in g.hidden_cases(ex_id, random.Random(0)):
            kind, got = run_case(good, case)
            assert kind == "returned" and ex.compare(got, case.expected) is None, case.description


@pytest.mark.parametrize(
    "exercise, answer, message",
    [
        ("einsum-summed-dims", {"b", "s"}, "not the expected answer"),
        ("einsum-summed-dims", "h1 h2", "not the expected answer"),
        ("einsum-summed-dims", 3, "not the expected answer"),
        ("einsum-layer-crossover", 29 / 4 * 4096, "8 key/value heads"),
        ("einsum-layer-crossover", 19 / 4 * 4096, "three matrices"),
        ("einsum-layer-crossover", 6 * 4096, "standard layer"),
        ("einsum-layer-crossover", 13 * 4096, "mixing"),
        ("einsum-layer-crossover", 26 * 4096, "each of the 32 query heads"),
        ("einsum-layer-crossover", 4096, "too small: the answer has a larger power of ten"),
        # GQA: tiled instead of grouped key heads, no scaling, swapped rows and columns
        ("einsum-gqa-scores", lambda q, k: q @ k.repeat(1, q.shape[1] // k.shape[1], 1, 1)
         .transpose(-2, -1) / math.sqrt(q.shape[-1]), "which key head"),
        ("einsum-gqa-scores", lambda q, k: gqa_scores(q, k) * q.shape[-1] ** 0.5, "constant multiple"),
        ("einsum-gqa-scores", lambda q, k: gqa_scores(q, k) / math.sqrt(q.shape[-2]), "constant multiple"),
        ("einsum-gqa-scores", lambda q, k: gqa_scores(q, k)[:, : k.shape[1]], "not (batch, heads"),
        # center: the stub, the mean over the sequence, the global mean
        ("einsum-center-tokens", center_buggy, "wrong values"),
        ("einsum-center-tokens", lambda x: x - reduce(x, "b s h -> b 1 h", "mean"), "wrong values"),
        ("einsum-center-tokens", lambda x: x - x.mean(), "wrong values"),
        ("einsum-center-tokens", lambda x: reduce(x, "b s h -> b s", "mean"), "not the shape of x"),
    ],
)
def test_wrong_answers_fail_with_a_useful_message(exercise, answer, message):
    if exercise in ("einsum-summed-dims", "einsum-layer-crossover"):  # functions of the setting
        answer = (lambda value: lambda *setting: value)(answer)
    result = lectorch.check(exercise, answer)
    assert result.status == "failed", result
    assert message in result.message
    assert "26624" not in result.message and "26,624" not in result.message


def test_the_swapped_gqa_rows_are_named_on_a_square_case():
    result = lectorch.check("einsum-gqa-scores", lambda q, k: gqa_scores(q, k).transpose(-2, -1))
    assert result.status == "failed"


def test_the_center_stub_raises_on_non_square_input():
    case = get_exercise("einsum-center-tokens").cases[1]
    assert run_case(center_buggy, case)[0] == "raised"


def test_a_repeated_failure_adds_a_nudge():
    lectorch.check("einsum-layer-crossover", lambda *layer: 1000)
    second = lectorch.check("einsum-layer-crossover", lambda *layer: 1000)
    assert "Hint: write both sides" in second.message


def _raises(*args):
    raise NotImplementedError


@pytest.mark.parametrize("exercise", ["einsum-gqa-scores", "einsum-center-tokens"])
def test_function_stubs_are_not_implemented(exercise):
    assert lectorch.check(exercise, _raises).status == "not implemented"


@pytest.mark.parametrize("exercise", ["einsum-summed-dims", "einsum-layer-crossover"])
def test_value_stubs_are_not_implemented(exercise):
    assert lectorch.check(exercise, ...).status == "not implemented"


def test_dim_names_normalises():
    assert ex_einsum.dim_names("s, h") == "h s" and ex_einsum.dim_names(3) is None
