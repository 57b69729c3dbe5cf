"""Judge one exercise in the grader's own process: the sandbox's plain record against the bundle's
expected values, with the grader's own lectorch (never the student's code).

>>> judge_value = _restore({"__set__": [1, 2]})
>>> sorted(judge_value)
[1, 2]
"""

from __future__ import annotations

from typing import Any

import grading
from grading import harness
from lectorch.exercises import Outcome, judge_cases, judge_not_callable, judge_unreadable, judge_value
from lectorch.i18n import tr


def _unreadable(value: Any) -> str | None:
    if isinstance(value, dict):
        if set(value) == {harness.UNREADABLE}:
            return str(value[harness.UNREADABLE])
        for v in value.values():
            found = _unreadable(v)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for v in value:
            found = _unreadable(v)
            if found:
                return found
    return None


#: at most this many items of one set may share a hash value (-1 and -2 share one in CPython); more
#: is no answer but a crafted collision, which would make building the set quadratic
HASH_SHARE = 8


def _hashes_spread(items: list) -> bool:
    """True when no more than :data:`HASH_SHARE` of ``items`` share a hash value, checked on the
    sorted hash values (no hashed container is built from items the student chose)."""
    try:
        hashes = sorted(hash(x) for x in items)
    except TypeError:  # unhashable items
        return False
    run = 1
    for a, b in zip(hashes, hashes[1:]):
        run = run + 1 if a == b else 1
        if run > HASH_SHARE:
            return False
    return True


def _restore(value: Any) -> Any:
    """Sets come back from the sandbox as ``{SET: [...]}``: make them sets again (plain data only),
    unless their items' hashes collide (or are unhashable): then the marker stays, and the
    comparison fails."""
    if isinstance(value, dict):
        if set(value) == {harness.SET} and isinstance(value[harness.SET], list):
            items = [_restore(v) for v in value[harness.SET]]
            return set(items) if _hashes_spread(items) else value
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_restore(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _not_done(value: Any) -> bool:
    return value is None or _unreadable(value) == "ellipsis"


def _outcome(res: Any) -> Outcome:
    """The sandbox's plain result of one case, as the verdict engine reads it."""
    if not isinstance(res, dict):
        return Outcome("no result")
    if "input_error" in res:
        return Outcome("input error")
    if "timeout" in res:
        return Outcome("timeout", message=f"{res['timeout']:g}")
    if "raised" in res:
        return Outcome("raised", names=tuple(str(n) for n in res.get("raised", [])),
                       message=str(res.get("message", ""))[:200])
    if "returned" not in res:
        return Outcome("no result")
    what = _unreadable(res["returned"])
    if what == "ellipsis":
        return Outcome("returned", ...)
    if what:
        return Outcome("unreadable", message=what)
    return Outcome("returned", _restore(res["returned"]))


def judge(ex: Any, entry: dict, record: Any, expr: str) -> tuple[str, str]:
    """(status, message) of one exercise from its bundle entry and the sandbox's plain record,
    through the verdict engine the practice check uses (``lectorch.exercises.judge_cases``)."""
    if not isinstance(record, dict) or "unreadable" in record:
        return "error", tr("the answer could not be read back from the notebook's kernel")
    if not record.get("found"):
        why = str(record.get("message", ""))[:200]
        return "missing", (tr("no `{expr}` after running the notebook ({why})").format(expr=expr, why=why) if why
                           else tr("no `{expr}`").format(expr=expr))
    if entry["kind"] != "function":
        got = record.get("value")
        if _not_done(got):
            return "not implemented", tr("Not implemented yet: replace the `...` with your answer and run the cell again.")
        outcome = _outcome({"returned": got})
        if outcome.kind == "unreadable":
            return judge_unreadable(outcome.message)
        expected = ex.expected if entry.get("sealed_only") else grading.decode(entry["expected"])
        return judge_value(ex, outcome.value, expected)
    if not record.get("callable"):
        got = record.get("value")
        if _not_done(got):
            return "not implemented", tr("Not implemented yet: replace the `...` with your answer and run the cell again.")
        return judge_not_callable(ex, _restore(got))
    cases, results = entry["cases"], record.get("cases")
    if not isinstance(results, list) or len(results) != len(cases):
        return "not reached", tr("the hidden cases did not all run (time limit?)")
    views = [(grading.decode(c["expected"]), c["raises"], c["description"]) for c in cases]
    return judge_cases(ex, views, lambda i: _outcome(results[i - 1]))
