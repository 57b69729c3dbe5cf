"""A light first visit: the fonts the book ships, cut to what its pages show.

1. Font Awesome once. The theme ships its icons twice: as a script that redraws every icon as SVG
   (``fontawesome.js``, which ``layout/layout.html`` drops) and as webfonts that its
   stylesheet uses for the same icons and for its admonitions' and links' pseudo-element icons.
   The build keeps the webfonts, cut to the glyphs the book uses (:func:`icon_codepoints`): the
   icon classes of the built pages and of the theme's scripts, and every icon the stylesheets name
   outside Font Awesome's own class list.
2. The CJK font where CJK text is. An English page shows a few Chinese characters (the language
   switch's 中文, the glossary's 术语表): they come from a font of only the characters that the
   English pages outside the glossary show (:func:`cjk_chrome_font`), a few KB, not the translation's
   whole subset, which the Chinese pages and the English glossary's terms use
   (``i18n_static/lectorch-i18n.css``).
3. Few requests before the panels work (:func:`bundle_page`). On a phone's network each request
   waits its round trip, six at a time, and a page's scripts wait for every stylesheet before it:
   the theme's dozen stylesheets become one file, each run of scripts loaded the same way one file
   (in their order), and MathJax (264 KB) is fetched once the page's own scripts have run, not
   beside the files the panels wait for. That one stylesheet is then cut to the rules the book's
   pages and scripts can use (``book_css.py``): under half its gzipped bytes to wait for.
4. Figures without invisible digits: Matplotlib writes its SVGs' coordinates to a millionth of a
   point; the book's copies keep a hundredth (:func:`round_svg`), a third fewer bytes.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from pathlib import Path

import book_css  # tools/book/, beside this module

#: Font Awesome's icon map in the theme's stylesheet: ``.fa-bars:before{content:"\\f0c9"}``
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:(?::)?before,?)+)\{content:"\\([0-9a-f]+) ?"\}')
#: an icon named in a page or a script (a class such as ``fa-bars``)
ICON_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
#: a Font Awesome code point a stylesheet writes as a CSS escape (the private use area)
PRIVATE_USE = re.compile(r'"\\(f[0-9a-f]{3}|e[0-9a-f]{3})\s?"')
#: the characters the CJK font's unicode-range covers (i18n_static/lectorch-i18n.css)
CJK = re.compile(r"[\u2e80-\u2fff\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
#: the pages whose CJK text uses the translation's whole font: the glossary and the index of its terms
CJK_PAGES = ("glossary.html", "genindex.html")


def icon_codepoints(static: Path, pages: list[Path]) -> set[int]:
    """The Font Awesome code points the book draws: the icons of ``pages``' classes and of the
    scripts they load, mapped through the icon rules of the stylesheets in ``static``, and every
    other code point those stylesheets write (pseudo-element icons).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.css").write_text('.fa-bars:before,.fa-navicon:before{content:"\\\\f0c9"}'
    ...                              '.fa-sun:before{content:"\\\\f185"}.note:before{content:"\\\\f05a"}')
    >>> _ = (d / "p.html").write_text('<i class="fa-solid fa-navicon"></i>')
    >>> sorted(hex(c) for c in icon_codepoints(d, [d / "p.html"]))
    ['0xf05a', '0xf0c9']
    """
    names: dict[str, int] = {}
    extra: set[int] = set()
    for css in static.rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        for selectors, code in ICON_RULE.findall(text):
            for name in re.findall(r"\.(fa-[a-z0-9-]+)", selectors):
                names[name] = int(code, 16)
        extra.update(int(c, 16) for c in PRIVATE_USE.findall(ICON_RULE.sub("", text)))
    used: set[str] = set()
    scripts: set[Path] = set()
    for path in pages:
        text = path.read_text(encoding="utf-8", errors="replace")
        used.update(ICON_CLASS.findall(text))
        # the scripts the page loads (they may add icons), not every script in _static
        for src in re.findall(r'<script[^>]*\ssrc="([^"?#]+)', text):
            script = (path.parent / src).resolve()
            if script.name != "fontawesome.js" and script.is_file():
                scripts.add(script)
    for script in scripts:
        used.update(ICON_CLASS.findall(script.read_text(encoding="utf-8", errors="replace")))
    return extra | {names[n] for n in used if n in names}


def _subset(font: Path, codepoints: set[int] | None = None, text: str | None = None, out: Path | None = None) -> None:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options()
    options.flavor = "woff2" if (out or font).suffix == ".woff2" else None
    options.layout_features = ["*"]
    options.ignore_missing_unicodes = True
    tt = TTFont(str(font))
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints or ()), text=text or "")
    subsetter.subset(tt)
    subset.save_font(tt, str(out or font), options)


def subset_icon_fonts(outdir: Path) -> set[int]:
    """Cut the theme's Font Awesome webfonts in ``outdir/_static`` to :func:`icon_codepoints`."""
    static = outdir / "_static"
    fonts = sorted((static / "vendor" / "fontawesome").rglob("fa-*.woff2")) + sorted(
        (static / "vendor" / "fontawesome").rglob("fa-*.ttf"))
    codepoints = icon_codepoints(static, pages(outdir))
    for font in fonts:
        _subset(font, codepoints)
    return codepoints


def pages(outdir: Path) -> list[Path]:
    """The HTML pages of one build in ``outdir``: not the theme's templates in ``_static``, nor the
    pages of another build inside it (the Chinese edition's ``zh/``, which has its own ``_static``)."""
    found = []
    for page in sorted(outdir.rglob("*.html")):
        folders = page.relative_to(outdir).parents
        if not any(f.parts and (f.parts[0] in ("_static", "_sources") or (outdir / f / "_static").is_dir())
                   for f in folders):
            found.append(page)
    return found


def visible_text(page: str) -> str:
    """A page's text without its scripts, styles and tags (entities decoded)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def cjk_chrome_font(outdir: Path) -> str:
    """Write ``_static/fonts/lectorch-cjk-chrome.woff2``: the CJK font cut to the CJK characters of
    ``outdir``'s pages but :data:`CJK_PAGES`; returns those characters."""
    fonts = outdir / "_static" / "fonts"
    source = fonts / "lectorch-cjk.woff2"
    chars = set()
    for page in pages(outdir):
        if page.name not in CJK_PAGES:
            chars.update(CJK.findall(visible_text(page.read_text(encoding="utf-8", errors="replace"))))
    text = "".join(sorted(chars)) or "中文"
    if source.is_file():
        _subset(source, text=text, out=fonts / "lectorch-cjk-chrome.woff2")
    return text


#: a stylesheet a page links to: ``<link rel="stylesheet" ... href="...">``, either attribute first
STYLESHEET = re.compile(r'<link\b(?=[^>]*\brel="stylesheet")(?![^>]*\bmedia=)[^>]*\bhref="([^"]+)"[^>]*/?>')
#: one script loaded by its ``src`` alone (``defer``: after the page is parsed)
SCRIPT = '<script{defer} src="(?P<src>[^"]+)"></script>'
#: a run of two or more such scripts, loaded the same way (at once, or deferred)
SCRIPT_KINDS = ("", ' defer="defer"')
#: Sphinx's MathJax tag, which loads it at once beside the page's own scripts
MATHJAX = re.compile(r'<script async="async" src="([^"]*mathjax[^"]*/tex-[a-z]+\.js[^"]*)"></script>')
#: a stylesheet's ``url(...)``, quoted or not, and its ``@import "..."`` (or ``@import url(...)``)
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?(['"])([^'"]+)\1\s*\)?\s*;""")
#: what a bundle leaves out of the files it joins: their charset rule and source-map comments
CSS_CHARSET = re.compile(r'@charset\s+"[^"]*"\s*;')
SOURCE_MAP = re.compile(r"(?m)^\s*(?://|/\*)# sourceMappingURL=\S+(?:\s*\*/)?\s*$")


def _local(href: str) -> bool:
    """A file of the book (not another site, a data: URL or a fragment)."""
    return not re.match(r"([a-z][a-z0-9+.-]*:|//|/|#)", href, re.I)


def _file(page: Path, href: str) -> Path:
    return (page.parent / html.unescape(href).split("?")[0].split("#")[0]).resolve()


def css_for(css: Path, there: Path, seen: frozenset = frozenset()) -> str:
    """``css``'s rules as a stylesheet in the folder ``there`` states them: its relative ``url()``s
    rewritten for ``there``, each ``@import`` replaced by the imported rules (one request less).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "styles").mkdir()
    >>> _ = (d / "basic.css").write_text("p{background:url(file.png)}")
    >>> _ = (d / "styles" / "t.css").write_text('@charset "UTF-8";@import "../basic.css";'
    ...     'i{src:url(../fonts/a.woff2)}b{x:url("data:image/png;base64,AA")}')
    >>> css_for(d / "styles" / "t.css", d)
    'p{background:url(file.png)}i{src:url(fonts/a.woff2)}b{x:url("data:image/png;base64,AA")}'
    """
    if css in seen:
        raise ValueError(f"{css} imports itself")
    text = SOURCE_MAP.sub("", CSS_CHARSET.sub("", css.read_text(encoding="utf-8")))

    def url(m: re.Match) -> str:
        quote, target = m.groups()
        if not _local(target):
            return m.group(0)
        return f"url({quote}{os.path.relpath(css.parent / target, there).replace(os.sep, '/')}{quote})"

    parts = CSS_IMPORT.split(text)  # text, quote, href, text, ...
    out = [CSS_URL.sub(url, parts[0])]
    for href, after in zip(parts[2::3], parts[3::3]):
        if not _local(href):
            raise ValueError(f"{css} imports {href}, outside the book: the book is read offline")
        out += [css_for((css.parent / href).resolve(), there, seen | {css}), CSS_URL.sub(url, after)]
    return "".join(out)


def _stored(static: Path, text: str, suffix: str) -> Path:
    """``text`` stored once in ``static``, named by its digest (a changed bundle gets a new name)."""
    path = static / f"lectorch-{hashlib.sha256(text.encode()).hexdigest()[:12]}{suffix}"
    if not path.is_file():
        path.write_text(text, encoding="utf-8")
    return path


def _href(page: Path, target: Path) -> str:
    return os.path.relpath(target, page.parent).replace(os.sep, "/")


def bundle_page(page: Path, static: Path) -> bool:
    """Rewrite ``page``'s head to fewer requests (the module docstring's 3), the joined files stored
    in ``static``; True where it changed something. Order is kept: the stylesheets stand where the
    first of them stood, each run of scripts where it stood. A page with a ``<style>`` among its
    stylesheets keeps them as they are (their order with it would change)."""
    text = page.read_text(encoding="utf-8")
    end = text.find("</head>")
    if end < 0:
        return False
    head, rest = text[:end], text[end:]
    links = [m for m in STYLESHEET.finditer(head) if _local(m.group(1)) and _file(page, m.group(1)).is_file()]
    if len(links) > 1 and "<style" not in head[links[0].start():links[-1].end()]:
        css = '@charset "UTF-8";\n' + "\n".join(css_for(_file(page, m.group(1)), static) for m in links)
        tag = f'<link rel="stylesheet" type="text/css" href="{_href(page, _stored(static, css, ".css"))}" />'
        for m in reversed(links[1:]):
            head = head[:m.start()] + head[m.end():]
        head = head[:links[0].start()] + tag + head[links[0].end():]
    for defer in SCRIPT_KINDS:
        one = re.compile(SCRIPT.format(defer=defer))

        def joined(run: re.Match, one=one, defer=defer) -> str:
            srcs = [m.group("src") for m in one.finditer(run.group(0))]
            files = [_file(page, src) for src in srcs]
            # only the theme's and the book's own assets: the search index keeps its own name and file
            if not all(_local(src) and f.is_file() and static.resolve() in f.parents for src, f in zip(srcs, files)):
                return run.group(0)
            # a file's last statement may lack its semicolon: it must not run into the next file's first
            js = "\n;\n".join(SOURCE_MAP.sub("", f.read_text(encoding="utf-8")) for f in files) + "\n"
            return f'<script{defer} src="{_href(page, _stored(static, js, ".js"))}"></script>\n'

        head = re.sub(rf"(?:{one.pattern}\s*){{2,}}", joined, head)

    def later(m: re.Match) -> str:  # once the deferred scripts, the panels' among them, have run
        src = json.dumps(html.unescape(m.group(1)))
        return ('<script>document.addEventListener("DOMContentLoaded", function () { var s = '
                f'document.createElement("script"); s.src = {src}; document.head.appendChild(s); }});</script>')

    head = MATHJAX.sub(later, head)
    if head + rest == text:
        return False
    page.write_text(head + rest, encoding="utf-8")
    return True


def bundle_pages(outdir: Path) -> int:
    """:func:`bundle_page` on every page of ``outdir`` (bundles in its ``_static``): how many changed."""
    return sum(bundle_page(page, outdir / "_static") for page in pages(outdir))


#: the geometry of a Matplotlib SVG: its paths, positions and transforms (never its text)
SVG_GEOMETRY = re.compile(r'(\s(?:d|transform|x|y|points)=")([^"]*)(")')
#: a coordinate written with more decimals than a reader can see
LONG_NUMBER = re.compile(r"-?\d+\.\d{3,}")


def _two_decimals(m: re.Match) -> str:
    text = f"{round(float(m.group(0)), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def round_svg(text: str) -> str:
    """A Matplotlib SVG's coordinates to 0.01 pt (it writes 6 decimals: a figure's bytes are mostly
    digits that move a line by under a thousandth of a pixel); its text and styles as they are.

    >>> round_svg('<path d="M 60.622109 251.048408 L -0.001 3.5"/><text x="1.23456">1.23456</text>')
    '<path d="M 60.62 251.05 L 0 3.5"/><text x="1.23">1.23456</text>'
    """
    return SVG_GEOMETRY.sub(lambda m: m.group(1) + LONG_NUMBER.sub(_two_decimals, m.group(2)) + m.group(3), text)


def round_figures(outdir: Path) -> int:
    """:func:`round_svg` on the Matplotlib figures of ``outdir/_images``: how many it rewrote."""
    changed = 0
    for svg in sorted((outdir / "_images").glob("*.svg")):
        text = svg.read_text(encoding="utf-8")
        if "<dc:title>Matplotlib" in text[:2000] and (rounded := round_svg(text)) != text:
            svg.write_text(rounded, encoding="utf-8")
            changed += 1
    return changed


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    bundle_pages(outdir)
    book_css.prune_bundles(outdir, pages(outdir))  # the bundled stylesheet cut to the rules the pages use
    round_figures(outdir)
    subset_icon_fonts(outdir)
    if not app.config.language.startswith("zh"):  # a Chinese page uses the whole font
        cjk_chrome_font(outdir)


def _layout(app, config) -> None:
    layout = str(Path(__file__).resolve().parent / "layout")  # layout.html: the theme's, lighter
    if layout not in config.templates_path:
        config.templates_path = list(config.templates_path or []) + [layout]


def setup(app) -> None:
    app.connect("config-inited", _layout)
    app.connect("build-finished", _build_finished)
