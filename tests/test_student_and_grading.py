"""The student edition runs with every exercise unfinished and holds no grading material, and the
grader grades a real chapter right end to end: the honest (reference) solution passes every
exercise, the student stub passes none. Attacks on the grader: tests/test_grading_attacks.py."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from _paths import ROOT
from grading import grade
import grading
from grading import student as student_edition
from _chapters import debug_exercises, exercise_ids

# runs notebooks in kernels (the student edition, the grader): left out of `make unit`
pytestmark = pytest.mark.slow

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
CHAPTER_00 = ROOT / "chapters" / "00_napkin_math.ipynb"


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    student_edition.write_student_edition(out)
    return out


def test_student_edition_hides_every_solution(student_dir):
    for chapter in CHAPTERS:
        nb = nbformat.read(student_dir / chapter.name, as_version=4)
        text = "\n".join(c.source for c in nb.cells)
        assert "{solution-start}" not in text and "{solution-end}" not in text
        assert not any("solution" in c.metadata.get("tags", []) for c in nb.cells)
        stubs = [c for c in nb.cells if "exercise" in c.metadata.get("tags", [])]
        assert len(stubs) >= 3, f"{chapter.name}: fewer than three exercise stubs"
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
        reference = nbformat.read(chapter, as_version=4)
        for ref_cell in (c for c in reference.cells if "solution" in c.metadata.get("tags", [])):
            assert ref_cell.source not in text, f"{chapter.name}: a solution leaked into the student edition"


def test_student_edition_holds_no_grading_material(student_dir, tmp_path):
    names = {p.name for p in student_dir.rglob("*")}
    assert "grading" not in names and "grading-bundle" not in names
    assert not [p for p in student_dir.rglob("*") if p.suffix in (".pt", ".py")]
    for chapter in CHAPTERS:  # no check cell disappeared: the grader finds the same exercises
        assert exercise_ids(student_dir / chapter.name) == exercise_ids(chapter)
    with pytest.raises(ValueError, match="grading"):
        student_edition.write_student_edition(ROOT / "grading" / "student")
    (tmp_path / "old" / "grading-bundle").mkdir(parents=True)
    with pytest.raises(ValueError, match="grading material"):
        student_edition.write_student_edition(tmp_path / "old")


#: Run before each student notebook in the module's one kernel: a fresh kernel's user namespace
#: and global settings (nothing a chapter defined or set stays for the next), the exercises' attempt
#: counts cleared, the notebook's own results log.
FRESH_START = """\
%reset -f
import os, matplotlib.pyplot, torch, lectorch.exercises
matplotlib.pyplot.close("all")
torch.set_default_dtype(torch.float32)
torch.set_grad_enabled(True)
torch.use_deterministic_algorithms(False)
lectorch.exercises.reset_attempts()
os.environ[lectorch.exercises.RESULTS_ENV] = {results!r}
os.chdir({folder!r})
%reset -f
def _fresh_namespace():  # inside a function: a top-level use of get_ipython() would be part of every answer's program
    shell = get_ipython()
    return [name for name in shell.user_ns if not name.startswith("_") and name not in shell.user_ns_hidden]
assert not _fresh_namespace(), _fresh_namespace()
del _fresh_namespace
"""


@pytest.fixture(scope="module")
def student_kernel(student_dir):
    """One kernel for the module's student notebooks (torch and lectorch imported once, not once per
    notebook); each notebook starts from FRESH_START, and a kernel that died is replaced."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(student_dir))
    yield km
    km.shutdown_kernel(now=True)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_student_notebook_runs_and_every_check_says_not_implemented(chapter, student_dir, student_kernel, tmp_path):
    results = tmp_path / "results.jsonl"  # the student's own log (never trusted by the grader)
    nb = nbformat.read(student_dir / chapter.name, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(FRESH_START.format(results=str(results), folder=str(student_dir))))
    if not student_kernel.is_alive():  # e.g. killed by an earlier chapter's timeout
        student_kernel.restart_kernel(now=True)
    client = NotebookClient(nb, km=student_kernel, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(student_dir)}})
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    expected = exercise_ids(chapter)
    assert len(expected) >= 3
    assert {r["exercise"] for r in rows} == set(expected)
    debug = debug_exercises(chapter)
    # a stub says "not implemented"; a debug exercise's stub is the buggy code, which must fail
    assert all(r["status"] == "not implemented" or (r["exercise"] in debug and r["status"] in ("failed", "error"))
               for r in rows), rows


@pytest.mark.slow
def test_grader_end_to_end_on_chapter_00(tmp_path, capsys):
    """The honest solution passes every exercise of the chapter, the stub passes none; ids are read
    from the reference chapter, the bundle is built from grading/ with a seed."""
    ids = exercise_ids(CHAPTER_00)
    assert len(ids) >= 3
    bundle = grading.build_bundle(4242, exercise_ids=ids)
    grading.write_bundle(bundle, tmp_path / "bundle.pt")
    subs = tmp_path / "subs"
    reference = nbformat.read(CHAPTER_00, as_version=4)
    for cell in reference.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # the page's answer hard-coded passes the practice check, but not the grader's hidden settings
    public_only = nbformat.from_dict(reference)
    for cell in public_only.cells:
        if "def node_flops(" in cell.source:
            cell.source = "def node_flops(num_gpus, days):\n    return 9.58e21"
    for who, nb in {"honest": reference, "public-only": public_only,
                    "stub": student_edition.student_notebook(nbformat.read(CHAPTER_00, as_version=4))}.items():
        (subs / who).mkdir(parents=True)
        nbformat.write(nb, subs / who / CHAPTER_00.name)
    report = grade.grade_folder(subs, bundle=tmp_path / "bundle.pt", timeout_s=240)
    status = {(g.submission, g.exercise): g.status for g in report.grades}
    assert {ex for _, ex in status} == set(ids)
    assert all(status[("honest", ex)] == "passed" for ex in ids), grade.table(report)
    assert status[("public-only", "napkin-two-weeks")] == "failed", grade.table(report)
    assert all(status[("public-only", ex)] == "passed" for ex in ids if ex != "napkin-two-weeks")
    assert not any(status[("stub", ex)] == "passed" for ex in ids), grade.table(report)
    with capsys.disabled():
        print("\n[grading] chapter 00: " + ", ".join(f"{r.submission} {r.seconds:.1f} s" for r in report.runs)
              + f" ({report.isolation.split(':')[0]})")


@pytest.mark.slow
def test_the_whole_grading_bundle_builds_and_agrees_with_the_package(tmp_path):
    """Every chapter's exercise is in the bundle; every plain EXPECTED matches the package's seal
    (build_bundle checks it); every hidden case is plain data that reads back with weights_only."""
    bundle = grading.build_bundle(7)
    for chapter in CHAPTERS:
        missing = set(exercise_ids(chapter)) - set(bundle["exercises"])
        assert not missing, f"{chapter.name}: exercises not in the bundle: {sorted(missing)}"
    path = grading.write_bundle(bundle, tmp_path / "bundle.pt")
    assert grading.read_bundle(path)["exercises"].keys() == bundle["exercises"].keys()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_grader_rejects_bad_arguments(tmp_path):
    bundle = tmp_path / "bundle.pt"
    with pytest.raises(ValueError, match="no submissions"):
        grade.grade_folder(tmp_path, bundle=bundle)
    with pytest.raises(ValueError, match="not a folder"):
        grade.grade_folder(tmp_path / "missing", bundle=bundle)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "x.ipynb")
    with pytest.raises(ValueError, match="make grading-bundle"):
        grade.grade_folder(tmp_path, bundle=bundle)


def test_check_cells_are_read_from_source():
    nb = {"cells": [
        {"cell_type": "code", "source": '%time x = 1\nlectorch.check("a-b", x)\nlectorch.check("c", f, measured=m)'},
        {"cell_type": "markdown", "source": 'lectorch.check("not-code", x)'},
        {"cell_type": "code", "source": "this is not python ("},
        {"cell_type": "code", "source": ['check("a-b", y)  # a repeat keeps the first\n', 'check("d", g.h)']},
    ]}
    assert grading.check_calls(nb) == [("a-b", "x"), ("c", "f"), ("d", "g.h")]


def test_the_student_package_imports_nothing_of_the_instructors():
    """lectorch (what students install) never imports grading (what only the instructor has)."""
    import ast

    for path in (ROOT / "lectorch").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "grading" or n.startswith("grading.") for n in names), path
