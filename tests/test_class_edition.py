"""The class edition of the book (``make book EDITION=class``, tools/book/class_edition.py) holds no
solution: not in its pages, not in ``_sources`` or the notebooks its download buttons give; every
chapter is there in English and 中文, with each exercise's stub."""

from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path

import nbformat
import pytest
import yaml

from _paths import ROOT

pytestmark = pytest.mark.book
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def class_book(book_edition) -> Path:
    """The class edition (English; 中文 in its zh/), built strictly once per run and reused while
    its sources are unchanged (tests/conftest.py's ``book_edition``, tools/book/build_book.py)."""
    return book_edition("class")


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]


def solution_lines(chapter: Path) -> list[str]:
    """The lines of the chapter's solutions that appear nowhere else in it (not in a stub, not in
    the lesson's cells or their outputs): what must not reach a class."""
    nb = nbformat.read(chapter, as_version=4)
    solutions = [c for c in nb.cells if "solution" in c.metadata.get("tags", [])]
    elsewhere = [c.source for c in nb.cells if c not in solutions]
    elsewhere += [c.metadata["lectorch"]["stub"] for c in solutions]
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell not in solutions else []:
            elsewhere += [output.get("text", "")] + [v for v in output.get("data", {}).values() if isinstance(v, str)]
    elsewhere = "\n".join(elsewhere)
    lines = {line.strip() for c in solutions for line in c.source.splitlines()}
    return sorted(line for line in lines if len(line) >= 12 and line not in elsewhere)


def page_text(page: Path) -> str:
    """A built page's text as a reader sees it (tags dropped, entities decoded, code contiguous)."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_every_page_is_built_in_english_and_chinese(class_book):
    for doc in toc_files():
        assert (class_book / f"{doc}.html").exists(), f"{doc}.html is missing from the class edition"
        zh = class_book / "zh" / f"{doc}.html"
        assert zh.exists(), f"zh/{doc}.html is missing from the class edition"
        assert 'lang="zh' in zh.read_text(encoding="utf-8")[:2000], f"zh/{doc}.html is not the Chinese page"


@pytest.mark.parametrize("language", ["", "zh"])
def test_no_solution_reaches_the_pages(class_book, language):
    book = class_book / language
    leaks = []
    for chapter in CHAPTERS:
        page = book / "chapters" / f"{chapter.stem}.html"
        html = page.read_text(encoding="utf-8")
        assert 'class="solution' not in html, f"{page}: a solution drop-down"
        assert "application/vnd.lectorch.check+json" not in html, f"{page}: a checker's verdict"
        text = page_text(page)
        leaks += [f"{page.name}: {line}" for line in solution_lines(chapter) if line in text]
    assert not leaks, "solution code in the class edition's pages:\n" + "\n".join(leaks)


@pytest.mark.parametrize("language", ["", "zh"])
def test_the_downloadable_notebooks_are_the_student_notebooks(class_book, language):
    book = class_book / language
    for chapter in CHAPTERS:
        page = book / "chapters" / f"{chapter.stem}.html"
        links = set(re.findall(r'href="([^"]+\.ipynb)"', page.read_text(encoding="utf-8")))
        assert links, f"{page}: no download link for the notebook"
        assert not [u for u in links if re.match(r"(https?:)?//", u)], f"{page} links a notebook elsewhere: {links}"
        for link in links:
            target = (page.parent / link).resolve()
            assert target.is_relative_to(book.resolve()) and target.exists(), f"{page}: {link} is not in the book"
            text = target.read_text(encoding="utf-8")
            nb = nbformat.reads(text, as_version=4)
            assert not [c for c in nb.cells if "solution" in c.metadata.get("tags", [])], f"{target}: a solution cell"
            assert "{solution-start}" not in text
            leaks = [line for line in solution_lines(chapter) if line in text
                     or json.dumps(line)[1:-1] in text]
            assert not leaks, f"{target} holds solution code: {leaks[:3]}"
            checks = [c for c in nb.cells if c.cell_type == "code" and "lectorch.check(" in c.source]
            assert checks and not [c for c in checks if c.outputs], f"{target}: a checker cell kept its verdict"
    assert not (book / "_sources" / "grading").exists()


OWN_REPOSITORY = re.search(r"^\s*url:\s*(\S+)", (ROOT / "_config.yml").read_text().split("repository:", 1)[1],
                           re.M).group(1).rstrip("/")


def test_no_page_links_to_the_repository_or_colab(class_book):
    for page in class_book.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        for url in re.findall(r'href="([^"]+)"', html):
            # the course's own repository holds the solutions; other repositories (a cited lecture) do not
            assert not (url.startswith(OWN_REPOSITORY) or re.match(r"https?://colab\.research\.google\.com", url)), \
                f"{page.name} links {url} (the repository holds the solutions)"


@pytest.mark.parametrize("language", ["", "zh"])
def test_the_intro_and_running_page_tell_a_class_how_to_run_and_hand_in(class_book, language):
    """The intro's "Running the course" and the running page are the class's (``{only} class``):
    the notebooks from the download button, Colab by upload, the install line, the grader; not the
    self-study book's clone of the repository, `make lab` or the Colab launch button, which lead to
    the solutions."""
    for page in ("intro", "reference/running"):
        text = page_text(class_book / language / "chapters" / f"{page}.html")
        assert "git clone" not in text and "make lab" not in text, f"{page}: the class book says to clone the repository"
        assert "File → Upload notebook" in text and "pip install -q" in text, page
        if not language:
            assert "rocket" not in text and "launch button" not in text, page
    text = page_text(class_book / language / "chapters" / "intro.html")
    assert "lectorch.check(...)" in text
    if not language:
        assert "On Colab" not in text and "Your notebooks" in text and "cases you have not seen" in text


def test_every_exercise_stub_is_in_the_pages(class_book):
    for chapter in CHAPTERS:
        nb = nbformat.read(chapter, as_version=4)
        stubs = [c.metadata["lectorch"]["stub"] for c in nb.cells if "solution" in c.metadata.get("tags", [])]
        assert stubs, f"{chapter.name} has no exercise"
        for language in ("", "zh"):
            text = page_text(class_book / language / "chapters" / f"{chapter.stem}.html")
            for stub in stubs:
                first = next(line.strip() for line in stub.splitlines() if line.strip())
                assert first in text, f"{language or 'en'} {chapter.stem}: the stub {first!r} is missing"


def distinctive_answers() -> dict[str, list[str]]:
    """The plain expected values of the instructor's value and prediction exercises that are large
    enough (≥ 1e5) to be found in a page, as a page would print them: three significant figures
    (``9.58e21``) and, for a whole number, its digits."""
    import grading

    shown = {}
    for exercise_id, value in grading.expected_values(grading.load_topics()).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and abs(value) >= 1e5:
            forms = [f"{value:.3g}".replace("e+", "e")]
            if float(value).is_integer():
                forms += [str(int(value)), f"{int(value):,}"]
            shown[exercise_id] = forms
    return shown


def test_no_expected_value_of_a_graded_exercise_is_printed(class_book):
    """A lesson that computes a graded answer gives it away (chapter 05's worked example once
    computed chapter 00's exactly)."""
    answers = distinctive_answers()  # (none once every value exercise is a function of hidden cases)
    for page in sorted(class_book.rglob("chapters/*.html")):
        text = page_text(page).replace("e+", "e")
        found = [f"{exercise_id} = {form}" for exercise_id, forms in answers.items() for form in forms
                 if re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d,])", text)]
        assert not found, f"{page.relative_to(class_book)} prints a graded answer: {found}"
