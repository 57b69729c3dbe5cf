"""Chapter 06's exercises: reference answers pass (public, random and hidden cases), classic wrong
answers fail with a message that names the mistake, and no message reveals the expected value."""

from __future__ import annotations

import random

import pytest

from lectorch.backprop import mlp_flops
from lectorch.exercises import check, compare, get_exercise, run_case

from grading.topics import backprop as grading
from _practice import practised
from _answers.backprop import (
    backward_flops, forward_flops, skip_grads, no_skip_in_w2, no_relu_mask, mask_at_zero_is_one, swapped,
    skip_into_w1,
)




def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value


def _passes_hidden(exercise_id, answer, seed=0):
    ex = get_exercise(exercise_id)
    for case in grading.hidden_cases(exercise_id, random.Random(seed)):
        status, got = run_case(answer, case)
        assert status == "returned", (exercise_id, case.description, got)
        assert compare(ex, got, case.expected) is None, (exercise_id, case.description)


# --- backprop-mlp-backward (the warm-up) -----------------------------------------------------------

def test_mlp_backward_reference_passes():
    assert check("backprop-mlp-backward", backward_flops).passed
    _passes_hidden("backprop-mlp-backward", backward_flops)


WRONG_BACKWARD = {
    "the first layer's input gradient always": (
        lambda b, w, input_requires_grad=False: backward_flops(b, w, True), "nobody"),
    "weight gradients only": (lambda b, w, input_requires_grad=False: forward_flops(b, w), "forward pass"),
    "forward + backward": (
        lambda b, w, input_requires_grad=False: backward_flops(b, w, input_requires_grad) + forward_flops(b, w),
        "include the forward"),
    "ignores input_requires_grad the other way": (
        lambda b, w, input_requires_grad=False: backward_flops(b, w), "not the expected answer"),
    "lectorch's predictor (a bypass)": (
        lambda b, w, input_requires_grad=False: mlp_flops(b, w, input_requires_grad=input_requires_grad).backward,
        "asks you to write the backward FLOP count yourself"),
}


@pytest.mark.parametrize("name", WRONG_BACKWARD)
def test_mlp_backward_wrong_variants_fail(name):
    answer, words = WRONG_BACKWARD[name]
    result = check("backprop-mlp-backward", answer)
    assert result.status == "failed" and words in result.message, result.message


# --- backprop-time-ratio (prediction) ------------------------------------------------------------

def test_time_ratio_judges_the_prediction_not_the_measurement():
    # one truth, the page's derivation: (2·(L·D² + D) - D²) / (L·D² + D) at D = 4096, L = 8, ±20 %
    d, n = 4096, 8
    exact = (2 * (n * d * d + d) - d * d) / (n * d * d + d)
    assert grading.EXPECTED["backprop-time-ratio"] == pytest.approx(exact, rel=1e-12)
    assert round(exact, 3) == 1.875 and get_exercise("backprop-time-ratio").tolerance == (0.2, 0.0)
    for good in (exact, 2.0, 1.75, 1.88, 2.2, exact * 1.2 * 0.999, exact * 0.8 * 1.001):
        assert check("backprop-time-ratio", practised("backprop-time-ratio", good), measured=5.0).passed, good
    for bad in (exact * 1.2 * 1.01, exact * 0.8 * 0.99):  # 1 % outside each edge
        assert not check("backprop-time-ratio", practised("backprop-time-ratio", bad), measured=5.0).passed, bad
    for good in (2.0, 1.75, 1.88, 2.2):  # right at the page's numbers, but a constant: the shallow practice Crunchers refuse it
        assert not check("backprop-time-ratio", _const(good), measured=5.0).passed, good
    for bad, words in ((1.0, "count the matmuls each layer's backward does"), (3.0, "includes the forward pass"),
                       (6.0, "not within ±20 % of the answer")):
        result = check("backprop-time-ratio", _const(bad), measured=2.0)
        assert result.status == "failed" and words in result.message, result.message
        assert "measured" not in result.message  # a failure never shows the number to copy


# --- backprop-tied-flops (derive) ----------------------------------------------------------------

def test_tied_flops_value_is_counted_by_flop_counter_mode():
    b, d, h = grading.B, grading.D, grading.H
    assert grading.EXPECTED["backprop-tied-flops"] == 10 * b * d * h    # 4BDH forward + 6BDH backward
    assert check("backprop-tied-flops", practised("backprop-tied-flops", 10 * b * d * h)).passed
    assert check("backprop-tied-flops", lambda b, d, h: 10 * b * d * h).passed


@pytest.mark.parametrize("factor, words", [(6, "6 × tokens × parameters"), (12, "a gradient no one needs"),
                                           (4, "forward pass alone"), (8, "a gradient the backward pass does need")])
def test_tied_flops_slips_are_named(factor, words):
    value = factor * grading.B * grading.D * grading.H
    result = check("backprop-tied-flops", _const(value))
    assert result.status == "failed" and words in result.message, result.message
    assert str(grading.EXPECTED["backprop-tied-flops"]) not in result.message


# --- backprop-skip-grads (implement) -------------------------------------------------------------

def test_skip_grads_reference_passes():
    assert check("backprop-skip-grads", skip_grads).passed
    _passes_hidden("backprop-skip-grads", skip_grads)


@pytest.mark.parametrize("wrong", [no_skip_in_w2, no_relu_mask, mask_at_zero_is_one, swapped, skip_into_w1])
def test_skip_grads_wrong_variants_fail(wrong):
    result = check("backprop-skip-grads", wrong)
    assert result.status == "failed", (wrong.__name__, result.message)


def test_stubs_are_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError

    for exercise_id in ("backprop-mlp-backward", "backprop-skip-grads"):
        assert check(exercise_id, stub).status == "not implemented"
    for exercise_id in ("backprop-time-ratio", "backprop-tied-flops"):
        assert check(exercise_id, ...).status == "not implemented"


def test_feedback_is_graded():
    first = check("backprop-skip-grads", no_relu_mask)
    second = check("backprop-skip-grads", no_relu_mask)
    third = check("backprop-skip-grads", no_relu_mask)
    ex = get_exercise("backprop-skip-grads")
    assert "Hint" not in first.message
    assert ex.hints[0] in second.message and ex.hints[1] in third.message
