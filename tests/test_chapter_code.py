"""The chapters' code fits the page: no line of a chapter's code cell is over 88 characters (ruff's
line length, the width the book's code column shows at 1280 px without scrolling)."""

from __future__ import annotations

import json

from _paths import ROOT
LIMIT = 88


def test_chapter_code_lines_fit():
    long = []
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "code":
                long += [f"{path.name} cell {number}: {len(line)} characters: {line.strip()[:60]}"
                         for line in "".join(cell["source"]).split("\n") if len(line) > LIMIT]
    assert not long, f"{len(long)} code lines over {LIMIT} characters (break them):\n" + "\n".join(long)
