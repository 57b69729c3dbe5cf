"""Glue a value into the book's prose, without making the book tooling a dependency.

The book (jupyter-book / myst-nb) pastes values computed by a cell into the text with
``{glue:text}`name```. ``from myst_nb import glue`` would make every chapter fail where myst-nb is
not installed (Colab, a student's venv), so chapters call :func:`glue` from lectorch instead: the
same call signature as ``myst_nb.glue``; it calls myst-nb when it is importable and otherwise does
nothing visible (the value is only needed when the book is built).

>>> from lectorch import glue
>>> glue("answer", 42, display=False)  # no output either way
"""

from __future__ import annotations

from typing import Any


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Store ``variable`` under ``name`` for the book; a no-op where myst-nb is not installed.

    Same arguments as ``myst_nb.glue``: ``display=True`` also shows the value in the notebook when
    myst-nb is present (without it nothing is shown: the chapters glue with ``display=False``).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key used in {{glue}}`name`), got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, variable, display=display)
