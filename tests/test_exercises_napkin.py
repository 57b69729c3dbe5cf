"""Chapter 00's exercises: the reference answers pass, classic wrong answers fail, and feedback never
reveals the expected value."""

from __future__ import annotations

import math
import random

import pytest

from lectorch.exercises import check, compare, get_exercise, run_case

from grading.topics import napkin as grading
from _practice import practised




def test_values_pass_and_slips_are_named():
    # the value exercises are functions of their setting: the page's numbers are the public case
    for exercise_id, value in grading.EXPECTED.items():
        assert check(exercise_id, practised(exercise_id, value)).passed, exercise_id
    assert "one week" in check("napkin-two-weeks", lambda n, d: grading.EXPECTED["napkin-two-weeks"] / 2).message
    assert "scales" in check("napkin-8bit-adam-bytes", lambda b: 10).message
    assert "master" in check("napkin-8bit-adam-bytes", lambda b: 6.03125).message
    assert "fp32 moments" in check("napkin-8bit-adam-bytes", lambda b: 16).message
    assert "stage 3" in check("napkin-zero2-params", lambda n, m: n * m / 16).message
    assert "nothing sharded" in check("napkin-zero2-params", lambda n, m: m / 16).message
    assert "gradients too" in check("napkin-zero2-params", lambda n, m: m / (2 + 2 + 12 / n)).message
    for exercise_id, value in grading.EXPECTED.items():
        message = check(exercise_id, lambda *a, v=value: v * 1.37).message
        assert f"{value:g}"[:4] not in message.replace(f"{value * 1.37!r}", "")


def _runs(rng):
    return [c for c in grading.HIDDEN["napkin-gpus-needed"](rng)]


WRONG_GPUS = {
    "returns a float (no rounding)": lambda p, t, d, f, m: 6 * p * t / (d * f * m * 86400),
    "rounds to the nearest": lambda p, t, d, f, m: max(1, round(6 * p * t / (d * f * m * 86400))),
    "rounds down": lambda p, t, d, f, m: max(1, math.floor(6 * p * t / (d * f * m * 86400))),
    "forward FLOPs only (2·N·T)": lambda p, t, d, f, m: max(1, math.ceil(2 * p * t / (d * f * m * 86400))),
    "one GPU too many": lambda p, t, d, f, m: math.ceil(6 * p * t / (d * f * m * 86400)) + 1,
    "hours, not seconds": lambda p, t, d, f, m: max(1, math.ceil(6 * p * t / (d * f * m * 3600))),
}


def test_gpus_needed_reference_passes_public_random_and_hidden_cases():
    assert check("napkin-gpus-needed", grading.gpus_needed).passed
    ex = get_exercise("napkin-gpus-needed")
    for case in _runs(random.Random(3)):
        assert compare(ex, run_case(grading.gpus_needed, case)[1], case.expected) is None


@pytest.mark.parametrize("name", list(WRONG_GPUS))
def test_gpus_needed_rejects_wrong_variants(name):
    result = check("napkin-gpus-needed", WRONG_GPUS[name])
    assert result.status == "failed", (name, result)
    ex = get_exercise("napkin-gpus-needed")  # the hidden cases catch it too
    assert any(compare(ex, run_case(WRONG_GPUS[name], c)[1], c.expected) for c in _runs(random.Random(0)))


def test_gpus_needed_stub_and_feedback():
    def stub(params, tokens, days, peak_flops_per_s, mfu):
        raise NotImplementedError
    assert check("napkin-gpus-needed", stub).status == "not implemented"
    first = check("napkin-gpus-needed", WRONG_GPUS["rounds to the nearest"])
    assert "Hint" not in first.message and "too late" in first.message
    assert "Hint" in check("napkin-gpus-needed", WRONG_GPUS["rounds to the nearest"]).message
