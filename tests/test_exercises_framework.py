"""The exercise checker: reference answers pass, wrong ones fail helpfully without revealing the
answer, unfinished ones are 'not implemented', and a student's crash never escapes."""

import math

import pytest
import torch

from lectorch import exercises, napkin
from lectorch.exercises import Case, Exercise, check


def test_every_registered_exercise_is_well_formed():
    all_ex = exercises.exercises()
    assert len(all_ex) >= 4
    for ex in all_ex.values():
        assert ex.hint and ex.title
        assert ex.kind in ("value", "function")


def test_value_exercise_outcomes():
    assert check("napkin-bytes-per-param", 16).passed
    wrong = check("napkin-bytes-per-param", 12)
    assert wrong.status == "failed" and "moments" in wrong.message and "Hint" in wrong.message
    assert "16" not in wrong.message.replace("16 bytes", "")
    assert check("napkin-bytes-per-param", ...).status == "not implemented"
    assert check("napkin-bytes-per-param", "sixteen").status == "failed"


def test_known_slip_one_week_is_named():
    result = check("napkin-two-weeks", 8 * 7 * 86400 * 989.5e12)
    assert result.status == "failed" and "one week" in result.message
    assert "sparsity" in check("napkin-two-weeks", 8 * 14 * 86400 * 1979e12).message
    assert check("napkin-two-weeks", 8 * 14 * 86400 * 989.5e12).passed


def reference_days(params, tokens, num_gpus, peak_flops_per_s, mfu):
    return 6 * params * tokens / (num_gpus * peak_flops_per_s * mfu * 86400)


def test_function_exercise_outcomes():
    assert check("napkin-training-days", reference_days).passed
    forward_only = check("napkin-training-days", lambda p, t, n, f, m: 2 * p * t / (n * f * m * 86400))
    assert forward_only.status == "failed" and "6 FLOPs" in forward_only.message
    assert "Case 1 of" in forward_only.message

    def stub(params, tokens, num_gpus, peak_flops_per_s, mfu):
        raise NotImplementedError

    assert check("napkin-training-days", stub).status == "not implemented"
    crash = check("napkin-training-days", lambda *a: 1 / 0)
    assert crash.status == "error" and "ZeroDivisionError" in crash.message
    assert check("napkin-training-days", 3.0).status == "failed"
    assert check("napkin-max-params", lambda m, b, n: n * m / b).passed
    assert check("napkin-max-params", lambda m, b, n: m / b).status == "failed"


def test_failure_messages_never_contain_the_expected_value():
    ex = exercises.get_exercise("napkin-training-days")
    result = check("napkin-training-days", lambda *a: 1.0)
    for case in ex.cases:
        assert repr(case.expected) not in result.message
        assert f"{case.expected:.3g}" not in result.message


def test_tensor_and_raises_cases():
    ex = Exercise(
        id="test-double", title="double", kind="function", hint="multiply by two",
        cases=(Case(args=(torch.ones(2),), expected=torch.full((2,), 2.0)),
               Case(args=("x",), raises=TypeError, description="bad input")),
    )
    exercises.register(ex)
    try:
        def double(x):
            if not isinstance(x, torch.Tensor):
                raise TypeError("x must be a tensor")
            return 2 * x

        assert check("test-double", double).passed
        assert "shape" in check("test-double", lambda x: torch.ones(3) if isinstance(x, torch.Tensor) else 1 / 0).message
        assert "expected an error" in check("test-double", lambda x: 2 * x if isinstance(x, torch.Tensor) else x).message
    finally:
        exercises._REGISTRY.pop("test-double")


def test_registry_errors():
    with pytest.raises(ValueError, match="Did you mean"):
        check("napkin-bytes-per-parm", 16)
    with pytest.raises(ValueError, match="needs at least one Case"):
        exercises.register(Exercise(id="x", title="x", kind="function", hint="h"))
    with pytest.raises(ValueError, match="registered twice"):
        exercises.register(Exercise(id="napkin-bytes-per-param", title="other", kind="value", hint="h", expected=1))


def test_result_prints_one_friendly_line():
    text = repr(check("napkin-bytes-per-param", 16))
    assert text.startswith("✅ [napkin-bytes-per-param]")
    assert math.isclose(napkin.ADAMW_FP32.total, 16)


def test_a_stub_that_returns_nothing_is_not_implemented():
    def stub(params, tokens, num_gpus, peak_flops_per_s, mfu):
        ...

    assert check("napkin-training-days", stub).status == "not implemented"
