"""The theme's stylesheet cut to the rules the book uses (tools/book/book_css.py) draws the book as the
whole one did: the computed style of every element (and of its ::before and ::after) of a few pages,
with the cut bundle and with the full one it was cut from, on a phone with its menu open and on a
desktop, in light, dark and print, the same; and the cutting itself on small cases.
"""

from __future__ import annotations

import re

import pytest

import _tour

import book_css
import serve

#: pages of both editions with the most kinds of parts: panels, math, exercises, admonitions, search
PAGES = ("chapters/05_flops_mfu.html", "zh/chapters/08_optimizers_memory.html", "zh/search.html",
         "chapters/reference/glossary.html")
#: what a reader sees of an element: its box, and its style and its ::before's and ::after's in the
#: properties that draw (every property of every element takes minutes on a long page)
DRAWN = ["display", "position", "visibility", "opacity", "z-index", "color", "background-color",
         "background-image", "border-top-color", "border-top-width", "border-right-width", "border-bottom-width",
         "border-left-width", "border-left-color", "border-top-left-radius", "box-shadow", "outline-style",
         "font-family", "font-size", "font-weight", "font-style", "line-height", "text-align",
         "text-decoration-line", "text-transform", "white-space", "overflow-x", "overflow-y", "transform",
         "content", "cursor", "list-style-type", "vertical-align", "padding-top", "padding-left", "margin-top",
         "margin-left", "width", "height", "max-width", "flex-direction", "justify-content", "align-items",
         "filter", "float", "clear", "top", "left"]
STYLES = """(props) => { window.scrollTo(0, 0);  // positions as drawn, not as scrolled (the theme scrolls its sidebar when its script runs)
  for (const e of document.querySelectorAll('*')) if (e.scrollTop || e.scrollLeft) e.scrollTop = e.scrollLeft = 0;
  // a <br>'s box is a caret position, which the line's glyphs' arrival moves (its line's box is compared)
  return Array.from(document.querySelectorAll('*')).filter(e => e.tagName !== 'BR').map(e => {
  const r = e.getBoundingClientRect(), parts = [e.tagName + '.' + e.getAttribute('class'), r.x, r.y, r.width, r.height];
  for (const pseudo of [null, '::before', '::after']) {
    const s = getComputedStyle(e, pseudo);
    for (const p of props) parts.push(p + ':' + s.getPropertyValue(p));
  }
  return parts.join(';');
}); }"""


def test_a_rule_stays_when_any_selector_can_match():
    used = book_css.Used(frozenset({"nav", "show", "page", "check"}), frozenset({"fa-"}))
    css = ('@charset "UTF-8";.gone{color:red}.nav.show:hover,.gone{color:blue}'
           "html[data-theme=dark] .nav::before{content:'x'}a:not(.gone){x:y}.fa-check{a:b}.fa-times{a:b}"
           "@media print{.gone{x:y}.page{x:z}}@media (min-width:960px){.gone{x:y}}"
           "@font-face{font-family:F}@keyframes spin{to{x:y}}#page{x:y}#gone{x:y}.gone .nav{x:y}")
    assert book_css.prune_css(css, used).split("\n") == [
        '@charset "UTF-8";', ".nav.show:hover,.gone{color:blue}", 'html[data-theme=dark] .nav::before{content:"x"}',
        "a:not(.gone){x:y}", ".fa-check{a:b}", "@media print{.page{x:z}}", "@font-face{font-family:F}",
        "@keyframes spin{to{x:y}}", "#page{x:y}"]


def test_a_script_adds_classes_it_names_as_strings(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.js").write_text(
        'e.classList.add("show");document.querySelector(".only-looked-for");i.classList.add("fa-"+icon);'
        'var css=".fa-moon:before{content:x}"')
    (tmp_path / "_static" / "fontawesome.js").write_text('x.add("fa-bars")')  # a script no page loads
    page = tmp_path / "p.html"
    page.write_text('<i class="nav"></i><script type="application/vnd.jupyter.widget-state+json">'
                    '{"icon": "check"}</script>')
    used = book_css.used_words(tmp_path, [page])
    assert all(used.has(n) for n in ("show", "nav", "fa-check"))
    assert not any(used.has(n) for n in ("only-looked-for", "fa-moon", "fa-bars"))


def _styles(page, *, printed: bool) -> dict[str, list[str]]:
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise")
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.wait_for_timeout(300)
    # every font the page declares loaded, whether layout has asked for it yet or not: the Chinese
    # pages' CJK fallback is otherwise swapped in at a moment that differs from load to load
    page.evaluate("() => Promise.all([...document.fonts].map(f => f.load().catch(() => null)))"
                  ".then(() => document.fonts.ready).then(() => true)")
    # and laid out again with them: the swap is applied in a later frame, and a measurement taken
    # at once can still see the fallback's line breaks (zh ch08's sidebar title, one load in two)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
    page.wait_for_timeout(200)
    page.evaluate("() => { const h = document.documentElement; h.style.fontSize = '17px'; h.offsetHeight;"
                  " h.style.fontSize = ''; return h.offsetHeight; }")
    states = {}
    for theme in ("light", "dark"):
        page.evaluate(f"() => document.documentElement.dataset.theme = '{theme}'")
        states[theme] = page.evaluate(STYLES, DRAWN)
    if printed:
        page.emulate_media(media="print")
        states["print"] = page.evaluate(STYLES, DRAWN)
        page.emulate_media(media="screen")
    return states


def _visit(browser, url: str, viewport: dict, full: dict[str, str] | None) -> dict[str, list[str]]:
    """The styles of the page at ``url`` (:func:`_styles`); with ``full`` ({cut name: full file}) the
    full bundle served in the cut one's place."""
    phone = viewport == _tour.PHONE
    context = browser.new_context(viewport=viewport, has_touch=phone, is_mobile=phone, reduced_motion="reduce")
    try:
        served = []

        def serve_full(path: str):
            return lambda route: (served.append(path), route.fulfill(path=path, content_type="text/css"))

        for cut, path in (full or {}).items():
            context.route(f"**/_static/{cut}", serve_full(path))
        page = context.new_page()
        page.goto(url, wait_until="load")
        # no style caught halfway through a transition (the copy button's fades in 0.3 s)
        page.add_style_tag(content="*, ::before, ::after { transition: none !important; animation: none !important; }")
        assert len(served) == len(full or {}), (url, "the full bundle was not served", served)
        states = _styles(page, printed=not phone)
        if phone:  # the theme's menus, opened as a reader opens them (its scripts add the classes)
            for menu in ("primary", "secondary"):
                toggle = page.locator(f".{menu}-toggle:visible")
                if not toggle.count():  # a page with no contents of its own (search, glossary)
                    continue
                toggle.first.tap()
                page.wait_for_timeout(500)
                page.evaluate("() => document.fonts.ready.then(() => true)")
                states[menu] = page.evaluate(STYLES, DRAWN)
                page.keyboard.press("Escape")
                page.wait_for_timeout(300)
        return states
    finally:
        context.close()


def _changed(before: dict[str, list[str]], after: dict[str, list[str]]) -> dict[tuple[str, int], str]:
    """{(state, element index): what differs} between two visits' styles."""
    changed = {}
    for state in before:
        assert len(before[state]) == len(after[state]), (state, "the pages differ in elements")
        for i, (b, a) in enumerate(zip(before[state], after[state])):
            if a != b:
                changed[state, i] = f"{b.split(';')[0]}: {sorted(set(a.split(';')) ^ set(b.split(';')))[:6]}"
    return changed


@pytest.mark.browser
@pytest.mark.rehearsal  # every element's drawn style on four pages in six views: minutes (`make rehearse`, CI)
@pytest.mark.parametrize("viewport", [_tour.PHONE, _tour.DESKTOP], ids=["phone", "desktop"])
def test_the_cut_stylesheet_draws_the_pages_as_the_full_one(browser, book, viewport):
    httpd = serve.start(book)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        for path in PAGES:
            html = (book / path).read_text(encoding="utf-8")
            static = (book / path).parent / re.search(r'href="([^"]*_static/)lectorch-[0-9a-f]{12}\.css"', html).group(1)
            cut = re.search(r'_static/(lectorch-[0-9a-f]{12}\.css)"', html).group(1)
            source = re.search(r"book_css: (\S+) cut", (static / cut).read_text(encoding="utf-8")[:300])
            assert source, f"{path} links to {cut}, which is not cut"
            full = static.resolve() / source.group(1)
            assert full.stat().st_size > 2 * (static / cut).stat().st_size, "the cut bundle is not much smaller"
            url = f"{base}/{path}"
            changed = _changed(_visit(browser, url, viewport, {cut: str(full)}), _visit(browser, url, viewport, None))
            for _ in range(2):
                if not changed:
                    break
                # two loads of one Chinese page can lay out the previous/next links differently (their
                # CJK characters in the theme's system-ui, found by the system's fallback; seen twice
                # in a row on a busy machine): a difference the cut stylesheet makes shows every time
                again = _changed(_visit(browser, url, viewport, {cut: str(full)}), _visit(browser, url, viewport, None))
                changed = {k: v for k, v in changed.items() if k in again}
            assert not changed, (path, len(changed), list(changed.items())[:5])
    finally:
        httpd.shutdown()
