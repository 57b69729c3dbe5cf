"""Write the student edition: every chapter with each exercise's solution replaced by its stub.

    python -m grading student [OUTPUT_DIR]      # default: student/ (English), student/zh (中文)
    python -m grading student --language zh_CN  # one language

A solution is a code cell tagged ``solution`` whose metadata ``lectorch.stub`` holds the student's
version (same names, body ``...`` or ``raise NotImplementedError``). The markdown cells that open
and close the hidden solution (``{solution-start}`` / ``{solution-end}``) are dropped, outputs are
cleared, and the checker cells are kept, so a student runs a cell and sees "not implemented yet"
until the exercise is done. The edition's notebooks are the reader's notebooks without solutions
(tools/book/plain_notebook.py): plain Jupyter Markdown, in English and 中文.

The edition holds only notebooks and their includes: never the instructor's ``grading/`` folder
(hidden cases, plain expected values) nor a grading bundle; writing it over either is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grading import ROOT

# the book's notebook tools (the reader's notebooks, which the edition's are without solutions)
# are scripts of tools/book/, not a package
sys.path.insert(0, str(ROOT / "tools" / "book"))
import plain_notebook  # noqa: E402
from plain_notebook import student_notebook  # noqa: E402,F401 - the edition's notebook, for callers

CHAPTERS = ROOT / "chapters"


FORBIDDEN = ("grading", "grading-bundle")


def _check_output(output: Path) -> None:
    resolved = output.resolve()
    for name in FORBIDDEN:
        if resolved == (ROOT / name).resolve() or resolved.is_relative_to((ROOT / name).resolve()):
            raise ValueError(f"{output} is the instructor's {name}/ folder: write the student edition elsewhere")
    leftovers = [p for p in output.rglob("*") if p.name in FORBIDDEN or p.suffix == ".pt"] if output.exists() else []
    if leftovers:
        raise ValueError(f"{output} already holds grading material ({leftovers[0]}): remove it first")


#: The languages of the edition and their folders under its output (as the book: English at the top)
LANGUAGES = {"en": "", "zh_CN": "zh"}


def write_student_edition(output: Path, languages: tuple[str, ...] = tuple(LANGUAGES)) -> list[Path]:
    """Write every chapter's student notebook into ``output`` (English) and ``output/zh`` (中文):
    plain Jupyter Markdown in that language, stubs, no solution (tools/book/plain_notebook.py)."""
    output = Path(output)
    _check_output(output)
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown:
        raise ValueError(f"languages={unknown}: use {' or '.join(LANGUAGES)}")
    written = []
    for language in languages:
        written += plain_notebook.write_notebooks(output / LANGUAGES[language], language, solutions="drop")
    return written


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grading student", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", type=Path, default=ROOT / "student")
    parser.add_argument("--language", choices=sorted(LANGUAGES), action="append",
                        help="one language (default: all, 中文 into OUTPUT/zh)")
    args = parser.parse_args(argv)
    try:
        files = write_student_edition(args.output, tuple(args.language or LANGUAGES))
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {len(files)} student notebooks to {args.output}")
    return 0
