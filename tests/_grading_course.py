"""The fixture course of the grading tests (tests/test_grading_attacks.py, tests/test_grading_cli.py):
one public exercise module (``quizex.py``: a sealed value and a function with one public case), its
grading module (the plain value, hidden random cases), a reference chapter, the bundle; notebooks
built from a few cells, most of which do not import torch; the grader run on them in-process or
through the command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grading import grade
import grading
from grading import cgroups, sandbox

HAVE_BWRAP = sandbox.bwrap_works()
CGROUP = cgroups.probe()[0]
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not usable here")

QUIZEX = '''
"""Public exercises of the fixture course (students have this file)."""
from lectorch.exercises import Case, Exercise, Sealed, register

EXERCISES = [
    register(Exercise(id="quiz-bytes", title="bytes per parameter", kind="value",
                      expected=Sealed.of("quiz-bytes", 16, rtol=1e-6), hint="count")),
    register(Exercise(id="quiz-scale", title="scale(x, k)", kind="function", hint="multiply",
                      cases=(Case(args=(2.0, 3.0), expected=6.0, description="a public case"),))),
]
'''

GRADING = '''
from grading.topics import Topic
from lectorch.exercises import Case

EXPECTED = {"quiz-bytes": 16}


def hidden_cases(exercise_id, rng):
    if exercise_id != "quiz-scale":
        return []
    cases = []
    for _ in range(3):
        x, k = rng.uniform(1, 9), rng.uniform(-5, 5)
        cases.append(Case(args=(x, k), expected=x * k, description="a hidden case"))
    return cases


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases)
'''

# A stand-in for lectorch in notebooks that do not need it (importing torch costs seconds).
FAKE = "class lectorch:\n    check = staticmethod(lambda *a, **k: None)"
VALUE_OK, VALUE_WRONG = "bytes_per_param = 16", "bytes_per_param = 12"
FUNC_OK = "def scale(x, k):\n    return x * k"
FUNC_WRONG = "def scale(x, k):\n    return x + k if x != 2.0 else 6.0"   # passes the public case only
CHECK_VALUE = 'lectorch.check("quiz-bytes", bytes_per_param)'
CHECK_FUNC = 'lectorch.check("quiz-scale", scale)'


def notebook(*cells: str) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def honest(*extra: str, first: str = FAKE) -> nbformat.NotebookNode:
    return notebook(first, VALUE_OK, CHECK_VALUE, *extra, FUNC_OK, CHECK_FUNC)


def cheat(*attack: str, first: str = FAKE) -> nbformat.NotebookNode:
    """Wrong answers (the public case passes) plus an attack meant to turn them into passes."""
    return notebook(first, VALUE_WRONG, FUNC_WRONG, *attack, CHECK_VALUE, CHECK_FUNC)


def make_course(base: Path) -> dict:
    """The fixture course in ``base``: public module, grading module, reference chapter, bundle
    (each test module makes its own, in a module fixture ``course``)."""
    (base / "public").mkdir()
    (base / "public" / "quizex.py").write_text(QUIZEX)
    (base / "grading").mkdir()
    (base / "grading" / "quiz.py").write_text(GRADING)
    (base / "chapters").mkdir()
    nbformat.write(notebook("import lectorch\nimport quizex", VALUE_OK, CHECK_VALUE, FUNC_OK, CHECK_FUNC),
                   base / "chapters" / "quiz.ipynb")
    import runpy

    from lectorch.exercises import _ORIGIN, _REGISTRY, exercises

    exercises()  # load lectorch's own first, then register the fixture's and take them out again
    public = runpy.run_path(str(base / "public" / "quizex.py"))
    registry = {ex.id: ex for ex in public["EXERCISES"]}
    for ex_id in registry:  # the fixture must not leak into other tests' registry
        _REGISTRY.pop(ex_id, None)
        _ORIGIN.pop(ex_id, None)
    bundle = grading.build_bundle(20261201, directory=base / "grading", registry=registry)
    grading.write_bundle(bundle, base / "instructor" / "bundle.pt")
    return {"base": base, "registry": registry, "bundle": base / "instructor" / "bundle.pt",
            "chapters": base / "chapters", "public": base / "public" / "quizex.py"}


def run_grader(course, subs: Path, **kwargs):
    kwargs.setdefault("timeout_s", 60)
    kwargs.setdefault("memory_gb", 1.5)
    kwargs.setdefault("workdir", subs.parent)
    return grade.grade_folder(subs, bundle=course["bundle"], reference_dir=course["chapters"],
                              registry=course["registry"], public=[course["public"]], **kwargs)


def own_cgroups() -> list[Path]:
    """cgroups this process's graders made and left (named lectorch-grade-<pid>-…)."""
    found = []
    for controller in ("memory", "pids", "cpu"):
        folder = cgroups._v1_dir(controller)
        if folder is not None and folder.is_dir():
            found += folder.glob(f"lectorch-grade-{os.getpid()}-*")
    folder = cgroups._v2_dir()
    if folder is not None and folder.is_dir():
        found += folder.glob(f"lectorch-grade-{os.getpid()}-*")
    return found


def sandbox_processes(grader_pid: int | None = None) -> list[int]:
    """Processes in a sandbox cgroup of the grader ``grader_pid`` (default: this process)."""
    tag = f"/lectorch-grade-{grader_pid or os.getpid()}-"
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and tag in Path(f"/proc/{entry}/cgroup").read_text():
                found.append(int(entry))
        except OSError:
            pass
    return found


def status_of(report) -> dict[tuple[str, str], str]:
    return {(g.submission, g.exercise): g.status for g in report.grades}


# a stall: SIGINT (the cell's interrupt) and SIGALRM (a case's time limit) ignored
STALL = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)")


#: the grader's command (run from the repository's root: ``cwd=ROOT``)
GRADE = [sys.executable, "-m", "grading", "grade"]


def cli(course, subs: Path, *extra: str) -> list[str]:
    return [*GRADE, str(subs), "--bundle", str(course["bundle"]),
            "--reference", str(course["chapters"]), "--exercises", str(course["public"]), *extra]
