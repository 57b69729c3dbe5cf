"""Every chapter page of one edition, opened once in headless Chromium, and all that the browser
tests read of it: console and page errors, requests that left the book's server or failed, figures,
widgets, math, panels, solutions, code blocks, and the width at 1280 px and at 390 px.

One visit serves every test that only reads a page (tests/conftest.py's ``chapter_tour``); a test
that drives a page (typing into a panel, tapping a button) opens its own. The pages of an edition
are visited one after another in one tab, so the book's scripts load from the HTTP cache after the
first page and one renderer process serves them all (no
request routing, which would turn the cache off: the browser itself is offline, conftest's
``--host-resolver-rules``). The phone width is read after resizing the same page to 390 px
(test_browser_reader's sidebar test loads a page on a phone).

>>> facts = visit_chapters(browser, "http://127.0.0.1:8000", Path("_build/html"), "zh/")  # doctest: +SKIP
>>> facts["zh/chapters/05_flops_mfu.html"]["phone_width"]  # doctest: +SKIP
390
"""

from __future__ import annotations

import re
from pathlib import Path

PHONE, DESKTOP = {"width": 390, "height": 844}, {"width": 1280, "height": 900}
EDITIONS = ("", "zh/")  # the book's English and 中文 prefixes

#: JavaScript: what each panel of a page shows once its script ran.
PANELS = """() => Array.from(document.querySelectorAll('.lectorch-panel')).map(p => {
  const r = p.querySelector('.lp-result');
  return {live: p.dataset.live || null, recorded: p.dataset.recorded || null, snapshot: !!p.dataset.snapshot,
          ready: p.classList.contains('lp-ready'), note: (p.querySelector('.lp-note') || {}).innerText || '',
          text: r ? r.innerText.trim() : '', drawn: r ? r.querySelectorAll('svg, img, table').length : 0,
          error: r ? r.getAttribute('data-error') : null};
})"""

#: JavaScript: the page's width, its code blocks (how many scroll sideways) and display math wider
#: than its column.
FITS = """() => {
  const pres = Array.from(document.querySelectorAll('article pre')).filter(p => p.offsetParent);
  const eqs = Array.from(document.querySelectorAll('article mjx-container[display="true"]'));
  const wide = eqs.filter(e => { const m = e.querySelector('mjx-math');
                                 return m && m.getBoundingClientRect().width > e.parentElement.clientWidth + 1; });
  return {page: document.documentElement.scrollWidth, pres: pres.length,
          scrolling: pres.filter(p => p.scrollWidth > p.clientWidth + 1).length,
          wideMath: wide.map(e => e.textContent.slice(0, 60))};
}"""

#: JavaScript: what a reader sees of the GPU cells and figures, whether each predict-then-measure
#: cell shows its measurement, and what rendered (figures loaded, widgets, math, live panels).
SEEN = """() => {
  // as Playwright's is_visible: a closed <details> hides its content with content-visibility,
  // which a bounding box does not show
  const shown = e => e.checkVisibility({visibilityProperty: true});
  const images = Array.from(document.querySelectorAll('.cell_output img'));
  return {
    gpu: Array.from(document.querySelectorAll('.cell.tag_gpu')).map(c => {
      const m = c.querySelector('.lectorch-gpu-mark');
      return m && m.offsetParent !== null && m.getBoundingClientRect().width > 0 ? m.innerText : ''; }),
    figures: Array.from(document.querySelectorAll('.cell_output img:not(.lectorch-panel img)')).map(e => ({
      alt: e.alt, w: e.getBoundingClientRect().width, nw: e.naturalWidth, fig: !!e.closest('figure'),
      cap: (e.closest('figure') && e.closest('figure').querySelector('figcaption')
            ? e.closest('figure').querySelector('figcaption').innerText : '')})),
    measurements: Array.from(document.querySelectorAll('.cell.tag_predict-measure'))
      .map(c => { const o = c.querySelector('.cell_output'); return !!o && shown(o); }),
    images: images.length, broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).length,
    widgets: document.querySelectorAll('.widget-html-content, .jupyter-widgets').length,
    math: document.querySelectorAll('mjx-container').length,
    panel_count: document.querySelectorAll('.lectorch-panel').length,
    unstarted: document.querySelectorAll('.lectorch-panel[data-live]:not(.lp-ready)').length,
  };
}"""

#: JavaScript: each figure of a chapter at the phone's width: its image (path on the server), the
#: width it is shown at, its alt text, its caption, whether it is a link (tap to enlarge), and the
#: page's language.
PHONE_FIGURES = """() => Array.from(document.querySelectorAll('.cell_output figure img')).map(e => ({
  src: new URL(e.currentSrc || e.src).pathname, w: e.getBoundingClientRect().width, nw: e.naturalWidth,
  alt: e.alt, link: !!e.closest('a.lectorch-figure-link'), lang: document.documentElement.lang,
  cap: (e.closest('figure').querySelector('figcaption') || {innerText: ''}).innerText}))"""

#: JavaScript: each solution's body is hidden; after a click on every title, which bodies show.
SOLUTIONS = """async () => {
  // as Playwright's is_visible: a closed <details> hides its content with content-visibility,
  // which a bounding box does not show
  const shown = e => e.checkVisibility({visibilityProperty: true});
  const solutions = Array.from(document.querySelectorAll('div.solution.dropdown'));
  const bodies = solutions.map(s => s.querySelector('section'));
  const before = bodies.map(b => !!b && shown(b));
  solutions.forEach(s => s.querySelector('.admonition-title').click());
  await new Promise(done => setTimeout(done, 50));  // sphinx-togglebutton opens on the click itself
  return {count: solutions.length, hidden: before.map(b => !b), opened: bodies.map(b => !!b && shown(b))};
}"""

#: JavaScript: the page's text a reader can click or hover, with where it came from: tooltips,
#: accessible names, the search box's placeholder, the toggle hints, buttons, drop-down items and
#: choices, and the prompts of folded parts (collected on both editions; the zh one must not be English).
CHROME = """() => {
  const found = new Set();
  const add = (kind, text) => { text = (text || '').replace(/\\s+/g, ' ').trim(); if (text) found.add(kind + ': ' + text); };
  const attrs = ['title', 'aria-label', 'data-bs-title', 'placeholder', 'data-toggle-hint'];
  // (a <nav>'s aria-label names a landmark for screen readers, nothing to click: not counted)
  for (const e of document.querySelectorAll(attrs.map(a => '[' + a + ']:not(nav)').join(', ')))
    for (const a of attrs) add(a, e.getAttribute(a));
  for (const e of document.querySelectorAll('button, summary, .dropdown-item, select option, .toggle-details__summary-text'))
    add('text', e.textContent);
  return Array.from(found);
}"""

ALL_READY = """() => Array.from(document.querySelectorAll('.lectorch-panel[data-live], .lectorch-panel[data-recorded]'))
  .every(p => p.classList.contains('lp-ready'))"""


class Watcher:
    """What goes wrong on ``page`` from now on, in ``seen``: console and page errors, requests for
    another host than ``base`` (the browser is offline: they fail), requests to ``base`` that fail.
    A request cancelled by the page's own navigation (net::ERR_ABORTED, a redirect) is not a
    failure. A tab that visits page after page calls :meth:`next` before each (a new tab per page
    starts a renderer process each time, about half a CPU-second on 2 cores, more than some pages'
    own work)."""

    def __init__(self, page, base: str):
        self.next()
        page.on("console", lambda msg: msg.type == "error" and self.seen["errors"].append(msg.text))
        page.on("pageerror", lambda err: self.seen["errors"].append(str(err)))
        page.on("request", lambda req: req.url.startswith((base, "data:", "blob:"))
                or self.seen["external"].append(req.url))
        page.on("requestfailed", lambda req: req.url.startswith(base) and req.failure != "net::ERR_ABORTED"
                and self.seen["failed"].append(req.url))

    def next(self) -> dict[str, list[str]]:
        """A fresh ``seen`` for the next page (the last page's stays with whoever holds it)."""
        self.seen = {"errors": [], "external": [], "failed": []}
        return self.seen


def all_pages(book: Path) -> list[str]:
    """Every HTML page of the book (both editions), as paths under it."""
    return sorted(p.relative_to(book).as_posix() for p in book.rglob("*.html") if "_static" not in p.parts)


def chapters(book: Path, edition: str) -> list[str]:
    """The chapter pages of ``edition`` ("" English, "zh/" Chinese), as paths under the book."""
    return sorted(f"{edition}chapters/{p.name}" for p in (book / edition / "chapters").glob("[0-9][0-9]_*.html"))


def _wait(page, how, *args, timeout: int) -> bool:
    try:
        how(*args, timeout=timeout)
        return True
    except Exception:  # playwright's TimeoutError: what did not come shows in the facts
        return False


def visit_chapter(page, watcher: Watcher, base: str, book: Path, path: str) -> dict:
    """One chapter opened at 1280 px in ``page``, the tab ``watcher`` watches: the facts the tests
    read (see the module)."""
    html = (book / path).read_text(encoding="utf-8")
    seen = watcher.next()
    page.set_viewport_size(DESKTOP)
    page.goto(f"{base}/{path}", wait_until="load")
    waited = {"math": 'class="math' not in html or _wait(page, page.wait_for_selector, "mjx-container", timeout=15000),
              "widgets": "application/vnd.jupyter.widget-view+json" not in html
              or _wait(page, page.wait_for_selector, ".widget-html-content, .jupyter-widgets", timeout=15000),
              "panels": _wait(page, page.wait_for_function, ALL_READY, timeout=10000)}
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    page.wait_for_timeout(300)  # deferred scripts report their errors; a measurement would have opened
    facts = {"waited": waited, "widget_views": html.count("application/vnd.jupyter.widget-view+json"),
             "has_math": 'class="math' in html, "panels": page.evaluate(PANELS), "fits": page.evaluate(FITS),
             **page.evaluate(SEEN)}
    page.set_viewport_size(PHONE)  # reading the width lays the page out at 390 px
    facts["phone_width"] = page.evaluate("() => document.documentElement.scrollWidth")
    facts["phone_figures"] = page.evaluate(PHONE_FIGURES)
    page.set_viewport_size(DESKTOP)
    facts["solutions"] = page.evaluate(SOLUTIONS)
    facts["chrome"] = page.evaluate(CHROME)  # after the clicks: the hints of opened solutions too
    return {**facts, **seen}


def visit_chapters(browser, base: str, book: Path, edition: str) -> dict[str, dict]:
    """Every chapter of ``edition``, one after another in one tab: {path: visit_chapter's facts}."""
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        watcher = Watcher(page, base)
        return {path: visit_chapter(page, watcher, base, book, path) for path in chapters(book, edition)}
    finally:
        context.close()


def visit_pages(browser, base: str, paths: list[str], *, settle_ms: int = 300) -> dict[str, dict]:
    """Pages that only have to load, one after another in one tab, each settled ``settle_ms``
    after its load: {path: {"errors", "external", "failed"}}."""
    found = {}
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        watcher = Watcher(page, base)
        for path in paths:
            found[path] = watcher.next()
            page.goto(f"{base}/{path}", wait_until="load")
            page.wait_for_timeout(settle_ms)  # deferred scripts report their errors
    finally:
        context.close()
    return found


def page_problems(browser, base: str, book: Path, tour: dict[str, dict], edition: str) -> list[str]:
    """What went wrong on the pages of ``edition`` ("" English, "zh/" Chinese): its chapters' as
    ``tour`` (visit_chapters' facts) saw them, and its other pages', loaded here."""
    mine = [path for path in all_pages(book) if path.startswith("zh/") == (edition == "zh/")]
    numbered = {path for path in mine if re.match(rf"{edition}chapters/\d\d_", path)}
    assert set(tour) == numbered, "the tour left out or added a chapter"
    seen = {**tour, **visit_pages(browser, base, [path for path in mine if path not in tour])}
    return [f"{path}: errors={facts['errors']} external={facts['external']} failed={facts['failed']}"
            for path, facts in seen.items() if facts["errors"] or facts["external"] or facts["failed"]]


def open_page(browser, base: str, path: str, viewport: dict, *, touch: bool = False):
    """``path`` opened in a context of its own at ``viewport`` (a phone's touch when ``touch``),
    settled half a second: (context, page)."""
    context = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)
    # offline: the browser resolves no host but 127.0.0.1 (tests/conftest.py's CHROMIUM_FLAGS)
    page = context.new_page()
    page.goto(f"{base}/{path}", wait_until="load")
    page.wait_for_timeout(500)
    return context, page


class Visit:
    """One page opened offline: console errors, page errors, failed and external requests.

    In a context of its own, or in ``context`` (pages of one context share its HTTP cache: the
    book's scripts load once). Nothing is routed, which would turn that cache off: the browser is
    offline (tests/conftest.py's ``--host-resolver-rules``), and a request for another host is
    recorded in ``external``."""

    def __init__(self, browser, base: str, path: str, *, settle_ms: int = 1000, context=None):
        self.path = path
        self.own_context = context is None
        self.context = browser.new_context() if context is None else context
        self.page = self.context.new_page()
        seen = Watcher(self.page, base).seen
        self.errors, self.external, self.failed = seen["errors"], seen["external"], seen["failed"]
        self.page.goto(f"{base}/{path}", wait_until="load")
        self.page.wait_for_timeout(settle_ms)  # let deferred scripts (widgets, MathJax) run and report errors

    def close(self):
        self.page.close()
        if self.own_context:
            self.context.close()
