"""Glue a value into the book's prose, without making the book tooling a dependency.

The book (jupyter-book / myst-nb) pastes values computed by a cell into the text with
``{glue:text}`name```. ``from myst_nb import glue`` would make every chapter fail where myst-nb is
not installed (Colab, a student's venv), so chapters call :func:`glue` from lectorch instead: the
same call signature and the same output as ``myst_nb.glue`` where myst-nb is installed, and nothing
visible where it is not (the value is only needed when the book is built).

It writes myst-nb's glue output itself rather than importing ``myst_nb.ext.glue``: that module
imports nbformat, hence jsonschema, whose format checkers build an IRI parser on import
(rfc3987-syntax, which JupyterLab brings): about two seconds in every chapter's kernel.
tests/test_core_basics.py checks the output is myst-nb's own, call for call.

>>> from lectorch import glue
>>> glue("answer", 42, display=False)  # no visible output either way
"""

from __future__ import annotations

import importlib.util
from typing import Any

#: myst-nb's prefix for a value stored but not shown (``myst_nb.ext.glue.GLUE_PREFIX``).
GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Store ``variable`` under ``name`` for the book; a no-op where myst-nb is not installed.

    Same arguments as ``myst_nb.glue``: ``display=True`` also shows the value in the notebook when
    myst-nb is present (without it nothing is shown: the chapters glue with ``display=False``).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (the key used in {{glue}}`name`), got {name!r}")
    if importlib.util.find_spec("myst_nb") is None:
        return
    from IPython.core.formatters import format_display_data
    from IPython.display import display as show

    mimebundle, metadata = format_display_data(variable)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    show({prefix + mime: value for mime, value in mimebundle.items()}, raw=True, metadata=metadata)
