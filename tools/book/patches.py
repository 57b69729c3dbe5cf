"""The book build's patches of Sphinx and myst-nb internals, one function per patch, each saying why.

The book's extensions (``sphinx_lectorch.py``, ``sphinx_lectorch_i18n.py``) need a few things that
Sphinx and myst-nb offer no hook for; each function here replaces one of their internals for one
such need, around a function of the extension (its ``hook``), and an extension's ``setup`` calls it.

An internal may change in any release. So a patch first checks that the installed package is a
version the locks pin (requirements.txt, requirements-cuda.txt: the versions the book is built and
tested with) and refuses any other, naming the package, its version and the pinned ones, before it
patches anything. When `make lock` moves a pin, read these patches against the new release's source;
`make book` and `make test` then show whether they still hold.

A patch replaces an internal once per process (Sphinx sets the extensions up for every build it
runs); a later call only points the replacement at its new hook. :data:`REPLACED` keeps the
originals.

>>> sorted({package for packages in PATCHES.values() for package in packages})
['myst-nb', 'sphinx']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from sphinx.errors import ExtensionError

import build_book

ROOT = Path(__file__).resolve().parents[2]
#: The locks whose pins are the versions the patches were written for (tools/lock.py writes them).
LOCKS = (ROOT / "requirements.txt", ROOT / "requirements-cuda.txt")

#: Each patch (a function of this module) → the packages whose internals it replaces.
PATCHES: dict[str, tuple[str, ...]] = {}
#: (the object, the attribute) → the original that a patch replaced.
REPLACED: dict[tuple[object, str], object] = {}
#: (the object, the attribute) → the extension's function that the replacement calls.
_HOOKS: dict[tuple[object, str], Callable] = {}


class UnsupportedVersion(ExtensionError):
    """An installed Sphinx or myst-nb that a patch was not written for."""


def written_for(package: str, locks: tuple[Path, ...] = LOCKS) -> list[str]:
    """The versions of ``package`` that the locks pin: the ones the patches were written for.

    >>> written_for("sphinx") == [metadata.version("sphinx")]  # the book's environment is the lock's
    True
    """
    pins = [build_book.locked_pins(lock) or {} for lock in locks]
    return sorted({found[build_book.normal_name(package)] for found in pins if build_book.normal_name(package) in found})


def require(package: str, installed: str | None = None, locks: tuple[Path, ...] = LOCKS) -> None:
    """Refuse (:class:`UnsupportedVersion`) an installed ``package`` of a version no lock pins."""
    installed = installed or metadata.version(package)
    wanted = written_for(package, locks)
    if installed not in wanted:
        pinned = " or ".join(wanted) or "none (no lock pins it)"
        raise UnsupportedVersion(
            f"{package} {installed} is installed, but the book's patches of {package}'s internals "
            f"(tools/book/patches.py: {', '.join(p for p, of in PATCHES.items() if package in of)}) were written "
            f"for the version the locks pin: {pinned}. Install the lock (`make install`), or, to move to "
            f"{package} {installed}, check each of those patches against its source and then run `make lock`.")


def _patch(*packages: str):
    """Mark a function of this module as a patch of the internals of ``packages``: it checks their
    versions first."""
    def mark(apply: Callable) -> Callable:
        PATCHES[apply.__name__] = packages

        @functools.wraps(apply)
        def checked(*args, **kwargs):
            for package in packages:
                require(package)
            return apply(*args, **kwargs)

        return checked

    return mark


def _around(owner: object, name: str, hook: Callable) -> None:
    """Replace ``owner.name`` (once) by a function that calls ``hook(original, *args, **kwargs)``."""
    _HOOKS[(owner, name)] = hook
    if (owner, name) in REPLACED:
        return
    original = REPLACED[(owner, name)] = getattr(owner, name)

    @functools.wraps(original)
    def replacement(*args, **kwargs):
        return _HOOKS[(owner, name)](original, *args, **kwargs)

    setattr(owner, name, replacement)


@_patch("myst-nb")
def render_unknown_outputs(hook: Callable) -> None:
    """myst-nb renders an output whose mime type it does not know with
    ``NbElementRenderer.render_unhandled`` (a warning, nothing shown). Its own extension point is an
    entry point of an installed package, which would put the book's tooling into lectorch; so
    ``render_unhandled`` goes through ``hook(original, renderer, data)``, which renders lectorch's
    panels and checker results and hands any other output to ``original``."""
    from myst_nb.core.render import NbElementRenderer

    _around(NbElementRenderer, "render_unhandled", hook)


@_patch("myst-nb")
def render_images(hook: Callable) -> None:
    """myst-nb writes each image output (a figure's SVG) to a file of its own, with no hook to change
    it first: ``NbElementRenderer.render_image`` goes through ``hook(original, renderer, data)``,
    which translates a figure's marked words and its alt text in the Chinese edition."""
    from myst_nb.core.render import NbElementRenderer

    _around(NbElementRenderer, "render_image", hook)


@_patch("sphinx")
def parse_translations(hook: Callable) -> None:
    """Sphinx parses each translated message as a small document of its own
    (``sphinx.transforms.i18n.publish_msgstr``) and drops a translation that does not parse as a
    paragraph, with no hook to prepare the text: ``publish_msgstr`` goes through ``hook(original,
    app, source, …)``, which escapes what would make "1. 浮点数" a list instead of a heading."""
    from sphinx.transforms import i18n as sphinx_i18n

    _around(sphinx_i18n, "publish_msgstr", hook)


_RENDERER: list = [None]  # the notebook renderer myst-nb made last


@_patch("sphinx", "myst-nb")
def glue_in_translations() -> None:
    """Let ``{glue:text}`` roles inside translated messages find the notebook's glued values.

    Sphinx's Locale transform parses each translated message as a small document of its own, after
    the page was parsed; myst-nb's glue role looks its key up in the notebook renderer that myst-nb
    keeps on the page's document only *while* parsing ("No key … found in glue data"). So the
    renderer myst-nb makes for a notebook is remembered (``myst_nb.sphinx_.load_renderer``), and
    while the Locale transform runs on that notebook's document (``Locale.apply``) it is lent to
    the documents it parses (``retrieve_glue_data``). Without a catalog (English) nothing is parsed
    and nothing changes.
    """
    import contextvars

    import myst_nb.sphinx_ as myst_nb_sphinx
    from myst_nb.ext.glue import directives, roles
    from sphinx.transforms import i18n as sphinx_i18n

    lent: contextvars.ContextVar = contextvars.ContextVar("lectorch_nb_renderer", default=None)

    def load_renderer(original, name):
        cls = original(name)

        def make(*args, **kwargs):
            _RENDERER[0] = cls(*args, **kwargs)
            return _RENDERER[0]

        return make

    def apply(original, self, **kwargs):
        renderer = _RENDERER[0]
        mine = renderer is not None and getattr(renderer.renderer, "document", None) is self.document
        token = lent.set(renderer if mine else None)
        try:
            return original(self, **kwargs)
        finally:
            lent.reset(token)

    def retrieve_glue_data(original, document, key):
        if "nb_renderer" in document or lent.get() is None:
            return original(document, key)
        # lend the renderer for this lookup only: the message's nodes end up in the page's
        # doctree, which is pickled, and a renderer does not pickle
        document["nb_renderer"] = lent.get()
        try:
            return original(document, key)
        finally:
            del document["nb_renderer"]

    _around(myst_nb_sphinx, "load_renderer", load_renderer)
    _around(sphinx_i18n.Locale, "apply", apply)
    for module in (roles, directives):  # each imported retrieve_glue_data by name
        if hasattr(module, "retrieve_glue_data"):
            _around(module, "retrieve_glue_data", retrieve_glue_data)


@_patch("sphinx")
def add_theme_translations(table: dict[str, str]) -> None:
    """Sphinx's and the themes' own text in the page's language from ``table`` (English → translation):
    their zh_CN catalogs lack some strings and word one in Taiwan's usage, and a project has no
    way to add entries. The entries go into the translators' catalogs themselves
    (``sphinx.locale.translators``, ``GNUTranslations._catalog``): the page templates hold the
    "sphinx" translator's ``gettext`` from before the builder starts, and the themes' Python code asks
    for it at each call."""
    from sphinx import locale

    for key in (("general", "sphinx"), ("general", "booktheme")):
        translator = locale.translators.get(key)
        while translator is not None:  # the first catalog answers: put the entries there
            if hasattr(translator, "_catalog"):
                translator._catalog.update(table)
                break
            translator = getattr(translator, "_fallback", None)


@_patch("myst-nb")
def label_folded_cells(app, label: Callable[[object], str]) -> None:
    """myst-nb writes "Toggle hidden content" as the accessible name of a folded cell's summary, in
    its HTML visitor of ``HideCodeCellNode``, with no setting for it: the node gets a visitor that
    writes myst-nb's HTML with ``label(translator)`` as that name."""
    from html import escape

    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    def visit(self, node) -> None:  # myst_nb.sphinx_.visit_HideCellInput but the label
        self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n')
        self.body.append(f'<summary aria-label="{escape(label(self))}">\n')
        self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
        self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
        self.body.append("</summary>\n")

    app.add_node(HideCodeCellNode, override=True, html=(visit, depart_HideCellInput))
