"""The book builds from clean with zero warnings, contains every chapter, and works offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.book


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


def test_every_chapter_notebook_is_in_the_toc():
    chapters = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    assert chapters, "no chapters found"
    missing = [c for c in chapters if c not in toc_files()]
    assert not missing, f"chapters missing from _toc.yml: {missing}"


def test_book_builds_with_every_page(built_book: Path):
    for doc in toc_files():
        assert (built_book / f"{doc}.html").exists(), f"{doc}.html was not built"
    assert (built_book / "index.html").exists()


def test_pages_reference_no_external_scripts_or_styles(built_book: Path):
    for page in built_book.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        loaded = re.findall(r'<script\b[^>]*\bsrc="([^"]+)"', html)
        loaded += [m for tag in re.findall(r"<link\b[^>]*>", html) if "stylesheet" in tag or "preload" in tag
                   for m in re.findall(r'href="([^"]+)"', tag)]
        external = [url for url in loaded if re.match(r"(https?:)?//", url)]
        assert not external, f"{page.name} loads {external} from the network"


def test_widget_state_and_vendored_assets_are_in_the_book(built_book: Path):
    page = (built_book / "chapters" / "00_napkin_math.html").read_text(encoding="utf-8")
    state = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', page, re.S)
    assert state, "chapter 00 carries no widget state"
    assert json.loads(state.group(1))["state"], "widget state is empty"
    assert "_static/html-manager-1.0.6/embed.js" in page
    assert "_static/mathjax-3.2.2/es5/tex-chtml.js" in page
    assert (built_book / "_static" / "html-manager-1.0.6" / "embed.js").exists()
    assert (built_book / "_static" / "mathjax-3.2.2" / "es5" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()


def test_copyright_and_launch_buttons(built_book: Path):
    page = (built_book / "chapters" / "00_napkin_math.html").read_text(encoding="utf-8")
    assert "© Copyright 2026" in page or "Copyright 2026" in page
    assert "colab.research.google.com" in page
    assert "hub/user-redirect" in page


def test_internal_links_resolve(built_book: Path):
    """Every relative link of every page points to a file that exists, and its #anchor to an id."""
    ids: dict[Path, set[str]] = {}

    def anchors(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))
        return ids[page]

    broken = []
    for page in built_book.rglob("*.html"):
        if "_static" in page.parts:
            continue
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]+)"', page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", href) or href.startswith("//"):
                continue  # external (launch buttons, repository), mailto, javascript
            path, _, fragment = href.partition("#")
            path = path.split("?")[0]
            target = (page.parent / path).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(built_book)} -> {href}")
            elif fragment and target.suffix == ".html" and fragment not in anchors(target):
                broken.append(f"{page.relative_to(built_book)} -> {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken)))


def test_every_lectorch_module_is_in_the_api_reference():
    import pkgutil

    import lectorch

    api = (ROOT / "chapters" / "reference" / "api.md").read_text()
    modules = [m.name for m in pkgutil.walk_packages(lectorch.__path__, "lectorch.")
               if not m.name.rsplit(".", 1)[-1].startswith("_") and not m.name.startswith("lectorch.exercises.")]
    missing = [m for m in modules if f"automodule:: {m}\n" not in api]
    assert not missing, f"modules missing from chapters/reference/api.md: {missing}"
