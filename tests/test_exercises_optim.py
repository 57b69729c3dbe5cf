"""Chapter 08's exercises: reference answers pass (public, random and hidden cases), the classic
wrong variants fail, and no message reveals the expected value."""

from __future__ import annotations

import random

import pytest
import torch

from lectorch import optim, step_memory
from lectorch.exercises import check, compare, get_exercise, run_case
from lectorch.exercises.optim import optimizer_trainer

from grading.topics import optim as grading
from _practice import practised
from _answers.optim import (
    Stub, NoEps, TwoBuffers, NoClosure, Rebinds, SumNotAverage, RMSProp, OutOfPlaceRMSProp, adamw_step,
    no_bias_correction, l2_inside_the_moments, bias_correction_one_step_late,
    bias_correction_one_step_early, decay_without_lr, eps_inside_the_root, clip_by_global_norm,
    per_parameter, no_eps, scales_small_gradients_up, sum_of_squares, sum_of_norms,
)




def _passes_hidden(exercise_id, answer, seed=0):
    ex = get_exercise(exercise_id)
    for case in grading.hidden_cases(exercise_id, random.Random(seed)):
        status, got = run_case(answer, case)
        assert status == "returned", (exercise_id, case.description, got)
        assert compare(ex, got, case.expected) is None, (exercise_id, case.description)


# --- optim-rmsprop ---------------------------------------------------------------------------------

def test_rmsprop_reference_passes():
    assert check("optim-rmsprop", optimizer_trainer(RMSProp)).passed
    _passes_hidden("optim-rmsprop", optimizer_trainer(RMSProp))
    assert check("optim-rmsprop", optimizer_trainer(OutOfPlaceRMSProp)).passed


def test_rmsprop_bypasses_are_refused():
    class Mine(torch.optim.RMSprop):
        pass

    for bypass in (optim.RMSProp, torch.optim.RMSprop, Mine):
        result = check("optim-rmsprop", optimizer_trainer(bypass))
        assert result.status == "failed" and "asks you to write RMSProp yourself" in result.message, result


@pytest.mark.parametrize("wrong, words", [
    (NoEps, "differ"), (TwoBuffers, "one buffer"), (NoClosure, "closure"), (Rebinds, "never changed"),
    (SumNotAverage, "differ"),
])
def test_rmsprop_wrong_variants_fail(wrong, words):
    result = check("optim-rmsprop", optimizer_trainer(wrong))
    assert result.status == "failed" and words in result.message, result.message


def test_rmsprop_not_a_class_and_stub():
    assert check("optim-rmsprop", optimizer_trainer(Stub)).status == "not implemented"
    result = check("optim-rmsprop", optimizer_trainer(lambda params: None))
    assert result.status == "error" and "subclasses" in result.message
    # Adam with beta1 = 0 is RMSProp with bias correction: switched off like RMSprop itself
    result = check("optim-rmsprop", optimizer_trainer(optim.Adam))
    assert result.status == "failed" and "Adam is switched off" in result.message


# --- optim-adamw-step ----------------------------------------------------------------------------

def test_adamw_reference_passes():
    assert check("optim-adamw-step", adamw_step).passed
    _passes_hidden("optim-adamw-step", adamw_step)


@pytest.mark.parametrize("wrong, words", [
    (no_bias_correction, "new parameter"), (l2_inside_the_moments, "exp_avg"),
    (bias_correction_one_step_late, "new parameter"), (bias_correction_one_step_early, "new parameter"),
    (decay_without_lr, "new parameter"), (eps_inside_the_root, "new parameter"),
])
def test_adamw_wrong_variants_fail(wrong, words):
    result = check("optim-adamw-step", wrong)
    assert result.status == "failed" and words in result.message, (wrong.__name__, result.message)


# --- optim-clip-grad-norm ------------------------------------------------------------------------

def test_clip_reference_passes():
    assert check("optim-clip-grad-norm", clip_by_global_norm).passed
    _passes_hidden("optim-clip-grad-norm", clip_by_global_norm)


@pytest.mark.parametrize("wrong", [per_parameter, no_eps, scales_small_gradients_up, sum_of_squares,
                                   sum_of_norms])
def test_clip_wrong_variants_fail(wrong):
    assert check("optim-clip-grad-norm", wrong).status == "failed", wrong.__name__


def test_clip_without_eps_fails_on_all_zero_gradients():
    case = grading.hidden_cases("optim-clip-grad-norm", random.Random(0))[0]
    assert case.description == "all gradients zero"
    status, got = run_case(no_eps, case)
    assert status == "raised" or compare(get_exercise("optim-clip-grad-norm"), got, case.expected)
    status, got = run_case(clip_by_global_norm, case)
    assert compare(get_exercise("optim-clip-grad-norm"), got, case.expected) is None


# --- optim-step-peak (prediction) ----------------------------------------------------------------

def test_step_peak_physics_agrees_with_the_measurement():
    cfg = grading.PEAK_CONFIG
    expected = grading.EXPECTED["optim-step-peak"]
    measured, trace = step_memory.measure_step_memory(cfg["dim"], cfg["num_layers"], cfg["batch"],
                                                      optimizer=cfg["optimizer"])
    peak = measured.parameters + measured.batch + measured.optimizer_state + trace.peak_bytes
    assert 0 <= peak - expected <= 4 * cfg["batch"] * 4 + 64
    assert check("optim-step-peak", practised("optim-step-peak", expected), measured=peak).passed


def test_step_peak_slips_are_named():
    cfg = grading.PEAK_CONFIG
    everything = step_memory.predict_step_memory(cfg["dim"], cfg["num_layers"], cfg["batch"],
                                                 optimizer=cfg["optimizer"]).total
    result = check("optim-step-peak", lambda d, n, b: everything)
    assert result.status == "failed" and "all lived at once" in result.message
    resting = step_memory.step_timeline(cfg["dim"], cfg["num_layers"], cfg["batch"], optimizer="sgd").resting
    assert "resting" in check("optim-step-peak", lambda d, n, b: resting).message
    assert str(grading.EXPECTED["optim-step-peak"]) not in result.message


def test_stubs_are_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError

    for exercise_id in ("optim-adamw-step", "optim-clip-grad-norm"):
        assert check(exercise_id, stub).status == "not implemented"
    assert check("optim-step-peak", ...).status == "not implemented"
