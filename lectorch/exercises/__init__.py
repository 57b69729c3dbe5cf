"""Exercise checkers: a student's value or function is checked and the feedback teaches.

Four rules hold for every exercise:

- Feedback says *what* was wrong (and on which case), never the expected value or the algorithm.
  The first failure gets only that; a repeated failure of the same exercise adds a nudge
  (``hint``), and later failures the next nudges.
- An unfinished exercise (``...``, ``None`` or ``raise NotImplementedError``) is "not implemented".
- Expected values of value and prediction exercises are sealed (``Sealed``): the package holds
  a salted hash of tolerance bins, not the number. The plain values, and the hidden cases of
  function exercises, live outside the package in the instructor's ``grading/`` modules.
- A student's crash never escapes: it is reported as an "error".

>>> ex = register(Exercise(id="doc-answer", title="the answer", kind="value",
...                        expected=Sealed.of("doc-answer", 42, rtol=1e-9), hint="think"))
>>> check("doc-answer", ...).status
'not implemented'
>>> check("doc-answer", 42.0).passed
True
>>> check("doc-answer", 41).status
'failed'
"""

from __future__ import annotations

import contextlib
import hashlib
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

from lectorch.exercises.refuse import RefusedShortcut, refusing

#: When this environment variable names a file, every check appends its result there as a JSON
#: line. It is a convenience log for the student only: the grader never trusts it.
RESULTS_ENV = "LECTORCH_RESULTS"

#: The mime type of a check result's machine-readable part; the book renders it as the summary
#: of what the checker tests (tools/sphinx_lectorch.py), so the static page never says "Correct".
CHECK_MIME = "application/vnd.lectorch.check+json"

Status = Literal["passed", "failed", "not implemented", "error"]
Kind = Literal["value", "prediction", "function"]
_ICONS = {"passed": "✅", "failed": "❌", "not implemented": "📝", "error": "💥"}
_KINDS = ("value", "prediction", "function")


# ----------------------------------------------------------------------------------- sealing


def _canonical(value: Any) -> Any:
    """A JSON-able canonical form of an exact answer (ints, strings, bools and containers of them)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(json.dumps(_canonical(v)) for v in value)}
    if isinstance(value, (tuple, list)):
        return [_canonical(v) for v in value]
    if isinstance(value, torch.Size):
        return [int(v) for v in value]
    if isinstance(value, torch.dtype):
        return str(value)
    raise TypeError(f"cannot seal a {type(value).__name__} exactly; give a number with rtol/atol, "
                    "or ints, strings, bools and tuples/sets of them")


def _digest(salt: str, text: str) -> str:
    return hashlib.sha256(f"lectorch|{salt}|{text}".encode()).hexdigest()[:24]


#: bins per tolerance: the practice check agrees with the exact interval except within
#: 1/BINS_PER_TOLERANCE of the tolerance from an edge of it
BINS_PER_TOLERANCE = 8


def within(x: float, expected: float, rtol: float, atol: float) -> bool:
    """The accepted interval of every exercise: ``|x - expected| <= max(rtol·|expected|, atol)``
    (``rtol=0.25`` accepts 6 to 10 for 8; the page states it as "within ±25 %").

    >>> within(10.0, 8, 0.25, 0), within(10.1, 8, 0.25, 0)
    (True, False)
    """
    return abs(x - expected) <= max(rtol * abs(expected), atol)


def _log_width(rtol: float) -> float:
    # at most 0.4 % wide, so a value 1 % outside the interval is refused by the practice check too
    return min(math.log1p(rtol) / BINS_PER_TOLERANCE, math.log(1.004))


def _bin_of(value: float, rtol: float, atol: float) -> str:
    """The fine bin of ``value`` (log-spaced for a relative tolerance, linear for an absolute one)."""
    if rtol > 0 and value != 0:
        sign = "+" if value > 0 else "-"
        return f"r{sign}{math.floor(math.log(abs(value)) / _log_width(rtol))}"
    if atol > 0:
        return f"a{math.floor(value / (atol / BINS_PER_TOLERANCE))}"
    return f"x{float(value)!r}"


def _accepted_bins(value: float, rtol: float, atol: float) -> list[str]:
    """Every fine bin that meets the accepted interval of ``value``."""
    if rtol > 0 and value != 0:
        lo, hi = abs(value) * max(1 - rtol, 1e-300), abs(value) * (1 + rtol)
        sign = "+" if value > 0 else "-"
        width = _log_width(rtol)
        first, last = math.floor(math.log(lo) / width), math.floor(math.log(hi) / width)
        if last - first > 400:
            raise ValueError(f"rtol={rtol} is too wide to seal; use rtol < 0.99")
        return [f"r{sign}{b}" for b in range(first, last + 1)]
    if atol > 0:
        width = atol / BINS_PER_TOLERANCE
        return [f"a{b}" for b in range(math.floor((value - atol) / width), math.floor((value + atol) / width) + 1)]
    return [f"x{float(value)!r}"]


#: "how far off" resolution: quarters of an octave (factors of 2**0.25 ≈ 1.19)
STEPS_PER_OCTAVE = 4


def _octave(value: float) -> str:
    if value == 0:
        return "0"
    return ("+" if value > 0 else "-") + str(math.floor(STEPS_PER_OCTAVE * math.log2(abs(value))))


@dataclass(frozen=True)
class Sealed:
    """An expected answer that the package can check but does not reveal.

    ``token`` holds the tolerances in clear, salted hashes of the fine bins that meet the accepted
    interval (``within``), and a salted hash of the answer's octave (its power of two, for "how far
    off" feedback). Make one with ``of`` (or ``python -m lectorch.exercises.seal``).

    >>> s = Sealed.of("doc-seal", 12, rtol=1e-6)
    >>> s.matches("doc-seal", 12.000001), s.matches("doc-seal", 9)
    (True, False)
    >>> "12.0" in s.token  # tolerances and salted hashes only
    False
    """

    token: str

    @staticmethod
    def of(exercise_id: str, value: Any, *, rtol: float = 0.0, atol: float = 0.0) -> "Sealed":
        if not (rtol >= 0 and atol >= 0) or math.isinf(rtol) or math.isinf(atol):
            raise ValueError(f"rtol and atol must be finite and >= 0, got rtol={rtol}, atol={atol}")
        is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if is_real and (rtol or atol or not isinstance(value, numbers.Integral)):
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"cannot seal a non-finite value ({value}) for {exercise_id!r}")
            bins = sorted(_digest(exercise_id, b)[:12] for b in _accepted_bins(value, rtol, atol))
            return Sealed(f"n|{rtol!r}|{atol!r}|{','.join(bins)}"
                          f"|{_digest(exercise_id + '#octave', _octave(value))}")
        text = json.dumps(_canonical(value), sort_keys=True)
        return Sealed(f"x|0|0|{_digest(exercise_id, text)}|")

    @staticmethod
    def stored(exercise_id: str) -> "Sealed":
        """The seal of ``exercise_id`` kept in ``lectorch/exercises/_seals.py`` (written by
        the instructor's ``python -m grading.seals``)."""
        from lectorch.exercises._seals import SEALS

        return Sealed(SEALS[exercise_id])

    @property
    def numeric(self) -> bool:
        return self.token.startswith("n|")

    @property
    def rtol(self) -> float:
        return float(self.token.split("|")[1])

    @property
    def atol(self) -> float:
        return float(self.token.split("|")[2])

    def matches(self, exercise_id: str, answer: Any) -> bool:
        """True when ``answer`` is within the sealed tolerance of the expected value (exactly so,
        except within one fine bin of an edge of the interval)."""
        _, rtol, atol, digests, _ = self.token.split("|")
        if not self.numeric:
            x = _as_real(answer)  # an int checked exactly: 19.0 is the int 19 (no sealed answer is a float)
            if x is not None and not isinstance(answer, numbers.Integral) and x.is_integer():
                answer = int(x)
            try:
                text = json.dumps(_canonical(answer), sort_keys=True)
            except TypeError:
                return False
            return _digest(exercise_id, text) == digests
        x = _as_real(answer)
        if x is None or not math.isfinite(x):
            return False
        return _digest(exercise_id, _bin_of(x, float(rtol), float(atol)))[:12] in digests.split(",")

    def octaves_off(self, exercise_id: str, answer: Any, *, span: int = 64 * STEPS_PER_OCTAVE) -> int | None:
        """``d`` such that ``answer / expected`` lies between ``2**((d-1)/4)`` and ``2**((d+1)/4)``
        (quarter octaves; None when the sign differs or it is further than ``span`` quarters)."""
        x = _as_real(answer)
        if not self.numeric or x is None or not math.isfinite(x) or x == 0:
            return None
        stored = self.token.split("|")[4]
        sign, own = ("+" if x > 0 else "-"), math.floor(STEPS_PER_OCTAVE * math.log2(abs(x)))
        for d in sorted(range(-span, span + 1), key=abs):
            if _digest(exercise_id + "#octave", f"{sign}{own - d}") == stored:
                return d
        return None


def _as_real(value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


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
    sealed in ``_seals.SLIPS`` (plain in ``grading/<topic>.py``'s ``SLIPS``), so no ratio gives the
    answer away.
    ``compare(got, expected)`` replaces the default comparison; it returns None when equal, else a
    message. ``summary`` is what the static book shows in place of a result (derived if empty).
    ``runner(answer, args, kwargs)`` replaces the plain call of a function answer and returns what
    ``compare`` judges (e.g. the returned value with the calls made on a simulated device).
    ``refuse`` names the library routines (dotted paths) that do what the exercise asks the student
    to write: they raise while the student's function runs (``refuse.refusing``), with a message
    naming ``refuse_what``; ``no_tensors`` refuses every torch call ("without creating a tensor").
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
        numbers, sealed; the grader adds hidden settings from ``grading/<topic>.py``)."""
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
            if self.kind == "prediction":
                return (f"judges your prediction at the page's setting against the physics ({tol}), and "
                        "at hidden settings when graded; then compares it with your measurement")
            return f"runs your function on the page's numbers ({tol}), and on hidden ones when graded"
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
        if expected.rtol:
            if expected.rtol >= 0.001:
                return f"within ±{expected.rtol * 100:.3g} % of the answer"
            return "exactly, up to rounding" if expected.rtol <= 1e-6 else f"within ±{expected.rtol:.1g} (relative)"
        if expected.atol:
            return f"within ±{expected.atol:g}"
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
_NOT_CHAPTERS = {"seal", "refuse", "sealed_cases"}


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
    return {ex_id: {"names": list(refused_names(ex)), "what": ex.refuse_what or ex.title,
                    "no_tensors": ex.no_tensors}
            for ex_id, ex in exercises().items() if refused_names(ex) or ex.no_tensors}


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
    if result.status in ("failed", "error"):
        _FAILURES[ex.id] = _FAILURES.get(ex.id, 0) + 1
        nudge = ex.hints[min(_FAILURES[ex.id] - 2, len(ex.hints) - 1)] if _FAILURES[ex.id] >= 2 else None
        text = result.message + (f" Hint: {nudge}" if nudge else " Fix it and run the check again.")
        result = CheckResult(result.exercise, result.status, text)
    result = CheckResult(result.exercise, result.status, result.message, ex.describe())
    log = os.environ.get(RESULTS_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"exercise": result.exercise, "status": result.status, "message": result.message}) + "\n")
    return result


def _check(ex: Exercise, answer: Any, measured: float | None) -> CheckResult:
    if _not_done(answer):
        return CheckResult(ex.id, "not implemented", "Not implemented yet: replace the `...` with your answer and run the cell again.")
    if not ex.takes_function:
        if ex.kind == "prediction":
            _PREDICTED[ex.id] = answer  # the measurement may be shown now (``after_prediction``)
        problem = compare(ex, answer, ex.expected)
        if problem is None:
            # the measurement is compared with a prediction only once it is right: a failure
            # never shows a number to copy
            tail = _measured_text(answer, measured) if ex.kind == "prediction" else ""
            what = "your prediction agrees with the physics" if ex.kind == "prediction" else ex.title
            return CheckResult(ex.id, "passed", f"Correct: {what}.{tail}")
        return CheckResult(ex.id, "failed", problem)
    if not callable(answer):
        asked = " of the setting (as the stub defines it)" if ex.kind != "function" else ""
        return CheckResult(ex.id, "failed", f"Expected a function{asked}, got {type(answer).__name__}.")
    cases = list(ex.cases)
    if ex.generate is not None:
        cases += list(ex.generate(random.Random(f"{ex.id}:{_FAILURES.get(ex.id, 0)}")))
    first = None  # what the answer returned on the first case (a prediction at the page's setting)
    for i, case in enumerate(cases, start=1):
        where = f"Case {i} of {len(cases)}" + (f" ({case.description})" if case.description else "")
        outcome = run_case(answer, case, ex)
        if i == 1 and outcome[0] == "returned" and ex.kind == "prediction" and not _not_done(outcome[1]):
            first = outcome[1]
            _PREDICTED[ex.id] = first  # the measurement may be shown now (``after_prediction``)
        if outcome[0] == "not implemented":
            return CheckResult(ex.id, "not implemented", outcome[1])
        if outcome[0] == "raised":
            err = outcome[1]
            if isinstance(err, RefusedShortcut):
                return CheckResult(ex.id, "failed", f"{where}: {err}")
            if case.raises is not None and isinstance(err, case.raises):
                continue
            return CheckResult(ex.id, "error", f"{where}: your function raised {type(err).__name__}: {err}.")
        got = outcome[1]
        if case.raises is not None:
            return CheckResult(ex.id, "failed", f"{where}: expected an error ({case.raises.__name__}) for this input, but your function returned {_short(got)}.")
        if ex.runner is not None and isinstance(got, dict) and "returned" in got:
            if got["returned"] is ... or got["returned"] is None:
                return CheckResult(ex.id, "not implemented", f"Not implemented yet: your function returns {got['returned']!r}.")
        if got is ... or (got is None and case.expected is not None):
            return CheckResult(ex.id, "not implemented", f"Not implemented yet: your function returns {got!r}.")
        problem = compare(ex, got, case.expected)
        if problem is not None:
            return CheckResult(ex.id, "failed", f"{where}: {problem}")
    n = len(cases)
    if ex.kind == "prediction":
        return CheckResult(ex.id, "passed", "Correct: your prediction agrees with the physics at the page's "
                           f"setting.{_measured_text(first, measured)}")
    if ex.kind == "value":  # a value asked as a function of its setting: the page's numbers only
        return CheckResult(ex.id, "passed", f"Correct: {ex.title}, at the page's numbers.")
    return CheckResult(ex.id, "passed", f"Correct: {ex.title} ({n} case{'s' if n != 1 else ''} pass).")


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
        return "not implemented", "Not implemented yet: your function still raises NotImplementedError."
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


@contextlib.contextmanager
def after_prediction(exercise_id: str):
    """Hold back what the block prints (a measurement) until a prediction of ``exercise_id`` is
    recorded by ``check``; then print it, with the measurement's ratio to the prediction when the
    block assigns ``reveal.measured``.

    >>> reset_attempts("flops-time-ratio")
    >>> with after_prediction("flops-time-ratio"):
    ...     print("measured: 7.9")
    📝 The measurement is held back until you record a prediction: run the check of your prediction (lectorch.check("flops-time-ratio", ...)) first, then this cell again.
    >>> _ = check("flops-time-ratio", lambda a, b: 8)  # a prediction as a function of the matmuls
    >>> with after_prediction("flops-time-ratio"):
    ...     print("measured: 7.9")
    measured: 7.9
    """
    import io

    get_exercise(exercise_id)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        yield
    if predicted(exercise_id):
        print(buffer.getvalue(), end="")
    else:
        print("📝 The measurement is held back until you record a prediction: run the check of your "
              f'prediction (lectorch.check("{exercise_id}", ...)) first, then this cell again.')


def versus_prediction(measured: Any, prediction: Any) -> str:
    """The line under a held-back measurement: the measurement as a multiple of the prediction
    (no division when there is no number to divide by, e.g. the student edition's ``...``).

    >>> versus_prediction(7.9, 8)
    'measured / your prediction: 0.99'
    >>> versus_prediction(7.9, ...)
    'measured / your prediction: (no prediction yet)'
    """
    m, p = _as_real(measured), _as_real(prediction)
    if m is None or not p:
        return "measured / your prediction: (no prediction yet)"
    return f"measured / your prediction: {m / p:.2g}"


def _measured_text(prediction: Any, measured: float | None) -> str:
    # nbval blanks this parenthesis (tests/sanitize.cfg): it depends on the machine
    m, p = _as_real(measured), _as_real(prediction)
    if m is None:
        return ""
    ratio = f", {m / p:.2g}× your prediction" if p else ""
    return f" (measured on this machine: {m:.3g}{ratio})"


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compare(ex: Exercise, got: Any, expected: Any) -> str | None:
    """None if ``got`` matches ``expected`` (plain or ``Sealed``), else a message that does not
    reveal ``expected``. The grader calls it with the plain expected values of its bundle."""
    if isinstance(expected, Sealed):
        return _compare_sealed(ex, got, expected)
    if ex.compare is not None:
        return ex.compare(got, expected)
    from lectorch.exercises import sealed_cases

    if sealed_cases.is_sealed(expected):  # a public case's result, known by its seal only
        return _compare_sealed_case(ex, got, expected)
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
            problem = compare(ex, g, e)
            if problem is not None:
                return f"item {j}: {problem}"
        return None
    if isinstance(expected, numbers.Real) and not isinstance(expected, bool):
        x = _as_real(got)
        if x is None:
            return f"expected a number, got {_short(got)}."
        if math.isnan(x):
            return "your answer is NaN (not a number): look for 0/0 or inf - inf."
        rtol, atol = ex.tolerance
        if within(x, float(expected), rtol, atol):
            return None
        # a named slip's wrong value is sealed for the page's numbers only: on another case it
        # would name a mistake the student did not make
        slip = _named_slip(ex, x) if not ex.takes_function else None
        if slip:
            return f"{_short(got)} is not right: {slip}"
        if expected != 0 and x != 0:
            ratio = x / float(expected)
            for slip_ratio, slip in ex.slips.items():
                if not isinstance(slip_ratio, str) and math.isclose(ratio, slip_ratio, rel_tol=1e-3):
                    return f"{_short(got)} is not right: {slip}"
        return f"{_short(got)} is {_factor_text(x / float(expected) if expected else math.inf)}."
    if got == expected:
        return None
    return f"{_short(got)} is not the expected answer."


def _compare_sealed_case(ex: Exercise, got: Any, sealed: Any) -> str | None:
    """A public case's sealed number: agreement, a ratio slip, else "not right" (no factor: the
    seal of a case's result has no octave)."""
    if sealed.matches(got):
        return None
    x = _as_real(got)
    if x is None:
        return f"expected a number, got {_short(got)}."
    if not math.isfinite(x):
        return f"your answer is {x}: look for an overflow, 0/0 or inf - inf."
    for slip_ratio, slip in ex.slips.items():
        if not isinstance(slip_ratio, str) and slip_ratio and sealed.matches(x / slip_ratio):
            return f"{_short(got)} is not right: {slip}"
    d = sealed.octaves_off(x)
    if d:
        return f"{_short(got)} is {_octave_text(d)}: recheck each factor and the units."
    return f"{_short(got)} is not the expected result ({_case_tolerance_text(ex)})."


def _case_tolerance_text(ex: Exercise) -> str:
    rtol, atol = ex.rtol, ex.atol
    if not rtol and not atol:
        return "exactly"
    parts = ([f"±{rtol * 100:.3g} %" if rtol >= 1e-3 else f"a relative ±{rtol:.1g}"] if rtol else []) + (
        [f"±{atol:g}"] if atol else [])
    return "allowed: " + " plus ".join(parts)


def _compare_sealed(ex: Exercise, got: Any, sealed: Sealed) -> str | None:
    if sealed.matches(ex.id, got):
        return None
    if not sealed.numeric:  # an exact answer (an int, letters, a tuple): a named slip, else "not it"
        x = _as_real(got)
        slip = _named_slip(ex, x) if x is not None and math.isfinite(x) else None
        return f"{_short(got)} is not right: {slip}" if slip else f"{_short(got)} is not the expected answer."
    x = _as_real(got)
    if x is None:
        return f"expected a number, got {_short(got)}."
    if not math.isfinite(x):
        return f"your answer is {x}: look for an overflow, 0/0 or inf - inf."
    slip = _named_slip(ex, x)
    if slip:
        return f"{_short(got)} is not right: {slip}"
    for slip_ratio, slip in ex.slips.items():
        if not isinstance(slip_ratio, str) and slip_ratio and sealed.matches(ex.id, x / slip_ratio):
            return f"{_short(got)} is not right: {slip}"
    if x == 0:
        return "0 is not the answer: is a factor missing, or an integer division?"
    d = sealed.octaves_off(ex.id, x)
    if d is None:
        return f"{_short(got)} has the wrong sign, or is off by a factor of more than 10^19: recheck the units and signs."
    if d == 0:
        return f"{_short(got)} is close (within a factor of 1.2) but not within the tolerance ({_tolerance_text(sealed)})."
    return f"{_short(got)} is {_octave_text(d)}: recheck each factor and the units."


def slip_id(exercise_id: str, name: str) -> str:
    """The salt of the seal of slip ``name`` of ``exercise_id``."""
    return f"{exercise_id}#slip:{name}"


def slip_tolerance(ex: Exercise) -> float:
    """A slip fires only near the wrong answer it names: within 1 % (or the exercise's own, if tighter)."""
    rtol, _ = ex.tolerance
    return min(rtol, 0.01) if rtol else 0.0


def _named_slip(ex: Exercise, x: float) -> str | None:
    """The message of the named slip (``slips={"name": message}``) whose sealed wrong value ``x`` is."""
    names = [k for k in ex.slips if isinstance(k, str)]
    if not names:
        return None
    from lectorch.exercises._seals import SLIPS

    for name in names:
        token = SLIPS.get(ex.id, {}).get(name)
        if token and Sealed(token).matches(slip_id(ex.id, name), x):
            return ex.slips[name]
    return None


def _factor_text(ratio: float) -> str:
    """How far off a ratio answer/expected is, in words (the real factor, rounded)."""
    if ratio <= 0 or not math.isfinite(ratio):
        return "of the wrong sign" if ratio < 0 else "not the expected answer"
    factor = ratio if ratio >= 1 else 1 / ratio
    words = "too large" if ratio > 1 else "too small"
    return f"{words} (by a factor of {factor:.2g})" if factor >= 1.1 else f"{words} (by {abs(ratio - 1):.2g} of it)"


def _octave_text(d: int) -> str:
    """The factor an answer is off by, from its octave offset ``d`` (see ``Sealed.octaves_off``)."""
    q = STEPS_PER_OCTAVE
    lo, about, hi = 2.0 ** ((abs(d) - 1) / q), 2.0 ** (abs(d) / q), 2.0 ** ((abs(d) + 1) / q)
    words = "too large" if d > 0 else "too small"
    if abs(d) == 1:
        return f"{words}, by less than a factor of {hi:.2g}"
    return f"{words} by a factor of about {about:.2g} (between {lo:.2g} and {hi:.2g})"
