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

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
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
        self.page.goto(f"{base}/{path}", wait_until="load")
        self.page.wait_for_timeout(1000)  # let deferred scripts (widgets, MathJax) run and report errors

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


def all_pages(built_book: Path) -> list[str]:
    return sorted(p.relative_to(built_book).as_posix() for p in built_book.rglob("*.html") if "_static" not in p.parts)


def chapter_pages(built_book: Path) -> list[str]:
    return sorted(p.relative_to(built_book).as_posix() for p in (built_book / "chapters").glob("[0-9][0-9]_*.html"))


def test_every_page_loads_offline_without_errors(browser, server, built_book):
    problems = []
    for path in all_pages(built_book):
        visit = Visit(browser, server, path)
        try:
            if visit.errors or visit.external or visit.failed:
                problems.append(f"{path}: errors={visit.errors} external={visit.external} failed={visit.failed}")
        finally:
            visit.close()
    assert not problems, "\n".join(problems)


def test_every_chapter_renders_its_figures_widgets_math_and_solutions(browser, server, built_book):
    problems = []
    for path in chapter_pages(built_book):
        html = (built_book / path).read_text(encoding="utf-8")
        visit = Visit(browser, server, path)
        page = visit.page
        try:
            images = page.locator(".cell_output img")
            try:
                page.wait_for_selector(".cell_output img", state="attached", timeout=10000)
            except Exception:
                pass
            if images.count() == 0:
                problems.append(f"{path}: no figure")
            broken = [i for i in range(images.count()) if not images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0")]
            if broken:
                problems.append(f"{path}: {len(broken)} figure(s) failed to load")
            views = html.count("application/vnd.jupyter.widget-view+json")
            if views == 0:
                problems.append(f"{path}: no widget")
            else:
                try:
                    page.wait_for_selector(".widget-html-content, .jupyter-widgets", timeout=15000)
                except Exception:
                    problems.append(f"{path}: the widget manager rendered no widget")
            if 'class="math' in html:
                try:
                    page.wait_for_selector("mjx-container", timeout=15000)
                except Exception:
                    problems.append(f"{path}: MathJax did not typeset")
            solutions = page.locator("div.solution.dropdown")
            if solutions.count() < 3:
                problems.append(f"{path}: fewer than three solutions")
            for i in range(solutions.count()):
                body = solutions.nth(i).locator("section").first
                if body.is_visible():
                    problems.append(f"{path}: solution {i + 1} is not hidden")
                    continue
                solutions.nth(i).locator(".admonition-title").first.click()
                page.wait_for_timeout(150)
                if not body.is_visible():
                    problems.append(f"{path}: solution {i + 1} does not open on click")
            if visit.errors or visit.external:
                problems.append(f"{path}: errors={visit.errors} external={visit.external}")
        finally:
            visit.close()
    assert not problems, "\n".join(problems)


def test_search_finds_a_chapter(browser, server):
    visit = Visit(browser, server, "search.html?q=napkin")
    try:
        visit.page.wait_for_selector("#search-results li", timeout=15000)
        assert visit.page.locator("#search-results li").count() > 0
    finally:
        visit.close()
