"""The Chinese edition is kept in sync with the English one.

- The catalogs match what Sphinx's gettext builder extracts from the current English: change an
  English sentence and a test fails until its translation is updated (`make translations`, then
  translate what turned fuzzy or new).
- Every message is translated, none fuzzy or obsolete, and each translation keeps the roles, math,
  inline code, links and numbers of its source.
- The zh build (built with the English one by the `built_book` fixture, with zero warnings) reads in
  Chinese, has Chinese theme strings, a language switch on every page, Chinese search, and a CJK font
  fallback that loads offline.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from _paths import ROOT
import i18n
import sphinx_lectorch_i18n as ui

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")


def _html_text(page: Path) -> str:
    """The prose of a built page: the article without code, outputs, math and the API's signatures."""
    html = page.read_text(encoding="utf-8")
    article = html.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]
    for tag in ("pre", "code", "script", "style", "math", "mjx-container", "dt"):
        article = re.sub(rf"<{tag}\b.*?</{tag}>", " ", article, flags=re.S)
    article = re.sub(r'<div class="cell_output.*?</div>\s*</div>', " ", article, flags=re.S)
    article = re.sub(r"<[^>]+>", " ", article)
    return re.sub(r"\\\(.*?\\\)|\$\$.*?\$\$", " ", article, flags=re.S)


# --------------------------------------------------------------------------- the catalogs


def test_catalogs_exist_for_every_page():
    names = set(i18n.catalogs())
    pages = {str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "chapters").rglob("*")
             if p.suffix in (".md", ".ipynb") and not p.name.startswith("_")}
    assert pages <= names, f"pages without a catalog: {sorted(pages - names)}"


def test_catalogs_match_the_current_english(book_edition):
    pot = book_edition("gettext")  # i18n.extract's templates, reused while the English is unchanged
    problems = i18n.catalog_problems(pot)
    assert not problems, (f"{len(problems)} catalog problems (run `make translations` and translate):\n"
                          + "\n".join(problems[:40]))


def test_every_message_is_translated_none_fuzzy_or_obsolete():
    problems = []
    for path in i18n.catalogs().values():
        st = i18n.status(path)
        problems += [f"{st.name}: untranslated {m[:60]!r}" for m in st.untranslated]
        problems += [f"{st.name}: fuzzy {m[:60]!r}" for m in st.fuzzy]
        problems += [f"{st.name}: obsolete {m[:60]!r}" for m in st.obsolete]
    assert not problems, f"{len(problems)} messages to translate:\n" + "\n".join(problems[:40])


def test_translations_keep_roles_math_code_links_and_numbers():
    problems = [p for path in i18n.catalogs().values() for p in i18n.placeholder_problems(path)]
    assert not problems, f"{len(problems)} placeholder problems:\n" + "\n".join(problems[:40])


def test_a_changed_english_sentence_is_caught(tmp_path):
    """Simulate an edit of the English: the check names the new message and the stale one."""
    name, path = next(iter(i18n.catalogs().items()))
    pot_dir = tmp_path / "pot"
    for other, po in i18n.catalogs().items():
        target = pot_dir / f"{other}.pot"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(po, target)
    text = (pot_dir / f"{name}.pot").read_text(encoding="utf-8")
    first = re.search(r'^msgid "(.+)"$', text, re.M)
    edited = text.replace(f'msgid "{first.group(1)}"', f'msgid "{first.group(1)} (edited)"', 1)
    (pot_dir / f"{name}.pot").write_text(edited, encoding="utf-8")
    problems = i18n.catalog_problems(pot_dir)
    assert any("new English message" in p and "(edited)" in p for p in problems)
    assert any("no longer has" in p for p in problems)


@pytest.mark.parametrize("source,translation,kind", [
    ("Use {glue:text}`q1_days:.0f` days.", "用 {glue:text}`q1_days:.0f` 天。", None),
    ("Use {glue:text}`q1_days:.0f` days.", "用 天。", "role"),
    ("See {term}`strides <Stride · 步幅>`.", "见{term}`步幅 <Stride · 步幅>`。", None),
    ("See {term}`strides <Stride · 步幅>`.", "见{term}`步幅 <Strides>`。", "role"),
    ("It costs $2sh^2$ FLOPs.", "它需要 $2sh$ 次浮点运算。", "math"),
    ("Call `x.view(2)`.", "调用 `x.view(3)`。", "code"),
    ("About 1 024 tokens.", "大约 1024 个词元。", None),
    ("About 4600 tokens.", "大约 460 个词元。", "number"),
    ("A 70-billion-parameter model on 15 trillion tokens.", "一个 700 亿参数的模型，15 万亿个词元。", None),
    ("A 70-billion-parameter model.", "一个 70 亿参数的模型。", "number"),
    ("See [the guide](running.md).", "见[指南](other.md)。", "link"),
])
def test_placeholder_check(source, translation, kind):
    src, dst = i18n.placeholders(source), i18n.placeholders(translation)
    differing = {k for k in src if src[k] != dst[k]}
    assert differing == ({kind} if kind else set())


# --------------------------------------------------------------------------- the zh build


def _zh_pages(built_book: Path) -> list[Path]:
    return sorted(p for p in (built_book / "zh").rglob("*.html")
                  if "_static" not in p.parts and p.name not in ("search.html", "genindex.html", "index.html"))


def test_every_zh_chapter_page_reads_in_chinese(built_book):
    problems = []
    for page in sorted((built_book / "zh" / "chapters").glob("[0-9][0-9]_*.html")):
        text = _html_text(page)
        cjk, latin_words = len(CJK.findall(text)), len(re.findall(r"[A-Za-z]{3,}", text))
        if cjk < 2 * latin_words:
            problems.append(f"{page.name}: {cjk} Chinese characters vs {latin_words} English words")
    assert not problems, "\n".join(problems)


def test_the_zh_edition_has_the_same_pages_and_chinese_theme_strings(built_book):
    english = {p.relative_to(built_book).as_posix() for p in built_book.rglob("*.html")
               if "_static" not in p.parts and p.parts[len(built_book.parts)] != "zh"}
    chinese = {p.relative_to(built_book / "zh").as_posix() for p in (built_book / "zh").rglob("*.html")
               if "_static" not in p.parts}
    assert english == chinese
    page = (built_book / "zh" / "chapters" / "01_precision.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in page or '<html lang="zh_CN"' in page
    assert "搜索" in page  # the theme's search box


def test_panel_controls_are_labelled_in_each_editions_language(built_book):
    """A panel's control labels come from the notebook's stored output (English); the zh pages show
    their translations (context "panel control" of ``_ui.po``), the English pages the labels."""
    _ = ui.ui_gettext("zh_CN")
    labels = ui.control_labels()
    assert len(labels) > 20 and "x requires grad" in labels
    label = re.compile(r'<span class="lp-label">([^<]*)</span>')
    for edition, expected in (("", set(labels)), ("zh/", {_(text, ui.CONTROL) for text in labels})):
        shown = {html.unescape(text) for page in (built_book / edition / "chapters").glob("[0-9][0-9]_*.html")
                 for text in label.findall(page.read_text(encoding="utf-8"))}
        assert shown == expected, edition
    assert _("layers", ui.CONTROL) == "层数" and _("x requires grad", ui.CONTROL) == "x 需要梯度"


def _switch_href(page: Path) -> str:
    found = re.search(r'<p class="lectorch-lang-switch"><a href="([^"]+)"', page.read_text(encoding="utf-8"))
    assert found, f"{page}: no language switch"
    return found.group(1)


def test_every_page_has_a_language_switch_to_the_same_page(built_book):
    problems = []
    english = [p for p in built_book.rglob("*.html") if "_static" not in p.parts
               and p.parts[len(built_book.parts)] != "zh"
               and p.name not in ("search.html", "genindex.html", "py-modindex.html")
               and "http-equiv=\"refresh\"" not in p.read_text(encoding="utf-8").lower()]
    for page in english:
        target = (page.parent / _switch_href(page)).resolve()
        if not target.exists():
            problems.append(f"{page.relative_to(built_book)} -> {_switch_href(page)}: missing")
            continue
        if (target.parent / _switch_href(target)).resolve() != page.resolve():
            problems.append(f"{target.relative_to(built_book)} does not lead back to {page.relative_to(built_book)}")
    assert len(english) >= 10 and not problems, "\n".join(problems)


def test_zh_search_index_holds_chinese_words(built_book):
    index = (built_book / "zh" / "searchindex.js").read_text(encoding="utf-8")
    for word in ("张量", "步幅", "梯度", "精度"):  # jieba splits 混合精度 into 混合 + 精度
        # the index is JSON: words appear escaped ("\u5f20\u91cf")
        assert json.dumps(word) in index or f'"{word}"' in index, f"the zh search index has no entry {word!r}"


def test_cjk_font_subset_covers_the_translation():
    from fontTools.ttLib import TTFont

    font = TTFont(i18n.FONT)
    cmap = font.getBestCmap()
    missing = [c for c in i18n.font_characters() if ord(c) not in cmap and CJK.match(c)]
    assert not missing, f"re-make the font subset (`python tools/book/i18n.py font`): missing {''.join(missing[:40])}"
    assert i18n.FONT.stat().st_size < 2_500_000


# ------------------------------------------------------------------------ in the browser

from _tour import Visit  # noqa: E402


@pytest.mark.browser
def test_zh_search_finds_a_chinese_word(browser, server):
    visit = Visit(browser, server, "zh/search.html?q=张量")
    try:
        visit.page.wait_for_selector("#search-results ul.search li", timeout=20000)
        assert visit.page.locator("#search-results ul.search li").count() >= 3
    finally:
        visit.close()


@pytest.mark.browser
def test_language_switch_and_cjk_font_work_in_the_browser(browser, server):
    visit = Visit(browser, server, "chapters/03_strides_views.html")
    try:
        visit.page.click("p.lectorch-lang-switch a")
        visit.page.wait_for_load_state("load")
        assert visit.page.url.endswith("/zh/chapters/03_strides_views.html")
        loaded = visit.page.evaluate("""async () => {
            await document.fonts.load('16px "Lectorch CJK"', '张量');
            return document.fonts.check('16px "Lectorch CJK"', '张量');
        }""")
        assert loaded, "the vendored CJK font did not load"
        assert not visit.errors and not visit.external, (visit.errors, visit.external)
    finally:
        visit.close()
