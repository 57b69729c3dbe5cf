"""Seal an expected answer for an exercise module (the plain value stays in ``grading/``).

    python -m lectorch.exercises.seal EXERCISE_ID VALUE [--rtol R] [--atol A]

It prints ``Sealed("...")`` for an exact answer (VALUE is a Python literal: ``16``,
``1.5e9``, ``(8, 1)``, ``{'i', 'k'}``). Re-sealing every exercise from the plain answers is the
instructor's ``python -m grading.seals`` (this package never imports ``grading/``).

>>> main(["doc-x", "16", "--rtol", "1e-6"]).startswith('Sealed("n|')
True
"""

from __future__ import annotations

import argparse
import ast
import sys

from lectorch.exercises import Sealed


def main(argv: list[str] | None = None) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lectorch.exercises.seal", description=__doc__.splitlines()[0])
    parser.add_argument("exercise_id")
    parser.add_argument("value", help="a Python literal")
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--atol", type=float, default=0.0)
    args = parser.parse_args(argv)
    try:
        value = ast.literal_eval(args.value)
    except (ValueError, SyntaxError):
        parser.error(f"VALUE must be a Python literal (a number, tuple, set or string), got {args.value!r}")
    return f'Sealed("{Sealed.of(args.exercise_id, value, rtol=args.rtol, atol=args.atol).token}")'


if __name__ == "__main__":
    print(main(sys.argv[1:]))
