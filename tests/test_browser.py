"""The built book in headless Chromium with the network off: pages load without console errors,
no external URL is requested, math typesets, widgets and figures render.

Needs Debian's `chromium` (installed by .ci/run). Without it the tests skip with a reason, unless
LECTORCH_REQUIRE_BROWSER=1 (set in CI), where a missing browser fails.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("LECTORCH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed; `apt-get install chromium` to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def server(built_book: Path):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Visit:
    """One page opened offline: console errors, page errors, failed and external requests."""

    def __init__(self, browser, base: str, path: str):
        self.errors: list[str] = []
        self.external: list[str] = []
        self.failed: list[str] = []
        self.context = browser.new_context()
        self.context.route("**/*", self._route(base))
        self.page = self.context.new_page()
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.on("requestfailed", lambda req: req.url.startswith(base) and self.failed.append(req.url))
        self.page.goto(f"{base}/{path}", wait_until="networkidle")

    def _route(self, base: str):
        def handle(route):
            url = route.request.url
            if url.startswith(base) or url.startswith("data:") or url.startswith("blob:"):
                route.continue_()
            else:
                self.external.append(url)
                route.abort()

        return handle

    def close(self):
        self.context.close()


def chapter_pages(built_book: Path) -> list[str]:
    return sorted(p.relative_to(built_book).as_posix() for p in (built_book / "chapters").glob("*.html"))


def test_every_page_loads_offline_without_errors(browser, server, built_book):
    pages = ["index.html", "search.html"] + chapter_pages(built_book)
    problems = []
    for path in pages:
        visit = Visit(browser, server, path)
        try:
            if visit.errors or visit.external or visit.failed:
                problems.append(f"{path}: errors={visit.errors} external={visit.external} failed={visit.failed}")
        finally:
            visit.close()
    assert not problems, "\n".join(problems)


def test_widget_math_and_figure_render_in_chapter_00(browser, server):
    visit = Visit(browser, server, "chapters/00_napkin_math.html")
    try:
        page = visit.page
        page.wait_for_selector(".widget-slider", timeout=15000)  # the widget manager rendered the panel
        assert page.locator(".widget-html-content").count() > 0
        page.wait_for_selector("mjx-container", timeout=15000)  # MathJax typeset offline
        images = page.locator(".cell_output img")
        assert images.count() > 0
        assert all(images.nth(i).evaluate("img => img.naturalWidth > 0") for i in range(images.count()))
    finally:
        visit.close()


def test_solution_dropdown_opens_on_click(browser, server):
    visit = Visit(browser, server, "chapters/00_napkin_math.html")
    try:
        page = visit.page
        solution = page.locator("div.solution.dropdown").first
        body = solution.locator("section").first
        assert not body.is_visible(), "the solution should start hidden"
        solution.locator(".admonition-title").first.click()
        page.wait_for_timeout(300)
        assert body.is_visible(), "clicking the title should reveal the solution"
    finally:
        visit.close()


def test_search_finds_a_chapter(browser, server):
    visit = Visit(browser, server, "search.html?q=napkin")
    try:
        visit.page.wait_for_selector("#search-results li", timeout=15000)
        assert visit.page.locator("#search-results li").count() > 0
    finally:
        visit.close()
