"""The panels of the static book in headless Chromium, both editions: every panel shows a result
and none is empty; measured panels switch between the results recorded when the notebook ran and
say which machine recorded them; the computed panels accept what their text suggests; the
Chinese edition labels them in Chinese. What a panel shows once loaded comes from tests/_tour.py's
one visit per chapter and edition; a test that sets controls opens its page.
"""

from __future__ import annotations

import json
import math
import re

import pytest

import _tour
from lectorch.widgets import PANEL_MIME
from _paths import ROOT

pytestmark = pytest.mark.browser


EDITIONS = _tour.EDITIONS


def _recordings() -> dict[str, dict]:
    """The recorded grids the chapters' stored outputs carry, by panel kind."""
    out = {}
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                kind = output.get("data", {}).get(PANEL_MIME, {}).get("recorded")
                if kind:
                    out[kind] = json.loads(output["metadata"][PANEL_MIME]["recording"])
    return out


@pytest.fixture(scope="module")
def panels(chapter_tour) -> dict[str, list[dict]]:
    """What every panel of every chapter page of both editions shows once loaded (tests/_tour.py's
    PANELS, from its one visit per page)."""
    return {path: seen["panels"] for edition in EDITIONS for path, seen in chapter_tour(edition).items()}


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_panel_shows_a_result_and_all_are_live(panels, edition):
    shown = [(path, p) for path, ps in panels.items() if path.startswith(f"{edition}chapters/") for p in ps]
    assert len(shown) == 14, [path for path, _ in shown]
    empty = [f"{path}: {p}" for path, p in shown if not p["text"] and not p["drawn"]]
    assert not empty, "\n".join(empty)
    working = [p for _, p in shown if (p["live"] or p["recorded"]) and p["ready"]]
    assert len(working) == 14, [f"{path}: {p['live'] or p['recorded'] or 'snapshot'}" for path, p in shown]
    assert {p["recorded"] for p in working if p["recorded"]} == {"matmul", "init", "loss_curves", "step_cost"}
    assert {"float_bits", "schedule", "einsum", "views"} <= {p["live"] for p in working}
    for path, p in shown:
        assert p["error"] is None, p  # every panel starts at a setting it can show
        if edition:  # what the page script writes is in the page's language (tr() and _ui.po)
            assert re.search(r"[\u4e00-\u9fff]", p["text"]), f"{path}: the panel's result is not Chinese: {p['text'][:200]}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_recorded_panels_name_the_machine_and_the_date(panels, edition):
    recordings = _recordings()
    for path, ps in panels.items():
        for p in ps:
            if p["recorded"] and path.startswith(f"{edition}chapters/"):
                rec = recordings[p["recorded"]]
                assert rec["machine"] in p["note"] and rec["date"] in p["note"], (path, p["note"])
                if edition:
                    assert re.search(r"[\u4e00-\u9fff]", p["note"]), f"{path}: the panel's note is not Chinese"


#: JavaScript: set a recorded panel's controls to every recorded setting in turn; what it shows.
EVERY_SETTING = """([kind, settings]) => {
  const panel = document.querySelector(`.lectorch-panel[data-recorded="${kind}"]`);
  const specs = JSON.parse(panel.getAttribute('data-controls'));
  return settings.map(values => {
    for (const spec of specs) {
      const el = panel.querySelector(`[data-control="${spec.name}"]`);
      if (spec.kind === 'checkbox') el.checked = values[spec.name];
      else el.value = String(spec.values.findIndex(v => JSON.stringify(v) === JSON.stringify(values[spec.name])));
    }
    window.lectorchLive.update(panel);
    const r = panel.querySelector('.lp-result');
    return {values: JSON.parse(r.getAttribute('data-values')), numbers: JSON.parse(r.getAttribute('data-numbers')),
            error: r.getAttribute('data-error'), text: r.innerText};
  });
}"""

RECORDED_PAGES = {"matmul": "05_flops_mfu", "init": "07_init_models", "loss_curves": "08_optimizers_memory",
                  "step_cost": "10_precision_scale"}


def test_recorded_panels_switch_between_every_recorded_setting(browser, base, book):
    recordings = _recordings()
    assert set(recordings) == set(RECORDED_PAGES)
    for kind, chapter in RECORDED_PAGES.items():
        rec = recordings[kind]
        assert 2 <= len(rec["results"]) <= 100, f"{kind}: keep the recorded grid small"
        context, page = _tour.open_page(browser, base, f"chapters/{chapter}.html",
                                                  _tour.DESKTOP)
        try:
            page.wait_for_selector(f".lectorch-panel[data-recorded='{kind}'].lp-ready", timeout=10000)
            shown = page.evaluate(EVERY_SETTING, [kind, [row["values"] for row in rec["results"]]])
        finally:
            context.close()
        texts = set()
        for row, got in zip(rec["results"], shown):
            assert got["values"] == row["values"], (kind, got["values"], row["values"])
            if "error" in row["numbers"]:
                assert got["error"] == row["numbers"]["error"], kind
            else:
                assert got["error"] is None and got["numbers"] == row["numbers"], (kind, row["values"], got["error"])
            texts.add(got["text"])
        assert len(texts) == len(rec["results"]), f"{kind}: two settings show the same result"


#: JavaScript: type into a live panel's controls (by name) and read what it shows.
TYPE_INTO = """([kind, settings]) => {
  const panel = document.querySelector(`.lectorch-panel[data-live="${kind}"]`);
  return settings.map(values => {
    for (const [name, value] of Object.entries(values)) {
      const el = panel.querySelector(`[data-control="${name}"]`);
      if (el.tagName === 'SELECT') el.selectedIndex = Array.from(el.options).findIndex(o => o.text === String(value));
      else el.value = String(value);
    }
    window.lectorchLive.update(panel);
    const r = panel.querySelector('.lp-result');
    return {values: JSON.parse(r.getAttribute('data-values')), numbers: JSON.parse(r.getAttribute('data-numbers')),
            error: r.getAttribute('data-error'), text: r.innerText};
  });
}"""


def _agree(kind: str, shown: list[dict]) -> list[str]:
    from lectorch.widgets.live import numbers

    problems = []
    for got in shown:
        want = numbers(kind, **got["values"])
        if got["numbers"] is None or set(want) != set(got["numbers"]) or any(
                not math.isclose(want[k], got["numbers"][k], rel_tol=1e-12) for k in want):
            problems.append(f"{kind} {got['values']}: page={got['numbers']} ({got['error']}) lectorch={want}")
    return problems


def test_the_computed_panels_accept_what_their_text_suggests(browser, base, book):
    # 01: "Try 1e-8 in fp16 and bf16, 65519 and 65520 in fp16, 1000 in both fp8 formats, and 0.1 everywhere"
    from lectorch.dtypes import FLOAT_DTYPES, short_name

    floats = [{"value": 1e-8, "dtype": d} for d in ("fp16", "bf16")] + [
        {"value": v, "dtype": "fp16"} for v in (65519, 65520)] + [
        {"value": 1000, "dtype": d} for d in ("fp8_e4m3", "fp8_e5m2")] + [
        {"value": 0.1, "dtype": short_name(d)} for d in FLOAT_DTYPES]
    # 04: `...=2x3` for the ellipsis, the compact style (refused, saying why), three operands pairwise
    einsums = [{"pattern": "... i, ... i -> ...", "sizes": "...=2x3 i=4"},
               {"pattern": "i j, j k, k l -> i l", "sizes": "i=2 j=3 k=4 l=5"},
               {"pattern": "bsh,bth->bst", "sizes": "b=2 s=3 h=4 t=5"}]
    problems = []
    for chapter, kind, settings in (("01_precision", "float_bits", floats), ("04_einsum_einops", "einsum", einsums)):
        context, page = _tour.open_page(browser, base, f"chapters/{chapter}.html",
                                                  _tour.DESKTOP)
        try:
            page.wait_for_selector(f".lectorch-panel[data-live='{kind}'].lp-ready", timeout=10000)
            shown = page.evaluate(TYPE_INTO, [kind, settings])
        finally:
            context.close()
        if kind == "einsum":
            ellipsis, chain, compact = shown
            assert ellipsis["numbers"] == {"flops": 48, "output_rank": 2, "out0": 2, "out1": 3}, ellipsis
            assert chain["numbers"]["flops"] == 128 and "pairwise" in chain["text"], chain
            assert compact["numbers"] is None and "separate dimensions by spaces" in compact["error"], compact
            shown = shown[:2]
        else:
            texts = {got["text"] for got in shown}
            assert len(texts) == len(shown)
            assert "underflows" in shown[0]["text"] and "underflows" not in shown[1]["text"]
            assert "overflows to inf" in shown[3]["text"] and "overflows" not in shown[2]["text"].split("from")[0]
        problems += _agree(kind, shown)
    assert not problems, "\n".join(problems)


def test_the_zh_footer_is_chinese(book):
    """The theme's "© Copyright …." line has no zh_CN catalog: the Chinese edition takes it from _ui.po."""
    page = (book / "zh" / "chapters" / "05_flops_mfu.html").read_text(encoding="utf-8")
    line = re.search(r'<p class="copyright">(.*?)</p>', page, re.S).group(1)
    assert "版权所有" in line and "Copyright" not in line, line
