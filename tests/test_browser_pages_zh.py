"""Every 中文 page loads offline in headless Chromium without errors (the English pages:
test_browser_pages.py, whose worker loads them at the same time)."""

from __future__ import annotations

import pytest

import _tour

pytestmark = pytest.mark.browser


def test_every_chinese_page_loads_offline_without_errors(chromium, book_server, built_book, chapter_tour):
    problems = _tour.page_problems(chromium, book_server, built_book, chapter_tour("zh/"), "zh/")
    assert not problems, "\n".join(problems)
