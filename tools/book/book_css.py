"""The theme's stylesheet cut to the rules the book can use.

A chapter page loads the theme's stylesheets as one file (``book_light.bundle_page``), about 550 KB
of which a page uses a tenth; the phone waits for all of it before drawing and restyles against
every rule. :func:`prune_bundles` keeps a rule when one of its selectors can match: every class
and id it names is a word of a page of the build, or of a script the build ships (a class a script
adds at run time: Bootstrap's ``show``, the widgets' ``widget-slider``, the theme's ``fa-sun``), or
begins with a script's word that ends in ``-`` (a class it builds, ``"bs-popover-" + place``). The
test is the one PurgeCSS makes, kept on the safe side: what a selector says beyond its classes and
ids (its elements, attributes such as dark mode's ``html[data-theme=dark]``, states such as
``:hover``, what ``:not()``/``:is()``/``:has()`` hold) never drops it; ``@media`` (print
included), ``@supports`` and ``@layer`` blocks are cut the same way; ``@font-face``,
``@keyframes`` and the other at-rules stay whole. The file keeps its rules' order, and the page
links to the cut file by a new name (the full one stays beside it, named in its first line).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import tinycss2

#: a bundle of the theme's stylesheets (``book_light._stored``) and a page's link to it
BUNDLE_LINK = re.compile(r'(<link\b[^>]*\bhref=")([^"]*?)(lectorch-[0-9a-f]{12}\.css)(")')
#: a word of a page or a script: a class or an id it may carry
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
#: a word of a script that is not a selector's class (``.fa-sun`` in a stylesheet a script carries,
#: ``".bd-sidebar"`` that it looks for): a class it adds is a string of its own (``"show"``)
SCRIPT_WORD = re.compile(r"(?<![\w.-])[A-Za-z_][\w-]*")
#: a selector's classes and ids (a CSS escape such as ``\:`` is part of the name)
NAME = re.compile(r"([.#])((?:[A-Za-z0-9_-]|\\.)+)")
#: what a selector holds that never drops it: attribute tests and strings
ATTRIBUTE = re.compile(r"\[[^\]]*\]|\"[^\"]*\"|'[^']*'")
#: scripts of the theme that no page loads (``book_layout/layout.html`` drops Font Awesome's, whose
#: icon map would keep every icon rule)
NOT_LOADED = {"fontawesome.js"}
#: the at-rules whose block holds rules to cut
GROUPS = {"media", "supports", "layer", "container", "document"}
#: the first line of a cut file: the full bundle it was cut from
HEADER = '@charset "UTF-8";\n/* book_css: {source} cut to the rules the book\'s pages and scripts can use */\n'


@dataclass(frozen=True)
class Used:
    """What the build can put in a page's ``class`` and ``id``: ``words`` (a page's and a script's
    own), and a script's ``prefixes`` (its words ending in ``-``) followed by words (a class a script
    builds: the widgets' ``"fa-" + icon``, Bootstrap's ``"bs-" + name + "-auto"``)."""

    words: frozenset[str]
    prefixes: frozenset[str] = frozenset()

    def has(self, name: str) -> bool:
        if name in self.words:
            return True
        # built by a script: a prefix of its own, then words joined by "-" ("bs-" + name + "-auto")
        return any(name[:i] in self.prefixes and all(part in self.words for part in name[i:].split("-"))
                   for i, c in enumerate(name, 1) if c == "-")


def used_words(outdir: Path, pages: list[Path]) -> Used:
    """The words of ``pages`` and of every script under ``outdir/_static`` but :data:`NOT_LOADED`
    (the scripts the pages load and the ones those load in turn: the widgets' chunks, MathJax's
    components), and the scripts' words that end in ``-``."""
    words: set[str] = set()
    for page in pages:
        words.update(WORD.findall(page.read_text(encoding="utf-8", errors="replace")))
    script_words: set[str] = set()
    for script in sorted((outdir / "_static").rglob("*.js")):
        if script.name not in NOT_LOADED:
            script_words.update(SCRIPT_WORD.findall(script.read_text(encoding="utf-8", errors="replace")))
    prefixes = {w for w in script_words if w.endswith("-") and len(w) > 2}
    return Used(frozenset(words | script_words), frozenset(prefixes))


def _without_functions(selector: str) -> str:
    """``selector`` without the arguments of its functional pseudo-classes (``:not(.a)`` → ``:not``)."""
    out, depth = [], 0
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(char)
    return "".join(out)


def can_match(selector: str, used: Used) -> bool:
    """Whether every class and id that ``selector`` requires is one the build can use (:class:`Used`).

    >>> used = Used(frozenset({"nav", "show", "fa-sun", "top", "auto"}), frozenset({"bs-"}))
    >>> can_match("html[data-theme=dark] .nav:hover > a:not(.gone)::before", used)
    True
    >>> can_match(".nav .fa-moon", used), can_match(".bs-top-auto", used), can_match(".bs-popover-top", used)
    (False, True, False)
    """
    names = NAME.findall(_without_functions(ATTRIBUTE.sub("", selector)))
    return all(used.has(re.sub(r"\\(.)", r"\1", name)) for _, name in names)


def _selectors(prelude: list) -> list[str]:
    """The selectors of a rule's prelude (split at commas outside brackets)."""
    return [s.strip() for s in _split_commas(tinycss2.serialize(prelude))]


def _split_commas(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def prune_rules(rules: list, used: Used) -> str:
    """The CSS of the ``rules`` (tinycss2 nodes) that can match, in their order."""
    out = []
    for rule in rules:
        if rule.type == "qualified-rule":
            if any(can_match(s, used) for s in _selectors(rule.prelude)):
                out.append(rule.serialize())
        elif rule.type == "at-rule" and rule.lower_at_keyword in GROUPS and rule.content is not None:
            inner = prune_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True),
                                used)
            if inner:
                out.append(f"@{rule.at_keyword}{tinycss2.serialize(rule.prelude)}{{{inner}}}")
        elif rule.type == "at-rule":
            out.append(rule.serialize())
        # parse errors and comments: a browser drops them too
    return "\n".join(out)


def prune_css(css: str, used: Used) -> str:
    """``css`` with the rules no selector of which can match (:func:`can_match`) left out.

    >>> prune_css('@charset "UTF-8";.a{color:red}.b,.c{color:blue}@media print{.b{x:y}}@font-face{font-family:F}',
    ...           Used(frozenset({"c"})))
    '@charset "UTF-8";\\n.b,.c{color:blue}\\n@font-face{font-family:F}'
    """
    rules = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    return prune_rules(rules, used)


def prune_bundles(outdir: Path, pages: list[Path]) -> dict[str, str]:
    """Cut each stylesheet bundle that ``pages`` link to (in ``outdir/_static``) to the rules they
    and the build's scripts can use, store it by its digest and link the pages to it:
    {full bundle: cut bundle}."""
    static = outdir / "_static"
    used = used_words(outdir, pages)
    cut: dict[str, str] = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")

        def relink(m: re.Match) -> str:
            name = m.group(3)
            if name not in cut:
                full = static / name
                if not full.is_file() or "/* book_css: " in full.read_text(encoding="utf-8")[:200]:
                    return m.group(0)
                rules = tinycss2.parse_stylesheet(full.read_text(encoding="utf-8"), skip_comments=True, skip_whitespace=True)
                css = HEADER.format(source=name) + prune_rules(
                    [r for r in rules if not (r.type == "at-rule" and r.lower_at_keyword == "charset")], used)
                cut[name] = f"lectorch-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
                (static / cut[name]).write_text(css, encoding="utf-8")
            return m.group(1) + m.group(2) + cut[name] + m.group(4)

        new = BUNDLE_LINK.sub(relink, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return cut
