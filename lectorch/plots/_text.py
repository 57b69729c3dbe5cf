"""The words drawn into the course's figures, and their translation.

A figure's words are marked with :func:`tr` (a message template and its arguments, like the
panels' ``tr("…")`` in the page script). The figure is saved as SVG with its text kept as
``<text>`` elements, and the templates it used travel with the output (its metadata), so the same
stored output is translated twice over by one function, :func:`translate_svg`: by the Chinese
book's build through the book's ``_ui.po`` catalog, and in a kernel whose language is Chinese
(``lectorch.set_language("zh_CN")`` or ``LECTORCH_LANGUAGE=zh_CN``) through the catalog the package
ships (:mod:`lectorch.i18n`).

>>> tr("{n} layers", n=8)
'8 layers'
>>> records([tr("{n} layers", n=8), "no template"])
[['8 layers', '{n} layers', {'n': 8}]]
"""

from __future__ import annotations

import html
import re
from typing import Callable

#: English text drawn -> (template, arguments): filled by :func:`tr`, read when a figure is saved.
_MARKED: dict[str, tuple[str, dict]] = {}
#: The key of the output's metadata that lists a figure's marked text.
METADATA_KEY = "lectorch-texts"
#: What the Chinese text of a translated figure is drawn with, in the reader's browser: the
#: system's CJK fonts (an SVG shown as an image cannot use the page's web fonts).
CJK_FAMILIES = "'Noto Sans SC', 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei'"


def tr(template: str, **args) -> str:
    """``template`` filled with ``args`` (English), remembered so that a figure showing it can be
    translated: the template is the catalog's message, the arguments are kept as drawn.

    >>> tr("storage: {size} elements, in memory order", size=16)
    'storage: 16 elements, in memory order'
    """
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    if not args and template in _MARKED:  # a text marked already (e.g. a title the caller marked)
        return template
    text = template.format(**args) if args else template
    _MARKED[text] = (template, {k: _argument(v) for k, v in args.items()})
    return text


def _argument(value):
    """An argument as the output's metadata keeps it: a word marked by :func:`tr` itself (e.g.
    "contiguous") as ``{"tr": template, "args": …}``, translated with the text around it."""
    if isinstance(value, str) and value in _MARKED:
        template, args = _MARKED[value]
        return {"tr": template, "args": dict(args)}
    return value if isinstance(value, (int, float, str)) else str(value)


def templates(texts: list) -> list[str]:
    """Every template of :func:`records`' ``texts``, the nested ones (marked arguments) included.

    >>> templates([["8 layers, contiguous", "{n} layers, {kind}", {"n": 8, "kind": {"tr": "contiguous", "args": {}}}]])
    ['{n} layers, {kind}', 'contiguous']
    """
    found = []

    def walk(template, args):
        found.append(template)
        for v in args.values():
            if isinstance(v, dict) and "tr" in v:
                walk(v["tr"], v.get("args", {}))

    for _, template, args in texts:
        walk(template, args)
    return list(dict.fromkeys(found))


def records(texts) -> list[list]:
    """``[english, template, arguments]`` for each marked text among ``texts``, each once."""
    found = {}
    for text in texts:
        if text in _MARKED and text not in found:
            template, args = _MARKED[text]
            found[text] = [text, template, dict(args)]
    return list(found.values())


def render(template: str, args: dict, gettext: Callable[[str], str]) -> str:
    """The translation of ``template`` filled with ``args`` (the English one where the translation
    lost or renamed a placeholder).

    >>> render("{n} layers", {"n": 8}, {"{n} layers": "{n} 层"}.get)
    '8 层'
    """
    translated = gettext(template) or template
    english = {k: _english(v) for k, v in args.items()}
    args = {k: render(v["tr"], v.get("args", {}), gettext) if isinstance(v, dict) else v for k, v in args.items()}
    try:
        return translated.format(**args) if args else translated
    except (KeyError, IndexError, ValueError):
        return template.format(**english) if english else template


def _english(value):
    if isinstance(value, dict):
        return value["tr"].format(**{k: _english(v) for k, v in value.get("args", {}).items()})
    return value


_TEXT = re.compile(r"(<text\b[^>]*>)([^<]*)(</text>)")


def translate_svg(svg: str, texts: list, gettext: Callable[[str], str]) -> str:
    """``svg`` (saved by matplotlib with ``svg.fonttype = "none"``) with each ``<text>`` that shows a
    marked English text replaced by its translation (``texts``: :func:`records` of the figure;
    ``gettext``: template -> translation, or None). matplotlib writes each line of a text as a
    ``<text>`` of its own: the lines are matched in order. A translated element names the CJK fonts.

    >>> svg = '<svg><text style="font-size: 11px; font-family: sans-serif">3 layers</text></svg>'
    >>> zh = translate_svg(svg, [["3 layers", "{n} layers", {"n": 3}]], {"{n} layers": "{n} 层"}.get)
    >>> zh.endswith(">3 层</text></svg>"), "Noto Sans SC" in zh
    (True, True)
    """
    lines: dict[str, str] = {}
    for english, template, args in texts:
        translated = render(template, args, gettext)
        if translated == english:
            continue
        old, new = english.split("\n"), translated.split("\n")
        new = new[: len(old) - 1] + [" ".join(new[len(old) - 1:])] if len(new) > len(old) else new
        new += [""] * (len(old) - len(new))
        lines.update({o.strip(): n.strip() for o, n in zip(old, new) if o.strip()})
    if not lines:
        return svg

    def swap(found: re.Match) -> str:
        shown = html.unescape(found.group(2)).strip()
        if shown not in lines:
            return found.group(0)
        tag = re.sub(r"(font-family: [^;\"]*?)(, sans-serif)?(?=;|\")",
                     lambda m: f"{m.group(1)}, {CJK_FAMILIES}, sans-serif", found.group(1), count=1)
        return f"{tag}{html.escape(lines[shown], quote=False)}{found.group(3)}"

    return _TEXT.sub(swap, svg)
