"""The test suite's own shape: test modules import the code and the helpers (tests/_*.py), never
each other, and never edit ``sys.path`` (pyproject's ``pythonpath`` puts the course, its tools and
tests/ on it)."""

from __future__ import annotations

import ast
import functools
import re

from _paths import ROOT

TEST_MODULES = sorted((ROOT / "tests").glob("test_*.py"))


@functools.lru_cache(maxsize=None)
def parsed(path) -> ast.Module:
    """A test module's syntax tree, or an empty one where no line of it can import a ``test_``
    module nor touch ``sys.path`` (parsing every module is the slow part)."""
    text = path.read_text(encoding="utf-8")
    if not re.search(r"^\s*(import|from)\b.*\btest_|sys\.path", text, re.MULTILINE):
        return ast.Module(body=[], type_ignores=[])
    return ast.parse(text)


def imported_modules(tree: ast.AST) -> set[str]:
    """The top-level names of the modules ``tree`` imports, at any depth (inside functions too).

    >>> sorted(imported_modules(ast.parse("import a.b as c\\ndef f():\\n    from d import e")))
    ['a', 'd']
    """
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def edits_sys_path(tree: ast.AST) -> bool:
    """True when ``tree`` calls a method of ``sys.path`` (insert, append, remove, ...); code in a
    string (a subprocess's program) is not a call.

    >>> edits_sys_path(ast.parse("import sys; sys.path.insert(0, 'x')")), edits_sys_path(ast.parse("c = 'sys.path.pop()'"))
    (True, False)
    """
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path"
               and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "sys"
               for node in ast.walk(tree))


def test_no_test_module_imports_another():
    assert len(TEST_MODULES) > 50
    found = {path.name: sorted(m for m in imported_modules(parsed(path)) if m.startswith("test_"))
             for path in TEST_MODULES}
    found = {name: others for name, others in found.items() if others}
    assert not found, f"test modules that import others (move what they share into a tests/_*.py helper): {found}"


def test_no_test_module_edits_sys_path():
    found = [path.name for path in TEST_MODULES if edits_sys_path(parsed(path))]
    assert not found, f"{found} edit sys.path: import by name (pyproject's pythonpath) or load the file with importlib"
