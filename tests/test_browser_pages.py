"""Every page of both editions loads offline in headless Chromium without errors (test_browser's
browser and server, in a file of its own: the slowest browser test runs beside the others on the
second pytest-xdist worker). The chapters' errors are those of tests/_tour.py's visit, which waits
for their math, widgets and panels; the other pages load here, four at a time in one context."""

from __future__ import annotations

import re

import pytest

import _tour
from test_browser import all_pages, browser, server  # noqa: F401  (the same offline browser)

pytestmark = pytest.mark.browser


def test_every_page_loads_offline_without_errors(browser, server, built_book, chapter_tour):  # noqa: F811
    problems = []
    chapters = {path: seen for edition in ("", "zh/") for path, seen in chapter_tour(edition).items()}
    assert set(chapters) == {path for path in all_pages(built_book) if re.match(r"(zh/)?chapters/\d\d_", path)}
    for path, seen in chapters.items():
        if seen["errors"] or seen["external"] or seen["failed"]:
            problems.append(f"{path}: errors={seen['errors']} external={seen['external']} failed={seen['failed']}")
    others = [path for path in all_pages(built_book) if path not in chapters]
    for path, seen in _tour.visit_pages(browser, server, others).items():
        if seen["errors"] or seen["external"] or seen["failed"]:
            problems.append(f"{path}: errors={seen['errors']} external={seen['external']} failed={seen['failed']}")
    assert not problems, "\n".join(problems)
