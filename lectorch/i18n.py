"""The checkers' words, and the figures', in the student's language.

Every message a student reads from a checker (the verdict, "Case 2 of 3", a hint, a slip) is written
in English as ``tr("… {name} …").format(name=...)``; ``tr`` looks the English up in the catalog of
the current language. The catalogs are package data (``lectorch/locale/<language>.json``), made from
the book's ``_ui.po`` (its messages in the context ``checker`` and the figures' words, which
:mod:`lectorch.plots` draws through the same catalog) by ``python tools/book/i18n.py package``,
so a student's kernel, which has only this package, has them too.

The language is the one set by :func:`set_language` (the setup cell of a 中文 notebook calls
``lectorch.set_language("zh_CN")``), else the environment variable ``LECTORCH_LANGUAGE``, else
English.

>>> set_language("zh_CN"); tr("exactly")
'精确相等'
>>> set_language(None); tr("exactly")  # back to LECTORCH_LANGUAGE, else English
'exactly'
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
from functools import lru_cache
from importlib import resources
from typing import Iterator

#: the environment variable that names the language when no notebook set one
ENV = "LECTORCH_LANGUAGE"
ENGLISH = "en"
#: the languages with a catalog (English is the messages themselves)
LANGUAGES = (ENGLISH, "zh_CN")
#: the gettext context of the checkers' messages in ``_ui.po``
CONTEXT = "checker"
#: the context of a panel's control labels in ``_ui.po``
CONTROL = "panel control"
#: the context of the word choices of a panel's drop-downs in ``_ui.po``
OPTION = "panel option"

_chosen: str | None = None
#: the language of one block of :func:`language` (a context variable: each grader thread its own)
_within: contextvars.ContextVar[str | None] = contextvars.ContextVar("lectorch_language", default=None)


def _normal(language: str) -> str:
    """``language`` as one of :data:`LANGUAGES` ("zh", "zh-CN" and "zh_CN" are the same)."""
    text = str(language).strip().replace("-", "_")
    for known in LANGUAGES:
        if text.lower() in (known.lower(), known.split("_")[0].lower()):
            return known
    raise ValueError(f"language {language!r} has no checker messages: use one of {', '.join(LANGUAGES)} "
                     f"(in lectorch.set_language or the environment variable {ENV})")


def set_language(language: str | None) -> None:
    """Make the checkers speak ``language`` ("en" or "zh_CN"); None goes back to ``LECTORCH_LANGUAGE``."""
    global _chosen
    _chosen = None if language is None else _normal(language)


def get_language() -> str:
    """The language of the checkers' messages now (see the module docstring)."""
    if _within.get() is not None:
        return _within.get()
    if _chosen is not None:
        return _chosen
    return _normal(os.environ.get(ENV) or ENGLISH)


@contextlib.contextmanager
def language(name: str | None) -> Iterator[None]:
    """Within the block (in this thread), the checkers speak ``name``; None: as outside it. The
    grader judges each notebook in the language its metadata names."""
    token = _within.set(None if name is None else _normal(name))
    try:
        yield
    finally:
        _within.reset(token)


def switch(name: str | None) -> None:
    """Inside a block of :func:`language`, change its language from here on (the grader, once it
    has read a notebook's metadata)."""
    _within.set(None if name is None else _normal(name))


def notebook_language(metadata: object) -> str:
    """The language a notebook's metadata names (``metadata.lectorch.language``, written by the
    book's build), or the current one when it names none or one without a catalog."""
    named = metadata.get("lectorch", {}) if isinstance(metadata, dict) else {}
    named = named.get("language") if isinstance(named, dict) else None
    try:
        return _normal(named) if isinstance(named, str) else get_language()
    except ValueError:
        return get_language()


@lru_cache(maxsize=None)
def catalog(name: str) -> dict[str, str]:
    """The translations of the checkers' messages into ``name`` (empty for English)."""
    if name == ENGLISH:
        return {}
    text = resources.files("lectorch").joinpath("locale", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def N_(message: str) -> str:
    """``message`` unchanged: marks a message kept as data (a table of reasons) for the catalog's
    extractor; the code that shows it passes it through :func:`tr` then (gettext's ``N_``)."""
    return message


def tr(message: str, context: str | None = None) -> str:
    """``message`` (English, with its ``{fields}`` unformatted) in the current language; ``context``
    names the catalog's context of a message that has one (a panel's control label: "panel control").

    >>> with language("zh_CN"): tr("layers", "panel control")
    '层数'
    """
    if not message:
        return message
    return catalog(get_language()).get(f"{context}\x04{message}" if context else message, message)
