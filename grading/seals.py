"""Seal every expected answer the student's package holds, from ``grading/`` (instructor side).

    python -m grading.seals [EXERCISE_ID=RTOL ...]

Writes ``lectorch/exercises/seals.json`` (package data; see ``lectorch.exercises.seal``):

* ``values``: the answer of each value and prediction exercise (``expected`` of its topic's
  ``TOPIC`` in ``grading/topics/<topic>.py``), within the exercise's tolerance (``EXERCISE_ID=RTOL``
  gives a new one);
* ``slips``: the wrong values its named slips stand for (``slips``), within 1 %;
* ``cases``: the results of the function exercises' public cases (``reference``);
* ``practice``: the public practice settings of value and prediction exercises asked as a
  function (``practice``: cases with their plain answers), their inputs in clear.

The student's package only reads this file; it never imports ``grading/``.
"""

from __future__ import annotations

import json
import numbers
import sys
from pathlib import Path

from grading import expected_values, load_topics
from lectorch.exercises import Sealed
from lectorch.exercises.seal import SEALS_FILE, exact_text, number_token, seal


def _plain_input(value, where: str):
    """A practice case's input as JSON (numbers, strings and dtypes; tuples as lists)."""
    import torch

    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, (tuple, list)):
        return [_plain_input(v, where) for v in value]
    raise TypeError(f"{where}: a practice input must be numbers or lists of them, got {type(value).__name__}")


def seals_data(rtols: dict[str, float] | None = None) -> dict:
    """Everything ``seals.json`` holds, computed from ``grading/``."""
    from grading.case_seals import references
    from lectorch.exercises import exercises, slip_id, slip_tolerance

    topics, registry, rtols = load_topics(), exercises(), rtols or {}
    values = expected_values(topics)
    out: dict = {"values": {}, "slips": {}, "cases": {}, "practice": {}}
    for ex_id, ex in sorted(registry.items()):
        # exercises with no plain answer in grading/ (e.g. a doctest's) have nothing to seal; a
        # course exercise left out shows as a seal that accepts nothing
        if isinstance(ex.expected, Sealed) and ex_id in values:
            value = values[ex_id]
            rtol = rtols.get(ex_id, ex.expected.rtol if ex.expected.numeric else 0.0)
            atol = ex.expected.atol if ex.expected.numeric else 0.0
            if isinstance(value, str):
                value = value  # e.g. sorted names or letters, checked exactly
            out["values"][ex_id] = Sealed.of(ex_id, value, rtol=rtol, atol=atol).token
    for topic in topics.values():
        for ex_id, named in topic.slips.items():
            token = out["values"][ex_id]
            rtol = min(float(token.split("|")[1]), 0.01)
            assert rtol == slip_tolerance(registry[ex_id]) or ex_id in rtols
            for name, value in named.items():
                if name not in registry[ex_id].slips:
                    raise ValueError(f"slips[{ex_id!r}] names {name!r}, which the exercise has no message for")
                exact = isinstance(value, numbers.Integral) and not rtol or not isinstance(value, numbers.Real)
                out["slips"].setdefault(ex_id, {})[name] = number_token(
                    slip_id(ex_id, name), value, rtol=rtol, exact=exact, decade=False)
        for ex_id, make in topic.practice.items():
            ex, cases = registry[ex_id], make()
            rtol, atol = ex.tolerance
            items = []
            for i, case in enumerate(cases):
                salt = f"{ex_id}#practice{i}"
                exact = isinstance(case.expected, numbers.Integral) and not rtol and not atol
                items.append({"args": _plain_input(list(case.args), salt), "kwargs": _plain_input_dict(case.kwargs, salt),
                              "description": case.description,
                              "expected": number_token(salt, case.expected, rtol=rtol, atol=atol, exact=exact)})
            out["practice"][ex_id] = items
    refs = references(topics)
    for ex_id, ex in sorted(registry.items()):
        if ex.kind != "function" or ex_id not in refs:
            continue
        out["cases"][ex_id] = [None if case.raises is not None else
                               seal(f"{ex_id}#{i}", refs[ex_id](case), rtol=ex.rtol, atol=ex.atol)
                               for i, case in enumerate(ex.cases)]
    return out


def _plain_input_dict(kwargs: dict, where: str) -> dict:
    return {str(k): _plain_input(v, where) for k, v in kwargs.items()}


def write_seals(rtols: dict[str, float] | None = None, path: Path = SEALS_FILE) -> Path:
    """Re-seal everything from ``grading/`` into ``path`` (``seals.json``)."""
    from lectorch.exercises.seal import stored_data

    text = json.dumps(seals_data(rtols), indent=1, sort_keys=True)
    Path(path).write_text(text + "\n", encoding="utf-8")
    stored_data.cache_clear()
    return Path(path)


__all__ = ["exact_text", "seals_data", "write_seals"]

if __name__ == "__main__":
    rtols = {k: float(v) for k, v in (a.split("=", 1) for a in sys.argv[1:])}
    print(f"wrote {write_seals(rtols)}")
