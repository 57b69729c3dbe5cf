"""A pytest plugin for `make gpu-check`: keep the outputs nbval executed and write each notebook.

Loaded with ``-p gpu_check_capture`` (tools/ on PYTHONPATH); writes the executed chapters into
``$GPU_CHECK_NOTEBOOKS`` at the end of the session, so one nbval run both checks a chapter and
yields its executed copy (no second execution on the GPU).
"""

from __future__ import annotations

import os
import pathlib

import nbformat

_FILES: dict[str, object] = {}


def pytest_runtest_teardown(item, nextitem) -> None:
    outputs = getattr(item, "test_outputs", None)
    cell = getattr(item, "cell", None)
    parent = getattr(item, "parent", None)
    if cell is None or parent is None or not hasattr(parent, "nb"):
        return
    if outputs is not None:
        cell.outputs = list(outputs)  # the cell object is the one in parent.nb.cells
    _FILES[str(parent.fspath)] = parent.nb


def pytest_sessionfinish(session, exitstatus) -> None:
    folder = os.environ.get("GPU_CHECK_NOTEBOOKS")
    if not folder:
        return
    for path, nb in _FILES.items():
        nbformat.write(nb, str(pathlib.Path(folder) / pathlib.Path(path).name))
