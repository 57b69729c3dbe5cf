"""The grader's side of the review: each submission's notebook read in the grader's own process.

The rules, the program's build and the verdict's words are the package's
(``lectorch.exercises.review``), shared with the practice check. Here: which exercises are
reviewed and run as their program in a fresh process (where the forbidden routines were removed
before any of it ran, so copies and lookup tables made elsewhere are not there), the program's
statements that raised there, and the grade's verdict.
"""

from __future__ import annotations

from typing import Any, Mapping

from lectorch.exercises import review as engine
from lectorch.exercises.review import Finding, findings_in
from lectorch.i18n import tr

__all__ = ["OUTSIDE_RUNNERS", "fresh_spec", "program_errors", "split", "verdict"]

#: runners whose simulated device lives in the grader's sandbox process, not with the answer: the
#: answer gets stubs, and the log it is judged by never enters its process
OUTSIDE_RUNNERS = frozenset({"lectorch.exercises.flops:traced_call", "lectorch.exercises.device:traced_copy_timing"})


def split(notebook: Mapping, items: list[dict], refusals: Mapping[str, dict],
          helpers: Mapping[str, Mapping[str, str]]) -> tuple[list[dict], list[dict], dict[str, list[Finding]]]:
    """The grader's plan items in two: those run with the notebook as it is, and those run as their
    program in a fresh process (every exercise with something to forbid: the item carries its
    ``program``), with each reviewed exercise's findings."""
    plain, fresh, findings = [], [], {}
    for item in items:
        spec = refusals.get(item["id"])
        if spec is None:
            plain.append(item)
            continue
        own = helpers.get(item["id"]) or {}
        program, findings[item["id"]] = findings_in(notebook, item["id"], item["expr"], spec, own)
        # the check expression's own helpers (the grader's, imported by the program) stay
        kept = {f"{module}.{name}" for name, module in own.items()}
        refuse = fresh_spec(item["id"], spec, kept)
        fresh.append({**item, "refuse": refuse, "program": program.source(), "origins": program.origins(),
                      "outside": item.get("runner") in OUTSIDE_RUNNERS})
    return plain, fresh, findings


def fresh_spec(exercise: str, spec: Mapping, kept: set[str] | frozenset = frozenset()) -> dict:
    """What the fresh process removes for ``exercise`` (``spec``: its refusals, less the check
    expression's own helpers ``kept``): the routines, their aten operators, autograd's engine."""
    return {**spec, "names": [n for n in spec.get("names", ()) if n not in kept],
            "ops": engine.operator_names(exercise, spec.get("names", ())),
            "autograd": exercise in engine.AUTOGRAD_BY_HAND, "numpy_off": exercise in engine.NUMPY_OFF}


def program_errors(status: str, message: str, errors: Any) -> str:
    """``message``, with the program's statements that raised, when the answer did not pass."""
    if status == "passed" or not isinstance(errors, list) or not errors:
        return message
    # a statement of the program that raised in the fresh process (where the exercise's forbidden
    # routines do not exist): what an answer's later NameError comes from
    said = "; ".join(tr("cell {cell}, line {line} raised {error} in the grader's run, where what this "
                        "exercise forbids does not exist").format(cell=e.get("cell", 0), line=e.get("line", 0), error=str(e.get("error", ""))[:160])
                     for e in errors[:2] if isinstance(e, dict))
    return f"{message} ({said})" if said else message


def verdict(status: str, message: str, findings: list[Finding]) -> tuple[str, str]:
    """The grade of a reviewed exercise: its hidden cases' verdict, unless its code has a finding."""
    return engine.verdict(status, message, findings, hidden=True)
