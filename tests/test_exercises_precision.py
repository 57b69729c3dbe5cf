"""Chapter 01's exercises: the reference answers pass, classic wrong answers fail, and feedback never
reveals the expected value."""

from __future__ import annotations

import math
import random

import pytest
import torch

from lectorch.exercises import check, compare, get_exercise, reset_attempts, run_case

from grading.topics import precision as grading
from _practice import practised
from _answers.precision import (
    no_max, bf16_throughout, global_max, log_of_softmax, wrong_dim,
)




def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value


def _hidden(exercise_id):
    return grading.HIDDEN[exercise_id](random.Random(0))


def _rejected(exercise_id, answer):
    """The answer fails the public/random check AND at least one hidden case."""
    ex = get_exercise(exercise_id)
    public = check(exercise_id, answer)
    hidden = any(compare(ex, run_case(answer, c)[1], c.expected) is not None
                 if run_case(answer, c)[0] == "returned" else True for c in _hidden(exercise_id))
    return public.status in ("failed", "error") and hidden


# --- precision-tensor-bytes ----------------------------------------------------------------------

WRONG_BYTES = {
    "bits, not bytes": lambda shape, dtype: math.prod(shape) * dtype.itemsize * 8,
    "always 4 bytes per element": lambda shape, dtype: math.prod(shape) * 4,
    "a scalar counted as 0 elements": lambda shape, dtype: (math.prod(shape) if shape else 0) * dtype.itemsize,
    "sum of the sizes, not the product": lambda shape, dtype: sum(shape) * dtype.itemsize,
}


def test_tensor_bytes_reference_passes():
    assert check("precision-tensor-bytes", grading.tensor_nbytes).passed
    assert not _rejected("precision-tensor-bytes", grading.tensor_nbytes)


@pytest.mark.parametrize("name", list(WRONG_BYTES))
def test_tensor_bytes_rejects_wrong_variants(name):
    assert _rejected("precision-tensor-bytes", WRONG_BYTES[name]), name


def test_tensor_bytes_names_the_bits_slip():
    assert "bits, not bytes" in check("precision-tensor-bytes", WRONG_BYTES["bits, not bytes"]).message


# --- precision-bf16-257 and precision-bf16-stall -------------------------------------------------

def test_value_and_prediction_pass_and_slips_are_named():
    for exercise_id, value in grading.EXPECTED.items():
        assert check(exercise_id, practised(exercise_id, value)).passed, exercise_id
    assert check("precision-bf16-257", practised("precision-bf16-257", torch.tensor(257.0, dtype=torch.bfloat16))).passed
    assert "tie" in check("precision-bf16-257", _const(258.0)).message
    assert "8 significant bits" in check("precision-bf16-257", _const(257)).message
    assert check("precision-bf16-257", _const("256")).status == "failed"
    assert "exact sum" in check("precision-bf16-stall", _const(10.0)).message
    assert "still move the sum" in check("precision-bf16-stall", _const(2.0)).message
    assert check("precision-bf16-stall", _const(8.0)).status == "failed"


def test_prediction_reports_the_measurement_and_hides_the_answer():
    total = torch.zeros((), dtype=torch.bfloat16)
    for _ in range(1000):
        total += 0.01
    assert total.item() == grading.EXPECTED["precision-bf16-stall"]
    good = check("precision-bf16-stall", practised("precision-bf16-stall", 4.0), measured=total.item())
    assert good.passed and "measured on this machine" in good.message
    bad = check("precision-bf16-stall", _const(6.0), measured=total.item())
    assert bad.status == "failed" and "measured" not in bad.message
    for wrong in (3.0, 6.0, 1e3):
        assert "4.0" not in check("precision-bf16-stall", _const(wrong)).message.replace(repr(wrong), "")


# --- precision-log-softmax -----------------------------------------------------------------------

WRONG_SOFTMAX = {"no max subtracted": no_max, "bf16 throughout": bf16_throughout,
                 "max of the whole tensor": global_max, "log of the softmax": log_of_softmax,
                 "normalised over the first dimension": wrong_dim}


def test_log_softmax_reference_passes_everything():
    assert check("precision-log-softmax", grading.log_softmax).passed
    assert not _rejected("precision-log-softmax", grading.log_softmax)


@pytest.mark.parametrize("name", list(WRONG_SOFTMAX))
def test_log_softmax_rejects_wrong_variants(name):
    assert _rejected("precision-log-softmax", WRONG_SOFTMAX[name]), name


def test_log_softmax_feedback_is_graded_and_names_the_symptom():
    first = check("precision-log-softmax", no_max)
    assert "inf or NaN" in first.message and "Hint" not in first.message
    assert "Hint" in check("precision-log-softmax", no_max).message
    reset_attempts()
    assert "off by more than the tolerance" in check("precision-log-softmax", bf16_throughout).message
    assert "dtype" in check("precision-log-softmax", lambda x: grading.log_softmax(x).double()).message

    def stub(logits):
        raise NotImplementedError
    assert check("precision-log-softmax", stub).status == "not implemented"
