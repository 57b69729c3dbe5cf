"""Build the instructor's grading bundle: hidden inputs with their expected results, expected values.

    GRADING_SEED=$(python -c 'import secrets; print(secrets.token_hex(32))') python -m grading bundle [OUTPUT]
    # default OUTPUT: grading-bundle/bundle.pt

The seed makes the hidden cases reproducible; keep it secret (anyone with the seed and the grading
modules can rebuild the hidden inputs). It must carry at least 128 bits of entropy (32 hex digits):
a short or human-chosen seed (a number, a date, a word) could be searched for from the numbers a
sandboxed notebook sees, and is refused (``--weak-seed`` stretches it instead, for a demonstration).
Each exercise draws its cases from HMAC(key, exercise id). Without GRADING_SEED (or ``--seed``) a
random seed is drawn; either way it is recorded in the bundle. Keep the bundle out of the student edition and away from
students: ``python -m grading grade --bundle OUTPUT`` reads it, and no sandboxed notebook can see it.
"""

from __future__ import annotations

import argparse
import os
import secrets
from pathlib import Path

import grading
from grading import ROOT

DEFAULT_OUTPUT = ROOT / "grading-bundle" / "bundle.pt"


def seed_from(text: str | None, *, weak_ok: bool = False) -> str:
    """The seed given (refused when it is too short to stay secret, unless ``weak_ok``), else a random
    256-bit one."""
    if text is None or not text.strip():
        return secrets.token_hex(32)
    grading.grading_key(text.strip(), weak_ok=weak_ok)  # refuses a weak seed, or warns
    return text.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading bundle", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, nargs="?", default=DEFAULT_OUTPUT)
    parser.add_argument("--seed", help="secret seed of at least 128 bits (default: $GRADING_SEED, else random)")
    parser.add_argument("--weak-seed", action="store_true",
                        help="accept a short seed, stretched with PBKDF2 (a demonstration, never a real class)")
    parser.add_argument("--grading-dir", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    output = args.output.resolve()
    student = (ROOT / "student").resolve()
    if output.is_relative_to(student) or output.is_relative_to((ROOT / "chapters").resolve()):
        parser.error(f"{args.output} is inside the student edition or the chapters: write the bundle elsewhere")
    try:
        seed = seed_from(args.seed if args.seed is not None else os.environ.get("GRADING_SEED"), weak_ok=args.weak_seed)
        bundle = grading.build_bundle(seed, directory=args.grading_dir)
    except ValueError as err:
        parser.error(str(err))
    grading.write_bundle(bundle, output)
    kinds: dict[str, int] = {}
    cases = 0
    for entry in bundle["exercises"].values():
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
        cases += len(entry.get("cases", []))
    sealed = sum(e.get("sealed_only", False) for e in bundle["exercises"].values())
    print(f"wrote {output}: {len(bundle['exercises'])} exercises "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), {cases} function cases, "
          f"{sealed} graded against the package's seal only; fingerprint {grading.fingerprint(output)}")
    return 0

