"""The reader's book in headless Chromium, both editions: navigation on a phone and a desktop, pages
that fit the screen, translated headings that stay headings, and the language switch that keeps the
section. The worker's one browser (tests/conftest.py) and one visit of each chapter for every check
that only reads it (tests/_tour.py, conftest's ``chapter_tour``) keep it cheap.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

import _tour  # noqa: E402  (tests/ is on sys.path)

PHONE, DESKTOP = _tour.PHONE, _tour.DESKTOP
EDITIONS = _tour.EDITIONS


_chapters = _tour.chapters


_open = _tour.open_page


VISIBLE_CHAPTER_LINKS = """() => Array.from(document.querySelectorAll('nav.bd-docs-nav a.reference'))
  .filter(a => { const r = a.getBoundingClientRect(), s = getComputedStyle(a);
                 return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && r.right > 0 && r.left < innerWidth; })
  .length"""


def _visible(page, selector: str):
    buttons = page.locator(selector)
    shown = [buttons.nth(i) for i in range(buttons.count()) if buttons.nth(i).is_visible()]
    assert shown, f"no visible {selector} button"
    return shown[0]


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_sidebar_buttons_work_on_a_phone_and_a_desktop(browser, base, book, edition):
    path = f"{edition}chapters/05_flops_mfu.html"
    chapters = len(_chapters(book, edition))
    # phone: tapping ≡ opens the chapter list as a dialog; tapping ☰ opens the page's contents
    context, page = _open(browser, base, path, PHONE, touch=True)
    try:
        assert page.evaluate(VISIBLE_CHAPTER_LINKS) == 0
        _visible(page, ".primary-toggle").tap()
        page.wait_for_timeout(400)
        assert page.evaluate("() => document.getElementById('pst-primary-sidebar-modal').open")
        assert page.evaluate(VISIBLE_CHAPTER_LINKS) >= chapters
        page.keyboard.press("Escape")
        page.wait_for_timeout(300)
        _visible(page, ".secondary-toggle").tap()
        page.wait_for_timeout(400)
        assert page.evaluate("() => document.getElementById('pst-secondary-sidebar-modal').open")
        assert page.locator("#pst-secondary-sidebar-modal nav.page-toc a").first.is_visible()
    finally:
        context.close()
    # desktop: the chapter list is shown; ≡ hides it, and a second click brings it back
    context, page = _open(browser, base, path, DESKTOP)
    try:
        assert page.evaluate(VISIBLE_CHAPTER_LINKS) >= chapters
        toggle = _visible(page, ".primary-toggle")
        toggle.click()
        page.wait_for_timeout(600)
        assert page.evaluate(VISIBLE_CHAPTER_LINKS) == 0
        toggle.click()
        page.wait_for_timeout(600)
        assert page.evaluate(VISIBLE_CHAPTER_LINKS) >= chapters
    finally:
        context.close()


def test_the_language_switch_keeps_the_section(browser, base, book):
    for source, target in (("chapters/05_flops_mfu.html", "zh/chapters/05_flops_mfu.html"),
                           ("zh/chapters/06_backward_6x.html", "chapters/06_backward_6x.html")):
        context, page = _open(browser, base, source, DESKTOP)
        try:
            anchor = page.evaluate("() => document.querySelectorAll('article section[id]')[2].id")
            page.goto(f"{base}/{source}#{anchor}")
            page.locator(".lectorch-lang-switch a").click()
            page.wait_for_load_state("load")
            assert page.url.endswith(f"{target}#{anchor}"), page.url
            assert page.locator(f"section[id='{anchor}']").count() == 1
        finally:
            context.close()


@pytest.mark.parametrize("edition", EDITIONS)
def test_pages_fit_a_phone_and_a_desktop(book, chapter_tour, edition):
    pages = _chapters(book, edition)
    problems, pres, scrolling = [], 0, 0
    seen = chapter_tour(edition)  # FITS at 1280 px once the math is typeset; the width resized to 390 px
    assert sorted(seen) == pages
    for path in pages:
        facts = seen[path]["fits"]
        pres, scrolling = pres + facts["pres"], scrolling + facts["scrolling"]
        if facts["wideMath"]:
            problems.append(f"{path}: display math wider than the column at 1280 px: {facts['wideMath']}")
        if seen[path]["phone_width"] > PHONE["width"]:
            problems.append(f"{path}: {seen[path]['phone_width']} px wide at {PHONE['width']} px")
    assert scrolling <= 0.10 * pres, f"{scrolling} of {pres} code blocks scroll sideways at 1280 px"
    assert not problems, "\n".join(problems)


def test_glue_bookkeeping_is_hidden_from_the_reader(book):
    for edition in EDITIONS:
        for path in _chapters(book, edition):
            page = (book / path).read_text(encoding="utf-8")
            inputs = re.findall(r'<div class="cell_input docutils container">(.*?)</div>\s*</div>', page, re.S)
            assert inputs, path
            shown = [re.sub(r"<[^>]+>", "", block) for block in inputs]
            assert not [s for s in shown if re.search(r"^glue\(", s, re.M)], f"{path} shows glue(...) calls"


def test_every_translated_heading_renders_as_a_heading(book):
    """A heading whose translation exists is rendered in Chinese, as a heading (h1–h6), with its
    contents-list entry; "1. 浮点数…" once parsed as a list and the heading stayed English."""
    from babel.messages.pofile import read_po

    import i18n

    def headings(page: str) -> list[str]:
        found = re.findall(r"<h([1-6])[^>]*>(.*?)</h\1>", page, re.S)
        return [html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text))).replace("#", "").strip()
                for _, text in found]

    problems, checked = [], 0
    for name, po in i18n.catalogs().items():
        english_page, chinese_page = book / f"{name}.html", book / "zh" / f"{name}.html"
        if not english_page.exists():
            continue
        with open(po, "rb") as f:
            catalog = {m.id: m.string for m in read_po(f) if m.id and m.string and m.string != m.id}
        english = headings(english_page.read_text(encoding="utf-8"))
        chinese_html = chinese_page.read_text(encoding="utf-8")
        chinese = set(headings(chinese_html))
        for heading in english:
            message = catalog.get(heading.replace("\\", ""))
            if message is None:
                continue
            checked += 1
            if heading in chinese:
                problems.append(f"{name}: {heading!r} stays English")
    assert checked > 50
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("edition", EDITIONS)
def test_predict_then_measure_keeps_the_measurement_collapsed(chapter_tour, edition):
    """The measurement of a predict-then-measure exercise starts collapsed below its question."""
    found = 0
    for path, facts in chapter_tour(edition).items():  # read 300 ms after the load at the earliest
        found += len(facts["measurements"])
        assert not any(facts["measurements"]), f"{path}: a measurement shows before the reader predicts"
    assert found >= 3


def test_wide_sliders_have_a_number_box_that_reaches_every_value(browser, base, book):
    """01's tensor-bytes panel: its text suggests a 49152 × 12288 matrix, which a slider of a few
    hundred pixels over 1–65 536 cannot land on; its number boxes can."""
    context, page = _open(browser, base, "chapters/01_precision.html", DESKTOP)
    try:
        panel = page.locator(".lectorch-panel[data-live='tensor_bytes']")
        page.wait_for_function("() => document.querySelector(\".lectorch-panel[data-live='tensor_bytes'].lp-ready\")")
        for name, value in (("rows", 49152), ("cols", 12288)):
            box = panel.locator(f"input.lp-number-box[data-readout='{name}']")
            box.fill(str(value))
            box.press("Enter")
            box.dispatch_event("change")
        values = panel.locator(".lp-result").get_attribute("data-values")
        assert '"rows": 49152' in values.replace(":", ": ").replace(":  ", ": ") or '"rows":49152' in values, values
        assert "12288" in values
        assert panel.locator("[data-control='rows']").input_value() == "49152"
    finally:
        context.close()


#: Latin text that is not English prose: names, units, code and file kinds a Chinese page keeps.
NOT_ENGLISH = re.compile(
    r"\b(GPU|CPU|CUDA|Colab|PDF|GitHub|PyTorch|lectorch|LeCun|Xavier|Kaiming|Glorot|SGD|AdaGrad|RMSProp|"
    r"AdamW?|MFU|FLOPs?|HBM|dtype|einsum|einops|ipynb|pdf)\b|\.[a-z_]+\(.*?\)|[A-Za-z_]*\d[\w.]*|[A-Z]{2,}")
#: The language switch's own label and tooltip are English on purpose (they lead to the English page).
LANGUAGE_SWITCH = {"text: English", "title: Read this page in English"}


def english_chrome(chrome: list[str]) -> list[str]:
    """The entries of _tour.CHROME ("kind: text") that are English: no Chinese, and an English word
    of three letters or more once names, code and units are left out.

    >>> english_chrome(["title: 链接到此标题", "placeholder: Search this book...", "aria-label: dtype"])
    ['placeholder: Search this book...']
    """
    found = []
    for entry in chrome:
        text = entry.split(": ", 1)[1]
        if entry in LANGUAGE_SWITCH or re.search(r"[\u3400-\u9fff\uff08-\uff1b]", text):
            continue
        if re.search(r"[A-Za-z]{3,}", NOT_ENGLISH.sub(" ", text)):
            found.append(entry)
    return found


def test_no_chinese_page_shows_english_chrome(chapter_tour):
    """What a reader clicks or hovers on a zh chapter page (tooltips, the search box, the solutions'
    toggle hints, the folded cells' prompts, buttons, the panels' choices) is Chinese."""
    english = {}
    for path, facts in chapter_tour("zh/").items():
        if english_chrome(facts["chrome"]):
            english[path] = english_chrome(facts["chrome"])
    assert not english, "English chrome on zh pages:\n" + "\n".join(f"{p}: {e}" for p, e in english.items())


def test_the_chinese_search_finds_every_page_with_the_term(browser, base, book):
    """优化器 is cut 优化 + 器 by the index's segmenter: the query is split into the index's terms."""
    term = "优化器"

    def article(path: Path) -> str:
        found = re.search(r"<article.*?</article>", path.read_text(encoding="utf-8"), re.S)
        return re.sub(r"<[^>]+>", "", found.group(0)) if found else ""

    pages = sorted(p.relative_to(book / "zh").as_posix() for p in (book / "zh").rglob("*.html")
                   if p.name not in ("search.html", "genindex.html") and term in article(p))
    assert len(pages) >= 5, pages
    context, page = _open(browser, base, f"zh/search.html?q={term}", DESKTOP)
    try:
        page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0"
                               " && !document.querySelector('#search-progress')?.innerText.includes('…')",
                               timeout=20000)
        page.wait_for_timeout(500)
        found = {re.sub(r"[?#].*", "", href) for href in page.eval_on_selector_all(
            "#search-results li a", "links => links.map(a => a.getAttribute('href'))")}
    finally:
        context.close()
    missing = [p for p in pages if p not in found]
    assert not missing, f"the zh search for {term} misses {len(missing)} of {len(pages)} pages: {missing}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_on_a_phone_the_contents_close_after_a_jump(browser, base, edition):
    context, page = _open(browser, base, f"{edition}chapters/05_flops_mfu.html", PHONE, touch=True)
    try:
        _visible(page, ".secondary-toggle").tap()
        page.wait_for_timeout(400)
        assert page.evaluate("() => document.getElementById('pst-secondary-sidebar-modal').open")
        link = page.locator("#pst-secondary-sidebar-modal nav.page-toc a").nth(2)
        target = link.get_attribute("href")
        link.tap()
        page.wait_for_timeout(400)
        assert not page.evaluate("() => document.getElementById('pst-secondary-sidebar-modal').open"), \
            "the page's contents stay open over the section after a tap on it"
        assert page.evaluate("() => location.hash") == target
    finally:
        context.close()
