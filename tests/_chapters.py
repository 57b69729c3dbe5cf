"""A chapter's exercises as its notebook asks for them: the ids of its ``lectorch.check`` calls, in
order, and which of them are debug exercises (their stub is the buggy code, not ``...``). Shared by
the student edition's tests and the downloaded notebook's.

>>> from _paths import ROOT
>>> exercise_ids(ROOT / "chapters" / "00_napkin_math.ipynb")[0]
'napkin-two-weeks'
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

import grading


def exercise_ids(chapter: Path) -> list[str]:
    """The exercise ids of the chapter's check calls, in the order the notebook runs them."""
    return [ex_id for ex_id, _ in grading.check_calls(grading.read_notebook_json(chapter))]


def debug_exercises(chapter: Path) -> set[str]:
    """Exercises whose stub is runnable code (the bug to fix) rather than `...`/NotImplementedError:
    the stub of the last solution cell before each check cell."""
    found, stub = set(), None
    for cell in nbformat.read(chapter, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        if "solution" in cell.metadata.get("tags", []):
            stub = cell.metadata.get("lectorch", {}).get("stub", "")
        for ex in re.findall(r"""lectorch\.check\(\s*["']([\w.-]+)["']""", cell.source):
            if stub is not None and "..." not in stub and "NotImplementedError" not in stub:
                found.add(ex)
    return found
