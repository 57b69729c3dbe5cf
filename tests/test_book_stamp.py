"""`make book` rebuilds exactly when an input of the build changed (tools/book/build_book.py's stamp)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT
import build_book

CALLS: list[Path] = []


def fake_build(output: Path, fail: bool = False) -> list[subprocess.CompletedProcess]:
    """A stand-in edition: one page, one build process (failing when asked)."""
    CALLS.append(output)
    if not fail:
        output.mkdir(parents=True, exist_ok=True)
        (output / "index.html").write_text("<p>book</p>")
    return [subprocess.CompletedProcess(["fake"], int(fail), "built\nWARNING: a warning\n" if not fail else "", "")]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A copy of the build's inputs (build_book.ROOT points at it) and a fake edition over it."""
    for name in build_book.INPUTS:
        source = ROOT / name
        if not source.exists():
            continue
        if source.is_file():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, tmp_path / name)
        else:
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setattr(build_book, "ROOT", tmp_path)
    monkeypatch.setitem(build_book.EDITIONS, "fake", build_book.Edition(tmp_path / "_build" / "fake",
                                                                       "test_book_stamp:fake_build"))
    CALLS.clear()
    return tmp_path


def test_a_real_change_rebuilds_and_nothing_else_does(tree):
    before = build_book.digest("book", {})
    assert build_book.digest("book", {}) == before
    (tree / "tests").mkdir()
    (tree / "tests" / "test_new.py").write_text("x = 1\n")                         # not read by the build
    mo = next((tree / "locales").rglob("*.po")).with_suffix(".mo")
    mo.write_bytes(b"compiled")                                                      # made by the build
    (tree / "chapters" / ".ipynb_checkpoints").mkdir(exist_ok=True)
    (tree / "chapters" / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    assert build_book.digest("book", {}) == before
    assert build_book.digest("book", {"execute": "cache"}) != before                 # other options
    seen = {before}
    for path in [next((tree / "locales").rglob("*.po")), tree / "tools" / "book" / "sphinx_lectorch.py",
                 tree / "chapters" / "00_napkin_math.ipynb", tree / "lectorch" / "__init__.py", tree / "_toc.yml",
                 next((tree / "vendor").rglob("*.js"))]:
        path.write_bytes(path.read_bytes() + b"\n")
        now = build_book.digest("book", {})
        assert now not in seen, f"a change of {path.relative_to(tree)} does not rebuild"
        seen.add(now)
    (tree / "chapters" / "11_new.ipynb").write_text("{}")                            # a new file
    assert build_book.digest("book", {}) not in seen


def test_only_the_books_tools_rebuild_it(tree):
    before = build_book.digest("book", {})
    for name in ("gpu/gpu_check.py", "gpu/carried.txt", "gpu/gpu_rehearsal.py"):  # no page reads them
        (tree / "tools" / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / "tools" / name).write_text((ROOT / "tools" / name).read_text() + "\n# edited\n")
    assert build_book.digest("book", {}) == before
    page_code = tree / "tools" / "book" / "sphinx_lectorch.py"
    page_code.write_text(page_code.read_text() + "\n")
    assert build_book.digest("book", {}) != before


def _tools_modules(*paths: str) -> dict[str, Path]:
    """The Python modules under ``paths`` (files or folders of tools/), by the name they are imported by."""
    found = {}
    for path in paths:
        top = ROOT / path
        found.update((p.stem, p) for p in ([top] if top.is_file() else top.rglob("*.py")) if p.suffix == ".py")
    return found


def test_the_books_tools_import_only_the_books_tools():
    import ast

    book = _tools_modules(*build_book.BOOK_TOOLS)
    tools = _tools_modules("tools")
    for name, path in sorted(book.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        assert imported & set(tools) <= set(book), f"{path.relative_to(ROOT)} imports " \
            f"{sorted(imported & set(tools) - set(book))}, which build_book.BOOK_TOOLS leaves out: add it there, " \
            "or the book goes stale when it changes"
    for path in build_book.BOOK_TOOLS:
        assert (ROOT / path).exists(), f"build_book.BOOK_TOOLS names {path}, which is not there"


def test_the_gettext_templates_do_not_depend_on_the_translations(tree):
    before = build_book.digest("gettext", {})
    po = next((tree / "locales").rglob("*.po"))
    po.write_bytes(po.read_bytes() + b"\n")
    assert build_book.digest("gettext", {}) == before


def test_ensure_builds_once_reuses_and_stamps_only_a_success(tree):
    first = build_book.ensure("fake")
    assert not first.reused and first.stamp["warnings"] == ["WARNING: a warning"] and len(CALLS) == 1
    again = build_book.ensure("fake")
    assert again.reused and again.path == first.path and len(CALLS) == 1
    (tree / "_config.yml").write_text((tree / "_config.yml").read_text() + "\n# edited\n")
    assert not build_book.ensure("fake").reused and len(CALLS) == 2
    assert build_book.ensure("fake", force=True).stamp is not None and len(CALLS) == 3
    failed = build_book.ensure("fake", force=True, fail=True)
    assert failed.stamp is None and build_book.read_stamp(failed.path) is None       # no stamp: rebuilt next time
    assert not build_book.ensure("fake").reused and len(CALLS) == 5


def test_warm_make_book_is_a_check_not_a_build(tree, monkeypatch, capsys):
    build_book.ensure("fake")
    monkeypatch.setattr(sys, "argv", ["build_book.py"])
    assert build_book.main(["--edition", "fake"]) == 0
    assert "is current" in capsys.readouterr().out and len(CALLS) == 1


def test_a_pin_for_another_platform_installed_later_does_not_make_the_book_stale(tree, monkeypatch):
    """JupyterLab's install (`make test` runs it after `make book`) brings cffi, which the book's
    lock pins only for PyPy: it is not one of the book's packages here."""
    (tree / "requirements.txt").write_text("cffi==2.1.1 ; implementation_name == 'pypy'\n"
                                           "colorama==0.4.6 ; sys_platform == 'win32'\n"
                                           "jinja2==3.1.6\n")
    assert build_book._locked_names(tree / "requirements.txt") == {"jinja2"}
