"""Chapter 07's exercises: reference answers pass (public, random and hidden cases), the classic
wrong variants fail, and no message reveals the expected value."""

from __future__ import annotations

import math
import random

import pytest
import torch
from torch import nn

from lectorch.exercises import check, compare, get_exercise, run_case

from grading.topics import init as grading
from _practice import practised
from _answers.init import (
    fixed, the_buggy_stub, absolute_bounds, wrong_axis, std_not_scaled, two_std, variance_as_std,
    leaky_relu_std,
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


# --- init-fix-trunc (debug) ------------------------------------------------------------------------

def test_fix_trunc_reference_passes():
    assert check("init-fix-trunc", fixed).passed
    _passes_hidden("init-fix-trunc", fixed)


def test_fix_trunc_alternative_correct_implementation_passes():
    def resample_and_scale(weight, generator=None):
        with torch.no_grad():
            weight.copy_(nn.init.trunc_normal_(torch.empty_like(weight), a=-3.0, b=3.0, generator=generator))
            return weight.mul_(1 / math.sqrt(weight.shape[0]))

    assert check("init-fix-trunc", resample_and_scale).passed


@pytest.mark.parametrize("wrong, words", [
    (the_buggy_stub, "±3 standard deviations"), (absolute_bounds, "±3 standard deviations"),
    (wrong_axis, "which axis"), (std_not_scaled, "1/sqrt(fan_in)"),
    (two_std, "too early"), (variance_as_std, "fan_in"),
])
def test_fix_trunc_wrong_variants_fail(wrong, words):
    result = check("init-fix-trunc", wrong)
    assert result.status == "failed" and words in result.message, (wrong.__name__, result.message)


# --- init-relu-depth (prediction) ----------------------------------------------------------------

def test_relu_depth_physics_matches_a_measurement():
    expected = grading.EXPECTED["init-relu-depth"]
    assert expected == 1 / 16
    g = torch.Generator().manual_seed(0)
    width = 512
    h = torch.randn(256, width, generator=g)
    for _ in range(8):
        h = torch.relu(h @ (torch.randn(width, width, generator=g) / math.sqrt(width)))
    y = h @ (torch.randn(width, width, generator=g) / math.sqrt(width))
    assert abs(y.std().item() / expected - 1) < 0.15
    assert check("init-relu-depth", practised("init-relu-depth", expected), measured=y.std().item()).passed


@pytest.mark.parametrize("wrong, words", [(1.0, "ReLUs matter"), (2**-3.5, "there are 8"),
                                          (2**-4.5, "there are 8"), (2**-8, "not the std"),
                                          (0.3408**4, "second moment")])
def test_relu_depth_slips_are_named(wrong, words):
    result = check("init-relu-depth", _const(wrong), measured=0.0625)
    assert result.status == "failed" and words in result.message, result.message
    assert "0.0625" not in result.message.split("(measured")[0]


# --- init-leaky-std (derive) ---------------------------------------------------------------------

def test_leaky_std_reference_passes():
    assert check("init-leaky-std", leaky_relu_std).passed
    _passes_hidden("init-leaky-std", leaky_relu_std)


@pytest.mark.parametrize("wrong", [
    lambda f, s: math.sqrt(2 / f),                      # He, ignoring the slope
    lambda f, s: math.sqrt(2 / ((1 + s) * f)),          # slope not squared
    lambda f, s: 2 / ((1 + s * s) * f),                 # the variance
    lambda f, s: 1 / math.sqrt(f),                      # LeCun, ignoring the activation
    lambda f, s: math.sqrt(1 / ((1 + s * s) * f)),      # half of the second moment forgotten
])
def test_leaky_std_wrong_variants_fail(wrong):
    assert check("init-leaky-std", wrong).status == "failed"


def test_leaky_std_says_variance():
    assert "variance" in check("init-leaky-std", lambda f, s: 2 / ((1 + s * s) * f)).message


# --- init-variant-params (derive) ----------------------------------------------------------------

def test_variant_params_value_and_slips():
    d, n, k = grading.DIM, grading.LAYERS, grading.OUT
    value = grading.EXPECTED["init-variant-params"]
    assert value == n * (d * d + d) + d * k + k
    assert check("init-variant-params", practised("init-variant-params", value)).passed
    assert "plain Cruncher" in check("init-variant-params", _const(d * d * n + d)).message
    assert "biases too" in check("init-variant-params", _const(value - k)).message
    assert "10 outputs" in check("init-variant-params", _const(n * (d * d + d) + d + 1)).message
    assert str(value) not in check("init-variant-params", _const(value + 1)).message


def test_stubs_are_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError

    for exercise_id in ("init-fix-trunc", "init-leaky-std"):
        assert check(exercise_id, stub).status == "not implemented"
    for exercise_id in ("init-relu-depth", "init-variant-params"):
        assert check(exercise_id, ...).status == "not implemented"
