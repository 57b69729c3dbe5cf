"""The student edition runs with every exercise unfinished, and the grader grades right: a correct
answer passes, a wrong one fails, and a notebook that raises, loops or hogs memory is reported as
failed without stopping the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
import student_edition  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


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


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_student_notebook_runs_and_every_check_says_not_implemented(chapter, student_dir, tmp_path, monkeypatch):
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv("LECTORCH_RESULTS", str(results))
    nb = nbformat.read(student_dir / chapter.name, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(student_dir)}}).execute()
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    expected = grade.expected_exercises(chapter)
    assert len(expected) >= 3
    assert {r["exercise"] for r in rows} == set(expected)
    assert all(r["status"] == "not implemented" for r in rows), rows


def quiz(*cells: str) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell("import lectorch")] + [new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


DAYS = "def days(p, t, n, f, m):\n    return 6 * p * t / (n * f * m * 86400)"
CHECKS = ['lectorch.check("napkin-bytes-per-param", bytes_per_param)', 'lectorch.check("napkin-training-days", days)']


def test_grader_grades_right_and_survives_bad_notebooks(tmp_path):
    subs = tmp_path / "subs"
    cases = {
        "good": quiz("bytes_per_param = 16", DAYS, *CHECKS),
        "wrong": quiz("bytes_per_param = 12", DAYS, *CHECKS),
        "raises": quiz("bytes_per_param = 16", "1 / 0", DAYS, *CHECKS),
        "loops": quiz("bytes_per_param = 16", DAYS, CHECKS[0], "while True:\n    pass", CHECKS[1]),
        "hog": quiz("bytes_per_param = 16", CHECKS[0], "hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))"),
    }
    for student, nb in cases.items():
        (subs / student).mkdir(parents=True)
        nbformat.write(nb, subs / student / "quiz.ipynb")
    report = tmp_path / "report.json"
    assert grade.main([str(subs), "--timeout", "25", "--memory-gb", "1", "--json", str(report)]) == 0
    got = {(r["submission"], r["exercise"]): r for r in json.loads(report.read_text())}
    status = {key: r["status"] for key, r in got.items()}
    assert status[("good", "napkin-bytes-per-param")] == status[("good", "napkin-training-days")] == "passed"
    assert status[("wrong", "napkin-bytes-per-param")] == "failed"
    assert status[("wrong", "napkin-training-days")] == "passed"
    assert status[("raises", "napkin-bytes-per-param")] == status[("raises", "napkin-training-days")] == "passed"
    assert status[("loops", "napkin-bytes-per-param")] == "passed"
    assert status[("loops", "napkin-training-days")] == "not reached"
    assert "endless loop" in got[("loops", "napkin-training-days")]["message"]
    assert status[("hog", "napkin-bytes-per-param")] == "passed"


def test_grader_on_the_reference_chapter_passes_everything(tmp_path):
    chapter = ROOT / "chapters" / "00_napkin_math.ipynb"
    nb = nbformat.read(chapter, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    (tmp_path / "ref").mkdir()
    nbformat.write(nb, tmp_path / "ref" / chapter.name)
    grades = grade.grade_folder(tmp_path, timeout_s=120)
    assert grades and all(g.passed for g in grades), grade.table(grades)
    assert {g.exercise for g in grades} == set(grade.expected_exercises(chapter))


def test_grader_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no .ipynb"):
        grade.grade_folder(tmp_path)
    with pytest.raises(ValueError, match="not a folder"):
        grade.grade_folder(tmp_path / "missing")
