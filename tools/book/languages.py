"""The book's two languages: English, and the Chinese edition's language and folder; and the text the
book's tools generate (panels, checkers, the reader's notebooks, the theme's strings) in each
language, from the catalog ``_ui.po`` beside the pages' catalogs.

The build, the extensions, the reader's notebooks and the catalog tools all read these, so they
live in this module, which imports none of theirs.

>>> _ = ui_gettext(LANGUAGE); _("checker") != "checker", ui_gettext(ENGLISH)("checker")
(True, 'checker')
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = "en"
#: The Chinese edition's language (its catalogs: locales/zh_CN/LC_MESSAGES) ...
LANGUAGE = "zh_CN"
#: ... and the sub-folder of the English HTML output it lives in.
ZH_FOLDER = "zh"
#: The catalog (beside the pages' catalogs) of the text that the book's tools generate.
UI_CATALOG = "_ui"


def is_chinese(language: str | None) -> bool:
    """Whether ``language`` is a Chinese one ("zh_CN", "zh").

    >>> is_chinese("zh_CN"), is_chinese("en"), is_chinese(None)
    (True, False, False)
    """
    return bool(language) and language.lower().startswith("zh")


_UI_CACHE: dict[str, dict[tuple[str | None, str], str]] = {}


def ui_gettext(language: str | None, root: Path = ROOT):
    """A ``gettext`` for the generated text in ``language`` (the identity in English): called as
    ``_(text)``, or ``_(text, context)`` for a message of a context (a panel's control label:
    ``sphinx_lectorch_i18n.CONTROL``).

    >>> ui_gettext("en")("checker"), ui_gettext("zh_CN")("layers", "panel control")
    ('checker', '层数')
    """
    if not is_chinese(language):
        return lambda text, context=None: text
    if language not in _UI_CACHE:
        from babel.messages.pofile import read_po

        path = root / "locales" / language / "LC_MESSAGES" / f"{UI_CATALOG}.po"
        table = {}
        if path.exists():
            with open(path, "rb") as f:
                table = {(m.context, m.id): m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}
        _UI_CACHE[language] = table
    table = _UI_CACHE[language]
    return lambda text, context=None: table.get((context, text), text)
