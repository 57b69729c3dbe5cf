"""The plain results of the function exercises' public cases (instructor side).

Each grading topic (``grading/topics/<topic>.py``) may give ``reference={"exercise-id": expected_of}``, where
``expected_of(case)`` computes a case's expected result from its inputs (with torch or a reference
solution). ``python -m grading.seals`` seals them into ``lectorch/exercises/seals.json``; the
grading bundle computes the same results in plain (:func:`expected_of`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from lectorch.exercises import seal


def references(topics: Mapping | None = None) -> dict:
    """Every grading topic's ``reference``, by exercise id."""
    from grading import load_topics

    refs: dict = {}
    for topic in (load_topics() if topics is None else topics).values():
        refs.update(topic.reference)
    return refs


def expected_of(refs: Mapping, exercise_id: str, case: Any) -> Any:
    """The plain expected result of a public ``case`` (whose package copy holds only its seal)."""
    if not seal.holds_seal(case.expected):
        return case.expected
    if exercise_id not in refs:
        raise ValueError(f"{exercise_id}: its public cases are sealed, but no grading topic has reference[{exercise_id!r}]")
    result = refs[exercise_id](case)
    if isinstance(case.expected, dict):  # facts of the inputs in clear, beside the results
        return {**seal.plain_part(case.expected), **result}
    return result


def with_results(reference, cases: list) -> list:
    """``cases`` with their expected results computed by ``reference(case)``; a case whose expected
    value is a dict (facts of its inputs) keeps those facts beside the results.

    >>> from lectorch.exercises import Case
    >>> [c.expected for c in with_results(lambda c: c.args[0] * 2, [Case(args=(3,), expected=None)])]
    [6]
    """
    import dataclasses

    out = []
    for case in cases:
        result = reference(case)
        expected = {**case.expected, **result} if isinstance(case.expected, dict) else result
        out.append(dataclasses.replace(case, expected=expected))
    return out


def case_seals() -> dict:
    """The seals of every sealed public case, by exercise id (in case order)."""
    from grading.seals import seals_data

    return seals_data()["cases"]


def write() -> Path:
    """Re-seal everything (the public cases with the rest: one file)."""
    from grading.seals import write_seals

    return write_seals()


if __name__ == "__main__":
    print(f"wrote {write()}")
