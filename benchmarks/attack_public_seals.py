"""The best offline attack on the practice checks we know, timed: recover every sealed public answer.

    python benchmarks/attack_public_seals.py [EXERCISE_ID ...]

A value or prediction exercise asked as a function of its setting holds one seal in the package:
its public case (the page's numbers). The seal stores, in clear, its tolerance and a salted hash of
the answer's quarter octave (for "how far off" feedback). The attack (i) finds the quarter octave by
trying each one (a few hundred hashes), (ii) tries every fine bin of the seal inside it (numbers
with a relative tolerance of 0.1 % or more), or every integer, half and quarter inside it (exact
answers, and tolerances of 1e-9), until one matches. With the
answer found it hands in the page's answer hard-coded, ``lambda *setting: answer``, which the
practice check accepts; then it asks the grader (the bundle's hidden settings, judged in this
process as the sandbox would report them) and prints the grade. Needs the instructor's ``grading/``
only to grade the recovered answer, not to find it.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lectorch.exercises import Sealed, _digest, _log_width, check, exercises, reset_attempts  # noqa: E402

MAX_TRIES = 20_000_000


def quarter_octave(ex_id: str, seal: Sealed, span: int = 4 * 128) -> tuple[str, int] | None:
    stored = seal.token.split("|")[4]
    for sign in "+-":
        for q in range(-span, span + 1):
            if _digest(ex_id + "#octave", f"{sign}{q}") == stored:
                return sign, q
    return None


def recover(ex_id: str, seal: Sealed) -> tuple[float | None, int]:
    """A number the seal accepts, and the number of hashes it took."""
    found = quarter_octave(ex_id, seal)
    tries = 2 * (4 * 128 * 2 + 1)
    if found is None:
        return None, tries
    sign, q = found
    s = 1.0 if sign == "+" else -1.0
    lo, hi = 2.0 ** (q / 4), 2.0 ** ((q + 1) / 4)
    rtol = seal.rtol
    width = _log_width(rtol) if rtol > 0 else 0.0
    first, last = (math.floor(math.log(lo) / width), math.floor(math.log(hi) / width)) if width else (0, -1)
    if rtol > 0 and last - first < MAX_TRIES // 4:  # else (a tolerance of 1e-9): try whole numbers
        digests = set(seal.token.split("|")[3].split(","))
        for b in range(first, last + 1):
            tries += 1
            if _digest(ex_id, f"r{sign}{b}")[:12] in digests:
                return s * math.exp((b + 0.5) * width), tries
        return None, tries
    # exact (or too fine to scan): the integers of the quarter octave, then its halves and quarters
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
