"""The Chinese edition's catalogs and build (Sphinx gettext + sphinx-intl).

    python tools/book/i18n.py update [PAGE…]  # re-extract the English messages and merge them into
                                         # locales/zh_CN/LC_MESSAGES/*.po (changed ones turn fuzzy)
    python tools/book/i18n.py build [OUTPUT [EXECUTE]]  # the Chinese HTML into OUTPUT (default
                                         # _build/html/zh); EXECUTE "cache" reuses the English run
    python tools/book/i18n.py status          # messages, untranslated, fuzzy and obsolete per catalog
    python tools/book/i18n.py font            # re-make the CJK font subset from the catalogs
    python tools/book/i18n.py package         # the checkers' catalogs of the lectorch package
                                         # (lectorch/locale/*.json) from _ui.po

``make translations`` runs ``update``; ``make book`` builds both editions. The tests
(tests/test_translation.py) use :func:`extract`, :func:`catalog_problems` and
:func:`placeholder_problems`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from babel.messages.pofile import read_po, write_po

import build_book
from languages import LANGUAGE, UI_CATALOG, ZH_FOLDER

ROOT = Path(__file__).resolve().parents[2]

LOCALES = ROOT / "locales"
CATALOGS = LOCALES / LANGUAGE / "LC_MESSAGES"
FONT = ROOT / "tools" / "book" / "i18n_static" / "fonts" / "lectorch-cjk.woff2"


def extract(output: Path) -> Path:
    """Run Sphinx's gettext builder over the book (stored outputs, no execution); return the .pot folder."""
    proc = build_book.build(Path(output), builder="gettext")
    # a warning (e.g. a chapter mid-edit) makes the strict build fail; the catalogs are still written
    if not list((Path(output) / "_build" / "gettext").rglob("*.pot")):
        raise RuntimeError(f"gettext extraction failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    pot = Path(output) / "_build" / "gettext"
    write_ui_template(pot)
    return pot


def build_gettext(output: Path) -> list[subprocess.CompletedProcess]:
    """The English messages as gettext templates (``*.pot`` per page and ``_ui.pot``), into ``output``:
    the edition ``gettext`` of :data:`build_book.EDITIONS` (``make book``), which :func:`update` merges."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{output.name}-building-", dir=output.parent))
    try:
        pot = extract(work / "gettext")  # raises when no template was written
        build_book.replace_folder(output, pot)
        return []
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_ui_template(pot: Path) -> Path:
    """The template of the generated text (panels, checkers, theme strings): ``_ui.pot`` beside the
    pages' templates, so ``update``, ``status`` and the tests treat it as one more catalog."""
    from babel.messages.catalog import Catalog

    import sphinx_lectorch_i18n

    catalog = Catalog()
    for message in sphinx_lectorch_i18n.ui_messages():
        catalog.add(message)
    for label in sphinx_lectorch_i18n.control_labels():
        catalog.add(label, context=sphinx_lectorch_i18n.CONTROL)
    for label in sphinx_lectorch_i18n.option_labels():
        catalog.add(label, context=sphinx_lectorch_i18n.OPTION)
    for message in sphinx_lectorch_i18n.checker_messages():
        catalog.add(message, context=sphinx_lectorch_i18n.CHECKER)
    path = pot / f"{UI_CATALOG}.pot"
    with open(path, "wb") as f:
        write_po(f, catalog, width=0)
    return path


def update(names: list[str] | None = None) -> None:
    """Re-extract the English messages and merge them into the zh_CN catalogs (sphinx-intl).

    ``names`` (e.g. ["chapters/06_backward_6x"]) limits the merge to those pages' catalogs.
    """
    with tempfile.TemporaryDirectory() as tmp:
        # the templates of `make book` (its gettext edition), reused while the English is unchanged;
        # a copy, since the merge below drops some
        pot = shutil.copytree(build_book.ensure("gettext").path, Path(tmp) / "gettext")
        shutil.rmtree(pot / "_static", ignore_errors=True)
        if names:
            for path in pot.rglob("*.pot"):
                if str(path.relative_to(pot).with_suffix("")) not in names:
                    path.unlink()
        subprocess.run([str(Path(sys.executable).with_name("sphinx-intl")), "update", "-p", str(pot),
                        "-d", str(LOCALES), "-l", LANGUAGE, "-w", "0", "--no-obsolete"], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        # Babel flags any message with a "%" as python-format ("10 % of" reads as "% o"): the book
        # has no format strings, and the flag would make `msgfmt -c` reject the Chinese "% 的"
        for name, path in catalogs().items():
            if names and name not in names:
                continue
            with open(path, "rb") as f:
                catalog = read_po(f)
            for message in catalog:
                message.flags.discard("python-format")
            catalog.obsolete.clear()  # what the English dropped (sphinx-intl keeps some)
            with open(path, "wb") as f:
                write_po(f, catalog, width=0)
        # a page that left the book leaves its catalog behind: drop it
        pages = {str(p.relative_to(pot).with_suffix("")) for p in pot.rglob("*.pot")}
        for name, path in catalogs().items():
            if name not in pages and not names:
                path.unlink()


PACKAGE_CATALOGS = ROOT / "lectorch" / "locale"


def package_catalog(language: str = LANGUAGE) -> dict[str, str]:
    """What a student's kernel says and draws, from ``_ui.po``, as the package ships it: the checkers'
    messages (context ``checker``), the words drawn into figures (:func:`sphinx_lectorch_i18n.figure_messages`)
    and the panels' titles, control labels and word choices (the last two keyed ``context\x04label``,
    as gettext keys a message with a context), English → translation, translated and not fuzzy ones
    only, sorted."""
    import sphinx_lectorch_i18n as ui

    with open(CATALOGS.parent.parent / language / "LC_MESSAGES" / f"{UI_CATALOG}.po", "rb") as f:
        catalog = read_po(f)
    plain = set(ui.figure_messages(alt=False))  # a kernel draws no alt text
    plain.update(o.get("data", {}).get(ui.PANEL_MIME, {}).get("title") for o in ui._stored_outputs())
    shipped = {m.id: m.string for m in catalog if m.id in plain and not m.context and m.string and not m.fuzzy}
    shipped.update((m.id, m.string) for m in catalog if m.context == ui.CHECKER and m.id and m.string and not m.fuzzy)
    shipped.update((f"{m.context}\x04{m.id}", m.string) for m in catalog
                   if m.context in (ui.CONTROL, ui.OPTION) and m.id and m.string and not m.fuzzy)
    return dict(sorted(shipped.items()))


def package_text(language: str = LANGUAGE) -> str:
    import json

    return json.dumps(package_catalog(language), ensure_ascii=False, indent=0) + "\n"


def write_package_catalogs() -> list[Path]:
    """``lectorch/locale/<language>.json`` from ``_ui.po``: a student's kernel has only the package."""
    PACKAGE_CATALOGS.mkdir(exist_ok=True)
    path = PACKAGE_CATALOGS / f"{LANGUAGE}.json"
    path.write_text(package_text(LANGUAGE), encoding="utf-8")
    return [path]


def build(output: Path | None = None, execute: str = "off") -> subprocess.CompletedProcess:
    """Build the Chinese edition into ``output`` (default _build/html/zh).

    ``execute="cache"`` reuses the English build's executed notebooks (one jupyter-cache for
    both editions, so nothing runs twice); "off" uses the outputs stored in the notebooks.
    """
    output = Path(output) if output else ROOT / "_build" / "html" / ZH_FOLDER
    with tempfile.TemporaryDirectory() as tmp:
        proc = build_book.build(Path(tmp) / "zh", language=LANGUAGE, execute=execute)
        if proc.returncode == 0:
            if output.exists():
                shutil.rmtree(output)
            shutil.copytree(Path(tmp) / "zh" / "_build" / "html", output)
    return proc


@dataclass
class CatalogStatus:
    name: str
    messages: int
    untranslated: list[str]
    fuzzy: list[str]
    obsolete: list[str]


def catalogs() -> dict[str, Path]:
    """The zh_CN catalogs by document name (e.g. "chapters/01_precision")."""
    return {str(p.relative_to(CATALOGS).with_suffix("")): p for p in sorted(CATALOGS.rglob("*.po"))}


def status(path: Path) -> CatalogStatus:
    with open(path, "rb") as f:
        catalog = read_po(f)
    real = [m for m in catalog if m.id]
    return CatalogStatus(
        name=str(path.relative_to(CATALOGS).with_suffix("")),
        messages=len(real),
        untranslated=[m.id for m in real if not m.string],
        fuzzy=[m.id for m in real if m.fuzzy],
        obsolete=[m.id for m in catalog.obsolete.values()],
    )


def pot_ids(path: Path) -> set[str]:
    with open(path, "rb") as f:
        return {m.id for m in read_po(f) if m.id}


def catalog_problems(pot_dir: Path) -> list[str]:
    """Everything that keeps the catalogs from matching the current English (empty when in sync)."""
    problems = []
    pots = {str(p.relative_to(pot_dir).with_suffix("")): p for p in pot_dir.rglob("*.pot")
            if not str(p.relative_to(pot_dir)).startswith("_static")}
    pos = catalogs()
    for name in sorted(set(pots) - set(pos)):
        problems.append(f"{name}: no catalog (run `make translations` and translate it)")
    for name in sorted(set(pos) - set(pots)):
        problems.append(f"{name}: a catalog for a page that is no longer in the book")
    for name in sorted(set(pots) & set(pos)):
        st = status(pos[name])
        with open(pos[name], "rb") as f:
            po_ids = {m.id for m in read_po(f) if m.id}
        for msg in sorted(pot_ids(pots[name]) - po_ids):
            problems.append(f"{name}: new English message not in the catalog (run `make translations`): {msg[:80]!r}")
        for msg in sorted(po_ids - pot_ids(pots[name])):
            problems.append(f"{name}: the catalog has a message the English no longer has: {msg[:80]!r}")
        problems += [f"{name}: untranslated: {m[:80]!r}" for m in st.untranslated]
        problems += [f"{name}: fuzzy (English changed; update the translation): {m[:80]!r}" for m in st.fuzzy]
        problems += [f"{name}: obsolete entry (remove it): {m[:80]!r}" for m in st.obsolete]
    return problems


# What must survive translation untouched: roles with their targets, math, inline code, links,
# substitutions, numbers with their units.
_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
_CODE = re.compile(r"(?<![`}])`[^`]+`")
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\s](?:[^$]*[^$\s])?\$", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_SUBST = re.compile(r"\{\{[^}]+\}\}")
# a number: digits with optional thousands separators (space or comma), decimals, exponent; ASCII
# boundaries only, so "第 6 章" and "第6章" both keep the 6 of "chapter 6"
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{1,3}(?:[ ,]\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?(?![A-Za-z0-9_])")


# "70 billion" and "700 亿" are the same number: magnitude words scale the number before them
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
           "万": 1e4, "亿": 1e8, "万亿": 1e12}
_SCALED = re.compile(r"(\d+(?:\.\d+)?)(?:[ -]?(thousand|million|billion|trillion)\b|\s*(万亿|亿|万)(?![\d]))")


def _numbers(text: str) -> list[str]:
    """The numbers of ``text`` as canonical values ("1 024" = "1,024" = "1024"; "70 billion" = "700 亿")."""
    scaled = []

    def scale(found: re.Match) -> str:
        scaled.append(float(found.group(1)) * _SCALES[found.group(2) or found.group(3)])
        return " "

    rest = _SCALED.sub(scale, text)
    values = scaled + [float(re.sub(r"[ ,]", "", n)) for n in _NUMBER.findall(rest)]
    return [f"{v:.6g}" for v in values]


def _role_key(role: str) -> str:
    """A role as it must survive translation: ``{term}`text <Target>``` keeps its name and target
    (its visible text may be translated); any other role (``{glue:text}`key```) stays whole."""
    found = re.fullmatch(r"(\{[\w:.-]+\})`[^`]*?<([^<>`]+)>`", role)
    return f"{found.group(1)}<{found.group(2)}>" if found else role


def placeholders(text: str) -> dict[str, list[str]]:
    """The roles, math, code spans, links, substitutions and numbers of a message, in order.

    >>> placeholders("Use {glue:text}`q1_days:.0f` days, `x.view(2)` and $2sh^2$: 1 024 tokens.")["role"]
    ['{glue:text}`q1_days:.0f`']
    """
    without_roles = _ROLE.sub(" ", text)
    without_code = _CODE.sub(" ", without_roles)
    without_math = _MATH.sub(" ", without_code)
    numbers = _numbers(_LINK.sub(" ", without_math))
    return {
        "role": sorted(_role_key(r) for r in _ROLE.findall(text)),
        "code": sorted(_CODE.findall(without_roles)),
        "math": sorted(_MATH.findall(without_code)),
        "link": sorted(_LINK.findall(text)),
        "substitution": sorted(_SUBST.findall(text)),
        "number": sorted(numbers),
    }


def placeholder_problems(path: Path) -> list[str]:
    """Messages whose translation lost, added or changed a role, math span, code span, link or number."""
    with open(path, "rb") as f:
        catalog = read_po(f)
    problems = []
    for m in catalog:
        if not m.id or not m.string:
            continue
        src, dst = placeholders(m.id), placeholders(m.string)
        for kind in src:
            if src[kind] != dst[kind]:
                problems.append(f"{path.name}: {kind} differs in {m.id[:70]!r}: {src[kind]} vs {dst[kind]}")
    return problems


def font_characters() -> str:
    """Every non-ASCII character the translations and the English pages use (for the font subset)."""
    chars = set("中文英语阅读本页的版")
    for path in catalogs().values():
        with open(path, "rb") as f:
            for m in read_po(f):
                chars.update(m.string or "")
    for page in (ROOT / "chapters").rglob("*"):
        if page.suffix in (".md", ".ipynb"):
            chars.update(page.read_text(encoding="utf-8"))
    return "".join(sorted(c for c in chars if ord(c) > 0x2E7F))


def make_font(source: Path) -> Path:
    """Subset a CJK font (e.g. Debian's fonts-noto-cjk NotoSansCJK-Regular.ttc) to the book's characters."""
    from fontTools import subset

    FONT.parent.mkdir(parents=True, exist_ok=True)
    text = font_characters()
    args = [str(source), f"--text={text}", "--flavor=woff2", f"--output-file={FONT}", "--layout-features=*",
            "--no-hinting", "--desubroutinize"]
    if source.suffix == ".ttc":
        args.append("--font-number=2")  # Noto Sans CJK: 0 JP, 1 KR, 2 SC, 3 TC, 4 HK
    subset.main(args)
    return FONT


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "update":
        update(argv[1:] or None)
        write_package_catalogs()
    elif command == "package":
        print(*write_package_catalogs())
    elif command == "build":
        proc = build(Path(argv[1]) if len(argv) > 1 else None, *argv[2:3])
        log = proc.stdout + proc.stderr
        print(log[-3000:])
        return proc.returncode
    elif command == "status":
        for path in catalogs().values():
            st = status(path)
            print(f"{st.name:40} {st.messages:5} messages, {len(st.untranslated):4} untranslated, "
                  f"{len(st.fuzzy):3} fuzzy, {len(st.obsolete):3} obsolete")
    elif command == "font":
        source = Path(argv[1]) if len(argv) > 1 else Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
        print(make_font(source), FONT.stat().st_size, "bytes")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
