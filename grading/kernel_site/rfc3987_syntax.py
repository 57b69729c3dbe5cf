"""Not in the grading sandbox: a stand-in that makes ``import rfc3987_syntax`` fail at once.

jsonschema imports ``rfc3987_syntax`` (when it is installed, e.g. with JupyterLab) only to check
the "iri" string format, and that import builds a parser: 1 to 2 s of CPU, twice per sandbox (the
harness's nbclient and the kernel's nbformat, via ``lectorch.glue``), for a check that no notebook
schema uses. The sandbox puts this folder first on ``PYTHONPATH``; jsonschema ignores the
ImportError (it then skips that one format, as when the package is absent).
"""

raise ImportError("rfc3987_syntax is not available in the grading sandbox (a startup cost, unused)")
