"""Every committed chapter is fully executed (nbval never compares a cell that has no outputs
stored), follows the chapter conventions, and shows no machine paths."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _paths import ROOT
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def test_there_are_chapters():
    assert CHAPTERS


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_code_cell_was_executed_in_order(path: Path):
    nb = json.loads(path.read_text())
    counts = [c["execution_count"] for c in code_cells(nb)]
    assert None not in counts, f"{path.name}: {counts.count(None)} code cells have never been executed"
    assert counts == sorted(counts), f"{path.name}: cells were executed out of order; run `make execute NB={path.relative_to(ROOT)}`"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_machine_paths_or_errors_in_outputs(path: Path):
    nb = json.loads(path.read_text())
    for cell in code_cells(nb):
        text = json.dumps(cell.get("outputs", []))
        assert not re.search(r"/(work|tmp|root|home|Users)/[\w.-]+", text), f"{path.name}: a stored output shows a machine path"
        raises = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        errors = [o for o in cell.get("outputs", []) if o["output_type"] == "error"]
        assert raises or not errors, f"{path.name}: an unexpected error is stored: {errors[0]['ename'] if errors else ''}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_conventions(path: Path):
    nb = json.loads(path.read_text())
    source = "\n".join("".join(c["source"]) for c in nb["cells"])
    first = "".join(nb["cells"][0]["source"])
    assert re.match(r"# \d+ · ", first), f"{path.name}: the first cell must be the title '# N · …'"
    assert "Learning goals" in first, f"{path.name}: the first cell must list the learning goals"
    assert "{include} _gpu_note.md" in source, f"{path.name}: the shared GPU admonition is missing"
    assert "lectorch.get_device()" in source
    assert "## Summary" in source, f"{path.name}: a summary section is missing"
    assert source.count("{exercise-start}") >= 3, f"{path.name}: fewer than three exercises"
    assert source.count("{exercise-start}") == source.count("{solution-start}"), f"{path.name}: every exercise needs a solution"
    assert "Panel(" in source or "_panel(" in source, f"{path.name}: no interactive panel"
    solutions = [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]
    assert len(solutions) >= 3, f"{path.name}: solution cells must be tagged 'solution'"
    for cell in solutions:
        stub = cell["metadata"].get("lectorch", {}).get("stub")
        assert stub, f"{path.name}: a solution cell has no student stub in metadata lectorch.stub"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_a_figure(path: Path):
    nb = json.loads(path.read_text())
    outputs = [o for c in code_cells(nb) for o in c.get("outputs", [])]
    assert any("image/svg+xml" in o.get("data", {}) for o in outputs), f"{path.name}: no figure in the outputs"
