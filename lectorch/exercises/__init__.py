"""Exercise checkers: a student's value or function is checked and the feedback teaches.

Five rules hold for every exercise:

- One verdict: the practice check (``check``) and the grader (``grading/judge.py``) judge through
  the same engine (``judge_value``, ``judge_cases``): the same case loop, statuses,
  messages and tolerance, and the same review of the answer's code (``review``: a finding makes
  the verdict "needs review" in the notebook as in the grade). The practice check runs the public cases (the page's numbers and, for a
  value or prediction asked as a function, practice settings that span the rule); the grader runs
  the public cases and hidden ones.
- Feedback says *what* was wrong (and on which case), never the expected value, the algorithm, or
  a factor that would turn the answer into the expected one ("too large: the answer has a smaller
  power of ten", never "by a factor of 8"). The first failure gets only that; a repeated failure
  of the same exercise adds a nudge (``hint``), and later failures the next nudges.
- An unfinished exercise (``...``, ``None`` or ``raise NotImplementedError``) is "not implemented".
- Expected values the package holds are sealed (``lectorch.exercises.seal``): the accepted
  interval exactly the stated one, known by salted hashes, not the number. The plain values, and
  the hidden cases, live outside the package in the instructor's ``grading/`` modules.
- A student's crash never escapes: it is reported as an "error".

>>> ex = register(Exercise(id="doc-answer", title="the answer", kind="value",
...                        expected=Sealed.of("doc-answer", 42, rtol=1e-9), hint="think"))
>>> check("doc-answer", ...).status
'not implemented'
>>> check("doc-answer", 42.0).passed
True
>>> check("doc-answer", 41).status
'failed'
>>> del _REGISTRY["doc-answer"]  # an example, not one of the course's exercises
"""

from __future__ import annotations

from lectorch.i18n import tr

import contextlib
import importlib
import importlib.util
import json
import math
import numbers
import os
import pkgutil
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import torch

from lectorch.exercises.refuse import refusing
from lectorch.exercises.review import practice_review
from lectorch.exercises.review import verdict as review_verdict
from lectorch.exercises.seal import (Sealed, SealedNumber, how_far, practice_cases, stored_data, token_matches,
                                     tolerance_text, within)
from lectorch.exercises.seal import _real as _as_real
from lectorch.exercises.seal import short

#: When this environment variable names a file, every check appends its result there as a JSON
#: line. It is a convenience log for the student only: the grader never trusts it.
RESULTS_ENV = "LECTORCH_RESULTS"

#: The mime type of a check result's machine-readable part; the book renders it as the summary
#: of what the checker tests (tools/book/sphinx_lectorch.py), so the static page never says "Correct".
CHECK_MIME = "application/vnd.lectorch.check+json"

#: every status of a verdict: the practice check gives the first four and "needs review" (the
#: review of the answer's code found a line to look at); the grader also says "missing" (no answer
#: in the notebook), "not reached" (the run stopped first) and "not graded" (the notebook was refused)
Status = Literal["passed", "failed", "not implemented", "error", "missing", "not reached", "not graded",
                 "needs review"]
STATUSES: tuple[str, ...] = Status.__args__
Kind = Literal["value", "prediction", "function"]
_ICONS = {"passed": "✅", "failed": "❌", "not implemented": "📝", "error": "💥", "missing": "❔",
          "not reached": "⏱", "not graded": "🚫", "needs review": "🔎"}
_KINDS = ("value", "prediction", "function")


@dataclass(frozen=True)
class GeneratorSeed:
    """Stands for ``torch.Generator().manual_seed(seed)`` in a case's arguments (a fresh one per call),
    so that plain data can describe a generator argument."""

    seed: int


# ---------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Case:
    """One case: call the answer with ``args``/``kwargs`` and expect ``expected``.

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
    """A checkable exercise.

    ``kind``: "value" (one sealed value), "prediction" (a sealed physics answer; the check may pass
    the measurement too) or "function" (public example ``cases`` plus randomised cases from
    ``generate(rng)``). ``hint``: one nudge or a tuple of nudges, shown from the second failure on.
    ``slips`` maps a ratio answer/expected to the mistake it reveals, e.g. ``{0.5: "one week?"}``;
    for a sealed answer it maps a slip's name to its message, and the wrong value it names is
    sealed in ``_seals.SLIPS`` (plain in ``grading/topics/<topic>.py``'s ``SLIPS``), so no ratio gives the
    answer away.
    ``compare(got, expected)`` replaces the default comparison; it returns None when equal, else a
    message. ``summary`` is what the static book shows in place of a result (derived if empty).
    ``runner(answer, args, kwargs)`` replaces the plain call of a function answer and returns what
    ``compare`` judges (e.g. the returned value with the calls made on a simulated device).
    ``refuse`` names the library routines (dotted paths) that do what the exercise asks the student
    to write: they raise while the student's function runs (``refuse.refusing``), with a message
    naming ``refuse_what``; ``no_tensors`` refuses every torch call ("without creating a tensor").
    ``allow`` names the course package's helpers (dotted ``lectorch.*`` paths) the answer may use:
    the grader marks any other ``lectorch`` name in an answer's code "needs review".
    """

    id: str
    title: str
    kind: Kind
    hint: str | tuple[str, ...]
    expected: Any = None
    cases: tuple[Case, ...] = ()
    generate: Callable[[random.Random], list[Case]] | None = None
    rtol: float = 1e-6
    atol: float = 0.0
    slips: dict[float | str, str] = field(default_factory=dict)
    compare: Callable[[Any, Any], str | None] | None = None
    summary: str = ""
    refuse: tuple[str, ...] = ()
    refuse_what: str = ""
    no_tensors: bool = False
    allow: tuple[str, ...] = ()
    runner: Callable[[Callable, tuple, dict], Any] | None = None

    @property
    def tolerance(self) -> tuple[float, float]:
        """(rtol, atol) of the exercise: its seal's for a sealed number, else ``rtol``/``atol``.
        The practice check, the seal and the grader all use these (``within``)."""
        if isinstance(self.expected, Sealed) and self.expected.numeric:
            return self.expected.rtol, self.expected.atol
        return self.rtol, self.atol

    @property
    def takes_function(self) -> bool:
        """True when the answer is a function run on cases: a function exercise, or a value or
        prediction exercise asked as a function of its setting (its public case is the page's
        numbers, sealed; the grader adds hidden settings from ``grading/topics/<topic>.py``)."""
        return self.kind == "function" or bool(self.cases or self.generate)

    @property
    def hints(self) -> tuple[str, ...]:
        return (self.hint,) if isinstance(self.hint, str) else tuple(self.hint)

    def describe(self) -> str:
        """One line on what the checker tests (for the static book), never the answer."""
        if self.summary:
            return self.summary
        if self.takes_function and isinstance(self.expected, Sealed):
            tol = _tolerance_text(self.expected)
            n = len(practice_cases(self.id))
            more = f" and {n} practice setting{'s' if n != 1 else ''}" if n else ""
            if self.kind == "prediction":
                return (f"judges your prediction at the page's setting{more} against the physics ({tol}), and "
                        "at hidden settings when graded; then compares it with your measurement")
            return f"runs your function on the page's numbers{more} ({tol}), and on hidden ones when graded"
        if self.kind == "function":
            n = len(self.cases) + (len(self.generate(random.Random(0))) if self.generate else 0)
            shown = [c.description for c in self.cases if c.description][:4]
            extra = " (randomised)" if self.generate else ""
            return (f"runs your function on {n} cases{extra}" + (": " + "; ".join(shown) if shown else ""))
        tol = _tolerance_text(self.expected)
        if self.kind == "prediction":
            return f"judges your prediction against the physics ({tol}) and compares it with your measurement"
        return f"checks your value ({tol})"


def _tolerance_text(expected: Any) -> str:
    """The accepted interval in words, as the page states it."""
    if isinstance(expected, Sealed) and expected.numeric:
        return tolerance_text(expected.rtol, expected.atol)
    return "exactly"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of ``check``. It prints as one friendly line (plus a hint after a repeat)."""

    exercise: str
    status: Status
    message: str
    summary: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        return f"{_ICONS[self.status]} [{self.exercise}] {self.message}"

    __str__ = __repr__

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        # text/plain is what a reader of a live notebook sees (and what nbval compares); the
        # custom part lets the static book show what the checker tests instead of the outcome.
        return {"text/plain": repr(self), CHECK_MIME: {"exercise": self.exercise, "summary": self.summary}}


_REGISTRY: dict[str, Exercise] = {}
_LOADED = False
_FAILURES: dict[str, int] = {}
_ORIGIN: dict[str, str] = {}
_NOT_CHAPTERS = {"seal", "refuse", "review", "sealed_cases"}


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to the registry (called by each chapter's exercise module)."""
    if exercise.kind not in _KINDS:
        raise ValueError(f"exercise {exercise.id!r}: kind must be one of {_KINDS}, got {exercise.kind!r}")
    if exercise.id in _REGISTRY and _REGISTRY[exercise.id] != exercise:
        raise ValueError(f"exercise id {exercise.id!r} is registered twice; ids must be unique")
    if exercise.kind == "function" and not (exercise.cases or exercise.generate):
        raise ValueError(f"function exercise {exercise.id!r} needs at least one Case or a generate=")
    if not exercise.hints or not all(exercise.hints):
        raise ValueError(f"exercise {exercise.id!r} needs a non-empty hint")
    _REGISTRY[exercise.id] = exercise
    caller = sys._getframe(1).f_globals.get("__name__", "")
    _ORIGIN[exercise.id] = caller.rsplit(".", 1)[-1]
    return exercise


def origin(exercise_id: str) -> str:
    """The topic (exercise module name, e.g. "napkin") that registered ``exercise_id``."""
    get_exercise(exercise_id)
    return _ORIGIN[exercise_id]


def _load_all() -> None:
    global _LOADED
    if not _LOADED:
        for module in pkgutil.iter_modules(__path__):
            if module.name not in _NOT_CHAPTERS and not module.name.startswith("_"):
                importlib.import_module(f"{__name__}.{module.name}")
        _LOADED = True


def exercises() -> dict[str, Exercise]:
    """Every registered exercise, by id.

    >>> all(isinstance(ex, Exercise) for ex in exercises().values())
    True
    """
    _load_all()
    return dict(_REGISTRY)


def refused_names(ex: Exercise) -> tuple[str, ...]:
    """What ``ex`` refuses while the student's function runs: its ``refuse`` list and, for a
    function exercise, every function of its own exercise module (the case makers and references
    there compute expected results, so calling one would hand in the checker's own answer), but
    its runner and the debug snippets it lists in ``SNIPPETS`` (the buggy code as handed out)."""
    names = list(ex.refuse)
    topic = _ORIGIN.get(ex.id)
    module = sys.modules.get(f"{__name__}.{topic}") if topic else None
    if ex.takes_function and module is not None:
        import types

        names += sorted(f"{module.__name__}.{n}" for n, v in vars(module).items()
                        if isinstance(v, types.FunctionType) and v.__module__ == module.__name__
                        and v is not ex.runner  # the checker's own runner calls the answer
                        and n not in getattr(module, "SNIPPETS", ()))  # the buggy code as given
    return tuple(names)


def runners() -> dict[str, str]:
    """``"module:name"`` of each exercise's runner (e.g. a timer run on a simulated device, whose
    calls are logged), so that a grader's sandbox runs the answer the way the checker does.

    >>> runners()["flops-honest-timer"]
    'lectorch.exercises.flops:traced_call'
    """
    return {ex_id: f"{ex.runner.__module__}:{ex.runner.__qualname__}"
            for ex_id, ex in exercises().items() if ex.runner is not None}


def refusals() -> dict[str, dict]:
    """Plain data of what each exercise refuses while the student's function runs (for a grader's
    sandbox, which can load ``refuse.py`` by path: it needs only the standard library and torch).

    >>> refusals()["optim-adamw-step"]["what"]
    'the AdamW update'
    """
    from lectorch.exercises.review import spec_of

    specs = {ex_id: spec_of(ex) for ex_id, ex in exercises().items()}
    return {ex_id: spec for ex_id, spec in specs.items() if spec is not None}


def get_exercise(exercise_id: str) -> Exercise:
    """The exercise registered under ``exercise_id``."""
    if exercise_id not in _REGISTRY:
        # ids start with their topic ("napkin-…"): import that chapter's module alone first,
        # which keeps a chapter's first check fast; fall back to loading every module
        topic = str(exercise_id).split("-", 1)[0]
        if topic.isidentifier() and topic not in _NOT_CHAPTERS and importlib.util.find_spec(f"{__name__}.{topic}"):
            importlib.import_module(f"{__name__}.{topic}")
    if exercise_id not in _REGISTRY:
        _load_all()
    if exercise_id not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(str(exercise_id), _REGISTRY, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"no exercise has id {exercise_id!r}.{hint}")
    return _REGISTRY[exercise_id]


def reset_attempts(exercise_id: str | None = None) -> None:
    """Forget earlier failures (of one exercise, or of all), so the next failure is a 'first' one."""
    if exercise_id is None:
        _FAILURES.clear()
        _PREDICTED.clear()
    else:
        _FAILURES.pop(exercise_id, None)
        _PREDICTED.pop(exercise_id, None)


def _not_done(answer: Any) -> bool:
    return answer is ... or answer is None


def check(exercise_id: str, answer: Any, *, measured: float | None = None) -> CheckResult:
    """Check ``answer`` (a value or a function, as the exercise asks) and explain the outcome.

    For a prediction exercise, pass what the next cell measured as ``measured``: the verdict is on
    the prediction against the physics; the message also says how far the measurement was.
    """
    ex = get_exercise(exercise_id)
    result = _check(ex, answer, measured)
    if result.status != "not implemented":
        # the grader's review of the same code, on the cells run so far: the two verdicts agree
        findings, note = practice_review(ex, answer)
        if findings:
            result = CheckResult(ex.id, *review_verdict(result.status, result.message, findings, hidden=False))
        elif note:
            result = CheckResult(ex.id, result.status, f"{result.message} {note}")
    if result.status in ("failed", "error"):
        _FAILURES[ex.id] = _FAILURES.get(ex.id, 0) + 1
        nudge = ex.hints[min(_FAILURES[ex.id] - 2, len(ex.hints) - 1)] if _FAILURES[ex.id] >= 2 else None
        text = result.message + (tr(" Hint: {hint}").format(hint=tr(nudge)) if nudge else tr(" Fix it and run the check again."))
        result = CheckResult(result.exercise, result.status, text)
    result = CheckResult(result.exercise, result.status, result.message, ex.describe())
    log = os.environ.get(RESULTS_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"exercise": result.exercise, "status": result.status, "message": result.message}) + "\n")
    return result


def public_cases_of(ex: Exercise) -> list[Case]:
    """What the practice check runs: the exercise's public cases and, for a value or prediction
    asked as a function, its public practice settings (``seals.json``), then its random cases."""
    cases = list(ex.cases) + (list(practice_cases(ex.id)) if ex.kind != "function" else [])
    if ex.generate is not None:
        cases += list(ex.generate(random.Random(f"{ex.id}:{_FAILURES.get(ex.id, 0)}")))
    return cases


def _check(ex: Exercise, answer: Any, measured: float | None) -> CheckResult:
    if _not_done(answer):
        return CheckResult(ex.id, "not implemented", tr("Not implemented yet: replace the `...` with your answer and run the cell again."))
    if not ex.takes_function:
        if ex.kind == "prediction":
            _PREDICTED[ex.id] = answer  # the measurement may be shown now (``after_prediction``)
        status, message = judge_value(ex, answer, ex.expected)
        if status == "passed" and ex.kind == "prediction":
            # the measurement is compared with a prediction only once it is right: a failure
            # never shows a number to copy
            message += _measured_text(answer, measured)
        return CheckResult(ex.id, status, message)
    if not callable(answer):
        status, message = judge_not_callable(ex, answer)
        return CheckResult(ex.id, status, message)
    first: list = []
    cases = public_cases_of(ex)

    def outcome_of(i: int) -> Outcome:
        outcome = practice_outcome(run_case(answer, cases[i - 1], ex))
        if i == 1 and ex.kind == "prediction" and outcome.kind == "returned" and not _not_done(outcome.value):
            first.append(outcome.value)
            _PREDICTED[ex.id] = outcome.value  # the measurement may be shown now (``after_prediction``)
        return outcome

    status, message = judge_cases(ex, [(c.expected, c.raises.__name__ if c.raises else None, c.description)
                                       for c in cases], outcome_of)
    if status == "passed" and ex.kind == "prediction" and first:
        message += _measured_text(first[0], measured)
    return CheckResult(ex.id, status, message)


# ------------------------------------------------------------------------------ the verdict engine


@dataclass(frozen=True)
class Outcome:
    """What one call of the student's function did, as either side saw it: ``kind`` is
    "returned" (``value``), "raised" (``names``: the exception's class and its bases, ``message``),
    "not implemented", "timeout" (``message``: the limit in seconds), "input error" (the grader
    could not rebuild the case's input), "unreadable" (``message``: what the grader could not read
    back) or "no result"."""

    kind: str
    value: Any = None
    names: tuple[str, ...] = ()
    message: str = ""


def practice_outcome(result: tuple[str, Any]) -> Outcome:
    """The :class:`Outcome` of ``run_case``'s result in the student's kernel."""
    kind, value = result
    if kind == "raised":
        return Outcome("raised", names=tuple(c.__name__ for c in type(value).__mro__), message=str(value))
    if kind == "not implemented":
        return Outcome("not implemented")
    return Outcome("returned", value)


def judge_value(ex: Exercise, got: Any, expected: Any) -> tuple[str, str]:
    """(status, message) of a value or prediction exercise's one answer (its seal, or the plain
    value in the grader)."""
    if _not_done(got):
        return "not implemented", tr("Not implemented yet: replace the `...` with your answer and run the cell again.")
    problem = _compare_safely(ex, got, expected, page=True)
    if problem is None:
        what = tr("your prediction agrees with the physics") if ex.kind == "prediction" else tr(ex.title)
        return "passed", tr("Correct: {what}.").format(what=what)
    return "failed", problem


def judge_unreadable(what: str) -> tuple[str, str]:
    """An answer (the grader read it back from the kernel) that holds something it cannot read."""
    return "failed", tr("your answer contains a {what}, which the grader cannot read back (use numbers, tuples, lists "
           "or tensors).").format(what=what)


def judge_not_callable(ex: Exercise, got: Any) -> tuple[str, str]:
    asked = tr(" of the setting (as the stub defines it)") if ex.kind != "function" else ""
    return "failed", tr("Expected a function{asked}, got {got}.").format(asked=asked, got=short(got))


def judge_cases(ex: Exercise, cases: list[tuple[Any, str | None, str]],
                outcome_of: Callable[[int], Outcome]) -> tuple[str, str]:
    """(status, message) of a function answer: ``cases`` are ``(expected, raises, description)``
    (``raises``: the name of the exception the case expects, or None); ``outcome_of(i)``
    gives what the answer did on case ``i`` (from 1), run lazily: the loop stops at the first
    failure. For a value or prediction exercise asked as a function, case 1 is the page's."""
    n = len(cases)
    for i, (expected, raises, description) in enumerate(cases, start=1):
        where = (tr("Case {i} of {n} ({description})").format(i=i, n=n, description=tr(description)) if description
                 else tr("Case {i} of {n}").format(i=i, n=n))
        outcome = outcome_of(i)
        if outcome.kind == "not implemented":
            return "not implemented", tr("Not implemented yet: your function still raises NotImplementedError.")
        if outcome.kind == "input error":
            return "error", tr("{where}: the input could not be rebuilt for your function (did you replace part of lectorch?)").format(where=where)
        if outcome.kind == "timeout":
            return "failed", tr("{where}: your function took longer than {message} s.").format(where=where, message=outcome.message)
        if outcome.kind == "raised":
            if "NotImplementedError" in outcome.names:
                return "not implemented", tr("Not implemented yet: your function still raises NotImplementedError.")
            if "RefusedShortcut" in outcome.names:
                return "failed", tr("{where}: {message}").format(where=where, message=outcome.message)
            if raises is not None and raises in outcome.names:
                continue
            kind = outcome.names[0] if outcome.names else tr("an error")
            # the sentence's own full stop ends it: torch's messages often end with one of their own
            message = outcome.message[:200].rstrip().rstrip(".。")
            return "error", tr("{where}: your function raised {kind}: {message}.").format(where=where, kind=kind, message=message)
        if outcome.kind == "unreadable":
            status, message = judge_unreadable(outcome.message)
            return status, f"{where}: {message}"
        if outcome.kind != "returned":
            return "error", tr("{where}: no result").format(where=where)
        got = outcome.value
        if raises is not None:
            return "failed", tr("{where}: expected an error ({raises}) for this input, but your function returned {got}.").format(where=where, raises=raises, got=short(got))
        if ex.runner is not None and isinstance(got, dict) and "returned" in got and _not_done(got["returned"]):
            return "not implemented", tr("Not implemented yet: your function returns {returned!r}.").format(returned=got['returned'])
        if got is ... or (got is None and expected is not None):
            return "not implemented", tr("Not implemented yet: your function returns {got!r}.").format(got=got)
        problem = _compare_safely(ex, got, expected, page=(i == 1 and ex.kind != "function"))
        if problem is not None:
            return "failed", tr("{where}: {problem}").format(where=where, problem=problem)
    return "passed", tr("Correct: {title} ({n} case{s} pass).").format(title=tr(ex.title), n=n, s="s" if n != 1 else "")


def _compare_safely(ex: Exercise, got: Any, expected: Any, *, page: bool) -> str | None:
    try:
        return compare(ex, got, expected, page=page)
    except Exception as err:  # noqa: BLE001 - a strange answer must not stop the verdict
        return tr("your answer could not be compared ({type}): is it of the asked type?").format(type=type(err).__name__)



def materialize(value: Any) -> Any:
    """``value`` with every ``GeneratorSeed`` replaced by a freshly seeded ``torch.Generator``."""
    if isinstance(value, GeneratorSeed):
        return torch.Generator().manual_seed(value.seed)
    if isinstance(value, tuple):
        return tuple(materialize(v) for v in value)
    if isinstance(value, list):
        return [materialize(v) for v in value]
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    return value


def run_case(answer: Callable, case: Case, exercise: Exercise | None = None) -> tuple[str, Any]:
    """Call ``answer`` on ``case``: ("returned", value), ("raised", error) or ("not implemented", msg).

    Arguments are deep-copied (tensors cloned) so an answer that mutates its inputs cannot change
    the case for the next call. With ``exercise``, the routines it refuses raise during the call.
    """
    import copy

    args, kwargs = materialize(copy.deepcopy(case.args)), materialize(copy.deepcopy(case.kwargs))
    guard = refusing(refused_names(exercise), exercise.refuse_what or exercise.title,
                     no_tensors=exercise.no_tensors) if exercise is not None else contextlib.nullcontext()
    try:
        with guard:
            if exercise is not None and exercise.runner is not None:
                return "returned", exercise.runner(answer, args, kwargs)
            return "returned", answer(*args, **kwargs)
    except NotImplementedError:
        return "not implemented", tr("Not implemented yet: your function still raises NotImplementedError.")
    except Exception as err:  # the student's code failed: report it, never crash the notebook
        return "raised", err


_PREDICTED: dict[str, Any] = {}


def predicted(exercise_id: str) -> bool:
    """True once a prediction of ``exercise_id`` was checked in this kernel."""
    return exercise_id in _PREDICTED


def prediction_of(exercise_id: str) -> Any:
    """The prediction last checked for ``exercise_id``: for a prediction asked as a function, what
    it returned at the page's setting; ``...`` before any check (``versus_prediction`` then divides
    by nothing).

    >>> prediction_of("no-such-check-yet")
    Ellipsis
    """
    return _PREDICTED.get(exercise_id, ...)


def after_prediction(exercise_id: str) -> bool:
    """True once a prediction of ``exercise_id`` was checked in this kernel (by ``check``). The
    measuring cell runs its measurement only then, so that nothing measured exists before the
    prediction; before it, this prints why the measurement waits and returns False.

    >>> reset_attempts("flops-time-ratio")
    >>> if after_prediction("flops-time-ratio"):
    ...     print("measured: 7.9")
    📝 The measurement waits for your prediction: run the check of your prediction (lectorch.check("flops-time-ratio", ...)) first, then this cell again.
    >>> _ = check("flops-time-ratio", lambda a, b: 8)  # a prediction as a function of the matmuls
    >>> if after_prediction("flops-time-ratio"):
    ...     print("measured: 7.9")
    measured: 7.9
    """
    get_exercise(exercise_id)
    if predicted(exercise_id):
        return True
    print(tr("📝 The measurement waits for your prediction: run the check of your prediction "
           "(lectorch.check(\"{exercise_id}\", ...)) first, then this cell again.").format(exercise_id=exercise_id))
    return False


def versus_prediction(measured: Any, prediction: Any, *, comparable: bool = True) -> str:
    """The line under a held-back measurement: the measurement as a multiple of the prediction
    (no division when there is no number to divide by, e.g. the student edition's ``...``).
    ``comparable=False``: this machine does not run what the prediction is about (a GPU's copy or
    matmuls, measured on a CPU), so the ratio says nothing about the prediction.

    >>> versus_prediction(7.9, 8)
    'measured / your prediction: 0.99'
    >>> versus_prediction(7.9, ...)
    'measured / your prediction: (no prediction yet)'
    >>> versus_prediction(3.4, 1, comparable=False)
    'measured / your prediction: 3.4 (this machine is not the GPU the prediction is about: the ratio does not judge your prediction, the check does)'
    """
    m, p = _as_real(measured), _as_real(prediction)
    if m is None or not p:
        return tr("measured / your prediction: (no prediction yet)")
    if not comparable:
        return (tr("measured / your prediction: {ratio:.2g} (this machine is not the GPU the prediction is about: "
               "the ratio does not judge your prediction, the check does)").format(ratio=m / p))
    return tr("measured / your prediction: {ratio:.2g}").format(ratio=m / p)


def against_prediction(exercise_id: str, measured: Any, *, comparable: bool = True) -> str:
    """:func:`versus_prediction` of ``measured`` and the prediction last checked for ``exercise_id``:
    the last line of a predict-then-measure cell.

    >>> reset_attempts("flops-time-ratio")
    >>> against_prediction("flops-time-ratio", 7.9)
    'measured / your prediction: (no prediction yet)'
    """
    return versus_prediction(measured, prediction_of(exercise_id), comparable=comparable)


def _measured_text(prediction: Any, measured: float | None) -> str:
    # nbval blanks this parenthesis (tests/sanitize.cfg): it depends on the machine
    m, p = _as_real(measured), _as_real(prediction)
    if m is None:
        return ""
    ratio = tr(", {ratio:.2g}× your prediction").format(ratio=m / p) if p else ""
    return tr(" (measured on this machine: {m:.3g}{ratio})").format(m=m, ratio=ratio)


def compare(ex: Exercise, got: Any, expected: Any, *, page: bool = False) -> str | None:
    """None if ``got`` matches ``expected`` (plain or sealed), else a message that does not
    reveal ``expected``. The grader calls it with the plain expected values of its bundle; both
    get the same message. ``page``: ``expected`` is the answer at the page's numbers, where the
    exercise's named slips (sealed wrong values) apply."""
    if isinstance(expected, Sealed):  # the exercise's own seal (a subclass may accept several spellings)
        return _compare_number(ex, got, expected, page)
    if ex.compare is not None:
        return ex.compare(got, expected)
    if isinstance(expected, SealedNumber) or (isinstance(expected, numbers.Real) and not isinstance(expected, bool)):
        return _compare_number(ex, got, expected, page)
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return tr("expected a tensor, got {type}.").format(type=type(got).__name__)
        if got.shape != expected.shape:
            return tr("your tensor has shape {shape}, which is not the expected shape.").format(shape=tuple(got.shape))
        if got.dtype != expected.dtype:
            return tr("your tensor has dtype {dtype}, which is not the expected dtype.").format(dtype=got.dtype)
        if not torch.allclose(got.detach().cpu(), expected.cpu(), rtol=ex.rtol, atol=ex.atol, equal_nan=True):
            return tr("your tensor has the right shape and dtype but different values.")
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return tr("expected a sequence of {n_expected} items, got {got}.").format(n_expected=len(expected), got=short(got))
        for j, (g, e) in enumerate(zip(got, expected)):
            problem = compare(ex, g, e)
            if problem is not None:
                return tr("item {j}: {problem}").format(j=j, problem=problem)
        return None
    if got == expected:
        return None
    slip = _named_slip(ex, got) if page else None
    return tr("{got} is not right: {slip}").format(got=short(got), slip=slip) if slip else tr("{got} is not the expected answer.").format(got=short(got))


def _compare_number(ex: Exercise, got: Any, expected: Any, page: bool) -> str | None:
    """An answer against a plain expected number (the grader) or a seal (the practice check): the
    same interval (the seal's edges are the interval's), the same words."""
    if isinstance(expected, Sealed):
        token, bound = expected.token, expected.bound(ex.id)
        accepted = lambda value: expected.matches(ex.id, value)  # noqa: E731
    elif isinstance(expected, SealedNumber):
        token, bound, accepted = expected.token, expected, expected.matches
    else:
        token, bound = None, expected
    sealed = token is not None
    exact = token.startswith("x") if sealed else (
        isinstance(expected, numbers.Integral) and not any(ex.tolerance))
    rtol, atol = (float(token.split("|")[1]), float(token.split("|")[2])) if sealed else ex.tolerance
    x = _as_real(got)
    if exact and x is not None and x.is_integer() and not isinstance(got, (bool, numbers.Integral)):
        got = int(x)  # an int checked exactly: 19.0 is the int 19
    if not sealed:
        def accepted(value: Any) -> bool:
            v = _as_real(value)
            if exact:
                return v is not None and v == expected
            return v is not None and within(v, float(expected), rtol, atol)

    if accepted(got):
        return None
    slip = _named_slip(ex, got if x is None else x) if page else None
    if slip:
        return tr("{got} is not right: {slip}").format(got=short(got), slip=slip)
    if x is None:
        return tr("{got} is not the expected answer.").format(got=short(got)) if exact else tr("expected a number (an int or a float), got {got}.").format(got=short(got))
    if math.isnan(x):
        return tr("your answer is NaN (not a number): look for 0/0 or inf - inf.")
    if not math.isfinite(x):
        return tr("your answer is {x}: look for an overflow, 0/0 or inf - inf.").format(x=x)
    for slip_ratio, ratio_slip in ex.slips.items():
        if not isinstance(slip_ratio, str) and slip_ratio and accepted(x / slip_ratio):
            return tr("{got} is not right: {ratio_slip}").format(got=short(got), ratio_slip=tr(ratio_slip))
    if exact:
        return tr("{got} is not the expected answer.").format(got=short(got))
    if x == 0:
        return tr("0 is not the answer: is a factor missing, or an integer division?")
    shown = got if isinstance(got, numbers.Real) and not isinstance(got, bool) else x
    return tr("{how_far}.").format(how_far=how_far(shown, bound, rtol, atol))


def slip_id(exercise_id: str, name: str) -> str:
    """The salt of the seal of slip ``name`` of ``exercise_id``."""
    return f"{exercise_id}#slip:{name}"


def slip_tolerance(ex: Exercise) -> float:
    """A slip fires only near the wrong answer it names: within 1 % (or the exercise's own, if tighter)."""
    rtol, _ = ex.tolerance
    return min(rtol, 0.01) if rtol else 0.0


def _named_slip(ex: Exercise, x: Any) -> str | None:
    """The message of the named slip (``slips={"name": message}``) whose sealed wrong value ``x`` is."""
    names = [k for k in ex.slips if isinstance(k, str)]
    stored = stored_data()["slips"].get(ex.id, {})
    for name in names:
        token = stored.get(name)
        if token and token_matches(slip_id(ex.id, name), token, x):
            return tr(ex.slips[name])
    return None
