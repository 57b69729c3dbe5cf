"""Write the student edition: every chapter with each exercise's solution replaced by its stub.

    python tools/student_edition.py [OUTPUT_DIR]      # default: student/ (English), student/zh (中文)
    python tools/student_edition.py --language zh_CN  # one language

A solution is a code cell tagged ``solution`` whose metadata ``lectorch.stub`` holds the student's
version (same names, body ``...`` or ``raise NotImplementedError``). The markdown cells that open
and close the hidden solution (``{solution-start}`` / ``{solution-end}``) are dropped, outputs are
cleared, and the checker cells are kept, so a student runs a cell and sees "not implemented yet"
until the exercise is done. The edition's notebooks are the reader's notebooks without solutions
(tools/plain_notebook.py): plain Jupyter Markdown, in English and 中文.

The edition holds only notebooks and their includes: never the instructor's ``grading/`` folder
(hidden cases, plain expected values) nor a grading bundle; writing it over either is refused.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook", *,
                     keep_lesson_outputs: bool = False) -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with solutions swapped for stubs and outputs cleared.

    ``keep_lesson_outputs`` (the class edition of the book, tools/class_edition.py) keeps the stored
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
    plain Jupyter Markdown in that language, stubs, no solution (tools/plain_notebook.py)."""
    import plain_notebook

    output = Path(output)
    _check_output(output)
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown:
        raise ValueError(f"languages={unknown}: use {' or '.join(LANGUAGES)}")
    written = []
    for language in languages:
        written += plain_notebook.write_notebooks(output / LANGUAGES[language], language, solutions="drop")
    return written


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", type=Path, default=ROOT / "student")
    parser.add_argument("--language", choices=sorted(LANGUAGES), action="append",
                        help="one language (default: all, 中文 into OUTPUT/zh)")
    args = parser.parse_args()
    files = write_student_edition(args.output, tuple(args.language or LANGUAGES))
    print(f"wrote {len(files)} student notebooks to {args.output}")
