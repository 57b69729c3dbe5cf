"""What Python source imports, read with ``ast`` (nothing runs): the GPU-box guard's probe
(tools/gpu/gpu_box.py) and the bare-venv test (tests/test_bare_venv.py) both ask.

>>> sorted(imports("import torch.nn as nn\\nfrom a.b import c\\nfrom . import d\\n"
...                "try:\\n    import x\\nexcept ImportError:\\n    pass"))
['a.b', 'torch.nn', 'x']
>>> sorted(imports("try:\\n    import x\\nexcept ImportError:\\n    pass", optional=False))
[]
>>> python_of_cell("%timeit f()\\nif x:\\n    !ls\\nimport torch")
'pass\\nif x:\\n    pass\\nimport torch'
"""

from __future__ import annotations

import ast

OPTIONAL_GUARDS = ("ImportError", "ModuleNotFoundError")


def imports(source: str, *, optional: bool = True) -> set[str]:
    """The absolute modules ``source`` imports anywhere (inside functions too), dotted names whole;
    ``optional=False`` leaves out those inside ``try: … except ImportError`` (an import the code
    does without, e.g. myst-nb in lectorch._glue)."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    if not optional:
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                    isinstance(h.type, ast.Name) and h.type.id in OPTIONAL_GUARDS for h in node.handlers):
                skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def python_of_cell(cell_source: str) -> str:
    """A notebook cell's Python: each IPython magic (``%``) or shell line (``!``) becomes ``pass``
    at its indentation, so ``ast`` can parse the rest."""
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
                     for line in cell_source.splitlines())
