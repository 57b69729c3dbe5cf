"""Committed chapters carry outputs but no volatile metadata (execution timestamps): a re-execution's
diff then shows only what changed. `make execute` strips them (tools/strip_notebook_metadata.py)."""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from _paths import ROOT
NOTEBOOKS = sorted((ROOT / "chapters").rglob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("strip_notebook_metadata", ROOT / "tools" / "strip_notebook_metadata.py")
strip_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(strip_tool)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_carry_no_execution_timestamps(path):
    nb = nbformat.read(path, as_version=4)
    cells = strip_tool.volatile_cells(nb)
    assert not cells, (f"{path.name}: cells {cells[:5]} carry execution timestamps; "
                       f"run: python tools/strip_notebook_metadata.py {path.relative_to(ROOT)}")


def test_the_stripper_keeps_outputs_tags_and_counts(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=3, metadata={
        "tags": ["gpu"], "execution": {"iopub.execute_input": "2026-12-01T10:20:33Z"}, "ExecuteTime": {}})
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=3)]
    nb.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert strip_tool.main(["--check", str(path)]) == 1
    assert strip_tool.main([str(path)]) == 0
    again = nbformat.read(path, as_version=4)
    assert again.cells[0].metadata == {"tags": ["gpu"]} and again.cells[0].execution_count == 3
    assert again.cells[0].outputs[0]["data"]["text/plain"] == "2"
    assert strip_tool.main(["--check", str(path)]) == 0
