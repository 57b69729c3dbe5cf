"""The class that test_grading_attacks.py and test_grading_walls.py read: one grader run, in the
fixture course of tests/_grading_course.py (four chapters with the same two exercises), over every
attack played against the grader (notebooks and uploads), the class that tests its walls (records
that would stall or exhaust it, look-alike names, a student stalling in each chapter) and honest
neighbours. tests/conftest.py's ``graded_class`` grades it once per run for every pytest-xdist
worker."""

from __future__ import annotations

import hashlib
import os
import resource
import secrets
import shutil
import time
from importlib import metadata
from pathlib import Path

import nbformat
import psutil

from _paths import ROOT
from _grading_course import (FAKE, FUNC_OK, FUNC_WRONG, STALL, VALUE_OK, VALUE_WRONG, CHECK_FUNC, CHECK_VALUE,
                             cheat, honest, make_course, notebook, own_cgroups, run_grader, sandbox_processes)
from grading import fstree, report as reports

#: ints that share one hash value in CPython (hash(n) == n mod 2**61 - 1)
MODULUS = 2**61 - 1

# random per run: a process or file left by another (or an earlier) run never counts as ours
MARKER = f"lectorch-attack-marker-{secrets.token_hex(4)}"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marked_processes(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except psutil.Error:
            pass
    return found


EVIL_NAME = "evil\n  quiz.ipynb  quiz-bytes  passed\x1b[2K\x1b[1A"
#: seconds per notebook in the attack run: the stalls hold their slot this long (and at most 10 s
#: more); an honest notebook of the fixture course needs about a second, the slowest (torch) a few
TIMEOUT = 15
#: the sandbox seconds of one student, all their notebooks together
STUDENT_S = TIMEOUT * 1.5
#: the attack run's memory limit, GiB, and the memory attacks sized by it. patched_checker imports the
#: real lectorch, so torch: PyPI's CUDA build (what `make install` takes where the CPU build cannot be
#: had, tools/lock.py) does not start in a sandboxed kernel under 1 GiB (it did under 1.5 GiB).
LIMIT_GIB = 1 if metadata.version("torch").endswith("+cpu") else 2


def attacks(course: dict, subs: Path, results: Path) -> dict[str, nbformat.NotebookNode]:
    b = course["base"]
    victim = subs / "a_honest" / "quiz.ipynb"
    secrets = [str(course["bundle"]), str(course["chapters"] / "quiz.ipynb"), str(b / "grading" / "quiz.py"),
               str(ROOT / "grading" / "topics" / "napkin.py"), str(ROOT / "chapters" / "00_napkin_math.ipynb")]
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


def uploads(course: dict, subs: Path) -> None:
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

def walls(course: dict, subs: Path) -> None:
    value_surrogate = cheat("bytes_per_param = 'x\\ud800\\x1b[2K'")
    raise_surrogate = notebook(FAKE, VALUE_OK, CHECK_VALUE, "def scale(x, k):\n    raise ValueError('\\ud800\\n\\x1b[1A')",
                               CHECK_FUNC)
    fallocate = notebook(
        FAKE, VALUE_OK, CHECK_VALUE, FUNC_OK, CHECK_FUNC,
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = os.open('/grade/out/hoard', os.O_WRONLY | os.O_CREAT)\n"
        "for i in range(4096):  # 1 MiB at a time, KEEP_SIZE: blocks without a size\n"
        "    if libc.fallocate(fd, 1, ctypes.c_long(i * 2**20), ctypes.c_long(2**20)) != 0:\n"
        "        break\n"
        "assert os.fstat(fd).st_size == 0")
    # written after the check cells (the collector's own record replaced)
    colliding_set = notebook(
        FAKE, VALUE_WRONG, CHECK_VALUE, FUNC_WRONG, CHECK_FUNC,
        "import json, os\n"
        f"items = [1 + i * {MODULUS} for i in range(300_000)]\n"
        "json.dump({'id': 'quiz-bytes', 'found': True, 'value': {'__set__': items}}, open('/grade/out/.0', 'w'))\n"
        "os.replace('/grade/out/.0', '/grade/out/0.json')")
    empty_lists = notebook(
        FAKE, VALUE_WRONG, CHECK_VALUE, FUNC_WRONG, CHECK_FUNC,
        "import io, os, zipfile\n"
        "buffer = io.BytesIO()\n"
        "with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_STORED) as z:\n"
        "    z.writestr('archive/data.pkl', b'\\x80\\x02' + b']' * (16 * 2**20) + b'.')\n"
        "    z.writestr('archive/byteorder', b'little')\n"
        "    z.writestr('archive/version', b'3\\n')\n"
        "open('/grade/out/.0', 'wb').write(buffer.getvalue())\n"
        "os.replace('/grade/out/.0', '/grade/out/0.pt')\n"
        "os.path.exists('/grade/out/0.json') and os.remove('/grade/out/0.json')")
    # (a_honest and z_later, honest too, are the attacks' neighbours)
    folders = {"value_surrogate": value_surrogate, "raise_surrogate": raise_surrogate,
               "fallocate": fallocate, "colliding_set": colliding_set, "empty_lists": empty_lists,
               "victim": honest(), "Jos\u00e9": honest(), "Jose\u0301": honest(), "alice": honest(),
               "\u0430lice": honest(), "Bob": honest(), "bob": honest()}
    for name, nb in folders.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    (subs / "copycat").mkdir()
    os.link(subs / "victim" / "quiz.ipynb", subs / "copycat" / "quiz.ipynb")
    (subs / "staller").mkdir()
    for chapter in ("quiz", "quiz2", "quiz3", "quiz4"):
        nbformat.write(notebook(FAKE, VALUE_OK, CHECK_VALUE, STALL, FUNC_OK, CHECK_FUNC),
                       subs / "staller" / f"{chapter}.ipynb")


def mounts_under(path: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(path))]


def grade_class(base: Path) -> dict:
    """The course made in ``base``, the class written and graded there, and what the tests read of it
    (picklable: another worker reads it). Four jobs: the stalls hold their slots while the rest runs."""
    (base / "course").mkdir(parents=True)
    course = make_course(base / "course")
    for i in (2, 3, 4):  # four chapters with the same two exercises: a student stalling in each
        shutil.copy(course["chapters"] / "quiz.ipynb", course["chapters"] / f"quiz{i}.ipynb")
    subs, results, work = base / "subs", base / "results.jsonl", base / "sandboxes"
    work.mkdir()
    for name, nb in attacks(course, subs, results).items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    walls(course, subs)
    before = {p: sha(p) for p in subs.rglob("*.ipynb")}
    uploads(course, subs)
    try:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        start = time.monotonic()
        report = run_grader(course, subs, max_tasks=128, memory_gb=LIMIT_GIB, timeout_s=TIMEOUT,
                            student_s=STUDENT_S, jobs=4, workdir=work, records=base / "grades.jsonl")
        seconds = time.monotonic() - start
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss
        # what the run left, seen from the grader's process as the run returns (later, this process
        # may be running other tests' sandboxes)
        left = {"processes": sandbox_processes(), "cgroups": [str(p) for p in own_cgroups()],
                "mounts": mounts_under(base), "sandboxes": [p.name for p in work.iterdir()]}
    finally:
        fstree.remove_tree(subs / "upload_tree")  # pytest's own clean-up recurses
    (base / "out").mkdir()
    reports.write_json(base / "out" / "grades.json", report.as_json())
    return {"report": report, "course": course, "base": base, "subs": subs, "before": before, "results": results,
            "work": work, "records": base / "grades.jsonl", "seconds": seconds, "grown": grown, "marker": MARKER,
            "left": left}
