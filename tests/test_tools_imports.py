"""The modules of tools/ import each other without a cycle: each product's modules form layers (in
the book: languages, then the reader's notebooks and the extensions, then the build, then i18n and
the class edition), so any one of them can be read, imported and tested without the ones above it.

The modules import each other by name (each folder of tools/ is on the path of its scripts and of
pytest), function-local imports included: a cycle through them is a cycle all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tools_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of tools/ by the name it is imported by (its file's stem)."""
    found: dict[str, Path] = {}
    for path in sorted((root / "tools").rglob("*.py")):
        assert path.stem not in found, f"{path.relative_to(root)} and {found[path.stem].relative_to(root)} " \
            "share a name: rename one (tools/ modules import each other by name)"
        found[path.stem] = path
    return found


def imported_names(source: str) -> set[str]:
    """The top-level names of every absolute import in ``source``, at any depth.

    >>> sorted(imported_names("import a.b\\nfrom c import d\\ndef f():\\n    import e\\nfrom . import g"))
    ['a', 'c', 'e']
    """
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each tools/ module → the tools/ modules it imports."""
    modules = tools_modules(root)
    return {name: (imported_names(path.read_text(encoding="utf-8")) & set(modules)) - {name}
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or None.

    >>> find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()})
    ['a', 'b', 'c', 'a']
    >>> find_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return None
        for imported in sorted(graph.get(name, ())):
            cycle = visit(imported, path + [name])
            if cycle:
                return cycle
        done.add(name)
        return None

    for name in sorted(graph):
        cycle = visit(name, [])
        if cycle:
            return cycle
    return None


def test_the_tools_import_each_other_without_a_cycle():
    graph = import_graph()
    assert {"build_book", "i18n", "sphinx_lectorch", "gpu_check", "lock"} <= set(graph), "tools/ moved: update the scan"
    cycle = find_cycle(graph)
    assert cycle is None, (f"tools/ has an import cycle: {' → '.join(cycle)}. Move what the modules share into "
                           "the module it belongs to (a lower layer), so that the imports go one way")
