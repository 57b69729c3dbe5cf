"""Chapter 03's exercises: the reference solutions pass, classic wrong answers are rejected with a
message that teaches and never gives the answer away, the plain values agree with the seals."""

from __future__ import annotations

import random

import einops
import pytest
import torch

import lectorch
from lectorch.exercises import Sealed, get_exercise, run_case
from lectorch.exercises import views as ex_views
from lectorch.views import contiguous_strides
from grading.topics import views as grading
from _practice import practised
from _answers.views import (
    transposed_strides, merge_heads, merge_heads_buggy,
)






# --- reference solutions --------------------------------------------------------------------------
def test_reference_solutions_pass():
    assert lectorch.check("views-transpose-strides", transposed_strides).passed
    assert lectorch.check("views-storage-index", practised("views-storage-index", 29)).passed
    assert lectorch.check("views-storage-index", practised("views-storage-index", 29.0)).passed  # the same index
    assert lectorch.check("views-which-copy", lambda rows, cols: "fhjk").passed  # the page's 4×4 x
    assert lectorch.check("views-which-copy", lambda rows, cols: {"F", "h", "j", "k"}).passed
    assert lectorch.check("views-which-copy", lambda rows, cols: "f, h, j, k").passed
    assert lectorch.check("views-permute-slice", lambda shape: ((2, 20, 60), 25)).passed
    assert lectorch.check("views-permute-slice", lambda shape: [[2, 20, 60], 25]).passed
    assert lectorch.check("views-merge-heads", merge_heads).passed
    assert lectorch.check("views-merge-heads", lambda x: einops.rearrange(x, "b h s w -> b s (h w)")).passed
    def contiguous_then_view(x):
        return x.transpose(1, 2).contiguous().view(x.shape[0], x.shape[2], -1)

    assert lectorch.check("views-merge-heads", contiguous_then_view).passed


def test_the_plain_values_are_torchs_and_agree_with_the_seals():
    g = grading
    assert g.EXPECTED == {"views-storage-index": 29, "views-which-copy": "fhjk",
                          "views-permute-slice": ((2, 20, 60), 25)}
    for ex_id, plain in g.EXPECTED.items():
        ex = get_exercise(ex_id)
        assert Sealed.of(ex_id, plain, rtol=ex.expected.rtol, atol=ex.expected.atol).token == ex.expected.token


def test_hidden_cases_pass_the_reference_and_reject_the_bug():
    g = grading
    rng = random.Random(0)
    for ex_id, good in [("views-transpose-strides", transposed_strides), ("views-merge-heads", merge_heads)]:
        ex = get_exercise(ex_id)
        for case in g.hidden_cases(ex_id, rng):
            kind, got = run_case(good, case)
            assert kind == "returned" and ex.compare(got, case.expected) is None, case.description
    outcomes = [run_case(merge_heads_buggy, c)[0] for c in g.hidden_cases("views-merge-heads", rng)]
    assert "raised" in outcomes


# --- wrong variants ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "exercise, answer, message",
    [
        # transposed strides: no swap, the strides of the transposed shape as if fresh, garbage
        ("views-transpose-strides", lambda s, a, b: transposed_strides(s, 0, 0), "wrong order"),
        ("views-transpose-strides", lambda s, a, b: transposed_strides(s, a, b)[::-1], "wrong order"),
        ("views-transpose-strides", lambda s, a, b: contiguous_strides(s), "yourself"),
        ("views-transpose-strides",
         lambda s, a, b: torch.empty(s, device="meta").transpose(a, b).stride(), "without creating a tensor"),
        ("views-transpose-strides", lambda s, a, b: [1] * len(s), "not the strides"),
        ("views-transpose-strides", lambda s, a, b: "strides", "tuple of ints"),
        ("views-storage-index", 19, "storage offset"),
        ("views-storage-index", 27, "every third column"),
        ("views-storage-index", 24, "stride[0]"),
        ("views-storage-index", 30, "not the expected answer"),
        ("views-storage-index", 28.5, "not the expected answer"),  # exactly, as the page says
        ("views-which-copy", "fh", "not the expected answer"),
        ("views-which-copy", "afhjk", "not the expected answer"),
        ("views-which-copy", 3, "not the expected answer"),
        # permute-slice: the strides of the fresh x, no step, no offset
        ("views-permute-slice", ((60, 20, 5), 25), "not the expected answer"),
        ("views-permute-slice", ((1, 20, 60), 25), "not the expected answer"),
        ("views-permute-slice", ((2, 20, 60), 0), "not the expected answer"),
        # merge_heads: reshape without the transpose; heads and width interleaved
        ("views-merge-heads", lambda x: x.reshape(x.shape[0], x.shape[2], -1), "wrong values"),
        ("views-merge-heads", lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
         "wrong values"),
        ("views-merge-heads", lambda x: x.transpose(1, 2), "not (batch, seq, heads * width)"),
    ],
)
def test_wrong_answers_fail_with_a_useful_message(exercise, answer, message):
    if exercise in ("views-storage-index", "views-permute-slice", "views-which-copy"):  # functions of the setting
        answer = (lambda value: lambda *setting: value)(answer)
    result = lectorch.check(exercise, answer)
    assert result.status == "failed", result
    assert message in result.message
    assert "29" not in result.message and "((2, 20, 60), 25)" not in result.message


def test_the_buggy_stub_is_rejected_and_the_error_shown():
    result = lectorch.check("views-merge-heads", merge_heads_buggy)
    assert result.status == "error" and "view size is not compatible" in result.message


def test_a_repeated_failure_adds_a_nudge():
    first = lectorch.check("views-permute-slice", lambda shape: ((60, 20, 5), 25))
    second = lectorch.check("views-permute-slice", lambda shape: ((60, 20, 5), 25))
    assert "Hint" not in first.message and "Hint: first write x's strides" in second.message


def _raises(*args):
    raise NotImplementedError


@pytest.mark.parametrize("exercise", ["views-transpose-strides", "views-merge-heads"])
def test_function_stubs_are_not_implemented(exercise):
    assert lectorch.check(exercise, _raises).status == "not implemented"
    assert lectorch.check(exercise, lambda *a: ...).status == "not implemented"


@pytest.mark.parametrize("exercise", ["views-storage-index", "views-which-copy", "views-permute-slice"])
def test_value_stubs_are_not_implemented(exercise):
    assert lectorch.check(exercise, ...).status == "not implemented"


def test_letters_of_normalises_spellings():
    assert ex_views.letters_of("K, j") == "jk" and ex_views.letters_of("z") is None
