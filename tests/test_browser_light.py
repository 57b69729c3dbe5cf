"""A light first visit and the reader's smaller comforts, in headless Chromium: the icons drawn by one
subset webfont (no Font Awesome script), the search index only on the search page (which still
finds), the CJK font only where Chinese text is, the theme's stylesheets in one request and MathJax
only where math is, after the panels' scripts, a first visit within its budget of bytes, the napkin panel's days as precise as they need to
be (the page script and lectorch agree), no control that changes nothing, tables that fit 1280 px,
English checker notes with an English full stop, a legible GPU mark, touch targets of 44 px, and
display math that shows it scrolls. The first visit's weight and time on a slow phone profile are
measured by ``tools/book/reader_metrics.py --first-visit`` (too slow for the suite).
"""

from __future__ import annotations

import gzip
import re
import urllib.request

import pytest

import _tour
from _paths import ROOT


PHONE, DESKTOP = _tour.PHONE, _tour.DESKTOP

import book_light  # noqa: E402
import reader_metrics  # noqa: E402
import serve  # noqa: E402

#: the bytes a first visit of a chapter of tools/book/reader_metrics.py's FIRST_VISIT may transfer
FIRST_VISIT_BUDGET = 600_000
#: the subset of Noto Sans SC that a Chinese page falls back on without a system CJK font
#: (tools/book/i18n_static/lectorch-i18n.css), counted apart from the page's budget
CJK_FALLBACK = "/fonts/lectorch-cjk.woff2"
CJK_FALLBACK_BUDGET = 300_000


def _visit(browser, base: str, path: str, viewport=DESKTOP, *, touch: bool = False, wait: int = 800):
    """Open ``path`` in a fresh context: (context, page, the URLs it requested)."""
    context = browser.new_context(viewport=viewport, has_touch=touch, is_mobile=touch)
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(f"{base}/{path}", wait_until="load")
    page.wait_for_timeout(wait)
    return context, page, requested


# ---- no browser needed -------------------------------------------------------------------------

def test_the_server_compresses_text_as_a_host_does(tmp_path):
    (tmp_path / "index.html").write_text("<p>" + "napkin " * 500 + "</p>")
    (tmp_path / "font.woff2").write_bytes(b"\x00" * 1000)
    httpd = serve.start(tmp_path)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        request = urllib.request.Request(f"{url}/index.html", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(r.read()).decode().count("napkin") == 500
        with urllib.request.urlopen(f"{url}/index.html") as r:  # a client that does not ask for gzip
            assert r.headers["Content-Encoding"] is None and r.read().count(b"napkin") == 500
        request = urllib.request.Request(f"{url}/font.woff2", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request) as r:  # compressed formats go as stored
            assert r.headers["Content-Encoding"] is None and len(r.read()) == 1000
    finally:
        httpd.shutdown()
    with pytest.raises(FileNotFoundError, match="directory=.*make book"):
        serve.start(tmp_path / "missing")


@pytest.mark.parametrize("edition", _tour.EDITIONS)
def test_the_book_ships_font_awesome_once_cut_to_its_icons(book, edition):
    from fontTools.ttLib import TTFont

    out = book / edition
    static = out / "_static"
    chapter = (out / "chapters" / "05_flops_mfu.html").read_text(encoding="utf-8")
    assert "fontawesome.js" not in chapter and "searchindex.js" not in chapter
    assert "searchindex.js" in (out / "search.html").read_text(encoding="utf-8")
    solid = next((static / "vendor" / "fontawesome").rglob("fa-solid-900.woff2"))
    assert solid.stat().st_size < 20_000, "the icon font is not cut to the book's icons"
    # every icon a page or the theme's scripts name has its glyph in the cut fonts
    drawn = book_light.icon_codepoints(static, book_light.pages(out))
    fonts = [TTFont(str(f)) for f in (static / "vendor" / "fontawesome").rglob("fa-*.woff2")]
    have = set().union(*(f.getBestCmap() for f in fonts))
    assert drawn and drawn <= have, sorted(hex(c) for c in drawn - have)
    bars = 0xF0C9
    assert bars in drawn  # the sidebar button's icon


def test_a_page_head_is_bundled_in_order(tmp_path):
    """The stylesheets become one file where the first stood, url()s rewritten for its folder; each
    run of scripts loaded alike becomes one file, in order; MathJax waits for the parsed page."""
    static = tmp_path / "_static"
    (static / "styles").mkdir(parents=True)
    (static / "a.css").write_text("a{color:red}")
    (static / "styles" / "b.css").write_text("@import '../a.css';b{src:url(../f.woff2)}")
    for name in ("one.js", "two.js", "three.js", "four.js"):
        (static / name).write_text(f"window.{name[:-3]} = 1")
    page = tmp_path / "chapters" / "p.html"
    page.parent.mkdir()
    page.write_text("<html><head>\n"
                    '<link rel="stylesheet" href="../_static/a.css?v=1" />\n<script>inline()</script>\n'
                    '<link href="../_static/styles/b.css" rel="stylesheet" />\n'
                    '<script src="../_static/one.js?v=2"></script>\n<script src="../_static/two.js"></script>\n'
                    '<script>between()</script>\n<script src="../_static/three.js"></script>\n'
                    '<script async="async" src="../_static/mathjax-3.2.2/es5/tex-chtml.js?v=3"></script>\n'
                    '<script defer="defer" src="../_static/four.js"></script>\n'
                    '<script defer="defer" src="../_static/one.js"></script>\n</head><body></body></html>')
    assert book_light.bundle_page(page, static)
    head = page.read_text()
    css = re.findall(r'<link rel="stylesheet"[^>]*href="../(_static/lectorch-[0-9a-f]+\.css)"', head)
    assert len(css) == 1 and head.count("stylesheet") == 1 and head.index(css[0]) < head.index("inline()")
    assert (tmp_path / css[0]).read_text() == '@charset "UTF-8";\na{color:red}\na{color:red}b{src:url(f.woff2)}'
    scripts = re.findall(r'<script( defer="defer")? src="../(_static/[^"]+)"', head)
    assert [(d, p.startswith("_static/lectorch-")) for d, p in scripts] == [("", True), ("", False), (' defer="defer"', True)]
    assert head.index("between()") < head.index("three.js")
    assert (tmp_path / scripts[0][1]).read_text() == "window.one = 1\n;\nwindow.two = 1\n"
    assert "tex-chtml.js" in head and 'async="async"' not in head and "DOMContentLoaded" in head
    assert not book_light.bundle_page(page, static), "a second pass changes nothing"


@pytest.mark.parametrize("edition", _tour.EDITIONS)
def test_chapter_pages_link_one_stylesheet_and_math_only_where_math_is(book, edition):
    for page in sorted((book / edition / "chapters").glob("[0-9][0-9]_*.html")):
        text = page.read_text(encoding="utf-8")
        head = text[:text.index("</head>")]
        assert len(re.findall(r'<link\b[^>]*rel="stylesheet"', head)) == 1, page.name
        assert not re.search(r"<script[^>]*src=\"[^\"]*tex-chtml", head), f"{page.name} loads MathJax beside its scripts"
        math = 'class="math' in text
        assert math == ("tex-chtml.js" in head), f"{page.name}: math {math}, MathJax {not math}"


# ---- in the browser ----------------------------------------------------------------------------

#: JavaScript: each visible icon (an <i> or <span> with a fa- class): its glyph's code point as the
#: stylesheet sets it and whether the icon font that draws it loaded.
ICONS = """async () => {
  await document.fonts.ready;
  const icons = Array.from(document.querySelectorAll('i[class*="fa-"], span[class*="fa-"]'))
    .filter(e => e.checkVisibility());
  return icons.map(e => {
    const s = getComputedStyle(e, '::before');
    const family = s.fontFamily.split(',')[0].replace(/["']/g, '').trim();
    const glyph = s.content.replace(/["']/g, '');
    return {cls: e.className, glyph: glyph.codePointAt(0) || 0, width: e.getBoundingClientRect().width,
            loaded: document.fonts.check(`${s.fontWeight} 16px "${family}"`, glyph)};
  });
}"""


@pytest.mark.browser
@pytest.mark.parametrize("edition", _tour.EDITIONS)
def test_icons_draw_without_font_awesome_script(browser, base, edition):
    for viewport in (PHONE, DESKTOP):
        context, page, requested = _visit(browser, base, f"{edition}chapters/05_flops_mfu.html", viewport)
        try:
            icons = page.evaluate(ICONS)
        finally:
            context.close()
        assert not [u for u in requested if "fontawesome.js" in u or "searchindex.js" in u]
        assert icons, "no icon shown"
        broken = [i for i in icons if i["glyph"] < 0xE000 or i["width"] < 4 or not i["loaded"]]
        assert not broken, broken


@pytest.mark.browser
@pytest.mark.parametrize("edition", _tour.EDITIONS)
def test_search_loads_its_index_on_the_search_page_and_finds(browser, base, edition):
    term = "stride" if not edition else "张量"
    context, page, requested = _visit(browser, base, f"{edition}search.html?q={term}", wait=3000)
    try:
        page.wait_for_selector("#search-results ul.search li", timeout=15000)
        found = page.locator("#search-results ul.search li").count()
    finally:
        context.close()
    assert any("searchindex.js" in u for u in requested)
    assert found >= 2, f"{term}: {found} results"


@pytest.mark.browser
def test_the_cjk_font_loads_only_where_chinese_text_is(browser, base):
    """The families each page asks for (a reader without CJK fonts of their own downloads the last
    one that has the character), and what an English page downloads."""
    stack = """() => [document.body, document.querySelector('dl.glossary dt')].filter(Boolean)
      .map(e => [...new Set(getComputedStyle(e).fontFamily.split(',').map(f => f.trim().replace(/"/g, ''))
                                                .filter(f => f.startsWith('Lectorch CJK')))])"""

    def visit(path):
        context, page, requested = _visit(browser, base, path, wait=1500)
        try:
            return page.evaluate(stack), {u.rsplit("/", 1)[-1] for u in requested if "/fonts/lectorch-cjk" in u}
        finally:
            context.close()

    families, fonts = visit("chapters/03_strides_views.html")
    assert families == [["Lectorch CJK chrome"]] and fonts <= {"lectorch-cjk-chrome.woff2"}
    families, _ = visit("zh/chapters/03_strides_views.html")
    assert families == [["Lectorch CJK"]]
    families, _ = visit("chapters/reference/glossary.html")  # its terms are Chinese
    assert families == [["Lectorch CJK chrome"], ["Lectorch CJK"]]
    chrome = ROOT / "_build" / "html" / "_static" / "fonts" / "lectorch-cjk-chrome.woff2"
    if chrome.exists():
        assert chrome.stat().st_size < 20_000


#: JavaScript: set a live panel's controls by their labels and read what it shows
TYPE_INTO = """([kind, settings]) => {
  const panel = document.querySelector(`.lectorch-panel[data-live="${kind}"]`);
  const specs = JSON.parse(panel.getAttribute('data-controls'));
  return settings.map(values => {
    for (const [name, value] of Object.entries(values)) {
      const el = panel.querySelector(`[data-control="${name}"]`), spec = specs.find(s => s.name === name);
      if (el.tagName === 'SELECT') el.selectedIndex = Array.from(el.options).findIndex(o => o.text === value);
      else el.value = String(spec.labels.indexOf(value));
    }
    window.lectorchLive.update(panel);
    const r = panel.querySelector('.lp-result');
    return {numbers: JSON.parse(r.getAttribute('data-numbers')), error: r.getAttribute('data-error'),
            text: r.innerText};
  });
}"""


#: the napkin panel's days and GPU-hours, page script and lectorch (one rule)
AMOUNTS = [0.0, 2.31e-7, 0.000123, 0.0137, 0.5, 0.999, 1.0, 7.644, 76.44, 99.94, 144.2, 999.6, 18342.6, 2.5e6]


@pytest.mark.browser
def test_the_napkin_panel_shows_days_with_the_precision_they_need(browser, base):
    from lectorch.widgets import amount

    context, page, _ = _visit(browser, base, "chapters/00_napkin_math.html")
    try:
        page.wait_for_selector(".lectorch-panel[data-live='napkin'].lp-ready")
        shown = page.evaluate("(xs) => xs.map(x => window.lectorchLive.amount(x))", AMOUNTS)
        texts = page.evaluate(TYPE_INTO, ["napkin", [
            {"params": "100M", "tokens": "1B", "num_gpus": "1024"}, {}]])
    finally:
        context.close()
    assert shown == [amount(x) for x in AMOUNTS]
    small = texts[0]
    assert small["error"] is None and small["numbers"]["days"] < 0.01
    days = re.search(r"([\d.,e+-]+) days", small["text"]).group(1)
    assert days == amount(small["numbers"]["days"]) and float(days) > 0, small["text"]


@pytest.mark.browser
@pytest.mark.parametrize("edition", _tour.EDITIONS)
def test_no_panel_offers_a_control_that_changes_nothing(browser, base, edition):
    context, page, _ = _visit(browser, base, f"{edition}chapters/05_flops_mfu.html")
    try:
        page.wait_for_selector(".lectorch-panel[data-recorded='matmul'].lp-ready")
        one_choice = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.lectorch-panel select[data-control], .lectorch-panel input[type=range][data-control]'))
          .filter(e => (e.tagName === 'SELECT' ? e.options.length : Number(e.max) - Number(e.min) + 1) < 2)
          .map(e => e.getAttribute('data-control'))""")
        fixed = page.locator(".lectorch-panel[data-recorded='matmul'] .lp-fixed").all_inner_texts()
    finally:
        context.close()
    assert not one_choice
    assert any("1" in t for t in fixed), fixed  # threads: recorded at one setting, shown as text


@pytest.mark.browser
def test_tables_fit_a_desktop_and_scroll_inside_their_box_on_a_phone(browser, base):
    wide = """() => Array.from(document.querySelectorAll('article table')).map(t => {
      const box = t.closest('.pst-scrollable-table-container') || t.parentElement;
      return {over: box.scrollWidth - box.clientWidth, page: document.documentElement.scrollWidth,
              hint: getComputedStyle(box).backgroundImage.includes('gradient')}; })"""
    for viewport, fits in ((DESKTOP, True), (PHONE, False)):
        context, page, _ = _visit(browser, base, "chapters/reference/gpus.html", viewport)
        try:
            tables = page.evaluate(wide)
        finally:
            context.close()
        assert tables
        for t in tables:
            assert t["page"] <= viewport["width"]
            if fits:
                assert t["over"] <= 1, t
            else:
                assert t["hint"], t


@pytest.mark.browser
def test_checker_notes_end_in_the_page_language(browser, base):
    for edition, stop in (("", ". "), ("zh/", "。")):
        context, page, _ = _visit(browser, base, f"{edition}chapters/10_precision_scale.html", wait=300)
        try:
            notes = page.locator(".lectorch-check").evaluate_all("es => es.map(e => e.innerHTML)")
        finally:
            context.close()
        assert notes
        for note in notes:
            assert stop in note, note
            if not edition:
                assert "。" not in note, note


def _contrast(a: list[float], b: list[float]) -> float:
    def lum(rgb):
        c = [x / 255 for x in rgb[:3]]
        c = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.browser
def test_the_gpu_mark_is_legible(browser, base):
    context, page, _ = _visit(browser, base, "chapters/05_flops_mfu.html", wait=300)
    try:
        colors = page.locator(".lectorch-gpu-mark").first.evaluate(
            "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    finally:
        context.close()
    fg, bg = ([float(x) for x in re.findall(r"[\d.]+", c)] for c in colors)
    assert _contrast(fg, bg) >= 4.5, colors


@pytest.mark.browser
def test_panel_controls_are_touch_targets_on_a_phone(browser, base):
    context, page, _ = _visit(browser, base, "chapters/00_napkin_math.html", PHONE, touch=True)
    try:
        page.wait_for_selector(".lectorch-panel.lp-ready")
        small = page.evaluate("""() => Array.from(document.querySelectorAll(
            '.lectorch-panel [data-control]:is(select, input)')).filter(e => e.checkVisibility())
          .map(e => [e.getAttribute('data-control'), e.closest('label').getBoundingClientRect().height,
                     e.getBoundingClientRect().height])
          .filter(([, label, own]) => Math.max(label, own) < 44)""")
        count = page.locator(".lectorch-panel [data-control]").count()
    finally:
        context.close()
    assert count and not small, small


@pytest.mark.browser
def test_wide_equations_show_that_they_scroll(browser, base):
    context, page, _ = _visit(browser, base, "chapters/05_flops_mfu.html", PHONE, touch=True, wait=300)
    try:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('article mjx-container[display="true"]'))
          .filter(e => e.scrollWidth > e.clientWidth + 1)
          .map(e => ({overflow: getComputedStyle(e).overflowX,
                      hint: getComputedStyle(e).backgroundImage.includes('gradient')}))""")
        page_width = page.evaluate("() => document.documentElement.scrollWidth")
    finally:
        context.close()
    assert wide, "no equation is wider than a phone: this test no longer tests anything"
    assert all(w["overflow"] == "auto" and w["hint"] for w in wide), wide
    assert page_width <= PHONE["width"]


def _first_visit(browser, url: str) -> dict:
    """A first visit of ``url`` (empty cache, a phone): bytes on the wire, the stylesheets requested,
    and when MathJax was requested and the page parsed (ms, or None)."""
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes: dict[str, float] = {}
    urls: dict[str, str] = {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    styles: list[str] = []
    page.on("request", lambda r: r.resource_type == "stylesheet" and styles.append(r.url))
    try:
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        times = page.evaluate("""() => {
          const math = performance.getEntriesByType('resource').find(r => r.name.includes('tex-chtml.js'));
          return {math: math ? math.startTime : null, ready: !!document.querySelector('.lectorch-panel.lp-ready'),
                  parsed: performance.getEntriesByType('navigation')[0].domContentLoadedEventStart,
                  typeset: document.querySelectorAll('mjx-container').length}; }""")
    finally:
        context.close()
    fallback = sum(n for r, n in sizes.items() if urls.get(r, "").endswith(CJK_FALLBACK))
    return {"bytes": sum(sizes.values()) - fallback, "cjk_fallback": fallback, "styles": styles, **times}


@pytest.mark.browser
def test_a_first_visit_fits_its_budget_with_math_after_the_panels(browser, book):
    """The chapters whose first visit tools/book/reader_metrics.py times on a slow phone profile, served
    gzip-compressed as a host serves them: each within the budget of bytes (the Chinese fallback font
    apart, within its own), its stylesheets one request, MathJax fetched once the page's scripts
    (the panels') have run, and only where math is."""
    httpd = serve.start(book)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        visits = {f"{edition}chapters/{name}.html": _first_visit(browser, f"{url}/{edition}chapters/{name}.html")
                  for edition in _tour.EDITIONS for name in reader_metrics.FIRST_VISIT}
    finally:
        httpd.shutdown()
    over = {path: round(v["bytes"]) for path, v in visits.items() if v["bytes"] > FIRST_VISIT_BUDGET}
    assert not over, f"over {FIRST_VISIT_BUDGET} bytes: {over}"
    # the Chinese pages' fallback font: fetched only where the reader's system has no CJK font (every
    # Chinese desktop and phone system ships one), and only on the Chinese pages
    for path, v in visits.items():
        assert v["cjk_fallback"] <= CJK_FALLBACK_BUDGET and (path.startswith("zh/") or not v["cjk_fallback"]), (path, v)
    for path, v in visits.items():
        assert len(v["styles"]) == 1, (path, v["styles"])
        has_math = 'class="math' in (book / path).read_text(encoding="utf-8")
        assert (v["math"] is not None) == has_math, path
        if has_math:
            assert v["math"] >= v["parsed"] and v["ready"] and v["typeset"], (path, v)
