"""Every page of both editions loads offline in headless Chromium without errors (test_browser's
browser and server, in a file of its own: the slowest browser test runs beside the others on the
second pytest-xdist worker)."""

from __future__ import annotations

import pytest

from test_browser import Visit, all_pages, browser, server  # noqa: F401  (the same offline browser)

pytestmark = pytest.mark.browser


def test_every_page_loads_offline_without_errors(browser, server, built_book):  # noqa: F811
    problems = []
    for visit in Visit.many(browser, server, all_pages(built_book), at_once=4):  # fewer settles than 4 at once
        if visit.errors or visit.external or visit.failed:
            problems.append(f"{visit.path}: errors={visit.errors} external={visit.external} failed={visit.failed}")
    assert not problems, "\n".join(problems)
