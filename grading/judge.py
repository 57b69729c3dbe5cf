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


def judge(ex: Any, entry: dict, record: Any, expr: str) -> tuple[str, str]:
    """(status, message) of one exercise from its bundle entry and the sandbox's plain record."""
    from lectorch.exercises import _short, compare

    if not isinstance(record, dict) or "unreadable" in record:
        return "error", "the answer could not be read back from the notebook's kernel"
    if not record.get("found"):
        why = str(record.get("message", ""))[:200]
        return "missing", f"no `{expr}` after running the notebook ({why})" if why else f"no `{expr}`"

    def against(got: Any, expected: Any) -> str | None:
        what = _unreadable(got)
        if what:
            return f"your answer contains a {what}, which the grader cannot read back (use numbers, tuples, lists or tensors)."
        try:
            return compare(ex, _restore(got), expected)
        except Exception as err:  # noqa: BLE001 - a strange answer must not stop grading
            return f"your answer could not be compared ({type(err).__name__}): is it of the asked type?"

    if entry["kind"] != "function":
        got = record.get("value")
        if _not_done(got):
            return "not implemented", "Not implemented yet."
        expected = ex.expected if entry.get("sealed_only") else grading.decode(entry["expected"])
        problem = against(got, expected)
        return ("passed", f"Correct: {ex.title}.") if problem is None else ("failed", problem)
    if not record.get("callable"):
        got = record.get("value")
        if _not_done(got):
            return "not implemented", "Not implemented yet."
        return "failed", f"Expected a function, got {_short(got)}."
    cases, results = entry["cases"], record.get("cases")
    if not isinstance(results, list) or len(results) != len(cases):
        return "not reached", "the hidden cases did not all run (time limit?)"
    for i, (case, res) in enumerate(zip(cases, results), start=1):
        where = f"Case {i} of {len(cases)}" + (f" ({case['description']})" if case["description"] else "")
        if not isinstance(res, dict):
            return "error", f"{where}: no result"
        if "input_error" in res:
            return "error", f"{where}: the hidden input could not be rebuilt in your kernel (did you replace part of lectorch?)"
        if "timeout" in res:
            return "failed", f"{where}: your function took longer than {res['timeout']:g} s."
        if "raised" in res:
            names = [str(n) for n in res.get("raised", [])]
            if "NotImplementedError" in names:
                return "not implemented", "Not implemented yet: your function still raises NotImplementedError."
            if case["raises"] is not None and case["raises"] in names:
                continue
            kind = names[0] if names else "an error"
            return "error", f"{where}: your function raised {kind}: {str(res.get('message', ''))[:200]}."
        if "returned" not in res:
            return "error", f"{where}: no result"
        got = res["returned"]
        if case["raises"] is not None:
            return "failed", f"{where}: expected an error ({case['raises']}) for this input, but your function returned {_short(got)}."
        if _unreadable(got) == "ellipsis" or (got is None and case["expected"] is not None):
            return "not implemented", "Not implemented yet: your function returns nothing."
        problem = against(got, grading.decode(case["expected"]))
        if problem is not None:
            return "failed", f"{where}: {problem}"
    n = len(cases)
    return "passed", f"Correct: {ex.title} ({n} case{'s' if n != 1 else ''} pass)."
