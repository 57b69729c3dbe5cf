"""tools/book/patches.py: the book build's patches of Sphinx and myst-nb internals, in one module,
each refusing a version the locks do not pin."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import pytest
from myst_nb.core.render import NbElementRenderer

import patches

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restored():
    """Undo what a test's patches replace (the test process renders no book, but keep it clean)."""
    replaced, hooks = dict(patches.REPLACED), dict(patches._HOOKS)
    yield
    for (owner, name), original in patches.REPLACED.items():
        if (owner, name) not in replaced:
            setattr(owner, name, original)
    patches.REPLACED.clear(), patches.REPLACED.update(replaced)
    patches._HOOKS.clear(), patches._HOOKS.update(hooks)


def test_the_installed_sphinx_and_myst_nb_are_the_ones_the_patches_were_written_for():
    packages = {package for of in patches.PATCHES.values() for package in of}
    assert packages == {"sphinx", "myst-nb"}
    for package in packages:
        assert patches.written_for(package) == [metadata.version(package)]
        patches.require(package)


def test_the_versions_come_from_the_locks(tmp_path):
    cpu, cuda = tmp_path / "requirements.txt", tmp_path / "requirements-cuda.txt"
    cpu.write_text("# a lock\nsphinx==7.4.7\nmyst-nb==1.4.0 ; sys_platform == 'nowhere'\n")
    cuda.write_text("Sphinx==7.4.8\n")
    assert patches.written_for("sphinx", (cpu, cuda)) == ["7.4.7", "7.4.8"]
    assert patches.written_for("myst-nb", (cpu, cuda)) == []  # a pin for another platform does not count
    patches.require("sphinx", "7.4.8", (cpu, cuda))
    with pytest.raises(patches.UnsupportedVersion, match="none"):
        patches.require("myst-nb", "1.4.0", (cpu, cuda))


def test_another_version_is_refused_with_what_to_do():
    with pytest.raises(patches.UnsupportedVersion) as refused:
        patches.require("myst-nb", "9.0.0")
    message = str(refused.value)
    assert "myst-nb 9.0.0 is installed" in message and metadata.version("myst-nb") in message
    assert "render_unknown_outputs" in message and "glue_in_translations" in message and "parse_translations" not in message
    assert "`make install`" in message and "`make lock`" in message


def test_a_patch_refuses_before_it_patches(monkeypatch, restored):
    versions = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.1" if name == "myst-nb" else versions(name))
    before = NbElementRenderer.render_image
    with pytest.raises(patches.UnsupportedVersion, match="myst-nb 0.1 is installed"):
        patches.render_images(lambda original, self, data: original(self, data))
    assert NbElementRenderer.render_image is before


def test_a_patch_replaces_once_and_calls_the_latest_hook(restored):
    original = NbElementRenderer.render_unhandled
    calls = []
    patches.render_unknown_outputs(lambda render, self, data: calls.append(("first", render)))
    replaced = NbElementRenderer.render_unhandled
    patches.render_unknown_outputs(lambda render, self, data: calls.append(("second", render)))
    assert NbElementRenderer.render_unhandled is replaced is not original  # a second setup wraps nothing more
    NbElementRenderer.render_unhandled(None, None)
    assert calls == [("second", original)]


def test_each_patch_says_why():
    for name in patches.PATCHES:
        doc = getattr(patches, name).__doc__ or ""
        assert len(doc.split()) >= 30, f"patches.{name}: say what it replaces and why (its docstring)"


def _imported_from(tree: ast.Module, packages: tuple[str, ...]) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in packages:
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                         if alias.name.split(".")[0] in packages)
    return names


def test_no_other_module_of_the_book_patches_sphinx_or_myst_nb():
    """An attribute set on something imported from Sphinx or myst-nb is a patch: it lives in patches.py."""
    for path in sorted((ROOT / "tools" / "book").glob("*.py")):
        if path.name == "patches.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        theirs = _imported_from(tree, ("sphinx", "myst_nb"))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in targets:
                base = target
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                assert not (isinstance(target, ast.Attribute) and isinstance(base, ast.Name) and base.id in theirs), \
                    f"{path.relative_to(ROOT)}:{node.lineno} sets {ast.unparse(target)}: a patch of an internal " \
                    "belongs in tools/book/patches.py (one function, why, the version check)"
