"""The test suite's own shape: test modules import the code and the helpers (tests/_*.py), never
each other, and never edit ``sys.path`` (pyproject's ``pythonpath`` puts the course, its tools and
tests/ on it)."""

from __future__ import annotations

import ast

from _paths import ROOT

TEST_MODULES = sorted((ROOT / "tests").glob("test_*.py"))


def imported_modules(source: str) -> set[str]:
    """The top-level names of the modules ``source`` imports, at any depth (inside functions too).

    >>> sorted(imported_modules("import a.b as c\\ndef f():\\n    from d import e"))
    ['a', 'd']
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def edits_sys_path(source: str) -> bool:
    """True when ``source`` calls a method of ``sys.path`` (insert, append, remove, ...).

    >>> edits_sys_path("import sys\\nsys.path.insert(0, 'x')"), edits_sys_path("code = 'sys.path.insert(0, x)'")
    (True, False)
    """
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and ast.unparse(node.func.value) == "sys.path" for node in ast.walk(ast.parse(source)))


def test_no_test_module_imports_another():
    assert len(TEST_MODULES) > 50
    found = {path.name: sorted(m for m in imported_modules(path.read_text(encoding="utf-8")) if m.startswith("test_"))
             for path in TEST_MODULES}
    found = {name: others for name, others in found.items() if others}
    assert not found, f"test modules that import others (move what they share into a tests/_*.py helper): {found}"


def test_no_test_module_edits_sys_path():
    found = [path.name for path in TEST_MODULES if edits_sys_path(path.read_text(encoding="utf-8"))]
    assert not found, f"{found} edit sys.path: import by name (pyproject's pythonpath) or load the file with importlib"
