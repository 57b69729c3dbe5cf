"""The notebooks a reader works in: a chapter as plain Jupyter Markdown, in the edition's language.

The chapters are written for the book (MyST: ``{exercise-start}`` blocks, ``{term}`` and
``{glue:text}`` roles, the ``{include}`` of the GPU note, ``:::{warning}``), which plain Jupyter
and Colab show as raw text. :func:`reader_notebook` turns a chapter into the notebook a student
opens: every markdown cell translated with the page's catalog (``locales/<language>/…/*.po``, the
same messages the translated book uses; code stays one source), its MyST turned into plain
Markdown (roles into their text or glued value, directives into quotes and bold labels, the
include inlined), each exercise's stub in its cell with the check cell under it, and the reference
solution folded away in a ``<details>`` block below the check (self-study) or left out (class).
The notebook's metadata records its language (``metadata.lectorch.language``, which the grader
reads), and a translated notebook's setup cell (its first code cell) ends with
``lectorch.set_language(…)``, so the checkers answer in that language (:func:`setup_line`).

The self-study book's download buttons give these notebooks (tools/book/build_book.py), the class book's
give its own (tools/book/class_edition.py), and ``make student`` writes them (``python -m grading student``).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import nbformat

from languages import ENGLISH, ui_gettext

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
LOCALES = ROOT / "locales"

#: The plain notebooks' own text (exercise labels, the working hint, the solution fold), translated
#: through ``_ui.po`` like the rest of the text the tools generate (sphinx_lectorch_i18n.FIXED_UI).
EXERCISE_LABEL = "Exercise {number}"
SOLUTION_LABEL = "Solution (reference): try the exercise first"
WORK_HINT = ("To work an exercise: write your answer in the cell under it, then run the check cell "
             "below; the reference solution is folded away under the check.")
CLASS_WORK_HINT = "To work an exercise: write your answer in the cell under it, then run the check cell below."
#: the line above a page's first exercise in the book (tools/book/sphinx_lectorch.py), self-study and class
PAGE_HINT = ("To work an exercise: download this page's notebook (the download button, .ipynb) or open it in "
             "Colab (the rocket button), write your answer in the cell under the exercise and run the check "
             "cell below it; the solution is folded away under the check.")
CLASS_PAGE_HINT = ("To work an exercise: download this page's notebook (the download button, .ipynb), write your "
                   "answer in the cell under the exercise and run the check cell below it.")
MESSAGES = [EXERCISE_LABEL, SOLUTION_LABEL, WORK_HINT, CLASS_WORK_HINT, PAGE_HINT, CLASS_PAGE_HINT]

#: MyST that plain Markdown does not know: a role, a directive fence, a target, a substitution.
MYST_ONLY = re.compile(r"\{[\w:.-]+\}`|^\s*(```+|~~~+|:::+)\s*\{|^\s*\([\w-]+\)=\s*$|\{\{[^}]+\}\}", re.M)

ADMONITIONS = ("admonition", "attention", "caution", "danger", "error", "hint", "important", "note",
               "seealso", "tip", "warning")


# ------------------------------------------------------------------------------ catalogs


@lru_cache(maxsize=None)
def catalog(docname: str, language: str) -> dict[str, str]:
    """The translations of the page ``docname`` (e.g. "chapters/03_strides_views") into
    ``language``, fuzzy ones left out as the book leaves them out; empty in English."""
    if language == ENGLISH:
        return {}
    from babel.messages.pofile import read_po

    path = LOCALES / language / "LC_MESSAGES" / f"{docname}.po"
    if not path.exists():
        raise FileNotFoundError(f"no {language} catalog for {docname} ({path}): run `make translations`")
    with open(path, "rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}


def ui_text(language: str):
    """``_(text)`` for the plain notebooks' own messages (and Sphinx's admonition labels)."""
    return ui_gettext(language)


@lru_cache(maxsize=None)
def admonition_label(name: str, language: str) -> str:
    """Sphinx's own label of an admonition ("Warning"; "警告" in Chinese)."""
    import gettext

    import sphinx
    from sphinx.locale import admonitionlabels

    label = str(admonitionlabels.get(name, name.capitalize()))
    if language == ENGLISH:
        return label
    found = gettext.translation("sphinx", Path(sphinx.__file__).parent / "locale", [language], fallback=True)
    return found.gettext(label)


# ------------------------------------------------------------------------------ Markdown


@lru_cache(maxsize=1)
def _parser():
    """The book's own MyST parser (the extensions of _config.yml), so blocks split as the book's."""
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config["parse"]["myst_enable_extensions"])
    parser = create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)
    # only the blocks are used (their lines and text): the inline rules would double the time
    parser.core.ruler.disable([r for r in ("inline", "linkify", "replacements", "smartquotes", "text_join")
                               if r in parser.core.ruler.get_all_rules()])
    return parser


def message(text: str) -> str:
    """A block's text as Sphinx's gettext builder writes its msgid (lines joined by spaces)."""
    return text.replace("\n", " ").strip()


class Page:
    """What rendering one chapter needs: its catalog, glued values, language and exercise count."""

    def __init__(self, docname: str, language: str, glue: dict[str, str], chapter: int | None):
        self.docname, self.language, self.glue, self.chapter = docname, language, glue, chapter
        self.messages = catalog(docname, language)
        self._ = ui_text(language)
        self.exercises = 0

    def tr(self, text: str) -> str:
        return self.messages.get(message(text), text) if message(text) else text


def render(text: str, page: Page) -> str:
    """A markdown cell as plain Markdown in the page's language (see the module docstring)."""
    lines = text.split("\n")
    tokens = _parser().parse(text)
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        end = _closing(tokens, i)
        if tok.level != 0 or tok.map is None:
            i = end + 1
            continue
        start, stop = tok.map
        out += lines[pos:start]
        if tok.type in ("fence", "colon_fence") and tok.info.strip().startswith("{"):
            out += _directive(tok, page)
        elif tok.type == "table_open":
            out += [_table_row(line, page) for line in lines[start:stop]]
        else:
            out += _translated(lines[start:stop], start, tokens[i:end + 1], page)
        pos = stop
        i = end + 1
    out += lines[pos:]
    return _roles("\n".join(out), page)


def _closing(tokens, i: int) -> int:
    """The index of the token that closes ``tokens[i]`` (itself for a self-contained one)."""
    if tokens[i].nesting != 1:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _translated(lines: list[str], offset: int, tokens, page: Page) -> list[str]:
    """The lines of a block with each paragraph and heading replaced by its translation (one line)."""
    lines = list(lines)
    inlines = [t for k, t in enumerate(tokens) if t.type == "inline" and t.map and k > 0
               and tokens[k - 1].type in ("paragraph_open", "heading_open")]
    for tok in reversed(inlines):
        translated = page.tr(tok.content)
        if translated == tok.content:
            continue
        start, stop = tok.map[0] - offset, tok.map[1] - offset
        first = tok.content.split("\n")[0]
        at = lines[start].find(first)
        prefix = lines[start][:at] if at >= 0 else ""
        lines[start:stop] = [prefix + translated]
    return lines


_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _table_row(line: str, page: Page) -> str:
    """A pipe-table row with each cell translated (Sphinx extracts a table's cells one by one)."""
    if _SEPARATOR_ROW.match(line) or "|" not in line:
        return line
    cells = re.split(r"(?<!\\)\|", line)
    return "|".join(f" {page.tr(c.strip())} " if c.strip() else c for c in cells)


def _directive(tok, page: Page) -> list[str]:
    """A MyST directive fence as plain Markdown."""
    name, _, argument = tok.info.strip()[1:].partition("}")
    argument = argument.strip()
    body = [line for line in tok.content.split("\n") if not re.match(r"^:[\w-]+:", line)]
    content = "\n".join(body).strip("\n")
    if name == "include":
        included = (CHAPTERS / Path(page.docname).parent.relative_to("chapters") / argument
                    if page.docname.startswith("chapters/") else ROOT / argument)
        return render(included.read_text(encoding="utf-8").strip("\n"), page).split("\n") + [""]
    if name == "exercise-start":
        page.exercises += 1
        number = f"{page.chapter}.{page.exercises}" if page.chapter is not None else str(page.exercises)
        return [f"**✎ {page._(EXERCISE_LABEL).format(number=number)}**", ""]
    if name in ("exercise-end", "solution-start", "solution-end"):
        return []
    if name in ADMONITIONS:
        title = page.tr(argument) if name == "admonition" else admonition_label(name, page.language)
        inner = render(content, page).split("\n")
        # the blank line ends the quote (a next line would otherwise continue it)
        return [f"> **{title}**", ">"] + [f"> {line}".rstrip() for line in inner] + [""]
    raise ValueError(f"{page.docname}: the directive {{{name}}} has no plain-Markdown form in "
                     "tools/book/plain_notebook.py: add one there (or write the cell without it)")


_ROLE = re.compile(r"\{([\w:.-]+)\}`([^`]*)`")


def _roles(text: str, page: Page) -> str:
    """Roles as plain text: a term or reference as its text, a glued value as the book shows it."""
    from myst_nb.core.variables import format_plain_text

    def plain(found: re.Match) -> str:
        role, body = found.group(1), found.group(2)
        if role in ("term", "ref", "doc", "numref"):
            shown = re.fullmatch(r"(.*?)\s*<([^<>]+)>", body, re.S)
            return shown.group(1) if shown else body
        if role == "math":
            return f"${body}$"
        if role in ("glue:text", "glue"):
            key, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
            if key not in page.glue:
                raise KeyError(f"{page.docname}: no stored value glued as {key!r} (re-execute the chapter)")
            return format_plain_text(page.glue[key], spec if ":" in body else "")
        raise ValueError(f"{page.docname}: the role {{{role}}} has no plain-Markdown form in tools/book/plain_notebook.py")

    text = _ROLE.sub(plain, text)
    return re.sub(r'<span class="lectorch-gpu-mark">([^<]*)</span>', r"**\1**", text)


# ------------------------------------------------------------------------------ notebooks


def glued_values(nb) -> dict[str, str]:
    """The values a chapter glues (``lectorch.glue``), from its stored outputs: name → text/plain."""
    found = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            scrap = output.get("metadata", {}).get("scrapbook")
            if scrap:
                data = output.get("data", {})
                text = data.get(scrap.get("mime_prefix", "") + "text/plain")
                if text is not None:
                    found[scrap["name"]] = text
    return found


def _solution_fold(source: str, page: Page) -> nbformat.NotebookNode:
    fence = "```" if "```" not in source else "~~~~"
    text = (f"<details>\n<summary><b>{page._(SOLUTION_LABEL)}</b></summary>\n\n"
            f"{fence}python\n{source.rstrip()}\n{fence}\n\n</details>")
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": ["solution-folded"]})


def chapter_number(docname: str) -> int | None:
    """The course number of a chapter page ("chapters/05_flops_mfu" → 5), None for other pages.

    >>> chapter_number("chapters/05_flops_mfu"), chapter_number("chapters/reference/glossary")
    (5, None)
    """
    match = re.match(r"chapters/(\d\d)_", docname)
    return int(match.group(1)) if match else None


def reader_notebook(nb, name: str, language: str = ENGLISH, *, solutions: str = "fold",
                    docname: str | None = None) -> nbformat.NotebookNode:
    """The notebook a reader works in (see the module docstring).

    ``solutions``: "fold" keeps each reference solution in a folded ``<details>`` cell under the
    exercise's check cell (the self-study book); "drop" leaves them out (the class book, ``make
    student``). ``docname`` names the page whose catalog applies (default ``chapters/<stem>``).
    """
    if solutions not in ("fold", "drop"):
        raise ValueError(f"solutions={solutions!r}: use 'fold' (self-study) or 'drop' (class)")
    docname = docname or f"chapters/{Path(name).stem}"
    page = Page(docname, language, glued_values(nb), chapter_number(docname))
    answers = [c.source for c in nb.cells if c.cell_type == "code" and "solution" in c.metadata.get("tags", [])]
    out = student_notebook(nb, name)
    cells, pending, hinted = [], None, False
    for cell in out.cells:
        if cell.cell_type == "markdown":
            cell.source = render(cell.source, page)
            if not hinted and "**✎ " in cell.source:
                hint = page._(WORK_HINT if solutions == "fold" else CLASS_WORK_HINT)
                cell.source = cell.source.replace("**✎ ", f"*{hint}*\n\n**✎ ", 1)
                hinted = True
        cells.append(cell)
        if "exercise" in cell.metadata.get("tags", []) and cell.cell_type == "code":
            pending = answers.pop(0)
        elif pending is not None and cell.cell_type == "code" and "lectorch.check(" in cell.source:
            if solutions == "fold":
                cells.append(_solution_fold(pending, page))
            pending = None
    if pending is not None and solutions == "fold":
        cells.append(_solution_fold(pending, page))
    out.cells = cells
    setup = next((c for c in cells if c.cell_type == "code"), None)
    if setup is not None and setup_line(language):
        setup.source = setup.source.rstrip("\n") + setup_line(language)
    out.metadata["lectorch"] = {"language": language, "edition": "self-study" if solutions == "fold" else "class",
                                "source": f"{docname}.ipynb"}
    return out


def setup_line(language: str) -> str:
    """What a translated notebook's first code cell ends with (nothing in English): the checkers'
    messages in the notebook's language (``lectorch.i18n``)."""
    return "" if language == ENGLISH else f'\nimport lectorch\nlectorch.set_language("{language}")'


def myst_left(nb) -> list[str]:
    """The MyST-only syntax left in a notebook's markdown cells (empty for a plain notebook)."""
    return [f"cell {i}: {found.group(0)!r}" for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
            for found in MYST_ONLY.finditer(cell.source)]


def visible_prose(nb) -> str:
    """The prose a reader sees in a notebook's markdown cells: no code (blocks and spans), math,
    HTML tags, link targets or folded solutions."""
    parts = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "solution-folded" in cell.metadata.get("tags", []):
            continue
        text = re.sub(r"^(```|~~~).*?^\1\s*$", "", cell.source, flags=re.S | re.M)
        text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$|`[^`]*`|<[^>]+>|\]\([^)]*\)", " ", text, flags=re.S)
        parts.append(text)
    return "\n\n".join(parts)


def checker_text(nb) -> str:
    """What the checkers said in an executed notebook: the printed and displayed text of its check
    cells (a notebook as downloaded has none)."""
    parts = []
    for cell in nb.cells:
        if cell.cell_type == "code" and "lectorch.check(" in cell.source:
            for output in cell.get("outputs", []):
                parts.append(output.get("text") or output.get("data", {}).get("text/plain", ""))
    return "\n\n".join(p for p in parts if p)


def figure_text(nb) -> str:
    """The words drawn into an executed notebook's figures: the ``<text>`` of its SVG outputs (in a
    translated notebook's kernel, :func:`lectorch.plots.figure_svg` has translated them)."""
    import html

    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            svg = output.get("data", {}).get("image/svg+xml", "")
            parts += [html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", svg)]
    return "\n".join(p for p in parts if p.strip())


def english_prose(nb) -> list[str]:
    """The paragraphs of a translated notebook's prose with no Chinese and two or more English words."""
    return [para.strip() for para in re.split(r"\n\s*\n", visible_prose(nb))
            if not re.search(r"[\u4e00-\u9fff]", para) and len(re.findall(r"[A-Za-z]{3,}", para)) >= 2]


def write_notebooks(output: Path, language: str = ENGLISH, *, solutions: str = "fold") -> list[Path]:
    """Every chapter's reader notebook into ``output`` (file names as in chapters/)."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")):
        nb = reader_notebook(nbformat.read(path, as_version=4), path.name, language, solutions=solutions)
        nbformat.write(nb, output / path.name)
        written.append(output / path.name)
    return written


def replace_downloads(html: Path, language: str, *, solutions: str) -> list[Path]:
    """Put each page's reader notebook where a built edition's download button points: the
    notebooks Sphinx copied into ``html/_sources`` (the chapters as written, with their solutions
    and MyST) are replaced, each from its chapter in this repository."""
    sources = Path(html) / "_sources"
    replaced = []
    for path in sorted(sources.rglob("*.ipynb")):
        page = path.relative_to(sources)
        nb = reader_notebook(nbformat.read(ROOT / page, as_version=4), page.name, language,
                             solutions=solutions, docname=page.with_suffix("").as_posix())
        nbformat.write(nb, path)
        replaced.append(path)
    return replaced


def english_share(notebooks: list[Path]) -> tuple[int, float, list[tuple[str, int]]]:
    """English words, all words and the commonest English words of the notebooks' visible text (the
    prose and, in an executed notebook, the checkers' messages and the figures' words), counted as tools/book/reader_metrics.py
    counts the book's (names, acronyms and identifiers are not English; a Chinese word is 1.65
    characters)."""
    import collections

    from reader_metrics import english_share as share

    english, words, counted = 0, 0.0, collections.Counter()
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        found, total, which = share(visible_prose(nb) + "\n\n" + checker_text(nb) + "\n\n" + figure_text(nb))
        english, words = english + found, words + total
        counted.update(which)
    return english, words, counted.most_common(15)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["share"] or len(sys.argv) < 3:
        sys.exit("usage: python tools/book/plain_notebook.py share NOTEBOOK…  (the English share of their prose, "
                 "checker messages and figure words)")
    english, words, common = english_share([Path(p) for p in sys.argv[2:]])
    print(f"{english} English words of {words:.0f} ({english / words:.2%}); commonest: {common}")


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook", *,
                     keep_lesson_outputs: bool = False) -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with solutions swapped for stubs and outputs cleared.

    ``keep_lesson_outputs`` (the class edition of the book, tools/book/class_edition.py) keeps the stored
    outputs and widget state of the lesson's cells, so the lesson reads as in the book. Cleared are
    the outputs of the stubs, of every checker and of every cell that uses what a solution defines
    (directly or through a later cell's names), as a student who has not done the exercises sees them.
    """
    out = nbformat.from_dict(nb)
    cells = []
    answered: set[str] = set()  # names a solution defines, and the names computed from them
    for cell in out.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "markdown" and ("{solution-start}" in source or "{solution-end}" in source):
            continue
        if cell.cell_type == "code":
            keep = keep_lesson_outputs
            if "solution" in cell.metadata.get("tags", []):
                stub = cell.metadata.get("lectorch", {}).get("stub")
                if not stub:
                    raise ValueError(f"{name}: a solution cell has no lectorch.stub metadata:\n{source[:200]}")
                answered |= _names(source)[0] | _names(stub)[0]
                cell.source = stub
                cell.metadata["tags"] = [t for t in cell.metadata["tags"] if t != "solution"] + ["exercise"]
                keep = False
            elif keep:
                defined, used = _names(source)
                if used & answered or "lectorch.check" in source or "lectorch.exercises" in source:
                    answered |= defined
                    keep = False
            if not keep:
                cell.outputs = []
                cell.execution_count = None
        cells.append(cell)
    out.cells = cells
    if not keep_lesson_outputs:
        out.metadata.pop("widgets", None)
    return out


def _names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell defines (assigned, imported, def/class, or an attribute/item of it set) and
    the names it reads; a cell that is not Python (a ``%%magic``) defines and reads everything."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {"*"}, {"*"}
    defined, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else defined).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.alias):
            defined.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            base = node.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name):
                defined.add(base.id)
    return defined, used | ({"*"} if "*" in defined else set())
