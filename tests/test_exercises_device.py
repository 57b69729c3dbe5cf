"""Chapter 02's exercises: the reference answers pass, classic wrong answers fail, and feedback never
reveals the expected value."""

from __future__ import annotations

import math
import random

import pytest

from lectorch.exercises import check, compare, get_exercise, reset_attempts, run_case
from lectorch.exercises.device import SimulatedStream

from grading.topics import device as grading
from _practice import practised
from _answers.device import (
    honest_readings, unrounded, peak_is_final, frees_ignored, rounded_total, as_given, no_warm_up,
    no_final_sync, no_sync_before_start, sync_inside_but_cold,
)




def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value


def _rejected(exercise_id, answer):
    """The answer fails the public/random check AND at least one hidden case."""
    ex = get_exercise(exercise_id)
    public = check(exercise_id, answer)
    hidden = False
    for case in grading.HIDDEN[exercise_id](random.Random(0)):
        outcome = run_case(answer, case)
        if outcome[0] != "returned" or compare(ex, outcome[1], case.expected) is not None:
            hidden = True
    return public.status in ("failed", "error") and hidden


def test_values_pass_and_slips_are_named():
    for exercise_id, value in grading.EXPECTED.items():
        assert check(exercise_id, practised(exercise_id, value)).passed, exercise_id
    assert check("device-gpu-bytes", practised("device-gpu-bytes", float(grading.EXPECTED["device-gpu-bytes"]))).passed
    assert "2 bytes" in check("device-gpu-bytes", _const(256 * 4096 * 4)).message
    assert "MiB" in check("device-gpu-bytes", _const(2.0)).message
    physics = grading.EXPECTED["device-h2d-seconds"]
    assert check("device-h2d-seconds", practised("device-h2d-seconds", physics * 1.2), measured=physics * 1.3).passed  # within 25%
    assert "milliseconds" in check("device-h2d-seconds", _const(physics * 1000)).message
    assert "bits" in check("device-h2d-seconds", _const(physics * 8)).message
    for exercise_id, value in grading.EXPECTED.items():
        assert f"{value:.3g}" not in check(exercise_id, _const(value * 3.7)).message.replace(f"{value * 3.7:.3g}", "")


def test_prediction_message_shows_the_measurement():
    r = check("device-h2d-seconds", _const(0.5), measured=0.0051)
    assert r.status == "failed" and "0.0051" not in r.message  # never the number compared with
    assert "measured on this machine: 0.0051" in check("device-h2d-seconds", practised("device-h2d-seconds", 0.0045), measured=0.0051).message


# --- device-allocated-peak -----------------------------------------------------------------------

WRONG_READINGS = {"no 512-byte blocks": unrounded, "the peak is the final reading": peak_is_final,
                  "frees ignored": frees_ignored, "the total rounded, not each tensor": rounded_total}


def test_readings_reference_passes():
    assert check("device-allocated-peak", honest_readings).passed
    assert not _rejected("device-allocated-peak", honest_readings)


def test_readings_refuse_lectorch_s_rounding():
    result = check("device-allocated-peak", grading.predict_readings)  # the grader's, with allocator_bytes
    # the review names the line first, as the grade does; the run itself was refused too
    assert result.status == "needs review" and "allocator_bytes" in result.message
    assert "Its public cases: failed" in result.message


@pytest.mark.parametrize("name", list(WRONG_READINGS))
def test_readings_reject_wrong_variants(name):
    assert _rejected("device-allocated-peak", WRONG_READINGS[name]), name


def test_readings_feedback():
    first = check("device-allocated-peak", unrounded)
    assert "too small" in first.message and "512" not in first.message and "Hint" not in first.message
    assert "Hint" in check("device-allocated-peak", unrounded).message
    assert "a pair" in check("device-allocated-peak", lambda events: 8192).message

    def stub(events):
        raise NotImplementedError
    assert check("device-allocated-peak", stub).status == "not implemented"


# --- device-timing-debug -------------------------------------------------------------------------

WRONG_TIMING = {"as given": as_given, "no warm-up": no_warm_up, "no final synchronize": no_final_sync,
                "no synchronize before the clock starts": no_sync_before_start,
                "synchronised but the cold call timed": sync_inside_but_cold}


def test_timing_reference_passes():
    assert check("device-timing-debug", grading.time_copy).passed
    assert not _rejected("device-timing-debug", grading.time_copy)


@pytest.mark.parametrize("name", list(WRONG_TIMING))
def test_timing_rejects_wrong_variants(name):
    assert _rejected("device-timing-debug", WRONG_TIMING[name]), name


def test_timing_feedback_names_the_symptom():
    assert "still queued" in check("device-timing-debug", no_final_sync).message
    reset_attempts()
    assert "one-off" in check("device-timing-debug", no_warm_up).message


def test_simulated_stream_is_asynchronous():
    s = SimulatedStream(work_s=1e-3, launch_s=1e-5, cold_s=0.0)
    for _ in range(3):
        s.copy()
    assert math.isclose(s.clock(), 3e-5)
    s.synchronize()
    assert math.isclose(s.clock(), 1e-5 + 3e-3)
