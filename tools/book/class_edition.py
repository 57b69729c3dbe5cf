"""The class edition of the book: the student edition's chapters (every solution replaced by its
stub) built with the book's own _config.yml and _toc.yml, in English and 中文.

``make book EDITION=class`` and ``python -m grading class [OUTPUT]`` run :func:`build`. The self-study book (``make book``) shows each solution in a
drop-down; this one is what an instructor gives a class: no drop-down, no reference code, and its
``_sources/*.ipynb`` (the pages' download button) are the student notebooks. The lesson's stored
outputs are kept; from a chapter's first exercise on every output is cleared (a checker's verdict,
a cell that uses an answer), as a student who has not done the exercises sees them. Nothing is
executed (the stubs would stop a run). The pages do not link to the repository (it holds the
solutions): no repository, issues or Colab buttons. This module is also a Sphinx extension of
that build (:func:`setup`): it sets the tag ``class``, so that a page's ``{only} class`` blocks are
shown and its ``{only} not class`` blocks (e.g. the intro's clone, ``make lab`` and Colab launch
instructions, which lead to the repository) are left out; both are in the catalogs.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import yaml

import build_book
import plain_notebook
from languages import LANGUAGE, ZH_FOLDER

ROOT = Path(__file__).resolve().parents[2]

OUTPUT = ROOT / "_build" / "class" / "html"


def stage(folder: Path) -> Path:
    """Write the class edition's sources into ``folder``: config, table of contents and chapters."""
    folder = Path(folder)
    shutil.copytree(ROOT / "chapters", folder / "chapters", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "_traces"))
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        nb = plain_notebook.student_notebook(nbformat.read(path, as_version=4), path.name,
                                             keep_lesson_outputs=True)
        nbformat.write(nb, folder / "chapters" / path.name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["html"].update(use_repository_button=False, use_issues_button=False)
    config["launch_buttons"]["colab_url"] = ""
    config["sphinx"].setdefault("local_extensions", {})["class_edition"] = "tools/book/"  # the tag ``class``
    # the static files stay the repository's (a relative path would be read from the staged folder)
    sphinx_config = config["sphinx"]["config"]
    sphinx_config["html_static_path"] = [str(ROOT / p) for p in sphinx_config.get("html_static_path", [])]
    (folder / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    shutil.copy(ROOT / "_toc.yml", folder / "_toc.yml")
    return folder


def setup(app):
    """Sphinx extension of the class edition: the tag ``class`` (``{only} class`` blocks)."""
    app.tags.add("class")
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def build(output: Path = OUTPUT) -> list[subprocess.CompletedProcess]:
    """Build the class edition into ``output`` (English) and ``output/zh``; return both builds.

    Strict (warnings fail) and from the stored outputs, as the tests build the book. ``output`` is
    replaced only when both builds succeed.
    """
    output = Path(output)
    with tempfile.TemporaryDirectory(prefix="lectorch-class-") as tmp:
        source = stage(Path(tmp) / "source")
        # the two languages read the same sources and build independently: one per core
        with ThreadPoolExecutor(max_workers=2) as pool:
            english = pool.submit(build_book.build, Path(tmp) / "en", source=source)
            chinese = pool.submit(build_book.build, Path(tmp) / "zh", source=source, language=LANGUAGE)
            english, chinese = english.result(), chinese.result()
        if english.returncode == 0 and chinese.returncode == 0:
            # the download buttons give the class's notebooks: stubs, no solution, plain Markdown,
            # in the page's language
            plain_notebook.replace_downloads(Path(tmp) / "en" / "_build" / "html", "en", solutions="drop")
            plain_notebook.replace_downloads(Path(tmp) / "zh" / "_build" / "html", LANGUAGE, solutions="drop")
            if output.exists():
                shutil.rmtree(output)
            shutil.copytree(Path(tmp) / "en" / "_build" / "html", output)
            shutil.copytree(Path(tmp) / "zh" / "_build" / "html", output / ZH_FOLDER)
    return [english, chinese]

