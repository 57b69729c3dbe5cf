"""Exercise checkers: a student's value or function is checked against hidden cases.

Feedback says which case failed and gives a hint, never the expected answer. An unfinished
exercise (``...``, ``None`` or ``raise NotImplementedError``) gets a friendly "not implemented yet".
Each chapter registers its exercises in a module of this package.

>>> check("napkin-bytes-per-param", ...).status
'not implemented'
>>> check("napkin-bytes-per-param", 16).passed
True
"""

from __future__ import annotations

import importlib
import json
import math
import os
import numbers
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import torch

#: When this environment variable names a file, every check appends its result there as a JSON
#: line (the grader reads it; see tools/grade.py).
RESULTS_ENV = "LECTORCH_RESULTS"

Status = Literal["passed", "failed", "not implemented", "error"]
_ICONS = {"passed": "✅", "failed": "❌", "not implemented": "📝", "error": "💥"}


@dataclass(frozen=True)
class Case:
    """One hidden case: call the answer with ``args``/``kwargs`` and expect ``expected``.

    ``raises`` instead expects the call to raise that exception type (e.g. bad input).
    ``description`` is shown to the student when the case fails, so it must not give the answer away.
    """

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    expected: Any = None
    description: str = ""
    raises: type[BaseException] | None = None


@dataclass(frozen=True)
class Exercise:
    """A checkable exercise. ``kind`` is "value" (one expected value) or "function" (cases).

    ``slips`` maps a ratio answer/expected to the mistake it reveals, e.g. ``{0.5: "one week, not two?"}``.
    ``compare`` replaces the default comparison; it returns None when equal, else a message.
    """

    id: str
    title: str
    kind: Literal["value", "function"]
    hint: str
    expected: Any = None
    cases: tuple[Case, ...] = ()
    rtol: float = 1e-6
    atol: float = 0.0
    slips: dict[float, str] = field(default_factory=dict)
    compare: Callable[[Any, Any], str | None] | None = None


@dataclass(frozen=True)
class CheckResult:
    """The outcome of :func:`check`. It prints as one friendly line (plus a hint on failure)."""

    exercise: str
    status: Status
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        return f"{_ICONS[self.status]} [{self.exercise}] {self.message}"

    __str__ = __repr__


_REGISTRY: dict[str, Exercise] = {}
_LOADED = False


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to the registry (called by each chapter's exercise module)."""
    if exercise.id in _REGISTRY and _REGISTRY[exercise.id] != exercise:
        raise ValueError(f"exercise id {exercise.id!r} is registered twice; ids must be unique")
    if exercise.kind == "function" and not exercise.cases:
        raise ValueError(f"function exercise {exercise.id!r} needs at least one Case")
    _REGISTRY[exercise.id] = exercise
    return exercise


def _load_all() -> None:
    global _LOADED
    if not _LOADED:
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _LOADED = True


def exercises() -> dict[str, Exercise]:
    """Every registered exercise, by id.

    >>> "napkin-bytes-per-param" in exercises()
    True
    """
    _load_all()
    return dict(_REGISTRY)


def get_exercise(exercise_id: str) -> Exercise:
    """The exercise registered under ``exercise_id``."""
    _load_all()
    if exercise_id not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(str(exercise_id), _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"no exercise has id {exercise_id!r}.{hint}")
    return _REGISTRY[exercise_id]


def _not_done(answer: Any) -> bool:
    return answer is ... or answer is None


def check(exercise_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` (a value or a function, as the exercise asks) and explain the outcome.

    >>> check("napkin-bytes-per-param", 12).passed
    False
    """
    result = _check(get_exercise(exercise_id), answer)
    log = os.environ.get(RESULTS_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"exercise": result.exercise, "status": result.status, "message": result.message}) + "\n")
    return result


def _check(ex: Exercise, answer: Any) -> CheckResult:
    if _not_done(answer):
        return CheckResult(ex.id, "not implemented", "Not implemented yet: replace the `...` with your answer and run the cell again.")
    if ex.kind == "value":
        try:
            problem = _compare(ex, answer, ex.expected)
        except NotImplementedError:
            return CheckResult(ex.id, "not implemented", "Not implemented yet.")
        if problem is None:
            return CheckResult(ex.id, "passed", f"Correct: {ex.title}.")
        return CheckResult(ex.id, "failed", f"{problem} Hint: {ex.hint}")
    if not callable(answer):
        return CheckResult(ex.id, "failed", f"Expected a function, got {type(answer).__name__}. Hint: {ex.hint}")
    for i, case in enumerate(ex.cases, start=1):
        where = f"Case {i} of {len(ex.cases)}" + (f" ({case.description})" if case.description else "")
        try:
            got = answer(*case.args, **case.kwargs)
        except NotImplementedError:
            return CheckResult(ex.id, "not implemented", "Not implemented yet: your function still raises NotImplementedError.")
        except Exception as err:  # the student's code failed: report it, never crash the notebook
            if case.raises is not None and isinstance(err, case.raises):
                continue
            return CheckResult(ex.id, "error", f"{where}: your function raised {type(err).__name__}: {err}. Hint: {ex.hint}")
        if case.raises is not None:
            return CheckResult(ex.id, "failed", f"{where}: expected an error ({case.raises.__name__}) for this input, but your function returned {_short(got)}. Hint: {ex.hint}")
        if got is ... or (got is None and case.expected is not None):
            return CheckResult(ex.id, "not implemented", f"Not implemented yet: your function returns {got!r}.")
        problem = _compare(ex, got, case.expected)
        if problem is not None:
            return CheckResult(ex.id, "failed", f"{where}: {problem} Hint: {ex.hint}")
    n = len(ex.cases)
    return CheckResult(ex.id, "passed", f"Correct: {ex.title} ({n} hidden case{'s' if n != 1 else ''} pass).")


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _compare(ex: Exercise, got: Any, expected: Any) -> str | None:
    """None if ``got`` matches ``expected``, else a message that does not reveal ``expected``."""
    if ex.compare is not None:
        return ex.compare(got, expected)
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a tensor, got {type(got).__name__}."
        if got.shape != expected.shape:
            return f"your tensor has shape {tuple(got.shape)}, which is not the expected shape."
        if got.dtype != expected.dtype:
            return f"your tensor has dtype {got.dtype}, which is not the expected dtype."
        if not torch.allclose(got.detach().cpu(), expected.cpu(), rtol=ex.rtol, atol=ex.atol, equal_nan=True):
            return "your tensor has the right shape and dtype but different values."
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"expected a sequence of {len(expected)} items, got {_short(got)}."
        for j, (g, e) in enumerate(zip(got, expected)):
            problem = _compare(ex, g, e)
            if problem is not None:
                return f"item {j}: {problem}"
        return None
    if isinstance(expected, numbers.Real) and not isinstance(expected, bool):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return f"expected a number, got {_short(got)}."
        if math.isclose(float(got), float(expected), rel_tol=ex.rtol, abs_tol=ex.atol):
            return None
        if expected != 0 and got != 0:
            ratio = float(got) / float(expected)
            for slip_ratio, slip in ex.slips.items():
                if math.isclose(ratio, slip_ratio, rel_tol=1e-3):
                    return f"{_short(got)} is not right: {slip}"
        direction = "too large" if got > expected else "too small"
        return f"{_short(got)} is {direction}."
    if got == expected:
        return None
    return f"{_short(got)} is not the expected answer."
