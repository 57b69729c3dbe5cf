"""The notebooks a reader works in (tools/book/plain_notebook.py): what the book's download and Colab
buttons give and what `make student` writes, in English and 中文. Plain Jupyter Markdown (no MyST),
the stub in each exercise's cell with its check cell under it, the solution folded away below the
check (self-study) or absent (class), the language in the metadata; the Chinese notebook runs like
its English twin, every check saying "not implemented" on the stubs."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import nbformat
import pytest

from _paths import ROOT
import plain_notebook

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
LANGUAGES = ("en", "zh_CN")
CJK = re.compile(r"[\u4e00-\u9fff]")


@functools.cache
def _reader(chapter: Path, language: str, solutions: str = "fold"):
    """The reader notebook (one conversion per run: the tests that change it take a copy)."""
    return plain_notebook.reader_notebook(nbformat.read(chapter, as_version=4), chapter.name, language,
                                          solutions=solutions)


def _check_calls(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code" and "lectorch.check(" in c.source]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_reader_notebook_is_plain_jupyter_with_stubs_and_folded_solutions(chapter, language):
    reference = nbformat.read(chapter, as_version=4)
    nb = _reader(chapter, language)
    assert not plain_notebook.myst_left(nb), f"MyST left in {chapter.name} ({language}): {plain_notebook.myst_left(nb)[:5]}"
    assert nb.metadata["lectorch"]["language"] == language
    solutions = [c for c in reference.cells if "solution" in c.metadata.get("tags", [])]
    stubs = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
    assert [c.source for c in stubs] == [c.metadata["lectorch"]["stub"] for c in solutions]
    assert not [c for c in nb.cells if "solution" in c.metadata.get("tags", [])], "a solution left as code"
    assert _check_calls(nb) == _check_calls(reference), "a check cell went missing or changed"
    assert all(not c.outputs for c in nb.cells if c.cell_type == "code")
    # each solution folded in a Markdown cell right under its exercise's check cell, never run
    for stub, solution in zip(stubs, solutions):
        after = nb.cells[nb.cells.index(stub) + 1:]
        check = next(i for i, c in enumerate(after) if "lectorch.check(" in c.source)
        assert not [c for c in after[:check] if "exercise" in c.metadata.get("tags", [])]
        folded = after[check + 1]
        assert folded.cell_type == "markdown" and folded.source.startswith("<details>")
        assert solution.source.strip() in folded.source
    # the same cells as the English notebook: code is one source; the setup cell (the first code
    # cell) of a translated notebook ends by setting the checkers' language
    english = _reader(chapter, "en")
    setup = plain_notebook.setup_line(language)
    code = [(c.cell_type, c.source if c.cell_type == "code" else "") for c in nb.cells]
    first = next(i for i, (kind, _) in enumerate(code) if kind == "code")
    assert code[first][1].endswith(setup)
    code[first] = ("code", code[first][1].removesuffix(setup))
    assert code == [(c.cell_type, c.source if c.cell_type == "code" else "") for c in english.cells]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chinese_notebook_reads_in_chinese(chapter):
    """Every prose block of the zh notebook is the catalog's Chinese: a paragraph without CJK is
    code, math, a table of code or a name (the chapter's English share is counted in tools/)."""
    nb = _reader(chapter, "zh_CN")
    english = plain_notebook.english_prose(nb)
    assert not english, f"{chapter.name}: English paragraphs in the zh notebook: {english[:3]}"


def test_the_class_notebook_has_no_solution():
    chapter = CHAPTERS[3]
    nb = _reader(chapter, "zh_CN", solutions="drop")
    text = json.dumps(nb.cells, ensure_ascii=False)
    reference = nbformat.read(chapter, as_version=4)
    for cell in (c for c in reference.cells if "solution" in c.metadata.get("tags", [])):
        assert cell.source not in text
    assert "<details>" not in text
    with pytest.raises(ValueError, match="solutions="):
        _reader(chapter, "en", solutions="show")


def test_markdown_becomes_plain():
    page = plain_notebook.Page("chapters/03_strides_views", "en", {"n": "'4.19 MB'", "x": "2.5"}, 3)
    text = ("A {term}`view <View · 视图>` of {glue:text}`n` and {glue:text}`x:.0f`.\n\n"
            ":::{warning}\nCareful.\n:::\nAfter.")
    assert plain_notebook.render(text, page) == "A view of 4.19 MB and 2.\n\n> **Warning**\n>\n> Careful.\n\nAfter."
    with pytest.raises(ValueError, match="directive"):
        plain_notebook.render("```{figure} x.png\n```", page)
    with pytest.raises(KeyError, match="glued"):
        plain_notebook.render("{glue:text}`missing`", page)


@pytest.mark.book
@pytest.mark.slow
def test_the_downloaded_notebook_runs_from_the_top_in_a_plain_kernel(built_book, tmp_path, monkeypatch):
    """The very file a chapter page's download button gives (中文), opened as a reader opens it: a
    plain kernel in an empty folder, only the course's package to import, run from the top. It runs
    like its English twin, its exercise cells hold the stubs, the folded solutions do not run, and
    every check says it is not implemented yet (a debug exercise's stub is the buggy code: it fails)."""
    from nbclient import NotebookClient

    import lectorch.exercises
    import _chapters

    chapter = CHAPTERS[3]  # every chapter's English student notebook runs in test_student_and_grading.py
    (download,) = _downloads(built_book / "zh" / "chapters" / f"{chapter.stem}.html")
    nb = nbformat.read(download, as_version=4)
    reference = nbformat.read(chapter, as_version=4)
    stubs = [c.metadata["lectorch"]["stub"] for c in reference.cells if "solution" in c.metadata.get("tags", [])]
    assert [c.source for c in nb.cells if "exercise" in c.metadata.get("tags", [])] == stubs
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(lectorch.exercises.RESULTS_ENV, str(results))
    (tmp_path / "run").mkdir()
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path / "run")}}).execute()
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["exercise"] for r in rows] == _chapters.exercise_ids(chapter)
    debug = _chapters.debug_exercises(chapter)
    assert all(r["status"] == "not implemented" or (r["exercise"] in debug and r["status"] in ("failed", "error"))
               for r in rows), rows
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert sum(r["status"] == "not implemented" for r in rows) > 0
    assert len([o for o in shown if "📝" in json.dumps(o, ensure_ascii=False)]) >= sum(
        r["status"] == "not implemented" for r in rows), "a check on a stub does not say so"


def test_the_colab_button_opens_the_branch_the_book_is_published_on():
    import yaml

    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["lectorch_pages_branch"]
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert [r for r in runs if re.search(rf"git push -f \S+ {re.escape(branch)}\s*$", r, re.M)], \
        f"no workflow step publishes the book to {branch}, where the Colab buttons look"


def _downloads(page: Path) -> list[Path]:
    links = set(re.findall(r'href="([^"]+\.ipynb)"', page.read_text(encoding="utf-8")))
    return [(page.parent / link).resolve() for link in links if not re.match(r"(https?:)?//", link)]


@pytest.mark.book
@pytest.mark.parametrize("edition", ["book", "class"])
def test_the_download_buttons_give_plain_notebooks_in_the_pages_language(book_edition, edition):
    """Opened as plain nbformat (no MyST parser), every chapter's downloaded notebook shows no MyST,
    says its language, has its stubs and check cells, and folds its solutions (self-study) or has
    none (class); its prose is the page's language."""
    book = book_edition(edition)
    for folder, language in (("", "en"), ("zh", "zh_CN")):
        for chapter in CHAPTERS:
            page = book / folder / "chapters" / f"{chapter.stem}.html"
            (target,) = _downloads(page)
            nb = nbformat.read(target, as_version=4)
            assert not plain_notebook.myst_left(nb), f"{target}: {plain_notebook.myst_left(nb)[:3]}"
            assert nb.metadata["lectorch"]["language"] == language, target
            assert [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])], target
            assert _check_calls(nb) == _check_calls(nbformat.read(chapter, as_version=4))
            folded = [c for c in nb.cells if "solution-folded" in c.metadata.get("tags", [])]
            assert bool(folded) == (edition == "book"), target
            prose = plain_notebook.visible_prose(nb)
            assert bool(CJK.search(prose)) == (language == "zh_CN"), target


@pytest.mark.book
def test_the_colab_button_opens_the_pages_reader_notebook(built_book):
    import sphinx_lectorch

    repo = sphinx_lectorch.repository_url().removeprefix("https://github.com/")
    for folder, language in (("", "en"), ("zh", "zh_CN")):
        for chapter in CHAPTERS:
            page = built_book / folder / "chapters" / f"{chapter.stem}.html"
            html = page.read_text(encoding="utf-8")
            colab = re.findall(r'href="https://colab\.research\.google\.com/github/([^"]+)"', html)
            path = sphinx_lectorch.student_notebook_path(f"chapters/{chapter.stem}", language)
            assert len(colab) == 1 and colab[0].startswith(f"{repo}/blob/") and colab[0].endswith(path), colab
            assert (built_book / path).exists(), f"the Colab button of {page} opens {path}, not in the book"
            (download,) = _downloads(page)
            assert download == (built_book / path).resolve(), "Colab and the download button differ"

