"""Re-seal the numeric exercises and their named slips from ``grading/`` (instructor side).

    python -m grading.seals [EXERCISE_ID=RTOL ...]

Writes ``lectorch/exercises/_seals.py`` from ``EXPECTED`` and ``SLIPS`` of ``grading/<topic>.py``,
keeping each exercise's tolerance unless ``EXERCISE_ID=RTOL`` gives a new one. The student's
package only reads the seals (``lectorch.exercises.seal`` seals one value); it never imports this.
"""

from __future__ import annotations

import numbers
import sys
from pathlib import Path

from grading import expected_values, topic_modules
from lectorch.exercises import Sealed

SEALS_FILE = Path(__file__).resolve().parents[1] / "lectorch" / "exercises" / "_seals.py"


def _chunks(token: str, indent: str) -> str:
    return "".join(f'{indent}"{token[i:i + 84]}"\n' for i in range(0, len(token), 84))


def write_seals(rtols: dict[str, float] | None = None, path: Path = SEALS_FILE) -> Path:
    """Re-seal the numeric exercises and their named slips from ``grading/`` into ``path``."""
    from lectorch.exercises import exercises, slip_id, slip_tolerance

    modules, registry, rtols = topic_modules(), exercises(), rtols or {}
    values = expected_values(modules)
    seals = {}
    for ex_id, ex in sorted(registry.items()):
        # exercises with no plain answer in grading/ (e.g. a doctest's) have nothing to seal; a
        # course exercise left out shows as a seal missing from the written file
        # (an int answer checked exactly, such as a storage index, has an exact seal: rtol 0)
        exact_int = (isinstance(ex.expected, Sealed) and not ex.expected.numeric and ex_id in values
                     and isinstance(values[ex_id], numbers.Integral) and not isinstance(values[ex_id], bool))
        if isinstance(ex.expected, Sealed) and (ex.expected.numeric or exact_int) and ex_id in values:
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


if __name__ == "__main__":
    rtols = {k: float(v) for k, v in (a.split("=", 1) for a in sys.argv[1:])}
    print(f"wrote {write_seals(rtols)}")
