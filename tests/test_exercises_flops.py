"""Chapter 05's exercises: reference solutions pass, classic wrong answers are rejected with a
message that teaches, the plain value agrees with its seal."""

from __future__ import annotations

import math
import random
import time

import pytest

import lectorch
from lectorch.exercises import compare, Sealed, get_exercise, run_case
from lectorch.exercises import flops as ex_flops
from grading.topics import flops as grading
from _practice import practised
from _answers.flops import (
    matmul_mfu, smallest_compute_bound_n, time_call, time_call_stub, synced_mean, cold_median,
)





def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value



def test_reference_solutions_pass():
    assert lectorch.check("flops-mfu-from-time", matmul_mfu).passed
    assert lectorch.check("flops-compute-bound-n", smallest_compute_bound_n).passed
    assert lectorch.check("flops-time-ratio", practised("flops-time-ratio", 8), measured=9.1).passed
    assert lectorch.check("flops-time-ratio", practised("flops-time-ratio", 7)).passed  # within ±25 %
    assert lectorch.check("flops-honest-timer", time_call).passed


def test_the_plain_value_agrees_with_the_seal():
    g = grading
    assert g.EXPECTED == {"flops-time-ratio": 8.0}
    ex = get_exercise("flops-time-ratio")
    assert Sealed.of(ex.id, 8.0, rtol=ex.expected.rtol).token == ex.expected.token


def test_hidden_cases_pass_the_reference():
    g = grading
    for ex_id, good in [("flops-mfu-from-time", matmul_mfu),
                        ("flops-compute-bound-n", smallest_compute_bound_n),
                        ("flops-honest-timer", time_call)]:
        ex = get_exercise(ex_id)
        for case in g.hidden_cases(ex_id, random.Random(0)):
            kind, got = run_case(good, case, ex)  # with the exercise: its runner, its refusals
            assert kind == "returned", case.description
            problem = compare(ex, got, case.expected)  # the grader's plain expected values
            assert problem is None, (case.description, problem)


@pytest.mark.parametrize(
    "exercise, answer, message",
    [
        ("flops-mfu-from-time", lambda B, D, K, s, p: B * D * K / s / p, "one multiply-add"),
        ("flops-mfu-from-time", lambda B, D, K, s, p: 2 * B * D * K / s / p * 1e-12, "TFLOP"),
        ("flops-mfu-from-time", lambda B, D, K, s, p: 2 * B * D * K / s, "too large"),
        ("flops-compute-bound-n", lambda p, bw, b: 1.5 * b * p / bw, "int"),
        ("flops-compute-bound-n", lambda p, bw, b: math.floor(1.5 * b * p / bw), "wrong side of it"),
        ("flops-compute-bound-n", lambda p, bw, b: math.ceil(1.5 * b * p / bw) + 1, "wrong side of it"),
        ("flops-compute-bound-n", lambda p, bw, b: math.ceil(3 * b * p / bw), "too large"),
        ("flops-time-ratio", _const(4), "bytes moved"),
        ("flops-time-ratio", _const(1 / 8), "upside down"),
        ("flops-time-ratio", _const(2), "not within ±25 % of the answer"),
        ("flops-honest-timer", time_call_stub, "clock stopped while"),
        ("flops-honest-timer", synced_mean, "one-off slow call"),
        ("flops-honest-timer", cold_median, "cold calls"),
    ],
)
def test_wrong_answers_fail_with_a_useful_message(exercise, answer, message):
    result = lectorch.check(exercise, answer, measured=9.0 if exercise == "flops-time-ratio" else None)
    assert result.status == "failed", result
    assert message in result.message
    if message == "wrong side of it":  # one off: neither the direction nor the distance is said
        assert not any(w in result.message for w in ("too small", "too large", "one too", "by one"))


def test_the_prediction_feedback_states_the_measurement():
    result = lectorch.check("flops-time-ratio", practised("flops-time-ratio", 8), measured=9.0)
    assert "(measured on this machine: 9" in result.message
    assert "9" not in lectorch.check("flops-time-ratio", _const(4), measured=9.0).message.replace("4", "")


def test_the_simulated_device_is_asynchronous():
    dev = ex_flops.SimulatedDevice(0.01, cold=1, hiccup=3)
    start = dev.clock()
    dev.run()
    assert dev.clock() - start < 1e-4 and dev.pending == dev.slow_s
    dev.sync()
    assert dev.pending == 0 and dev.clock() - start >= dev.slow_s


def test_a_timer_on_the_real_clock_is_caught():
    def real_clock(fn, sync, clock, warmup=3, trials=7):
        return time_call(fn, sync, time.perf_counter, warmup, trials)

    assert "clock it was given" in lectorch.check("flops-honest-timer", real_clock).message


def test_many_trials_dilute_the_hiccup_and_a_huge_mean_still_fails():
    def long_mean(fn, sync, clock):
        return synced_mean(fn, sync, clock, trials=20)

    assert lectorch.check("flops-honest-timer", long_mean).status == "failed"


def test_stubs_are_not_implemented():
    def stub(*args):
        raise NotImplementedError

    for ex_id in ("flops-mfu-from-time", "flops-compute-bound-n", "flops-honest-timer"):
        assert lectorch.check(ex_id, stub).status == "not implemented"
    assert lectorch.check("flops-time-ratio", ...).status == "not implemented"
