"""The grader against dishonest (and clumsy) submissions: every attack of the issue "Grading you can
trust" is played against tools/grade.py, and none raises a grade; honest work is graded right, and
no process or file outlives the run.

A small fixture course keeps it fast: one public exercise module (``quizex.py``: a sealed value and
a function with one public case), its grading module (the plain value, hidden random cases), a
reference chapter, and one tiny notebook per attack. Most notebooks do not import torch.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
import grade  # noqa: E402
import grading  # noqa: E402

HAVE_BWRAP = grade.bwrap_works()
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not usable here")
MARKER = f"lectorch-attack-marker-{secrets.token_hex(4)}"  # this run's: another run's processes differ

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


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marked_processes() -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(MARKER in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except psutil.Error:
            pass
    return found


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The fixture course: public module, grading module, reference chapter, bundle."""
    base = tmp_path_factory.mktemp("course")
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
    return grade.grade_folder(subs, bundle=course["bundle"], reference_dir=course["chapters"],
                              registry=course["registry"], public=[course["public"]], **kwargs)


def status_of(report) -> dict[tuple[str, str], str]:
    return {(g.submission, g.exercise): g.status for g in report.grades}


# ------------------------------------------------------------------------- the attack run

def _attacks(course: dict, subs: Path, results: Path) -> dict[str, nbformat.NotebookNode]:
    b = course["base"]
    victim = subs / "a_honest" / "quiz.ipynb"
    secrets = [str(course["bundle"]), str(course["chapters"] / "quiz.ipynb"), str(b / "grading" / "quiz.py"),
               str(ROOT / "grading" / "napkin.py"), str(ROOT / "chapters" / "00_napkin_math.ipynb")]
    return {
        "a_honest": honest(),
        "b_stub": notebook(FAKE, "bytes_per_param = ...", CHECK_VALUE,
                           "def scale(x, k):\n    raise NotImplementedError", CHECK_FUNC),
        # forged results: the old results log, fake records in the grader's output folder
        "forged_results": cheat(
            "import os, json\n"
            "for name in ['LECTORCH_RESULTS']:\n"
            "    if os.environ.get(name):\n"
            "        open(os.environ[name], 'a').write(json.dumps({'exercise': 'quiz-bytes', 'status': 'passed'}))\n"
            "try:\n"
            f"    open({str(results)!r}, 'a').write('{{\"exercise\": \"quiz-bytes\", \"status\": \"passed\"}}\\n')\n"
            "except OSError:\n"
            "    pass\n"
            "import threading, time\n"
            "def forge():\n"
            "    while True:\n"
            "        for i in range(3):\n"
            "            try:\n"
            "                json.dump({'id': 'quiz-bytes', 'found': True, 'status': 'passed', 'value': 'passed'},\n"
            "                          open(f'/grade/out/{i}.json', 'w'))\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(0.01)\n"
            "threading.Thread(target=forge, daemon=True).start()"),
        # a patched checker, swapped compare functions, answers harvested from the installed package
        "patched_checker": cheat(
            "import lectorch, lectorch.exercises as E, quizex\n"
            "passed = E.CheckResult('quiz-bytes', 'passed', 'Correct')\n"
            "lectorch.check = E.check = lambda *a, **k: passed\n"
            "E.compare = lambda *a, **k: None\n"
            "E._compare_sealed = lambda *a, **k: None\n"
            "for ex in E._REGISTRY.values():\n"
            "    object.__setattr__(ex, 'compare', lambda got, expected: None)\n"
            "E.Sealed.matches = lambda self, i, a: True\n"
            "table = {c.args: c.expected for c in E.get_exercise('quiz-scale').cases}\n"
            "def scale(x, k):\n"
            "    return table.get((x, k), 0.0)\n"
            "bytes_per_param = E.get_exercise('quiz-bytes').expected.token",
            first="import lectorch"),
        # answers harvested from the instructor's files (chapters with solutions, grading/, the bundle)
        "harvester": cheat(
            "import glob\n"
            "seen = []\n"
            f"for path in {secrets!r} + glob.glob('/*/*/bundle.pt') + glob.glob('/*/*/*/*.ipynb'):\n"
            "    if path.startswith(('/proc', '/tmp')):  # its own copy of the notebook\n"
            "        continue\n"
            "    try:\n"
            "        open(path, 'rb').read(100)\n"
            "        seen.append(path)\n"
            "    except OSError:\n"
            "        pass\n"
            "if seen:\n"
            "    bytes_per_param = seen"),
        # tampering with a sibling submission, the results table, a later notebook
        "sibling_tamper": cheat(
            f"for path in [{str(victim)!r}, {str(subs / 'z_later' / 'quiz.ipynb')!r}]:\n"
            "    try:\n"
            "        open(path, 'w').write('garbage')\n"
            "    except OSError:\n"
            "        pass\n"
            "import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time, sys; time.sleep(4); '\n"
            f"                  'open(sys.argv[1], \"w\").write(\"[]\")', {str(b / 'grades.json')!r}, {MARKER!r}],\n"
            "                 start_new_session=True)"),
        # killing the grader, its parent, everything in sight (only inside a PID namespace)
        "killer": honest(
            "import os, signal\n"
            "if open('/proc/1/cmdline', 'rb').read().startswith(b'bwrap'):\n"
            "    for pid in [os.getppid(), 1]:\n"
            "        try:\n"
            "            os.kill(pid, signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass\n"
            "    os.kill(-1, signal.SIGKILL)"),
        # a detached memory hog that tries to outlive the run
        "detached_hog": honest(
            "import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; x = bytearray(200 * 2**20); time.sleep(120)',\n"
            f"                  {MARKER!r}], start_new_session=True, stdout=subprocess.DEVNULL,\n"
            "                 stderr=subprocess.DEVNULL)"),
        # editing the installed package so that later runs pass
        "package_edit": honest(
            "import importlib.util, os, site\n"
            "home = importlib.util.find_spec('lectorch').submodule_search_locations[0]\n"
            "target = os.path.join(home, 'exercises', '__init__.py')\n"
            "for path in [target, os.path.join(site.getsitepackages()[0], 'sitecustomize.py')]:\n"
            "    try:\n"
            f"        open(path, 'a').write('\\ncheck = lambda *a, **k: None  # {MARKER}\\n')\n"
            "    except OSError as err:\n"
            "        print('refused:', err)"),
        # 300 KB on fd 1 (deadlocked the old grader) and 5 MB of prints
        "output_flood": honest("import os\nos.write(1, b'x' * 300_000)\nprint('y' * 5_000_000)"),
        # three forked idle children sharing 300 MiB: summed RSS 1.3 GB > the 1 GiB limit, PSS ~0.4 GB
        "forked_idle": honest(
            "import os, time\n"
            "shared = bytearray(os.urandom(1)) * (300 * 2**20)\n"
            "for _ in range(3):\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(60)\n"
            "        os._exit(0)\n"
            "time.sleep(1.5)"),
        # a fork storm, bounded by the process limit
        "fork_storm": honest(
            "import os, time\n"
            "n = 0\n"
            "try:\n"
            "    for _ in range(5000):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n"
            "        n += 1\n"
            "except OSError:\n"
            "    pass\n"
            "assert n < 5000"),
        "memory_hog": notebook(FAKE, VALUE_OK, CHECK_VALUE,
                               "hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))", FUNC_OK, CHECK_FUNC),
        "deleted_check": notebook(FAKE, VALUE_OK, FUNC_OK, 'lectorch.check("quiz-scale-renamed", scale)'),
        "z_later": honest(),
    }


@pytest.fixture(scope="module")
def attack_run(course, tmp_path_factory):
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not usable here")
    base = tmp_path_factory.mktemp("attack")
    subs, results = base / "subs", base / "results.jsonl"
    notebooks = _attacks(course, subs, results)
    for name, nb in notebooks.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    (subs / "not_json").mkdir()
    (subs / "not_json" / "quiz.ipynb").write_text("this is not JSON {")
    before = {p: sha(p) for p in subs.rglob("*.ipynb")}
    tmp_kernels = set(Path(tempfile.gettempdir()).glob("kernel-*.json"))  # the run's own (conftest.py)
    start = time.monotonic()
    report = run_grader(course, subs, max_tasks=128, memory_gb=1.0)
    seconds = time.monotonic() - start
    return {"report": report, "subs": subs, "before": before, "seconds": seconds,
            "tmp_kernels": tmp_kernels, "results": results, "base": base}


ATTACK_NAMES = ["forged_results", "patched_checker", "harvester", "sibling_tamper"]
# (the others below are graded on their honest answers: the attack must not break the run)


@needs_bwrap
def test_honest_work_passes_and_a_stub_passes_nothing(attack_run):
    status = status_of(attack_run["report"])
    for who in ("a_honest", "z_later", "package_edit", "output_flood", "forked_idle", "fork_storm",
                "detached_hog"):
        assert status[(who, "quiz-bytes")] == status[(who, "quiz-scale")] == "passed", (who, status)
    assert status[("b_stub", "quiz-bytes")] == status[("b_stub", "quiz-scale")] == "not implemented"


@needs_bwrap
@pytest.mark.parametrize("who", ATTACK_NAMES)
def test_no_attack_raises_a_grade(attack_run, who):
    status = status_of(attack_run["report"])
    assert status[(who, "quiz-bytes")] != "passed"
    assert status[(who, "quiz-scale")] != "passed"


@needs_bwrap
def test_the_sandbox_hides_the_instructors_files_and_other_submissions(attack_run):
    report = attack_run["report"]
    message = {(g.submission, g.exercise): g.message for g in report.grades}
    # the harvester would have answered with the secret files it could read: it read none
    assert message[("harvester", "quiz-bytes")] == "12 is too small."
    # the package holds a seal, not the value: the token is no answer
    assert "expected a number" in message[("patched_checker", "quiz-bytes")]
    for path, digest in attack_run["before"].items():
        assert sha(path) == digest, f"{path} was changed during grading"
    assert not attack_run["results"].exists(), "a notebook wrote outside its sandbox"


@needs_bwrap
def test_killers_and_crashes_do_not_stop_the_run(attack_run):
    status = status_of(attack_run["report"])
    runs = {r.submission: r for r in attack_run["report"].runs}
    assert status[("killer", "quiz-bytes")] == "not reached"          # it killed its own kernel
    assert status[("z_later", "quiz-scale")] == "passed"               # and the run went on
    assert status[("not_json", "quiz-bytes")] == "not reached" and runs["not_json"].outcome == "invalid"
    assert status[("memory_hog", "quiz-bytes")] == "passed"           # graded up to the hog
    assert status[("memory_hog", "quiz-scale")] == "passed"           # MemoryError, and it went on


@needs_bwrap
def test_an_endless_loop_is_stopped_and_graded_up_to_the_loop(course, tmp_path):
    subs = tmp_path / "subs"
    (subs / "loops").mkdir(parents=True)
    nbformat.write(notebook(FAKE, VALUE_OK, CHECK_VALUE, "while True:\n    pass", FUNC_OK, CHECK_FUNC),
                   subs / "loops" / "quiz.ipynb")
    report = run_grader(course, subs, timeout_s=8)
    status = status_of(report)
    assert status[("loops", "quiz-bytes")] == "passed"
    assert status[("loops", "quiz-scale")] == "not reached"
    assert "endless loop" in report.runs[0].detail


@needs_bwrap
def test_a_deleted_or_renamed_check_cell_is_missing_not_dropped(attack_run):
    status = status_of(attack_run["report"])
    assert status[("deleted_check", "quiz-bytes")] == "missing"
    assert status[("deleted_check", "quiz-scale")] == "missing"


@needs_bwrap
def test_nothing_outlives_the_run(attack_run):
    time.sleep(4.5)  # the detached writer would have written by now
    assert not marked_processes(), "a process started by a submission outlived the run"
    assert not (attack_run["base"] / "grades.json").exists()
    site = Path(psutil.__file__).resolve().parent.parent  # the venv's site-packages
    for path in [*(ROOT / "lectorch").rglob("*.py"), *site.glob("sitecustomize.py")]:
        assert MARKER not in path.read_text(errors="replace"), f"{path} (the package) was changed by a submission"
    run_tmp = Path(tempfile.gettempdir())  # this run's own temporary folder (conftest.py)
    assert set(run_tmp.glob("kernel-*.json")) <= attack_run["tmp_kernels"], "kernel connection files left"
    assert not list(run_tmp.glob("lectorch-grade-*")), "a sandbox folder was left behind"


@needs_bwrap
def test_figures(attack_run, capsys):
    runs = attack_run["report"].runs
    with capsys.disabled():
        print(f"\n[grading] {len(runs)} notebooks in {attack_run['seconds']:.1f} s; "
              + ", ".join(f"{r.submission} {r.seconds:.1f}s" for r in runs))
        for g in attack_run["report"].grades:
            print(f"  {g.submission:16} {g.exercise:11} {g.status:16} {g.message[:90]}")


# ------------------------------------------------------------------------- the whole CLI


@needs_bwrap
def test_the_cli_survives_the_death_of_its_parent_and_writes_table_and_json_that_agree(course, tmp_path):
    subs = tmp_path / "subs"
    for name, nb in {"alice": honest(), "bob": cheat(), "carol": honest("import time\ntime.sleep(1)")}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    out, table = tmp_path / "grades.json", tmp_path / "table.txt"
    grader = [sys.executable, str(ROOT / "tools" / "grade.py"), str(subs), "--bundle", str(course["bundle"]),
              "--reference", str(course["chapters"]), "--exercises", str(course["public"]), "--json", str(out),
              "--timeout", "20", "--isolation", "bwrap"]
    cmd = " ".join(f"'{a}'" for a in grader)
    parent = subprocess.Popen(["sh", "-c", f"{cmd} > '{table}' 2>/dev/null & wait"], start_new_session=True)
    time.sleep(2.0)
    parent.kill()   # the grader's parent dies while it is grading
    parent.wait()
    deadline = time.monotonic() + 90
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(0.5)
    data = json.loads(out.read_text())
    got = {(g["submission"], g["exercise"]): g["status"] for g in data["grades"]}
    assert got[("alice", "quiz-bytes")] == got[("alice", "quiz-scale")] == "passed"
    assert got[("carol", "quiz-scale")] == "passed"
    assert got[("bob", "quiz-bytes")] == got[("bob", "quiz-scale")] == "failed"
    assert data["isolation"].startswith("bubblewrap")
    text = table.read_text()
    for g in data["grades"]:
        assert any(line.split() == [g["submission"], g["notebook"], g["exercise"], *g["status"].split()]
                   for line in text.splitlines()), g
    assert not list(tmp_path.glob(".grades-*")), "a temporary JSON file was left behind"


def test_the_json_path_is_checked_before_grading(course, tmp_path):
    (tmp_path / "subs").mkdir()
    nbformat.write(honest(), tmp_path / "subs" / "quiz.ipynb")
    for bad in (tmp_path / "missing-folder" / "grades.json", tmp_path):
        start = time.monotonic()
        with pytest.raises(SystemExit):
            grade.main([str(tmp_path / "subs"), "--bundle", str(course["bundle"]), "--json", str(bad)])
        assert time.monotonic() - start < 5, "the path was checked only after grading"


def test_bundle_reads_back_as_plain_data_and_holds_no_code(course):
    raw = course["bundle"].read_bytes()
    bundle = grading.read_bundle(course["bundle"])
    assert bundle["seed"] == 20261201 and set(bundle["exercises"]) == {"quiz-bytes", "quiz-scale"}
    assert bundle["exercises"]["quiz-bytes"]["expected"] == 16
    assert len(bundle["exercises"]["quiz-scale"]["cases"]) == 4  # the public case and three hidden ones
    assert b"quizex" not in raw and b"lambda" not in raw
    again = grading.build_bundle(20261201, directory=course["base"] / "grading", registry=course["registry"])
    assert again["exercises"] == bundle["exercises"]  # the seed reproduces the hidden cases
    other = grading.build_bundle(1, directory=course["base"] / "grading", registry=course["registry"])
    assert other["exercises"]["quiz-scale"]["cases"][1] != bundle["exercises"]["quiz-scale"]["cases"][1]


def test_weak_isolation_says_so(course, tmp_path):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(honest(), subs / "alice" / "quiz.ipynb")
    report = run_grader(course, subs, isolation="none")
    assert report.isolation.startswith("WEAK")
    assert "WEAK" in grade.table(report)
    assert all(g.passed for g in report.grades), grade.table(report)


def test_overhead_of_the_sandbox(course, tmp_path, capsys):
    """Figures: a trivial notebook with and without bubblewrap."""
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(honest(), subs / "alice" / "quiz.ipynb")
    figures = {}
    for mode in (["none", "bwrap"] if HAVE_BWRAP else ["none"]):
        report = run_grader(course, subs, isolation=mode)
        assert all(g.passed for g in report.grades)
        figures[mode] = report.runs[0].seconds
    with capsys.disabled():
        print("\n[grading] trivial notebook: " + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))


def test_a_sandboxed_notebook_sees_no_secret_and_cannot_reach_the_network(course, tmp_path):
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not usable here")
    paths = [str(course["bundle"]), str(course["chapters"]), str(ROOT / "grading"), str(ROOT / "chapters"),
             str(ROOT / "tests"), str(tmp_path)]
    probe = notebook(
        "import os, socket\n"
        f"paths = {paths!r}\n"
        "def net():\n"
        "    try:\n"
        "        socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        "seen = {'visible': [p for p in paths if os.path.exists(p)], 'net': net(), 'uid': os.getuid(),\n"
        "        'env': sorted(os.environ), 'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),\n"
        "        'lectorch_writable': os.access(__import__('importlib.util').util.find_spec('lectorch').origin,\n"
        "                                       os.W_OK)}")
    item = {"index": 0, "id": "probe", "expr": "seen", "kind": "value", "inputs": None}
    outcome, _, records, _ = grade.run_in_sandbox(nbformat.writes(probe).encode(), "probe.ipynb", [item], {},
                                                  limits=grade.Limits(timeout_s=30), mode="bwrap")
    seen = records[0]["value"]
    assert outcome == "ok" and seen["visible"] == [] and seen["net"] is False
    assert seen["lectorch_writable"] is False
    assert not any(k.startswith(("LECTORCH_RESULTS", "SSH", "GRADING")) for k in seen["env"])
    assert max(seen["pids"]) < 100, "the sandbox sees processes outside its PID namespace"
