"""The grader against dishonest (and clumsy) submissions: every attack of the issues "Grading you can
trust" and "A grader that survives a hostile class" is played against the grader, all of them in ONE
run (in parallel) beside honest and stub neighbours, and none raises a grade; every honest
neighbour is graded right, and nothing outlives the run (processes, folders, cgroups, memory).

A small fixture course (tests/_grading_course.py) keeps it fast: one public exercise module (``quizex.py``: a sealed value and
a function with one public case), its grading module (the plain value, hidden random cases), a
reference chapter, and one tiny notebook per attack. Most notebooks do not import torch. The tests
judge only what they made: sandboxes go to their own folder, cgroups carry the grader's pid. The
command line's own tests (a parent's death, SIGTERM, shards): tests/test_grading_cli.py.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
import json
import secrets
import os
import resource
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
from grading import grade  # noqa: E402
import grading  # noqa: E402
from grading import cgroups, collect, fstree, readback, report as reports, sandbox  # noqa: E402

from _grading_course import (CGROUP, CHECK_FUNC, CHECK_VALUE, FAKE, FUNC_OK, FUNC_WRONG, HAVE_BWRAP, STALL,  # noqa: E402
                             VALUE_OK, VALUE_WRONG, cheat, honest, make_course, needs_bwrap, notebook, own_cgroups,
                             run_grader, sandbox_processes, status_of)

# random per run: a process or file left by another (or an earlier) run never counts as ours
MARKER = f"lectorch-attack-marker-{secrets.token_hex(4)}"


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
    return make_course(tmp_path_factory.mktemp("course"))


# ------------------------------------------------------------------------- the attack run

EVIL_NAME = "evil\n  quiz.ipynb  quiz-bytes  passed\x1b[2K\x1b[1A"
#: seconds per notebook in the attack run: the stalls hold their slot this long (and at most 10 s
#: more); an honest notebook of the fixture course needs about a second, the slowest (torch) a few
TIMEOUT = 15
#: the attack run's memory limit, GiB, and the memory attacks sized by it. patched_checker imports the
#: real lectorch, so torch: PyPI's CUDA build (what `make install` takes where the CPU build cannot be
#: had, tools/lock.py) does not start in a sandboxed kernel under 1 GiB (it did under 1.5 GiB).
LIMIT_GIB = 1 if metadata.version("torch").endswith("+cpu") else 2


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
        # three forked idle children sharing 0.3 of the limit: summed RSS 1.3 limits, PSS ~0.4
        "forked_idle": honest(
            "import os, time\n"
            f"shared = bytearray(os.urandom(1)) * ({300 * LIMIT_GIB} * 2**20)\n"
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
        # a kernel that dies by itself (as one refused memory by RLIMIT_DATA does: no OOM kill to count)
        "aborts": notebook(FAKE, VALUE_OK, CHECK_VALUE, "import os\nos.abort()", FUNC_OK, CHECK_FUNC),
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
        # memory outside any process: memfd and shared-memory files, 1.2 limits' worth
        "memfd_shm": notebook(
            FAKE, VALUE_OK, CHECK_VALUE, FUNC_OK, CHECK_FUNC,
            "import os\n"
            "block = b'x' * 2**20\n"
            f"fds = [os.memfd_create(f'hoard{{i}}') for i in range({4 * LIMIT_GIB})]\n"
            "for fd in fds:  # 150 MiB each: under the file size limit\n"
            "    for _ in range(150):\n"
            "        os.write(fd, block)\n"
            f"for i in range({2 * LIMIT_GIB}):\n"
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
        report = run_grader(course, subs, max_tasks=128, memory_gb=LIMIT_GIB, timeout_s=TIMEOUT, jobs=2, workdir=work,
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
    assert message[("harvester", "quiz-bytes")].startswith("12 is not the expected answer")
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
    assert status[("aborts", "quiz-bytes")] == "passed" and status[("aborts", "quiz-scale")] == "not reached"
    assert f"its kernel died: a crash, or memory refused under the {LIMIT_GIB:g} GiB limit" in runs["aborts"].detail
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
    # no waiting needed: a detached writer (it sleeps 4 s, then writes grades.json) that escaped is
    # either still alive, with the marker in its command line, or has written by now
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
        "                                       os.W_OK)}\n"
        "try:  # the sandbox's stand-in: jsonschema's costly, unused import is skipped in the kernel too\n"
        "    import rfc3987_syntax\n"
        "    seen['rfc3987_syntax'] = 'imported'\n"
        "except ImportError as err:\n"
        "    seen['rfc3987_syntax'] = str(err)")
    item = {"index": 0, "id": "probe", "expr": "seen", "kind": "value", "inputs": None}
    iso = sandbox.detect("bwrap")
    with sandbox.run(nbformat.writes(probe).encode(), "probe.ipynb", [item], {}, limits=sandbox.Limits(timeout_s=30),
                     isolation=iso, workdir=tmp_path) as ran:
        outcome, seen = ran.outcome, readback.read_record(ran.out / "0.json")["value"]
    assert outcome == "ok" and seen["visible"] == [] and seen["net"] is False
    assert seen["lectorch_writable"] is False and seen["nofile"] <= 256
    assert "not available in the grading sandbox" in seen["rfc3987_syntax"]
    assert not any(k.startswith(("LECTORCH_RESULTS", "SSH", "GRADING")) for k in seen["env"])
    assert max(seen["pids"]) < 100, "the sandbox sees processes outside its PID namespace"
    if os.geteuid() == 0:
        assert seen["uid"] == sandbox.uid_base()


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
