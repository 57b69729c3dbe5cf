"""The book builds from clean with zero warnings, contains every chapter, and works offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from _paths import ROOT
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


def test_vendored_assets_are_in_the_book_and_loaded_only_where_needed(built_book: Path):
    assert (built_book / "_static" / "html-manager-1.0.6" / "embed.js").exists()
    assert (built_book / "_static" / "mathjax-3.2.2" / "es5" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    assert (built_book / "_static" / "lectorch-live.js").exists()
    assert (built_book / "_static" / "lectorch-live-data.js").exists()
    for page in (built_book / "chapters").glob("[0-9][0-9]_*.html"):
        html = page.read_text(encoding="utf-8")
        views = "application/vnd.jupyter.widget-view+json" in html
        manager = "html-manager-1.0.6/embed.js" in html
        state = '<script type="application/vnd.jupyter.widget-state+json">' in html
        # the 3.6 MB widget manager and the widget state only on a page that still has a widget view
        assert views == manager == state, f"{page.name}: views={views} manager={manager} state={state}"


def test_live_data_is_lectorchs_export(built_book: Path):
    from lectorch.widgets.live import export_data

    text = (built_book / "_static" / "lectorch-live-data.js").read_text()
    body = re.fullmatch(r"window.LECTORCH_LIVE_DATA = (.*);\n", text, re.S).group(1)
    assert json.loads(body) == json.loads(json.dumps(export_data()))


def test_copyright_and_launch_buttons(built_book: Path):
    import sphinx_lectorch

    page = (built_book / "chapters" / "00_napkin_math.html").read_text(encoding="utf-8")
    assert "© Copyright 2026" in page or "Copyright 2026" in page
    url = sphinx_lectorch.repository_url()
    path = url.removeprefix("https://github.com/")
    assert f"colab.research.google.com/github/{path}/blob/" in page, "the Colab button does not use repository.url"
    assert "hub/user-redirect" not in page, "no JupyterHub button: no hub serves nbgitpuller for this course"


def test_every_chapter_starts_with_the_one_install_line():
    """Each chapter's first code cell installs lectorch when missing, with the line built from _config.yml."""
    import sphinx_lectorch

    expected = sphinx_lectorch.install_cell_source()
    assert sphinx_lectorch.repository_url() in expected
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert "".join(code[0]["source"]) == expected, f"{path.name}: the first code cell is not the install cell"
        for cell in code:
            source = "".join(cell["source"])
            assert not re.search(r"^\s*(from|import) (myst_nb|sphinx|jupyter_book)\b", source, re.M), (
                f"{path.name}: a cell imports the book tooling (use `from lectorch import glue`)")


def test_running_page_and_intro_show_the_same_install_line(built_book: Path):
    import html as html_lib

    import sphinx_lectorch

    line = sphinx_lectorch.install_command()
    for page in ("chapters/reference/running.html", "chapters/intro.html"):
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", (built_book / page).read_text(encoding="utf-8")))
        assert line.replace("pip install", "pip install -q") in text, f"{page} lacks the install line"
        assert f"git clone {sphinx_lectorch.repository_url()}" in text, f"{page} lacks the clone line"


def test_panels_are_live_or_marked_snapshots(built_book: Path):
    from lectorch.widgets.live import LIVE

    seen_live = set()
    for page in (built_book / "chapters").glob("[0-9][0-9]_*.html"):
        html = page.read_text(encoding="utf-8")
        for tag in re.findall(r'<div class="lectorch-panel"[^>]*>', html):
            live = re.search(r'data-live="([^"]+)"', tag)
            if live:
                assert live.group(1) in LIVE, f"{page.name}: unknown live panel {live.group(1)}"
                seen_live.add(live.group(1))
            elif "data-recorded" not in tag:  # a measured panel's recorded grid (tests/test_browser_panels.py)
                assert "data-snapshot" in tag
        assert html.count('<div class="lectorch-panel" data-snapshot') == html.count("snapshot of a run on "), page.name
    assert {"napkin", "tensor_bytes", "transfer", "einsum", "roofline", "backprop", "step_memory", "views"} <= seen_live


def test_checker_cells_show_what_they_check_never_a_verdict(built_book: Path):
    for page in (built_book / "chapters").glob("[0-9][0-9]_*.html"):
        html = page.read_text(encoding="utf-8")
        checks = re.findall(r'<div class="lectorch-check"[^>]*>(.*?)</div>', html, re.S)
        assert checks, f"{page.name}: no checker cell rendered"
        for text in checks:
            assert "Correct" not in text and "✅" not in text and "❌" not in text, f"{page.name}: {text[:80]}"
            assert "checks" in text or "check" in text, f"{page.name}: a checker shows no summary: {text[:80]}"
        assert "✅ Correct" not in html, f"{page.name} shows a checker verdict"


def test_exercises_and_figures_are_numbered_per_chapter(built_book: Path):
    for page in (built_book / "chapters").glob("[0-9][0-9]_*.html"):
        number = int(page.name[:2])
        html = page.read_text(encoding="utf-8")
        labels = re.findall(r"Exercise (\d+(?:\.\d+)*)", html)
        assert labels, f"{page.name}: no numbered exercise"
        assert f"{number}.1" in labels, f"{page.name}: exercises do not start at {number}.1 ({labels[:3]})"
        for label in re.findall(r'<span class="caption-number">Fig\. ([\d.]+) </span>', html):
            assert label.startswith(f"{number}."), f"{page.name}: figure {label} is not numbered in chapter {number}"


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
