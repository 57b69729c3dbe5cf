"""Seal an expected answer for an exercise module (the plain value stays in ``grading/``).

    python -m lectorch.exercises.seal EXERCISE_ID VALUE [--rtol R] [--atol A]
    python -m lectorch.exercises.seal --write [EXERCISE_ID=RTOL ...]   # from a checkout

The first form prints ``Sealed("...")`` for an exact answer (VALUE is a Python literal: ``16``,
``1.5e9``, ``(8, 1)``, ``{'i', 'k'}``). ``--write`` re-seals every numeric exercise and its named
slips into ``lectorch/exercises/_seals.py`` from the instructor's ``grading/`` (``EXPECTED`` and
``SLIPS``), keeping each exercise's tolerance unless ``EXERCISE_ID=RTOL`` gives a new one.

>>> main(["doc-x", "16", "--rtol", "1e-6"]).startswith('Sealed("n|')
True
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from lectorch.exercises import Sealed

SEALS_FILE = Path(__file__).with_name("_seals.py")


def _chunks(token: str, indent: str) -> str:
    return "".join(f'{indent}"{token[i:i + 84]}"\n' for i in range(0, len(token), 84))


def write_seals(rtols: dict[str, float] | None = None, path: Path = SEALS_FILE) -> Path:
    """Re-seal the numeric exercises and their named slips from ``grading/`` into ``path``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's grading/
    from grading import expected_values, topic_modules
    from lectorch.exercises import exercises, slip_id, slip_tolerance

    modules, registry, rtols = topic_modules(), exercises(), rtols or {}
    values = expected_values(modules)
    seals = {}
    for ex_id, ex in sorted(registry.items()):
        if isinstance(ex.expected, Sealed) and ex.expected.numeric:
            seals[ex_id] = Sealed.of(ex_id, values[ex_id], rtol=rtols.get(ex_id, ex.expected.rtol),
                                     atol=ex.expected.atol)
    slips: dict[str, dict[str, str]] = {}
    for module in modules.values():
        for ex_id, named in getattr(module, "SLIPS", {}).items():
            rtol = min(seals[ex_id].rtol, 0.01) if seals[ex_id].rtol else 0.0
            assert rtol == slip_tolerance(registry[ex_id]) or ex_id in rtols
            for name, value in named.items():
                if name not in registry[ex_id].slips:
                    raise ValueError(f"SLIPS[{ex_id!r}] names {name!r}, which the exercise has no message for")
                slips.setdefault(ex_id, {})[name] = Sealed.of(slip_id(ex_id, name), value, rtol=rtol).token
    text = ['"""Seals of the numeric exercises (generated from grading/ by the seal tool; do not edit).',
            "", "Each token holds the tolerances and salted hashes, never the answer (see ``Sealed``).",
            '"""', "", "SEALS = {"]
    for ex_id, seal in seals.items():
        text.append(f'    "{ex_id}": (\n' + _chunks(seal.token, " " * 8) + "    ),")
    text += ["}", "", "#: seals of the wrong values that named slips stand for, by exercise and slip name", "SLIPS = {"]
    for ex_id in sorted(slips):
        text.append(f'    "{ex_id}": {{')
        for name, token in slips[ex_id].items():
            text.append(f'        "{name}": (\n' + _chunks(token, " " * 12) + "        ),")
        text.append("    },")
    text.append("}")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--write"]:
        rtols = {k: float(v) for k, v in (a.split("=", 1) for a in argv[1:])}
        return f"wrote {write_seals(rtols)}"
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
