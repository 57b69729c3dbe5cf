"""Every English page loads offline in headless Chromium without errors (the 中文 pages:
test_browser_pages_zh.py, a file of its own so that another pytest-xdist worker loads them at the
same time). The chapters' errors are those of tests/_tour.py's visit, which waits for their math,
widgets and panels; the other pages load here, one after another in one tab."""

from __future__ import annotations

import pytest

import _tour

pytestmark = pytest.mark.browser


def test_every_english_page_loads_offline_without_errors(chromium, book_server, built_book, chapter_tour):
    problems = _tour.page_problems(chromium, book_server, built_book, chapter_tour(""), "")
    assert not problems, "\n".join(problems)
