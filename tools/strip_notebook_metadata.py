"""Remove volatile metadata from executed notebooks, so a re-execution's diff shows only what changed.

    python tools/strip_notebook_metadata.py chapters/05_flops_mfu.ipynb [...]   # strip in place
    python tools/strip_notebook_metadata.py --check chapters/*.ipynb            # list, exit 1 if any

Volatile: the per-cell execution timestamps that nbclient (``jupyter execute``) stores in
``cell.metadata.execution`` and the ``ExecuteTime`` of the Jupyter "execute time" extension.
Outputs, execution counts, tags and the widget state (which the book needs) are kept. ``make execute``
runs this on every notebook it executes; tests/test_notebook_metadata.py fails on a committed
chapter that still carries them.
"""

from __future__ import annotations

import argparse
import sys

import nbformat

#: Keys of a cell's metadata that change at every execution and mean nothing to a reader.
VOLATILE_CELL_KEYS = ("execution", "ExecuteTime")


def volatile_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of the cells whose metadata holds a volatile key."""
    return [i for i, cell in enumerate(nb.cells) if any(k in cell.get("metadata", {}) for k in VOLATILE_CELL_KEYS)]


def strip(nb: nbformat.NotebookNode) -> int:
    """Remove the volatile keys in place; return how many cells changed."""
    changed = volatile_cells(nb)
    for i in changed:
        for key in VOLATILE_CELL_KEYS:
            nb.cells[i].metadata.pop(key, None)
    return len(changed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if a notebook carries any")
    args = parser.parse_args(argv)
    dirty = 0
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        if args.check:
            cells = volatile_cells(nb)
            if cells:
                dirty += 1
                print(f"{path}: volatile metadata in {len(cells)} cell(s)")
        elif strip(nb):
            nbformat.write(nb, path)
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main())
