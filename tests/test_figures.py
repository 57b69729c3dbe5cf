"""The chapters' figures as stored in the notebooks: SVG with their words as text, readable on a
phone (smallest text >= 11 px when shrunk to a 390 px screen's column), and every word and alt
text in the Chinese catalog, so that the Chinese book draws them in Chinese (the browser tests
check the built pages: tests/test_browser.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lectorch.plots import MIN_TEXT_PX, _text, smallest_text_px

from _paths import ROOT
import sphinx_lectorch_i18n

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def figures(path: Path):
    """(cell, output) of each figure a chapter stores."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            if any(k.startswith("image/") for k in output.get("data", {})):
                yield cell, output


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_figures_are_svg_with_text_readable_on_a_phone(path: Path):
    problems = []
    for i, (cell, output) in enumerate(figures(path), start=1):
        svg = output["data"].get("image/svg+xml")
        if svg is None:
            problems.append(f"figure {i}: not SVG ({sorted(output['data'])})")
            continue
        svg = "".join(svg)
        if "<text" not in svg:
            problems.append(f"figure {i}: its words are drawn as paths, not text")
        px = smallest_text_px(svg)
        if px < MIN_TEXT_PX:
            problems.append(f"figure {i}: smallest text {px} px on a phone (< {MIN_TEXT_PX})")
        image = cell["metadata"].get("mystnb", {})
        if not image.get("figure", {}).get("caption") or len(image.get("image", {}).get("alt", "")) < 15:
            problems.append(f"figure {i}: no caption or no alt text in the cell's metadata (mystnb)")
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_every_figure_word_and_alt_text_is_in_the_catalog():
    """The words of every stored figure (their templates) and every alt text are messages of
    ``_ui.po`` (extracted from the notebooks by tools/book/i18n.py; tests/test_translation.py checks
    that each is translated), and a figure translated with the catalog changes its words."""
    from babel.messages.pofile import read_po

    with open(ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "_ui.po", "rb") as f:
        catalog = {m.id: m.string for m in read_po(f) if m.id and not m.context}
    _ = sphinx_lectorch_i18n.ui_gettext("zh_CN")
    problems = []
    for path in CHAPTERS:
        for cell, output in figures(path):
            texts = output.get("metadata", {}).get("image/svg+xml", {}).get(_text.METADATA_KEY, [])
            if not texts:
                problems.append(f"{path.name}: a figure without its marked words (lectorch.plots.tr)")
                continue
            problems += [f"{path.name}: not in _ui.po: {t!r}" for t in _text.templates(texts) if t not in catalog]
            svg = "".join(output["data"]["image/svg+xml"])
            if _text.translate_svg(svg, texts, _) == svg:
                problems.append(f"{path.name}: a figure the catalog leaves in English")
            alt = cell["metadata"]["mystnb"]["image"]["alt"]
            if alt not in catalog:
                problems.append(f"{path.name}: alt text not in _ui.po: {alt[:60]!r}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


def test_a_zh_kernel_draws_chinese_figures(monkeypatch):
    from lectorch.plots import figure_svg
    from lectorch.plots.napkin import bytes_per_param_figure

    english, meta = figure_svg(bytes_per_param_figure(), language="en")
    chinese, _meta = figure_svg(bytes_per_param_figure(), language="zh_CN")
    assert ">bytes per parameter<" in english and meta[_text.METADATA_KEY]
    assert ">bytes per parameter<" not in chinese and re.search(r">[^<]*[\u4e00-\u9fff][^<]*<", chinese)
