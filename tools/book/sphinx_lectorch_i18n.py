"""The book's two languages: what gets translated, the language switch, and CJK text.

The Chinese edition is built from the same notebooks with Sphinx's gettext catalogs
(``locales/zh_CN/LC_MESSAGES``), so code, outputs, figures, widgets and asserts are shared and only
prose is translated. This extension:

1. keeps out of the catalogs what must not be translated: the API reference's docstrings (they
   document code and change with it), the outputs of code cells (shared like the code), display
   math (``$$…$$`` is the same in every language; figure captions of outputs are translated) and
   the glossary's term lines (already
   bilingual, and the targets of every ``{term}`` link);
2. puts a language switch on every page that leads to the same page in the other language
   (English at ``html/``, Chinese at ``html/zh/``), with ``hreflang`` alternates;
3. lets ``{glue:text}`` roles in translated messages read the notebook's glued values, and
   translates the table of contents' part captions;
4. keeps a translated heading a heading: a message such as "1. 浮点数" would parse as a numbered
   list, which Sphinx drops, leaving the English (see :func:`escape_block_start`);
5. translates the text the book's tools generate (panel titles and notes, checker boxes, "Click to
   show", the site title, author and footer, the panels' control labels, the words drawn into
   the figures and the figures' alt text) through one more
   catalog of the same folder, ``_ui.po``, whose messages :func:`ui_messages` and
   :func:`control_labels` list (``tools/book/i18n.py update`` extracts them);
6. adds a stylesheet with a CJK font fallback, so a reader without CJK fonts still sees text:
   the system's CJK fonts first, then a vendored subset of Noto Sans SC with the characters the
   translation uses (``tools/book/i18n_static/fonts/``, made by ``tools/book/i18n.py font``).
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.transforms import Transform
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from lectorch.exercises import CHECK_MIME
from lectorch.widgets import PANEL_MIME

import patches
import plain_notebook
from languages import ZH_FOLDER, is_chinese, ui_gettext

HERE = Path(__file__).resolve().parent
SWITCH_CLASS = "lectorch-lang-switch"


def _self_and_ancestors(node, stop):
    while node is not None and node is not stop:
        yield node
        node = node.parent


class KeepUntranslatable(Transform):
    """Mark API docstrings, display math and glossary terms as not translatable.

    Runs before Sphinx's Locale transform (priority 20), so the mark holds both when the gettext
    builder extracts messages and when a translated build applies them.
    """

    default_priority = 10

    def apply(self, **kwargs) -> None:
        for node in self.document.findall(nodes.TextElement):
            # autodoc output: module docstrings carry their origin in `source`, members sit in `desc`
            if ":docstring of " in (node.source or ""):
                node["translatable"] = False
        for desc in self.document.findall(addnodes.desc):
            for node in desc.findall(nodes.TextElement):
                node["translatable"] = False
        # what a code cell printed or displayed (e.g. a table rendered from lectorch's data) is
        # output, shared by both editions like the code itself
        # (a figure's caption, written in the cell's metadata, is prose: it stays translatable)
        for output in self.document.findall(nodes.container):
            if "cell_output" in output.get("classes", []):
                for node in output.findall(nodes.TextElement):
                    if not any(isinstance(n, nodes.caption) for n in _self_and_ancestors(node, output)):
                        node["translatable"] = False
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False
        for node in self.document.findall(nodes.term):
            node["translatable"] = False


#: What makes a one-line message parse as a block other than a paragraph: "1. ", "2) ", "- ", "+ ", "* ".
_BLOCK_START = re.compile(r"^(\d{1,9})([.)])(\s)|^([-+*])(\s)")


def escape_block_start(msgstr: str) -> str:
    r"""Backslash-escape what would turn a translated message into a list instead of a paragraph.

    Sphinx parses each translation as a small document and keeps it only if it is a paragraph (or a
    title); "1. 数据类型" is a numbered list to both MyST and reStructuredText, so the heading
    stayed English. Both parsers read ``1\.`` as a literal "1.".

    >>> escape_block_start("1. 浮点数与舍入")
    '1\\. 浮点数与舍入'
    >>> escape_block_start("- 一项"), escape_block_start("显存 1. 不变")
    ('\\- 一项', '显存 1. 不变')
    """
    return _BLOCK_START.sub(lambda m: (f"{m[1]}\\{m[2]}{m[3]}" if m[1] else f"\\{m[4]}{m[5]}"), msgstr, count=1)


def _escape_translated_heading(publish_msgstr, app, source, source_path, source_line, config, settings):
    """A translated message as Sphinx parses it (:func:`patches.parse_translations`), its block start escaped."""
    if not source.startswith("::"):  # literal blocks are prefixed "::" by Sphinx: leave them
        source = escape_block_start(source)
    return publish_msgstr(app, source, source_path, source_line, config, settings)


ROOT = HERE.parents[1]
GPU_MARK_TITLE = "this cell needs a CUDA GPU to show what it teaches; on a CPU it says what a GPU would show"
#: Text of the theme (sphinx-book-theme's buttons, jupyter-book's search box) and of Sphinx (the
#: headings' link) that a zh_CN build shows in English, or in Taiwan's usage ("列印成 PDF"): the
#: Chinese edition takes them from ``_ui.po`` (:func:`_override_theme_messages`).
THEME_UI = ["Search this book...", "Repository", "Open issue", "Print to PDF", "Link to this heading",
            "Link to this definition", "Link to this term", "Link to this table", "Link to this image", "Link to this code",
            "Launch interactive content", "Source repositories", "Color mode", "System Settings",
            # the sidebar buttons' tooltips (templates/, through the theme's own template names)
            "Toggle primary sidebar", "Toggle secondary sidebar",
            # the Colab button's tooltip (tools/book/sphinx_lectorch.py)
            "Open this page's notebook in Colab",
            # the accessible name of a folded cell's summary (myst-nb; see _translate_folded_cells)
            "Toggle hidden content"]
#: The fixed strings of tools/book/sphinx_lectorch.py and of the theme's configuration.
FIXED_UI = [
    "Click to show", "Click to hide", "checker",
    "Run the notebook to get feedback on your answer.",
    "computed in this page from lectorch's data (no kernel needed); run the notebook for the parts that measure",
    "snapshot of a run on {device} — run the notebook to explore",
    "recorded on {machine}, {date}: the controls switch between the settings measured when the notebook ran; "
    "run the notebook to measure others on your machine",
    # myst-nb's prompts of a collapsed cell part, one whole sentence each (see _translate_cell_prompts)
    *[f"{verb} code cell {part}" for part in ("source", "outputs", "output", "content") for verb in ("Show", "Hide")],
    # the accessible name of the number box beside a long slider (tools/book/sphinx_lectorch.py)
    "{label} (number)",
    # the theme's footer line (pydata-sphinx-theme has no zh_CN catalog): see _translate_configuration
    "© Copyright {copyright}.",
    # the tooltip of a GPU cell's mark (tools/book/sphinx_lectorch.py)
    GPU_MARK_TITLE,
    # the reader's notebooks (tools/book/plain_notebook.py) and the page's line on how to work an exercise
    *plain_notebook.MESSAGES,
    # the theme's and Sphinx's text that their own zh_CN catalogs miss or word otherwise
    *THEME_UI,
]


#: A message of the page script: the string literal of a ``tr("…")`` call in lectorch-live.js.
_TR_CALL = re.compile(r'\btr\(("(?:[^"\\]|\\.)*")')


def live_messages(root: Path = ROOT) -> list[str]:
    """The text that the live panels write in the page (``tr("…")`` in ``tools/book/static/lectorch-live.js``).

    >>> "storage cells read" in live_messages()
    True
    """
    import json

    source = (root / "tools" / "book" / "static" / "lectorch-live.js").read_text(encoding="utf-8")
    return list(dict.fromkeys(json.loads(m) for m in _TR_CALL.findall(source)))


def ui_messages(root: Path = ROOT) -> list[str]:
    """Every generated string to translate: the fixed ones, the site's title, author and footer
    (``_config.yml``), the titles of the panels and summaries of the checkers that the chapters'
    stored outputs carry, and the live panels' text. In order of first appearance, each once."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    found = list(FIXED_UI) + [config.get("title"), config.get("author"), config.get("html", {}).get("extra_footer")]
    found += live_messages(root)
    for output in _stored_outputs(root):
        data = output.get("data", {})
        found += [data.get(PANEL_MIME, {}).get("title"), data.get(CHECK_MIME, {}).get("summary")]
    found += figure_messages(root)
    return list(dict.fromkeys(m for m in found if m))


def figure_messages(root: Path = ROOT, *, alt: bool = True) -> list[str]:
    """The words of the chapters' figures: the templates (``lectorch.plots.tr``) that their stored
    SVG outputs list in their metadata, then every literal template of ``lectorch/plots`` (the
    panels draw figures the chapters do not store), and (``alt=True``) each figure's alt text (its
    cell's ``mystnb.image.alt``, which only the book shows).

    >>> messages = figure_messages(); "bytes per parameter" in messages and "storage index" in messages
    True
    """
    import json

    from lectorch.plots import _text

    found = []
    for notebook in sorted((root / "chapters").rglob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8")).get("cells", []):
            for output in cell.get("outputs", []):
                found += _text.templates(output.get("metadata", {}).get(SVG_MIME, {}).get(_text.METADATA_KEY, []))
            if alt:
                found.append(cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt"))
    for path in sorted((root / "lectorch" / "plots").glob("*.py")):
        found += _marked(path, with_arguments=True)
    for path in sorted((root / "lectorch" / "widgets").glob("*.py")):  # a panel's own figure words
        found += _marked(path, with_arguments=True, keywords=("figure_tr",))
    return list(dict.fromkeys(m for m in found if m))


SVG_MIME = "image/svg+xml"


def _translate_figure(render_image, self, data):
    """The Chinese book's figures: myst-nb writes each stored SVG output to a file of its own
    (:func:`patches.render_images` sends it here first); in a zh build its marked words are
    translated first (``lectorch.plots._text.translate_svg``, through ``_ui.po``), and every output
    image's alt text is translated too."""
    language = self.renderer.document.settings.env.config.language
    if not is_chinese(language):
        return render_image(self, data)
    import dataclasses

    from lectorch.plots import _text

    _ = ui_gettext(language)
    texts = (data.output_metadata or {}).get(data.mime_type, {}).get(_text.METADATA_KEY)
    if data.mime_type == SVG_MIME and texts:
        data = dataclasses.replace(data, content=_text.translate_svg(data.content, texts, _))
    found = render_image(self, data)
    for node in found:
        if isinstance(node, nodes.image) and node.get("alt"):
            node["alt"] = _(node["alt"])
    return found


def _stored_outputs(root: Path = ROOT):
    """Every output stored in the chapters' notebooks, in file and cell order."""
    import json

    for notebook in sorted((root / "chapters").rglob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8")).get("cells", []):
            yield from cell.get("outputs", [])


#: the gettext context of the panels' control labels: the control "batch" (a batch size) is not the
#: bar "batch" (the batch's bytes), nor the control "optimizer" the bar "optimizer" (its state)
CONTROL = "panel control"


def control_labels(root: Path = ROOT) -> list[str]:
    """The labels of the panels' controls that the chapters' stored outputs carry (translated in
    the context :data:`CONTROL`), in order of first appearance, each once.

    >>> "x requires grad" in control_labels()
    True
    """
    found = []
    for output in _stored_outputs(root):
        found += [c.get("label") for c in output.get("metadata", {}).get(PANEL_MIME, {}).get("controls", [])]
    return list(dict.fromkeys(m for m in found if m))


#: the gettext context of the choices of a panel's drop-down that hold words ("standard", "sgd",
#: "(nothing)", "AdamW bf16 + fp32 master (16 B)"); the others (dtypes, GPU names, code such as
#: ".view(-1)") are shown as they are
OPTION = "panel option"


def _word_option(label: str) -> bool:
    return not label.startswith((".", "+")) and bool(re.search(r"(?<![\w.])[a-z]{3,}(?![\w(])", label))


def option_labels(root: Path = ROOT) -> list[str]:
    """The word choices of the panels' drop-downs that the chapters' stored outputs carry
    (translated in the context :data:`OPTION`), in order of first appearance, each once.

    >>> "(nothing)" in option_labels() and "bf16" not in option_labels()
    True
    """
    found = []
    for output in _stored_outputs(root):
        for control in output.get("metadata", {}).get(PANEL_MIME, {}).get("controls", []):
            if control.get("kind") == "select":
                found += [str(label) for label in control.get("labels", []) if _word_option(str(label))]
    return list(dict.fromkeys(found))


#: the gettext context of what the checkers and the grader write for a student (the package's
#: catalogs, lectorch/locale/*.json, are these messages: ``tools/book/i18n.py package``)
CHECKER = "checker"


def _marked(path: Path, *, with_arguments: bool = False, keywords: tuple[str, ...] = ("tr", "N_")) -> list[str]:
    """The English of every ``tr("…")`` and ``N_("…")`` (or each of ``keywords``) in a Python file (Babel's extractor:
    literals only); ``with_arguments``: also the template of a ``tr("… {n} …", n=…)`` (a figure's words)."""
    import contextlib
    import io

    from babel.messages.extract import extract_python

    # Babel writes a warning for each f-string it meets; a figure's f-strings are never templates
    with open(path, "rb") as f, contextlib.redirect_stderr(io.StringIO()):
        found = [m[0] if with_arguments and isinstance(m, tuple) else m for _, _, m, _ in extract_python(f, dict.fromkeys(keywords), [], {})]
    return [m for m in found if isinstance(m, str) and m]


def _hidden_descriptions(path: Path) -> list[str]:
    """The literal ``description="…"`` of the hidden cases a grading module makes."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [k.value.value for node in ast.walk(tree) if isinstance(node, ast.Call) for k in node.keywords
            if k.arg == "description" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)]


def checker_messages(root: Path = ROOT) -> list[str]:
    """What the checkers (``lectorch.check``) and the grader's report say to a student, translated
    in the context :data:`CHECKER`: every ``tr("…")`` of ``lectorch/`` and ``grading/``, and each
    exercise's title, hints, slips, refusal subject and case descriptions (the registry's, and the
    hidden cases' of ``grading/``). In order of first appearance, each once.

    >>> " Fix it and run the check again." in checker_messages()  # a suffix: its space is the message's
    True
    """
    import random

    from lectorch.exercises import exercises, public_cases_of
    from lectorch.exercises.seal import practice_cases

    found: list[str] = []
    for folder in ("lectorch", "grading"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.parent == root / "lectorch" / "plots":
                continue  # the figures' tr() marks templates drawn into figures: figure_messages() lists them
            found += _marked(path)
            if folder == "grading":
                found += _hidden_descriptions(path)
    for ex in exercises().values():
        found += [ex.title, *ex.hints, ex.refuse_what]
        found += [m for m in ex.slips.values() if isinstance(m, str)]
        cases = list(ex.cases) + list(practice_cases(ex.id)) + (ex.generate(random.Random(0)) if ex.generate else [])
        found += [c.description for c in cases + public_cases_of(ex)]
    return list(dict.fromkeys(m for m in found if m and re.search(r"[A-Za-z]{2}", m)))


def _translate_configuration(app, config) -> None:
    """The site title, author, footer and search box of the Chinese edition."""
    if not is_chinese(config.language):
        return
    _ = ui_gettext(config.language)
    config.html_title = _(config.html_title)
    config.author = _(config.author)
    options = dict(config.html_theme_options or {})
    if options.get("extra_footer"):
        options["extra_footer"] = _(options["extra_footer"])
    # sphinx-book-theme's footer items, with the copyright line from _ui.po (templates/)
    options["footer_content_items"] = ["author.html", "lectorch-copyright.html", "last-updated.html",
                                       "extra-footer.html"]
    config.html_theme_options = options
    config.html_context = {**(config.html_context or {}),
                           "lectorch_copyright": _("© Copyright {copyright}.").format(copyright=config.copyright)}
    # first: its sidebar buttons replace the theme's (their tooltips through the translator)
    config.templates_path = [str(HERE / "templates")] + list(config.templates_path or [])
    # jupyter-book's placeholder of the search box (a theme option, not a catalog message)
    options["search_bar_text"] = _(options.get("search_bar_text") or "Search this book...")


def _translate_toggle_hints(app, config) -> None:
    """sphinx-togglebutton's "Click to show"/"Click to hide": it writes them into every page's
    script at config-inited (priority 500), so they are set before that. Its script names each
    toggle button "Toggle hidden content" (a literal of togglebutton.js): renamed once it ran."""
    if is_chinese(config.language):
        import json

        _ = ui_gettext(config.language)
        config.togglebutton_hint, config.togglebutton_hint_hide = _("Click to show"), _("Click to hide")
        label = json.dumps(_("Toggle hidden content"), ensure_ascii=False)
        app.add_js_file(None, body="window.addEventListener('load', function () { document.querySelectorAll("
                        "'[aria-label=\"Toggle hidden content\"]').forEach(function (e) { "
                        f"e.setAttribute('aria-label', {label}); }}); }});")


def _translate_folded_cells(app) -> None:
    """The accessible name of a folded cell's summary in the page's language (:func:`patches.label_folded_cells`)."""
    if is_chinese(app.config.language):
        patches.label_folded_cells(app, lambda translator: ui_gettext(translator.config.language)("Toggle hidden content"))


class TranslateCellPrompts(SphinxPostTransform):
    """myst-nb's prompt of a collapsed cell part ("Show code cell source"): myst-nb puts the English
    word of the part (source, outputs, content) into the configured sentence, so a translated
    sentence got an English word or lost it. Each whole sentence is translated instead, after
    myst-nb wrote it (HideInputCells, priority 199)."""

    default_priority = 205
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if not is_chinese(self.config.language):
            return
        from myst_nb.sphinx_ import HideCodeCellNode

        _ = ui_gettext(self.config.language)
        for node in self.document.findall(HideCodeCellNode):
            node["prompt_show"], node["prompt_hide"] = _(node["prompt_show"]), _(node["prompt_hide"])


def _override_theme_messages(app) -> None:
    """Sphinx's and the themes' own text (:data:`THEME_UI`) from ``_ui.po``: their zh_CN catalogs
    lack some ("Link to this heading", "Color mode") and word one in Taiwan's usage
    (:func:`patches.add_theme_translations` says how)."""
    if not is_chinese(app.config.language):
        return
    _ = ui_gettext(app.config.language)
    patches.add_theme_translations({m: _(m) for m in THEME_UI if _(m) != m})


def _translate_toc_captions(app, doctree) -> None:
    """Translate the part captions of the table of contents (jupyter-book's external toc inserts
    its toctrees after Sphinx's Locale transform, so their captions would stay English)."""
    from sphinx import addnodes as sphinx_nodes
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    if not is_chinese(app.config.language):
        return
    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    dirs = [str(Path(app.srcdir, d)) for d in app.config.locale_dirs]
    catalog, found = init_locale(dirs, app.config.language, domain)
    if found:
        for toctree in doctree.findall(sphinx_nodes.toctree):
            if toctree.get("caption"):
                toctree["caption"] = catalog.gettext(toctree["caption"])


def other_language_href(pagename: str, language: str | None) -> str:
    """The relative link from ``pagename`` to the same page in the other edition.

    >>> other_language_href("chapters/01_precision", "en")
    '../zh/chapters/01_precision.html'
    >>> other_language_href("chapters/01_precision", "zh_CN")
    '../../chapters/01_precision.html'
    >>> other_language_href("index", "en")
    'zh/index.html'
    """
    up = "../" * pagename.count("/")
    if is_chinese(language):
        return f"{up}../{pagename}.html"
    return f"{up}{ZH_FOLDER}/{pagename}.html"


def _language_switch(app, pagename, templatename, context, doctree) -> None:
    if "body" not in context or doctree is None:
        return
    language = app.config.language
    href = other_language_href(pagename, language)
    if is_chinese(language):
        label, lang, title = "English", "en", "Read this page in English"
    else:
        label, lang, title = "中文", "zh-CN", "阅读本页的中文版"
    switch = (f'<p class="{SWITCH_CLASS}"><a href="{href}" hreflang="{lang}" lang="{lang}" '
              f'title="{title}">{label}</a></p>\n')
    context["body"] = switch + context["body"]
    context["metatags"] = context.get("metatags", "") + f'\n<link rel="alternate" hreflang="{lang}" href="{href}">'


_CJK_WORD = re.compile(r"[\u4e00-\u9fff]{2,}")


def search_words(root: Path = ROOT) -> list[str]:
    """The Chinese words the zh search index keeps whole: the glossary's terms, and the first
    characters (three or more) that one term shares with the start or end of another ("优化器",
    which jieba's own dictionary lacks, from 优化器状态 and 自适应矩估计优化器). jieba cut "优化器"
    into "优化" + "器" in the pages and dropped the "器", so the query 优化器 found titles only.

    >>> "优化器" in search_words() and "优化器状态" in search_words()
    True
    """
    glossary = (root / "chapters" / "reference" / "glossary.md").read_text(encoding="utf-8")
    terms = {w for line in re.findall(r"^\S.*? · (.+)$", glossary, re.M) for w in _CJK_WORD.findall(line)}
    heads = [w[:k] for w in terms for k in range(3, len(w))]
    ends = {w[-k:] for w in terms for k in range(3, len(w))}
    shared = {h for h in heads if heads.count(h) > 1 or h in ends}
    return sorted(terms | shared)


def _search_in_chinese(app, config) -> None:
    """The zh search: the index keeps :func:`search_words` whole (a jieba user dictionary, Sphinx's
    ``html_search_options["dict"]``), and the page splits a query into the index's own terms
    (``i18n_static/lectorch-search-zh.js``) instead of looking the whole run of characters up."""
    if not is_chinese(config.language):
        return
    words = Path(app.doctreedir) / "lectorch-search-words.txt"
    words.parent.mkdir(parents=True, exist_ok=True)
    words.write_text("".join(f"{w}\n" for w in search_words()), encoding="utf-8")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(words)}
    app.connect("html-page-context", _search_script)


def _search_script(app, pagename, templatename, context, doctree) -> None:
    """The query's segmentation, on the one page that searches (Sphinx adds a file named here to this page only)."""
    if pagename == "search":
        app.add_js_file("lectorch-search-zh.js", defer="defer")


def _add_static(app) -> None:
    static = str(HERE / "i18n_static")
    if static not in app.config.html_static_path:
        app.config.html_static_path.append(static)


def setup(app):
    patches.render_images(_translate_figure)
    patches.glue_in_translations()
    patches.parse_translations(_escape_translated_heading)
    app.add_transform(KeepUntranslatable)
    app.connect("builder-inited", _add_static)
    app.add_css_file("lectorch-i18n.css")
    app.connect("html-page-context", _language_switch)
    app.connect("config-inited", _translate_configuration, priority=900)
    app.connect("config-inited", _translate_toggle_hints, priority=400)  # before sphinx-togglebutton (500)
    app.connect("builder-inited", _override_theme_messages)
    app.connect("config-inited", _search_in_chinese)
    app.connect("builder-inited", _translate_folded_cells)
    app.add_post_transform(TranslateCellPrompts)
    app.connect("doctree-read", _translate_toc_captions, priority=400)  # before the toc collector
    return {"parallel_read_safe": True, "parallel_write_safe": True}
