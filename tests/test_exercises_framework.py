"""The exercise checker: reference answers pass, wrong ones fail helpfully without revealing the
answer, feedback is graded (a nudge only from the second failure), unfinished ones are 'not
implemented', expected values are sealed, and a student's crash never escapes.

These tests register their own fixture exercises, so they do not depend on the chapters'."""

from __future__ import annotations

import random

import pytest
import torch

import grading
from lectorch import exercises
from lectorch.exercises import (CHECK_MIME, Case, Exercise, GeneratorSeed, Sealed, check, register,
                                reset_attempts)



@pytest.fixture
def fixture_exercises():
    ids = []

    def add(ex: Exercise) -> Exercise:
        register(ex)
        ids.append(ex.id)
        reset_attempts(ex.id)
        return ex

    yield add
    for i in ids:
        exercises._REGISTRY.pop(i, None)
        reset_attempts(i)


def _value(add, **kw):
    return add(Exercise(id="t-value", title="the value", kind="value", hint=("first nudge", "second nudge"),
                        expected=Sealed.of("t-value", 9.58e21, rtol=1e-3), slips={0.5: "one week, not two?"}, **kw))


def test_value_outcomes_and_graded_hints(fixture_exercises):
    _value(fixture_exercises)
    assert check("t-value", 9.58e21).passed
    assert check("t-value", 9.58e21 * (1 + 5e-4)).passed
    assert check("t-value", ...).status == "not implemented"
    first = check("t-value", 3e21)
    assert first.status == "failed" and "not within ±0.1 %" in first.message and "Hint" not in first.message
    second = check("t-value", 3e18)
    assert "too small: the answer has a larger power of ten" in second.message and "first nudge" in second.message
    assert "factor of" not in first.message + second.message
    third = check("t-value", 1.0)
    assert "second nudge" in third.message
    assert "second nudge" in check("t-value", 2.0).message  # the last nudge repeats
    assert "one week" in check("t-value", 9.58e21 / 2).message
    assert check("t-value", "sixteen").status == "failed"
    assert "NaN" in check("t-value", float("nan")).message or "nan" in check("t-value", float("nan")).message


def test_sealed_values_do_not_reveal_the_answer(fixture_exercises):
    ex = _value(fixture_exercises)
    assert "9.58" not in ex.expected.token and "958" not in ex.expected.token
    for wrong in (1.0, 3e21, 9e22):
        assert "9.58" not in check("t-value", wrong).message


@pytest.mark.parametrize("value,rtol,atol", [(16, 1e-6, 0), (9.58e21, 1e-3, 0), (-2.5e-7, 0.25, 0),
                                             (0.0, 0, 1e-9), (1234.5, 0, 0.5), (3, 0, 0)])
def test_seal_accepts_everything_within_tolerance(value, rtol, atol):
    sealed = Sealed.of("t-seal", value, rtol=rtol, atol=atol)
    rng = random.Random(0)
    for _ in range(200):
        if rtol:
            x = value * (1 + rng.uniform(-rtol, rtol) * 0.999)
        elif atol:
            x = value + rng.uniform(-atol, atol) * 0.999
        else:
            x = value
        assert sealed.matches("t-seal", x), (value, x)
    far = value * 3 + 10 * (atol or 1)
    assert not sealed.matches("t-seal", far)


def test_seal_of_exact_answers():
    strides = Sealed.of("t-exact", (8, 1))
    assert strides.matches("t-exact", (8, 1)) and strides.matches("t-exact", [8, 1])
    assert not strides.matches("t-exact", (1, 8))
    letters = Sealed.of("t-exact", {"i", "k"})
    assert letters.matches("t-exact", {"k", "i"}) and not letters.matches("t-exact", {"i"})
    with pytest.raises(ValueError, match="rtol"):
        Sealed.of("t", 1.0, rtol=-1)
    with pytest.raises(ValueError, match="non-finite"):
        Sealed.of("t", float("inf"), rtol=0.1)


def test_seal_command_line():
    from lectorch.exercises import seal

    token = seal.main(["t-cli", "16", "--rtol", "1e-6"])
    assert token.startswith("r|1e-06|")
    assert Sealed(token).matches("t-cli", 16) and not Sealed(token).matches("t-cli", 16.0001)


def test_prediction_reports_the_measurement(fixture_exercises):
    fixture_exercises(Exercise(id="t-predict", title="copy time", kind="prediction", hint="bytes / bandwidth",
                               expected=Sealed.of("t-predict", 2e-3, rtol=0.25)))
    ok = check("t-predict", 2.2e-3, measured=2.6e-3)
    assert ok.passed and "(measured on this machine: 0.0026, 1.2× your prediction)" in ok.message
    bad = check("t-predict", 2e-1, measured=2.6e-3)
    assert bad.status == "failed" and "measured" not in bad.message and "0.0026" not in bad.message
    assert check("t-predict", 2e-3).passed  # the measurement is optional


def _double(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError("x must be a tensor")
    return 2 * x


def _gen_cases(rng):
    return [Case(args=(torch.full((n,), float(n)),), expected=torch.full((n,), 2.0 * n), description=f"length {n}")
            for n in (rng.randint(1, 9) for _ in range(3))]


def test_function_outcomes(fixture_exercises):
    fixture_exercises(Exercise(
        id="t-double", title="double", kind="function", hint="multiply by two", generate=_gen_cases,
        cases=(Case(args=(torch.ones(2),), expected=torch.full((2,), 2.0), description="two ones"),
               Case(args=("x",), raises=TypeError, description="bad input"))))
    assert check("t-double", _double).passed and "5 cases pass" in check("t-double", _double).message
    shape = check("t-double", lambda x: torch.ones(3) if isinstance(x, torch.Tensor) else 1 / 0)
    assert "Case 1 of 5 (two ones)" in shape.message and "shape" in shape.message and "Hint" not in shape.message
    assert "expected an error" in check("t-double", lambda x: 2 * x if isinstance(x, torch.Tensor) else x).message
    crash = check("t-double", lambda x: 1 / 0)
    assert crash.status == "error" and "ZeroDivisionError" in crash.message and "multiply by two" in crash.message

    def view_error(x):
        raise RuntimeError("view size is not compatible. Use .reshape(...) instead.")

    assert "Use .reshape(...) instead. " in check("t-double", view_error).message  # one full stop, not two

    def stub(x):
        raise NotImplementedError

    def silent(x):
        ...

    assert check("t-double", stub).status == "not implemented"
    assert check("t-double", silent).status == "not implemented"
    assert check("t-double", 3.0).status == "failed"


def test_generator_seeds_become_fresh_generators(fixture_exercises):
    seen = []

    def draw(generator):
        seen.append(generator)
        return torch.rand(3, generator=generator)

    fixture_exercises(Exercise(id="t-gen", title="draw", kind="function", hint="use the generator",
                               cases=(Case(args=(GeneratorSeed(7),),
                                           expected=torch.rand(3, generator=torch.Generator().manual_seed(7))),) * 2))
    assert check("t-gen", draw).passed
    assert len(seen) == 2 and seen[0] is not seen[1]
    assert check("t-gen", lambda generator: torch.rand(3)).status == "failed"


def test_inputs_are_copied_between_cases(fixture_exercises):
    shared = torch.zeros(2)
    fixture_exercises(Exercise(id="t-mutate", title="mutate", kind="function", hint="h",
                               cases=(Case(args=(shared,), expected=torch.ones(2)),) * 2))

    def add_one_in_place(x):
        return x.add_(1)

    assert check("t-mutate", add_one_in_place).passed and torch.equal(shared, torch.zeros(2))


def test_registry_errors(fixture_exercises):
    _value(fixture_exercises)
    with pytest.raises(ValueError, match="Did you mean"):
        check("t-valeu", 16)
    with pytest.raises(ValueError, match="needs at least one Case"):
        register(Exercise(id="t-x", title="x", kind="function", hint="h"))
    with pytest.raises(ValueError, match="registered twice"):
        register(Exercise(id="t-value", title="other", kind="value", hint="h", expected=1))
    with pytest.raises(ValueError, match="kind"):
        register(Exercise(id="t-y", title="y", kind="guess", hint="h"))


def test_result_prints_one_line_and_carries_a_summary(fixture_exercises):
    _value(fixture_exercises)
    result = check("t-value", 9.58e21)
    assert repr(result).startswith("✅ [t-value] Correct")
    bundle = result._repr_mimebundle_()
    assert bundle["text/plain"] == repr(result)
    assert bundle[CHECK_MIME] == {"exercise": "t-value", "summary": "checks your value (within ±0.1 % of the answer)"}
    assert "Correct" not in bundle[CHECK_MIME]["summary"]


# ------------------------------------------------------------------ the chapters' exercises


def test_every_registered_exercise_is_well_formed():
    all_ex = exercises.exercises()
    assert len(all_ex) >= 4
    for ex in all_ex.values():
        assert ex.hints and ex.title and ex.describe()
        assert ex.kind in ("value", "prediction", "function")




def test_sealed_values_agree_with_the_instructors_grading_modules():
    """Value and prediction exercises hold a seal, never the plain value; grading/topics/<topic>.py
    holds the plain value in its TOPIC's ``expected``, and the two agree."""
    topics, problems = grading.load_topics(), []
    for ex in exercises.exercises().values():
        if ex.kind == "function" or ex.id.startswith("t-") or ex.id.startswith("doc-"):
            continue
        topic = exercises.origin(ex.id)
        if not isinstance(ex.expected, Sealed):
            problems.append(f"{ex.id}: a {ex.kind} exercise's expected value must be Sealed (the plain value "
                            f"belongs in grading/topics/{topic}.py), see python -m grading.seals")
            continue
        plain = topics[topic].expected.get(ex.id, ...) if topic in topics else ...
        if plain is ...:
            problems.append(f"{ex.id}: grading/topics/{topic}.py has no expected[{ex.id!r}]")
        elif Sealed.of(ex.id, plain, rtol=ex.expected.rtol, atol=ex.expected.atol) != ex.expected:
            problems.append(f"{ex.id}: the seal in lectorch/exercises/{topic}.py does not match grading/topics/{topic}.py")
    assert not problems, "\n".join(problems)
