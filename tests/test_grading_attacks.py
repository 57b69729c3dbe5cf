"""The grader against dishonest (and clumsy) submissions: every attack of the issues "Grading you can
trust" and "A grader that survives a hostile class" is played against the grader, all of them in ONE
run (in parallel) beside honest and stub neighbours, and none raises a grade; every honest
neighbour is graded right, and nothing outlives the run (processes, folders, cgroups, memory).

A small fixture course keeps it fast: one public exercise module (``quizex.py``: a sealed value and
a function with one public case), its grading module (the plain value, hidden random cases), a
reference chapter, and one tiny notebook per attack. Most notebooks do not import torch. The tests
judge only what they made: sandboxes go to their own folder, cgroups carry the grader's pid.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import os
import resource
import signal
import subprocess
import sys
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
from grading import cgroups, collect, fstree, readback, report as reports, sandbox  # noqa: E402

HAVE_BWRAP = sandbox.bwrap_works()
CGROUP = cgroups.probe()[0]
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not usable here")
# random per run: a process or file left by another (or an earlier) run never counts as ours
MARKER = f"lectorch-attack-marker-{secrets.token_hex(4)}"

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
    kwargs.setdefault("workdir", subs.parent)
    return grade.grade_folder(subs, bundle=course["bundle"], reference_dir=course["chapters"],
                              registry=course["registry"], public=[course["public"]], **kwargs)


def own_cgroups() -> list[Path]:
    """cgroups this process's graders made and left (named lectorch-grade-<pid>-…)."""
    found = []
    for controller in ("memory", "pids"):
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



# ------------------------------------------------------------------------- the attack run

EVIL_NAME = "evil\n  quiz.ipynb  quiz-bytes  passed\x1b[2K\x1b[1A"
TIMEOUT = 30          # seconds per notebook in the attack run
# a stall: SIGINT (the cell's interrupt) and SIGALRM (a case's time limit) ignored
STALL = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)")


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
        # a fork storm, bounded by the process limit (and the sandbox's pids cgroup)
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
        # --- the round of "a grader that survives a hostile class"
        # a 1,500-deep folder tree in the grader's output folder (RecursionError in the old walks)
        "out_tree": cheat(
            "import os\n"
            "fd = os.open('/grade/out', os.O_RDONLY)\n"
            "for _ in range(1500):\n"
            "    os.mkdir('d', dir_fd=fd)\n"
            "    new = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
            "    os.close(fd)\n"
            "    fd = new\n"
            "os.chmod(fd, 0)"),
        # memory outside any process: memfd and shared-memory files, 1.2 GiB under a 1 GiB limit
        "memfd_shm": notebook(
            FAKE, VALUE_OK, CHECK_VALUE, FUNC_OK, CHECK_FUNC,
            "import os\n"
            "block = b'x' * 2**20\n"
            "fds = [os.memfd_create(f'hoard{i}') for i in range(4)]\n"
            "for fd in fds:  # 150 MiB each: under the file size limit\n"
            "    for _ in range(150):\n"
            "        os.write(fd, block)\n"
            "for i in range(2):\n"
            "    with open(f'/dev/shm/hoard{i}', 'wb') as f:\n"
            "        for _ in range(300):\n"
            "            f.write(block)\n"
            f"open('/grade/out/survived', 'w').write({MARKER!r})"),
        # stalls: ignores SIGINT and SIGALRM after its first answer
        "stall": notebook(FAKE, VALUE_OK, CHECK_VALUE, STALL, FUNC_OK, CHECK_FUNC),
        "loops": notebook(FAKE, VALUE_OK, CHECK_VALUE, "while True:\n    pass", FUNC_OK, CHECK_FUNC),
        # a deflated torch archive in place of its first answer: 256 MiB once loaded
        "zip_bomb": notebook(
            FAKE, VALUE_WRONG, CHECK_VALUE, FUNC_WRONG, CHECK_FUNC,
            "import os, zipfile\n"
            "os.remove('/grade/out/0.json')\n"
            "with zipfile.ZipFile('/grade/out/0.tmp', 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as z:\n"
            "    z.writestr('archive/data.pkl', b'\\x80\\x02}q\\x00.')\n"
            "    z.writestr('archive/version', b'3\\n')\n"
            "    with z.open('archive/data/0', 'w', force_zip64=True) as f:\n"
            "        for _ in range(16):\n"
            "            f.write(bytes(2**24))\n"
            "os.replace('/grade/out/0.tmp', '/grade/out/0.pt')"),
        EVIL_NAME: cheat(),
        "z_later": honest(),
    }


def _uploads(course: dict, subs: Path) -> None:
    """Attacks in the upload itself (not in a notebook): links, duplicates, deep trees, sparse files."""
    reference = course["chapters"] / "quiz.ipynb"
    (subs / "link_ref").mkdir()
    (subs / "link_ref" / "quiz.ipynb").symlink_to(reference)                     # absolute link
    (subs / "link_peer").mkdir()
    (subs / "link_peer" / "quiz.ipynb").symlink_to(Path("..") / "a_honest" / "quiz.ipynb")  # relative
    (subs / "link_dir").mkdir()
    (subs / "link_dir" / "work").symlink_to(subs / "a_honest")                   # a folder link
    (subs / "hard_link").mkdir()
    twin = course["base"] / "reference-copy.ipynb"
    if not twin.exists():
        twin.write_bytes(reference.read_bytes())
    os.link(twin, subs / "hard_link" / "quiz.ipynb")                             # a hard link
    # the same chapter three times: the top copy (wrong) is graded, the others are duplicates
    (subs / "dup3" / "a" / "b").mkdir(parents=True)
    nbformat.write(cheat(), subs / "dup3" / "quiz.ipynb")
    nbformat.write(honest(), subs / "dup3" / "a" / "quiz.ipynb")
    nbformat.write(honest(), subs / "dup3" / "a" / "b" / "quiz.ipynb")
    # an honest notebook beside a 1,500-deep tree and twenty sparse 49 MiB "notebooks"
    (subs / "upload_tree").mkdir()
    nbformat.write(honest(), subs / "upload_tree" / "quiz.ipynb")
    fd = os.open(subs / "upload_tree", os.O_RDONLY)
    for _ in range(1500):
        os.mkdir("t", dir_fd=fd)
        new = os.open("t", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = new
    os.close(fd)
    for i in range(20):
        with open(subs / "upload_tree" / f"sparse{i:02}.ipynb", "wb") as f:
            f.truncate(49 * 2**20)
    (subs / "not_json").mkdir()
    (subs / "not_json" / "quiz.ipynb").write_text("this is not JSON {")


@pytest.fixture(scope="module")
def attack_run(course, tmp_path_factory):
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not usable here")
    base = tmp_path_factory.mktemp("attack")
    subs, results, work = base / "subs", base / "results.jsonl", base / "sandboxes"
    work.mkdir()
    notebooks = _attacks(course, subs, results)
    for name, nb in notebooks.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    before = {p: sha(p) for p in subs.rglob("*.ipynb")}
    _uploads(course, subs)
    try:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        start = time.monotonic()
        report = run_grader(course, subs, max_tasks=128, memory_gb=1.0, timeout_s=TIMEOUT, jobs=2, workdir=work,
                            records=base / "records.jsonl")
        seconds = time.monotonic() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        yield {"report": report, "subs": subs, "before": before, "seconds": seconds, "work": work,
               "results": results, "base": base, "records": base / "records.jsonl", "rss": (rss_before, rss_after)}
    finally:
        fstree.remove_tree(subs / "upload_tree")   # pytest's own clean-up recurses


ATTACK_NAMES = ["forged_results", "patched_checker", "harvester", "sibling_tamper", "out_tree", "zip_bomb",
                "dup3", "link_ref", "link_peer", "link_dir", "hard_link", collect.escape(EVIL_NAME)]
HONEST = ["a_honest", "z_later", "package_edit", "output_flood", "forked_idle", "fork_storm", "detached_hog",
          "memfd_shm", "upload_tree"]


@needs_bwrap
def test_honest_work_passes_and_a_stub_passes_nothing(attack_run):
    status = status_of(attack_run["report"])
    for who in HONEST:
        assert status[(who, "quiz-bytes")] == status[(who, "quiz-scale")] == "passed", (who, status)
    assert status[("b_stub", "quiz-bytes")] == status[("b_stub", "quiz-scale")] == "not implemented"


@needs_bwrap
@pytest.mark.parametrize("who", ATTACK_NAMES)
def test_no_attack_raises_a_grade(attack_run, who):
    status = status_of(attack_run["report"])
    assert status.get((who, "quiz-bytes")) != "passed"   # (a folder link has no row: nothing to grade)
    assert status.get((who, "quiz-scale")) != "passed"


@needs_bwrap
def test_the_sandbox_hides_the_instructors_files_and_other_submissions(attack_run):
    report = attack_run["report"]
    message = {(g.submission, g.exercise): g.message for g in report.grades}
    # the harvester would have answered with the secret files it could read: it read none
    assert message[("harvester", "quiz-bytes")].startswith("12 is too small")
    # the package holds a seal, not the value: the token is no answer
    assert "expected a number" in message[("patched_checker", "quiz-bytes")]
    for path, digest in attack_run["before"].items():
        assert sha(path) == digest, f"{path} was changed during grading"
    assert not attack_run["results"].exists(), "a notebook wrote outside its sandbox"


@needs_bwrap
def test_killers_crashes_and_stalls_do_not_stop_the_run(attack_run):
    status = status_of(attack_run["report"])
    runs = {r.submission: r for r in attack_run["report"].runs if r.outcome not in ("refused", "duplicate")}
    assert status[("killer", "quiz-bytes")] == "passed"               # collected right after its check
    assert status[("killer", "quiz-scale")] == "not reached"          # it killed its own kernel
    assert status[("z_later", "quiz-scale")] == "passed"               # and the run went on
    assert status[("not_json", "quiz-bytes")] == "not reached" and runs["not_json"].outcome == "invalid"
    assert status[("memory_hog", "quiz-bytes")] == "passed"           # graded up to the hog
    assert status[("memory_hog", "quiz-scale")] == "passed"           # MemoryError, and it went on
    for who in ("stall", "loops"):                                      # graded up to the stall
        assert status[(who, "quiz-bytes")] == "passed" and status[(who, "quiz-scale")] == "not reached", who
        assert runs[who].outcome == "timeout" and "endless loop" in runs[who].detail
        # the slot is free again at most 10 s after the timeout, whatever signals it ignores
        assert runs[who].seconds <= TIMEOUT + 10, runs[who]


@needs_bwrap
def test_memory_is_counted_by_the_kernel(attack_run):
    runs = {r.submission: r for r in attack_run["report"].runs}
    if CGROUP is None:
        pytest.skip("no cgroup here: memfds and shared memory are not counted")
    assert runs["memfd_shm"].outcome == "memory", runs["memfd_shm"]
    assert "cgroup" in attack_run["report"].isolation


@needs_bwrap
def test_the_upload_is_what_is_graded(attack_run):
    report = attack_run["report"]
    why = {(r.submission, r.where): (r.outcome, r.detail) for r in report.runs}
    for who, where in [("link_ref", "quiz.ipynb"), ("link_peer", "quiz.ipynb"), ("link_dir", "work"),
                       ("hard_link", "quiz.ipynb")]:
        outcome, detail = why[(who, where)]
        assert outcome == "refused" and "link" in detail, (who, detail)
    assert why[("dup3", "a/quiz.ipynb")][0] == why[("dup3", "a/b/quiz.ipynb")][0] == "duplicate"
    assert [g.status for g in report.grades if g.submission == "dup3"] == ["failed", "failed"]  # once, the top copy
    assert sum(r.submission == "upload_tree" and r.outcome == "refused" for r in report.runs) == 21  # sparse + deep
    # the name is shown escaped: no line of the table is forged, no escape sequence reaches a terminal
    text = grade.table(report)
    assert "\x1b" not in text and "evil\n" not in text
    assert sum(line.endswith("  passed") for line in text.splitlines()) == sum(g.passed for g in report.grades)


@needs_bwrap
def test_answers_are_read_back_with_bounds(attack_run):
    message = {(g.submission, g.exercise): g.message for g in attack_run["report"].grades}
    assert "could not be read back" in message[("zip_bomb", "quiz-bytes")]
    before, after = attack_run["rss"]
    assert after - before < 200 * 2**20, "the grader's memory grew by the size of an archive"


@needs_bwrap
def test_a_deleted_or_renamed_check_cell_is_missing_not_dropped(attack_run):
    status = status_of(attack_run["report"])
    assert status[("deleted_check", "quiz-bytes")] == "missing"
    assert status[("deleted_check", "quiz-scale")] == "missing"


@needs_bwrap
def test_grades_are_recorded_as_decided(attack_run):
    header, runs, grades = reports.read_records(attack_run["records"])
    assert header["finished"] and header["shard"] == "1/1"
    assert sorted(map(json.dumps, map(vars, grades))) == sorted(map(json.dumps, map(vars, attack_run["report"].grades)))


@needs_bwrap
def test_nothing_outlives_the_run(attack_run):
    time.sleep(4.5)  # the detached writer would have written by now
    assert not marked_processes(), "a process started by a submission outlived the run"
    assert not sandbox_processes(), "a sandbox's process outlived the run"
    assert not own_cgroups(), "a sandbox's cgroup was left behind"
    assert not (attack_run["base"] / "grades.json").exists()
    site = Path(psutil.__file__).resolve().parent.parent  # the venv's site-packages
    for path in [*(ROOT / "lectorch").rglob("*.py"), *site.glob("sitecustomize.py")]:
        assert MARKER not in path.read_text(errors="replace"), f"{path} (the package) was changed by a submission"
    assert not list(attack_run["work"].iterdir()), "a sandbox folder was left behind"


@needs_bwrap
def test_figures(attack_run, capsys):
    runs = attack_run["report"].runs
    with capsys.disabled():
        print(f"\n[grading] {len(runs)} runs in {attack_run['seconds']:.1f} s (2 jobs); "
              + ", ".join(f"{collect.escape(r.submission)} {r.seconds:.1f}s" for r in runs if r.seconds))
        for g in attack_run["report"].grades:
            print(f"  {g.submission[:16]:16} {g.exercise:11} {g.status:16} {g.message[:90]}")


# ------------------------------------------------------------------------- the whole CLI


def _cli(course, subs: Path, *extra: str) -> list[str]:
    return [sys.executable, str(ROOT / "tools" / "grade.py"), str(subs), "--bundle", str(course["bundle"]),
            "--reference", str(course["chapters"]), "--exercises", str(course["public"]), *extra]


@needs_bwrap
def test_the_cli_survives_the_death_of_its_parent_and_writes_table_and_json_that_agree(course, tmp_path):
    subs = tmp_path / "subs"
    for name, nb in {"alice": honest(), "bob": cheat(), "carol": honest("import time\ntime.sleep(1)")}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    out, table = tmp_path / "grades.json", tmp_path / "table.txt"
    grader = _cli(course, subs, "--json", str(out), "--timeout", "20", "--isolation", "bwrap", "--jobs", "2")
    cmd = " ".join(f"'{a}'" for a in grader)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(["sh", "-c", f"{cmd} > '{table}' 2>/dev/null & wait"], start_new_session=True, env=env)
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
    _, _, recorded = reports.read_records(tmp_path / "grades.jsonl")
    assert len(recorded) == len(data["grades"])
    assert not list(tmp_path.glob(".grades-*")), "a temporary JSON file was left behind"
    assert not list(tmp_path.glob("lectorch-grade-*")), "a sandbox folder was left behind"


@needs_bwrap
def test_a_stopped_run_keeps_every_grade_decided_so_far_and_leaves_nothing(course, tmp_path):
    subs = tmp_path / "subs"
    for name, nb in {"alice": honest(), "bob": honest(), "carol": notebook(FAKE, VALUE_OK, CHECK_VALUE, STALL)}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    records = tmp_path / "records.jsonl"
    proc = subprocess.Popen(_cli(course, subs, "--records", str(records), "--timeout", "60", "--jobs", "1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp_path)})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if records.exists() and records.read_text().count("\n") >= 3:  # the header and two notebooks
            break
        time.sleep(0.3)
    time.sleep(1.0)  # carol is stalling in her sandbox now
    proc.send_signal(signal.SIGTERM)  # a scheduler cancels the job
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    header, runs, grades = reports.read_records(records)
    assert not header.get("finished")
    assert {g.submission for g in grades} == {"alice", "bob"} and all(g.passed for g in grades), grades
    time.sleep(1.0)
    assert not sandbox_processes(proc.pid), "a sandbox outlived its grader"
    assert not list(tmp_path.glob("lectorch-grade-*")), "a sandbox folder outlived its grader"
    for controller in ("memory", "pids"):
        folder = cgroups._v1_dir(controller)
        if folder is not None:
            assert not list(folder.glob(f"lectorch-grade-{proc.pid}-*")), "a cgroup outlived its grader"


def _small_class(subs: Path) -> None:
    for name, nb in {"ann": honest(), "ben": cheat(), "cat": notebook(FAKE, "bytes_per_param = ...", CHECK_VALUE),
                     "dan": honest(), "eve": cheat("bytes_per_param = 16")}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    (subs / "fay").mkdir()
    (subs / "fay" / "quiz.ipynb").write_text("{not a notebook")


@needs_bwrap
def test_four_shards_merged_equal_one_run(course, tmp_path):
    subs = tmp_path / "subs"
    _small_class(subs)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    shards = [subprocess.Popen(_cli(course, subs, "--shard", f"{i}/4", "--records", str(tmp_path / f"shard-{i}.jsonl"),
                                    "--timeout", "30", "--jobs", "1"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env) for i in range(1, 5)]
    one = run_grader(course, subs, timeout_s=30, jobs=2)
    for p in shards:
        assert p.wait(timeout=180) == 0, p.stderr.read()
    out = tmp_path / "merged.json"
    merged = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), "--merge",
                             *map(str, sorted(tmp_path.glob("shard-*.jsonl"))), "--json", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert merged.returncode == 0, merged.stderr
    data = json.loads(out.read_text())
    assert [(g["submission"], g["exercise"], g["status"], g["message"]) for g in data["grades"]] == \
           [(g.submission, g.exercise, g.status, g.message) for g in one.grades]
    assert [(r["submission"], r["outcome"]) for r in data["runs"]] == [(r.submission, r.outcome) for r in one.runs]
    shares = {collect.shard_of(n, 4) for n in ("ann", "ben", "cat", "dan", "eve", "fay")}
    assert len(shares) > 1, "every student in one shard: the test proves nothing"
    # a shard missing, or given twice, is refused
    with pytest.raises(ValueError, match="missing"):
        reports.merge(sorted(tmp_path.glob("shard-*.jsonl"))[:3])
    with pytest.raises(ValueError, match="also in"):
        reports.merge([tmp_path / "shard-1.jsonl", tmp_path / "shard-1.jsonl"])


def test_the_json_path_is_checked_before_grading(course, tmp_path):
    (tmp_path / "subs").mkdir()
    nbformat.write(honest(), tmp_path / "subs" / "quiz.ipynb")
    for bad in (tmp_path / "missing-folder" / "grades.json", tmp_path):
        start = time.monotonic()
        with pytest.raises(SystemExit):
            grade.main([str(tmp_path / "subs"), "--bundle", str(course["bundle"]), "--json", str(bad)])
        assert time.monotonic() - start < 5, "the path was checked only after grading"
    with pytest.raises(SystemExit):
        grade.main([str(tmp_path / "subs"), "--bundle", str(course["bundle"]), "--shard", "5/4"])


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


def test_weak_isolation_and_missing_cgroups_say_so(course, tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    nbformat.write(honest(), subs / "alice" / "quiz.ipynb")

    def stuck(path):  # a clean-up that fails: the grades stand, the run says so
        raise PermissionError("busy")

    monkeypatch.setattr(sandbox, "remove_tree", stuck)
    (tmp_path / "boxes").mkdir()
    report = run_grader(course, subs, isolation="none", use_cgroups=False, workdir=tmp_path / "boxes")
    monkeypatch.undo()
    assert report.isolation.startswith("WEAK") and "cgroups not used" in report.isolation
    assert "WEAK" in grade.table(report)
    assert all(g.passed for g in report.grades), grade.table(report)
    assert "clean-up: removing its folder: PermissionError" in report.runs[0].detail
    for box in (tmp_path / "boxes").iterdir():
        fstree.remove_tree(box)


def test_cgroups_unavailable_are_reported(monkeypatch):
    monkeypatch.setattr(cgroups, "_v1_dir", lambda controller: None)
    monkeypatch.setattr(cgroups, "_v2_dir", lambda: None)
    kind, text = cgroups.probe()
    assert kind is None and "cgroups unavailable" in text and "memfds" in text


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
        "import os, socket, resource\n"
        f"paths = {paths!r}\n"
        "def net():\n"
        "    try:\n"
        "        socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        "seen = {'visible': [p for p in paths if os.path.exists(p)], 'net': net(), 'uid': os.getuid(),\n"
        "        'env': sorted(os.environ), 'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),\n"
        "        'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)[1],\n"
        "        'lectorch_writable': os.access(__import__('importlib.util').util.find_spec('lectorch').origin,\n"
        "                                       os.W_OK)}")
    item = {"index": 0, "id": "probe", "expr": "seen", "kind": "value", "inputs": None}
    iso = sandbox.detect("bwrap")
    with sandbox.run(nbformat.writes(probe).encode(), "probe.ipynb", [item], {}, limits=sandbox.Limits(timeout_s=30),
                     isolation=iso, workdir=tmp_path) as ran:
        outcome, seen = ran.outcome, readback.read_record(ran.out / "0.json")["value"]
    assert outcome == "ok" and seen["visible"] == [] and seen["net"] is False
    assert seen["lectorch_writable"] is False and seen["nofile"] <= 256
    assert not any(k.startswith(("LECTORCH_RESULTS", "SSH", "GRADING")) for k in seen["env"])
    assert max(seen["pids"]) < 100, "the sandbox sees processes outside its PID namespace"
    if os.geteuid() == 0:
        assert seen["uid"] == sandbox.SANDBOX_UID


# ------------------------------------------------------------------------- the parts, without a sandbox


def test_collection_refuses_links_reports_duplicates_and_caps(tmp_path, monkeypatch):
    subs = tmp_path / "subs"
    (subs / "ann" / "x" / "y").mkdir(parents=True)
    for where in ("ann/quiz.ipynb", "ann/x/quiz.ipynb", "ann/x/y/quiz.ipynb", "ann/x/other.ipynb"):
        (subs / where).write_text("{}")
    (subs / "ann" / "x" / "peer.ipynb").symlink_to("/etc/hostname")
    (subs / "bob").symlink_to(subs / "ann")
    monkeypatch.setattr(collect, "MAX_NOTEBOOKS", 1)
    found, refused = collect.collect_submission(subs, "ann")
    assert [nb.where for nb in found] == ["x/other.ipynb"]  # the first chapter by name; then the cap
    why = {r.where: r.why for r in refused}
    assert why == {"x/quiz.ipynb": "duplicate", "x/y/quiz.ipynb": "duplicate", "x/peer.ipynb": "link",
                   "quiz.ipynb": "cap"}
    assert collect.collect_submission(subs, "bob")[1][0].why == "link"
    assert collect.read_notebook(subs, found[0]) == b"{}"


def test_a_notebook_swapped_for_a_link_after_collection_is_not_read(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / "quiz.ipynb").write_text("{}")
    (found,), _ = collect.collect_submission(subs, "ann")
    (subs / "ann" / "quiz.ipynb").unlink()
    (subs / "ann" / "quiz.ipynb").symlink_to("/etc/hostname")
    with pytest.raises(OSError):
        collect.read_notebook(subs, found)


def test_shards_are_a_partition_that_does_not_depend_on_the_class():
    names = [f"student-{i}" for i in range(200)]
    for n in (1, 3, 4):
        shares = [collect.shard_of(name, n) for name in names]
        assert set(shares) == set(range(n))
        assert shares[:10] == [collect.shard_of(name, n) for name in names[:10]]  # no dependence on others


def test_archives_are_checked_before_loading(tmp_path):
    import io
    import zipfile

    import torch

    buffer = io.BytesIO()
    torch.save({"value": torch.zeros(4)}, buffer)
    ok = tmp_path / "ok.pt"
    ok.write_bytes(buffer.getvalue())
    assert readback.read_record(ok)["value"].shape == (4,)
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        z.writestr("archive/data/0", bytes(2**20))
    with pytest.raises(ValueError, match="compressed"):
        readback.read_record(bomb)
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * (readback.JSON_MAX // 2) + "0]")
    with pytest.raises(ValueError, match="cap"):
        readback.read_record(big)
    shared = [0]
    for _ in range(30):  # 2**30 items once expanded, a few bytes on disk
        shared = [shared, shared]
    with pytest.raises(ValueError, match="items"):
        readback.check_plain(shared)
    with pytest.raises(ValueError, match="tensor"):
        readback.check_plain(torch.zeros(1).expand(2**40))
    link = tmp_path / "link.json"
    link.symlink_to(ok)
    with pytest.raises(OSError):
        readback.read_record(link)


def test_deep_trees_are_walked_and_removed_without_recursion(tmp_path):
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for i in range(3000):
        os.mkdir("d", dir_fd=fd)
        new = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = new
    os.chmod(fd, 0)
    os.close(fd)
    assert fstree.tree_size(top, 100)[1] > 100
    fstree.remove_tree(top)
    assert not top.exists()


def test_names_are_escaped():
    assert collect.escape("a\nb\x1b[0m\udcff") == "a\\nb\\x1b[0m\\xff"
    g = reports.Grade(collect.escape("x\ny"), "quiz.ipynb", "quiz-bytes", "passed", "")
    assert "\n" not in reports.table([g]).splitlines()[2]


def test_the_trust_model_page_states_the_graders_own_caps():
    """chapters/reference/grading.md quotes the caps: they must be the ones the code applies."""
    text = " ".join((ROOT / "chapters" / "reference" / "grading.md").read_text().split())
    for phrase in [f"at most {sandbox.GRACE_S} s after its timeout", f"open files ({sandbox.Limits().open_files})",
                   f"at most {readback.RECORD_MAX // 2**20} MiB (JSON at most {readback.JSON_MAX // 2**20} MiB)",
                   f"at most {collect.MAX_DEPTH} levels deep, {collect.MAX_ENTRIES:,} entries",
                   f"at most {collect.MAX_NOTEBOOKS} notebooks and {collect.SUBMISSION_MAX // 2**20} MiB per "
                   f"submission, {collect.NOTEBOOK_MAX // 2**20} MiB per notebook"]:
        assert phrase in text, phrase
