"""The best offline attack on the practice checks we know, timed: recover every sealed public answer.

    python benchmarks/attack_public_seals.py [EXERCISE_ID ...]

A value or prediction exercise asked as a function of its setting holds seals in the package: its
public case (the page's numbers) and its practice settings. A seal stores, in clear, its tolerance
and its grid's offset, a salted hash of the accepted bucket and a salted hash of the answer's power
of ten (for "how far off" feedback). The attack on the page's seal (i) finds the power of ten by
trying each one (both signs, ±40: 162 hashes), (ii) tries every bucket of the grid inside that
decade (numbers with a relative tolerance of 0.1 % or more), or every integer of the decade up to
the answer (exact answers, and tolerances of 1e-9), until one matches. With the answer found it
hands in the page's answer hard-coded, ``lambda *setting: answer``, which the practice check now
refuses on its practice settings; then it asks the grader (the bundle's hidden settings, judged in
this process as the sandbox would report them) and prints the grade. Needs the instructor's
``grading/`` only to grade the recovered answer, not to find it.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lectorch.exercises import Sealed, check, exercises, reset_attempts  # noqa: E402
from lectorch.exercises.seal import _digest, _log_width, decades_off  # noqa: E402

MAX_TRIES = 20_000_000
#: the attack's first step: both signs, powers of ten from -40 to 40
DECADE_TRIES = 2 * (2 * 40 + 1)


def decade(ex_id: str, seal: Sealed) -> tuple[float, int] | None:
    """(sign, power of ten) of the sealed answer, found by hashing each candidate."""
    for sign in (1.0, -1.0):
        d = decades_off(ex_id, seal.token, sign)  # how many decades 1 (or -1) is above the answer
        if d is not None:
            return sign, -d
    return None


def recover(ex_id: str, seal: Sealed) -> tuple[float | None, int]:
    """A number the seal accepts, and the number of hashes it took."""
    found = decade(ex_id, seal)
    tries = DECADE_TRIES
    if found is None:
        return None, tries
    s, q = found
    lo, hi = 10.0 ** q, 10.0 ** (q + 1)
    kind, rtol, _, offset = seal.token.split("|")[:4]
    rtol = float(rtol)
    if kind == "r" and rtol >= 1e-3:
        width, offset, sign = _log_width(rtol), float(offset), "+" if s > 0 else "-"
        digest = seal.token.split("|")[4]
        for b in range(math.floor((math.log(lo) - offset) / width), math.floor((math.log(hi) - offset) / width) + 1):
            tries += 1
            if _digest(ex_id, f"{sign}{b}") == digest:
                return s * math.exp(offset + (b + 0.5) * width), tries
        return None, tries
    # exact (or too fine to scan): the integers of the decade, then its halves and quarters
    for step in (1.0, 0.5, 0.25):
        x = math.ceil(lo / step) * step
        while x < hi and tries < MAX_TRIES:
            tries += 1
            if seal.matches(ex_id, s * x):
                return s * x, tries
            x += step
    return None, tries


def main(ids: list[str]) -> int:
    import grading
    from grading import harness, judge
    from lectorch.exercises import refusals

    registry = exercises()
    ids = ids or sorted(i for i, ex in registry.items()
                        if ex.kind != "function" and ex.takes_function and isinstance(ex.expected, Sealed)
                        and ex.expected.numeric)
    print(f"{'exercise':28} {'hashes':>9} {'seconds':>8}  practice  grade")
    total = 0.0
    for ex_id in ids:
        ex = registry[ex_id]
        start = time.perf_counter()
        value, tries = recover(ex_id, ex.expected)
        seconds = time.perf_counter() - start
        total += seconds
        if value is None:
            print(f"{ex_id:28} {tries:>9} {seconds:>8.3f}  not found")
            continue
        reset_attempts(ex_id)
        practice = check(ex_id, lambda *a, v=value: v).status
        entry = grading.build_bundle(0, exercise_ids=[ex_id])["exercises"][ex_id]
        cases = [harness._call(lambda *a, v=value: v, harness.from_inputs(c["args"]), harness.from_inputs(c["kwargs"]),
                               0, refusals().get(ex_id)) for c in entry["cases"]]
        status, _ = judge.judge(ex, entry, {"found": True, "callable": True, "value": None, "cases": cases}, "answer")
        print(f"{ex_id:28} {tries:>9} {seconds:>8.3f}  {practice:8}  {status}")
    print(f"all public answers recovered in {total:.2f} s of this process")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
