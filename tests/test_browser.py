"""The built book in headless Chromium with the network off: pages load without console errors,
no external URL is requested, math typesets, widgets and figures render (what a page shows once
loaded comes from tests/_tour.py's one visit per chapter; a test that drives a page opens its own).

Needs Debian's `chromium` (installed by .ci/run): tests/conftest.py's ``chromium``, one per pytest-xdist
worker. Without it the tests skip with a reason, unless LECTORCH_REQUIRE_BROWSER=1 (set in CI), where a
missing browser fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import _tour  # tests/ is on sys.path

pytestmark = pytest.mark.browser


def chapter_pages(built_book: Path) -> list[str]:
    return _tour.chapters(built_book, "")


@pytest.mark.parametrize("edition", ("", "zh/"))
def test_every_chapter_renders_its_figures_widgets_math_and_solutions(chapter_tour, edition):
    problems = []
    for path, seen in chapter_tour(edition).items():
        if seen["images"] == 0:
            problems.append(f"{path}: no figure")
        if seen["broken"]:
            problems.append(f"{path}: {seen['broken']} figure(s) failed to load")
        if seen["widget_views"] == 0 and seen["panel_count"] == 0:
            problems.append(f"{path}: no widget or panel")
        if seen["widget_views"] and not (seen["waited"]["widgets"] and seen["widgets"]):
            problems.append(f"{path}: the widget manager rendered no widget")
        if seen["unstarted"]:
            problems.append(f"{path}: a live panel did not start")
        if seen["has_math"] and not (seen["waited"]["math"] and seen["math"]):
            problems.append(f"{path}: MathJax did not typeset")
        solutions = seen["solutions"]
        if solutions["count"] < 3:
            problems.append(f"{path}: fewer than three solutions")
        for i, (hidden, opened) in enumerate(zip(solutions["hidden"], solutions["opened"]), start=1):
            if not hidden:
                problems.append(f"{path}: solution {i} is not hidden")
            elif not opened:
                problems.append(f"{path}: solution {i} does not open on click")
        if seen["errors"] or seen["external"]:
            problems.append(f"{path}: errors={seen['errors']} external={seen['external']}")
    assert not problems, "\n".join(problems)


def test_search_finds_a_chapter(browser, server):
    visit = _tour.Visit(browser, server, "search.html?q=napkin")
    try:
        visit.page.wait_for_selector("#search-results li", timeout=15000)
        assert visit.page.locator("#search-results li").count() > 0
    finally:
        visit.close()


# ---------------------------------------------------------------------------------- live panels
LIVE_TRIALS = 50

#: JavaScript: set a live panel's controls at random (or to `fixed`), recompute, read what it shows.
RANDOM_SETTINGS = """([index, trials, fixed]) => {
  const panel = document.querySelectorAll('.lectorch-panel[data-live]')[index];
  const specs = JSON.parse(panel.getAttribute('data-controls'));
  const out = [];
  for (let t = 0; t < trials; t++) {
    for (const spec of specs) {
      const el = panel.querySelector(`[data-control="${spec.name}"]`);
      if (fixed && fixed[t] && spec.name in fixed[t]) { el.value = fixed[t][spec.name]; continue; }
      if (el.type === 'range') {
        const lo = Number(el.min), hi = Number(el.max), step = Number(el.step) || 1;
        const n = Math.round((hi - lo) / step);
        el.value = String(lo + step * Math.floor(Math.random() * (n + 1)));
      } else if (el.tagName === 'SELECT') {
        el.selectedIndex = Math.floor(Math.random() * el.options.length);
      } else if (el.type === 'checkbox') {
        el.checked = Math.random() < 0.5;
      }
    }
    window.lectorchLive.update(panel);
    const result = panel.querySelector('.lp-result');
    const readouts = Array.from(panel.querySelectorAll('[data-readout]')).map(o => o.value !== undefined ? o.value : o.textContent);  // a wide slider's readout is a number box
    out.push({values: JSON.parse(result.getAttribute('data-values')),
              numbers: JSON.parse(result.getAttribute('data-numbers')),
              error: result.getAttribute('data-error'), readouts: readouts});
  }
  return out;
}"""


def _einsum_settings(rng, trials: int) -> list[dict]:
    """Random valid einsum patterns and sizes (typed into the text boxes)."""
    out = []
    for _ in range(trials):
        dims = rng.sample(["b", "h", "i", "j", "k", "s1", "s2", "d"], rng.randint(1, 5))
        operands = [rng.sample(dims, rng.randint(1, len(dims))) for _ in range(rng.randint(1, 3))]
        used = sorted({d for op in operands for d in op})
        output = rng.sample(used, rng.randint(0, len(used)))
        pattern = ", ".join(" ".join(op) for op in operands) + " -> " + " ".join(output)
        sizes = " ".join(f"{d}={rng.randint(1, 512)}" for d in used)
        out.append({"pattern": pattern, "sizes": sizes})
    return out


def _views_settings(rng, trials: int) -> list[dict]:
    """Random shapes, permutations and indices for the views panel (typed into its text boxes; its
    follow-up operation is a drop-down, drawn at random by the page)."""
    out = []
    for _ in range(trials):
        ndim = rng.randint(1, 4)
        shape = [rng.randint(1, 4) for _ in range(ndim)]
        dims = rng.sample(range(ndim), ndim)
        index = []
        for _ in range(rng.randint(0, ndim)):
            kind = rng.random()
            if kind < 0.3:
                index.append(str(rng.randint(-3, 3)))  # an int (out of range sometimes: both must refuse)
            elif kind < 0.4:
                index.append("...")
            else:
                start, stop = rng.choice(["", str(rng.randint(-4, 4))]), rng.choice(["", str(rng.randint(-4, 5))])
                step = rng.choice(["", "", "1", "2", "3"])
                index.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        out.append({"shape": ", ".join(map(str, shape)), "dims": "" if rng.random() < 0.3 else ", ".join(map(str, dims)),
                    "index": ", ".join(index)})
    return out


#: live panels whose text boxes the test fills (the others' controls are drawn at random by the page)
TYPED_SETTINGS = {"einsum": _einsum_settings, "views": _views_settings}


def test_live_panels_agree_with_lectorch(browser, server, built_book):
    """Each live panel, at LIVE_TRIALS random control settings, shows lectorch's numbers."""
    import math
    import random

    from lectorch.widgets.live import numbers

    rng = random.Random(13)
    seen: dict[str, int] = {}
    problems = []
    context = browser.new_context()  # one for the pages: the scripts load once
    for path in chapter_pages(built_book):
        if "data-live=" not in (built_book / path).read_text(encoding="utf-8"):
            continue
        visit = _tour.Visit(browser, server, path, settle_ms=0, context=context)
        try:
            page = visit.page
            page.wait_for_selector(".lectorch-panel.lp-ready", timeout=10000)
            kinds = page.eval_on_selector_all(".lectorch-panel[data-live]", "els => els.map(e => e.dataset.live)")
            for index, kind in enumerate(kinds):
                fixed = TYPED_SETTINGS[kind](rng, LIVE_TRIALS) if kind in TYPED_SETTINGS else None
                for trial in page.evaluate(RANDOM_SETTINGS, [index, LIVE_TRIALS, fixed]):
                    values = trial["values"]
                    try:
                        want = numbers(kind, **values)
                    except (ValueError, TypeError) as err:
                        if trial["error"] is None:
                            problems.append(f"{path} {kind} {values}: lectorch refuses ({err}), the page does not")
                        continue
                    got = trial["numbers"]
                    if got is None:
                        problems.append(f"{path} {kind} {values}: the page refuses ({trial['error']}), lectorch does not")
                        continue
                    for key, value in want.items():
                        shown = got.get(key)
                        if not isinstance(shown, (int, float)) or not math.isclose(shown, value, rel_tol=1e-9,
                                                                                    abs_tol=1e-12):
                            problems.append(f"{path} {kind} {values}: {key} page={got.get(key)} lectorch={value}")
                    if any(not r.strip() for r in trial["readouts"]):
                        problems.append(f"{path} {kind} {values}: an empty slider readout")
                    seen[kind] = seen.get(kind, 0) + 1
            if visit.errors or visit.external:
                problems.append(f"{path}: errors={visit.errors} external={visit.external}")
        finally:
            visit.close()
    context.close()
    assert not problems, "\n".join(problems[:30])
    expected = {"napkin", "tensor_bytes", "transfer", "einsum", "roofline", "backprop", "step_memory", "views"}
    assert expected <= set(seen), f"live panels not found: {expected - set(seen)}"
    assert min(seen.values()) >= LIVE_TRIALS // 2, f"too few valid settings tried: {seen}"


def test_napkin_panel_follows_its_controls(browser, server, built_book):
    """Choosing the RTX 4090 and 700M parameters changes the result; the readouts are round."""
    visit = _tour.Visit(browser, server, "chapters/00_napkin_math.html")
    try:
        page = visit.page
        page.wait_for_selector(".lectorch-panel.lp-ready", timeout=10000)
        panel = page.locator(".lectorch-panel[data-live=napkin]")
        before = panel.locator(".lp-result").inner_text()
        panel.locator("[data-control=gpu]").select_option(label="RTX 4090")
        specs = json.loads(panel.get_attribute("data-controls"))
        params = next(s for s in specs if s["name"] == "params")
        panel.locator("[data-control=params]").evaluate(
            "(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input')); }", params["values"].index(7e8))
        after = panel.locator(".lp-result").inner_text()
        assert after != before
        assert panel.locator("[data-readout=params]").inner_text() == "700M"
        assert "6.3e+24" not in after
        box = panel.locator(".lp-control").first
        label, control = box.locator(".lp-label").bounding_box(), box.locator("input, select").bounding_box()
        assert label["x"] + label["width"] <= control["x"] + 1, "a label runs into its control"
    finally:
        visit.close()



@pytest.fixture(scope="module")
def page_facts(chapter_tour) -> dict[str, dict]:
    """Each English chapter page at 1280 px wide, offline: its GPU cells' marks and its figures
    (tests/_tour.py's SEEN)."""
    return chapter_tour("")


#: JavaScript: the controls, note, readiness and result of every panel of a page.
PANEL_STATE = """() => Array.from(document.querySelectorAll('.lectorch-panel')).map(p => ({
  enabled: p.querySelectorAll('[data-control]:not([disabled])').length, ready: p.classList.contains('lp-ready'),
  snapshot: !!p.dataset.snapshot, note: p.querySelector('.lp-note').innerText,
  result: p.querySelector('.lp-result').innerText}))"""


def test_a_panel_that_cannot_run_in_the_page_is_a_disabled_snapshot(browser, server):
    """Every panel of the book runs in the page, so the snapshot form (a panel with no computation in
    the page and no recording) is tried on a small page made by the book's own renderer
    (sphinx_lectorch.panel_html) with the book's page script: beside a live panel that starts, the
    snapshot keeps its controls disabled, says it is a snapshot, and shows its stored result."""

    import ipywidgets as w

    import sphinx_lectorch
    from lectorch.widgets import control_spec

    snapshot = sphinx_lectorch.panel_html(
        {"live": None, "title": "squares"},
        {"device": "CPU", "controls": [control_spec("n", w.IntSlider(value=2, min=1, max=9))], "result_model": "m1"},
        {"m1": {"state": {"value": "<b>n² = 4</b>"}}})
    live = sphinx_lectorch.panel_html(
        {"live": "views", "title": "views"},
        {"device": "CPU", "controls": [control_spec(n, w.Text(value=v)) for n, v in
                                       (("shape", "4, 4"), ("dims", "1, 0"), ("index", ""))] +
         [control_spec("then", w.Dropdown(options=["(nothing)"]))]}, {})
    page_html = ('<!DOCTYPE html><html><head><meta charset="utf-8"><script src="_static/lectorch-live-data.js"></script>'
                 '<script src="_static/lectorch-live.js" defer></script></head>'
                 f"<body>{snapshot}{live}</body></html>")
    url = f"{server}/_lectorch_snapshot_test.html"
    context = browser.new_context()
    context.route("**/*", lambda route: route.fulfill(body=page_html, content_type="text/html") if route.request.url == url
                  else route.continue_() if route.request.url.startswith(server) else route.abort())
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(url, wait_until="load")
        page.wait_for_selector(".lectorch-panel.lp-ready", timeout=10000)
        shot, running = page.evaluate(PANEL_STATE)
    finally:
        context.close()
    assert not errors, errors
    assert running["ready"] and running["enabled"] == 4 and "strides" in running["result"], running
    assert shot["snapshot"] and not shot["ready"] and shot["enabled"] == 0, shot
    assert "snapshot of a run on CPU" in shot["note"] and "run the notebook to explore" in shot["note"], shot
    assert shot["result"] == "n² = 4", shot


def test_gpu_cells_carry_a_visible_mark(page_facts):
    marks = [(path, m) for path, facts in page_facts.items() for m in facts["gpu"]]
    assert marks, "no cell tagged gpu in the book"
    unmarked = [path for path, m in marks if m != "GPU"]
    assert not unmarked, f"GPU cells without a visible mark on: {sorted(set(unmarked))}"


def test_figures_have_readable_text_real_alt_text_and_captions(page_facts):
    import re

    problems = []
    for path, facts in page_facts.items():
        for i, f in enumerate(facts["figures"], start=1):
            where = f"{path} figure {i}"
            alt = f["alt"].strip()
            path_like = re.search(r"\.(png|jpe?g|svg)$", alt) or alt.startswith(("../", "_images", "/"))
            if len(alt) < 15 or path_like or alt.lower() in {"figure", "image"}:
                problems.append(f"{where}: alt text is not a description: {alt!r}")
            if not f["fig"] or not re.match(r"Fig\. \d+\.\d+", f["cap"]):
                problems.append(f"{where}: not in a numbered, captioned figure")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("edition", ["", "zh/"], ids=["en", "zh"])
def test_figures_on_a_phone_are_readable_captioned_and_in_the_page_language(chapter_tour, built_book, edition):
    """At 390 px wide, in both editions: every figure is an SVG whose smallest text is drawn at
    >= 11 px (its font sizes read from the served file, scaled by the width it is shown at), is a
    link to its image (tap to enlarge), has a numbered caption and alt text in the page's
    language; the zh figures show Chinese words and no words the English one shows."""
    import re

    from lectorch.plots import MIN_TEXT_PX

    problems = []
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for path, facts in chapter_tour(edition).items():
        assert facts["phone_figures"], f"{path}: no figure"
        for i, f in enumerate(facts["phone_figures"], start=1):
            where = f"{path} figure {i}"
            svg_path = built_book / f["src"].lstrip("/")
            if svg_path.suffix != ".svg":
                problems.append(f"{where}: not SVG ({svg_path.name})")
                continue
            svg = svg_path.read_text(encoding="utf-8")
            view = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg).group(1))
            smallest = min(float(x) for x in re.findall(r"font-size: ?([\d.]+)px", svg)) * f["w"] / view
            if smallest < MIN_TEXT_PX:
                problems.append(f"{where}: smallest text {smallest:.1f} px at 390 px (shown {f['w']:.0f} px wide)")
            if not f["link"]:
                problems.append(f"{where}: not a link to its image (tap to enlarge)")
            if not re.match(r"(Fig\.|图) ?\d+\.\d+", f["cap"]):
                problems.append(f"{where}: no numbered caption: {f['cap'][:40]!r}")
            words = re.findall(r">([^<]+)</text>", svg)
            if edition:
                if not cjk.search(f["alt"]) or not cjk.search(f["cap"]):
                    problems.append(f"{where}: alt text or caption not in Chinese: {f['alt'][:40]!r}")
                if not any(cjk.search(w) for w in words):
                    problems.append(f"{where}: no Chinese word in the figure")
                if f["lang"] != "zh-CN":
                    problems.append(f"{where}: page lang {f['lang']!r}")
            elif cjk.search(f["alt"] + f["cap"] + "".join(words)):
                problems.append(f"{where}: Chinese in the English figure")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_a_tapped_figure_opens_enlarged_and_closes(browser, server):
    """On a phone, a tap on a figure shows it over the page at least the screen's width, and a
    second tap closes it; the page itself never scrolls sideways."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(f"{server}/chapters/00_napkin_math.html", wait_until="load")
        figure = page.locator(".cell_output figure img").first
        shown = figure.bounding_box()["width"]
        figure.tap()
        big = page.locator(".lectorch-zoom img")
        big.wait_for(timeout=3000)
        assert big.bounding_box()["width"] >= max(shown * 1.5, 370)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page.locator(".lectorch-zoom").tap()
        assert page.locator(".lectorch-zoom").count() == 0
    finally:
        context.close()


def test_code_wraps_when_printed(browser, server):
    """The print stylesheet wraps long code lines, so print/PDF loses nothing to the right."""
    visit = _tour.Visit(browser, server, "chapters/05_flops_mfu.html", settle_ms=0)
    try:
        visit.page.emulate_media(media="print")
        clipped = visit.page.eval_on_selector_all(
            "pre", "els => els.filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).length")
        assert clipped == 0, f"{clipped} code blocks still overflow in print"
    finally:
        visit.close()
