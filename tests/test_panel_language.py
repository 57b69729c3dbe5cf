"""A panel in a 中文 kernel speaks Chinese: its title, control labels, word choices and the words
drawn into its figures come from the package's catalog (lectorch.i18n), like the chapters' figures;
an English kernel's panels are unchanged (PNG figures, English labels)."""

from __future__ import annotations

import base64
import html
import re

import pytest

from lectorch import i18n
from lectorch.widgets.init import init_panel
from lectorch.widgets.optim import step_memory_panel
from lectorch.widgets.train import schedule_panel

CJK = re.compile(r"[\u4e00-\u9fff]")
#: what a figure may show in Latin letters in any language: units, code and identifiers
NOT_WORDS = re.compile(r"\b(MiB|KiB|GiB|FLOPs?|Cruncher|fp32|bf16|fp16|adam|adamw|sgd|min_lr|total_steps|std|lr|dtype)\b")


@pytest.fixture(autouse=True)
def english_after(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    yield
    i18n.set_language(None)


def _figure_texts(result: str) -> list[str]:
    svgs = [base64.b64decode(s).decode("utf-8") for s in re.findall(r"data:image/svg\+xml;base64,([\w+/=]+)", result)]
    assert svgs, "the panel's figure is not an SVG image"
    return [html.unescape(t).strip() for svg in svgs for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", svg)]


@pytest.mark.parametrize("make", [init_panel, schedule_panel, lambda: step_memory_panel(batch=16, width=16, depth=2)],
                         ids=["init", "schedule", "step_memory"])
def test_a_zh_kernels_panel_has_chinese_labels_and_figure(make):
    i18n.set_language("zh_CN")
    panel = make()
    title = panel.children[0].value
    assert CJK.search(title), title
    labels = [c.description for c in panel.controls.values() if c.description]
    assert labels and all(CJK.search(label) or not re.search(r"[a-z]{3}", NOT_WORDS.sub("", label)) for label in labels), labels
    texts = [t for t in _figure_texts(panel.result.value) if t]
    assert any(CJK.search(t) for t in texts), texts
    english = [t for t in texts if not CJK.search(t) and re.search(r"[A-Za-z]{3,}", NOT_WORDS.sub("", t))]
    assert not english, f"English words left in a zh panel's figure: {english}"
    assert CJK.search(re.search(r'alt="([^"]*)"', panel.result.value).group(1))
    assert "Panel(" in repr(panel) and CJK.search(repr(panel)) is None  # what nbval compares stays English


def test_an_english_kernels_panel_is_unchanged():
    panel = init_panel()
    assert "data:image/png;base64" in panel.result.value and "image/svg" not in panel.result.value
    assert panel.controls["width"].description == "input width"
    assert all(isinstance(o, str) for o in panel.controls["scheme"].options)  # plain values, no (label, value) pairs


def test_a_translated_drop_down_keeps_its_values():
    with i18n.language("zh_CN"):
        panel = init_panel(scheme="lecun")
    assert panel.controls["scheme"].value == "lecun"
    assert panel.controls["width"].value == 256
