"""The grader's walls against a hostile class, and two graders on one host: every attack below is
replayed beside an honest neighbour, whose grades stay whole, with the grader responsive, its outputs written and nothing left behind.

* strings that no file or terminal may see (a lone surrogate, control characters) end up escaped
  in every grade; grades.json, the records, the table and ``--merge`` are written whatever they hold;
* a record cannot stall or exhaust the grader: a set of ints sharing one hash, JSON of a million
  empty lists, a torch pickle of millions of EMPTY_LIST opcodes, a dict of colliding keys;
* every byte a sandbox writes is counted by the kernel (a per-sandbox tmpfs for its output folder:
  ``fallocate(FALLOC_FL_KEEP_SIZE)`` meets its size, not the host's disk);
* a hard link between two submissions is reported as a pair and the original is graded; names
  that look alike are flagged and told apart;
* each grader takes its own range of sandbox uids, each sandbox a fresh session keyring and no key
  system call, its cgroup a pids limit and a CPU share; a student's stalling chapters share one
  budget of slot time;
* two graders run at once on this machine (two shards), an attacker holding 240 threads in one and
  an honest class in the other, and the merge of their records.

The fixture course is tests/_grading_course.py's; the class graded once for this file and
test_grading_attacks.py is tests/_graded_class.py's (tests/conftest.py's ``graded_class``).
"""

from __future__ import annotations

import ctypes
import errno
import io
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
import zipfile

import nbformat
import pytest

from _paths import ROOT
from _grading_course import (CHECK_FUNC, CHECK_VALUE, FAKE, FUNC_OK, GRADE, VALUE_OK, cli, honest, make_course, needs_bwrap, notebook, status_of)
from _graded_class import MODULUS, STUDENT_S, TIMEOUT, mounts_under
from grading import collect, fstree, judge, readback, report as reports, sandbox
from grading import grade

KEY_SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def empty_list_archive(n: int) -> bytes:
    """A torch archive, every entry stored as torch.save stores them, whose pickle is ``n``
    EMPTY_LIST opcodes: a few bytes each on disk, one list each once loaded."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02" + b"]" * n + b".")
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    made = make_course(tmp_path_factory.mktemp("course"))
    for i in (2, 3, 4):  # four chapters with the same two exercises: a student stalling in each
        shutil.copy(made["chapters"] / "quiz.ipynb", made["chapters"] / f"quiz{i}.ipynb")
    return made


# ------------------------------------------------------------------------- the parts, no sandbox


#: lone surrogates, a terminal escape, a newline, a right-to-left override
EVIL = "a\ud800b\x1b[2K\nc\udcff\u202e"


def test_output_survives_any_string(tmp_path):
    evil = EVIL
    grade_ = reports.Grade(evil, "quiz.ipynb", "quiz-scale", "error", f"your function raised ValueError: {evil}.")
    run = reports.Run(evil, "quiz.ipynb", "ok", 1.0, evil, evil)
    for text in (grade_.submission, grade_.message, run.detail, run.where):
        text.encode("ascii")  # escaped: nothing a file or a terminal cannot take
        assert "\n" not in text and "\x1b" not in text
    assert "\\ud800" in grade_.message
    # idempotent: read back from the records, the names are the same
    again = reports.Grade(**vars(grade_))
    assert again == grade_
    report = reports.Report("isolation", {"fingerprint": "x"}, [grade_], [run])
    records = tmp_path / "grades.jsonl"
    log = reports.Records(records, {"isolation": "isolation", "bundle": {"fingerprint": "x"}, "shard": "1/1"})
    log.add(run, [grade_])
    log.finish(1)
    log.close()
    reports.write_json(tmp_path / "grades.json", report.as_json())
    assert json.loads((tmp_path / "grades.json").read_text(encoding="utf-8"))["grades"][0]["message"] == grade_.message
    assert "\\ud800" in grade.table(report)
    # a raw lone surrogate given to write_json (not through a Grade) is written too
    reports.write_json(tmp_path / "raw.json", {"x": "\ud800"})
    assert json.loads((tmp_path / "raw.json").read_text(encoding="utf-8")) == {"x": "\ud800"}
    merged = reports.merge([records])
    assert merged.grades == [grade_]


@pytest.mark.slow  # a grader process of its own
def test_the_merge_command_writes_any_string(tmp_path):
    """The documented way back, the command line's --merge, on records that hold such a string."""
    evil = EVIL
    grade_ = reports.Grade(evil, "quiz.ipynb", "quiz-scale", "error", f"your function raised ValueError: {evil}.")
    records = tmp_path / "grades.jsonl"
    log = reports.Records(records, {"isolation": "isolation", "bundle": {"fingerprint": "x"}, "shard": "1/1"})
    log.add(reports.Run(evil, "quiz.ipynb", "ok", 1.0, evil, evil), [grade_])
    log.finish(1)
    log.close()
    out = subprocess.run([*GRADE, "--merge", str(records), "--json", str(tmp_path / "merged.json")],
                         capture_output=True, env={**os.environ, "LANG": "C"}, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))["grades"][0]["message"] == grade_.message


def test_a_set_of_colliding_ints_is_not_built():
    items = [1 + i * MODULUS for i in range(300_000)]  # one hash value: set(items) is quadratic
    record = {"__set__": items}
    start = time.monotonic()
    restored = judge._restore(record)
    assert time.monotonic() - start < 5
    assert restored is record  # the marker stays: the comparison fails
    assert judge._restore({"__set__": [3, 1, 2, -1, -2]}) == {1, 2, 3, -1, -2}  # -1 and -2 share a hash


def test_a_record_is_bounded_before_it_is_built(tmp_path):
    lists = tmp_path / "lists.json"
    lists.write_text("[" + "[]," * (readback.MAX_ITEMS + 10) + "[]]")
    assert lists.stat().st_size <= readback.JSON_MAX
    with pytest.raises(ValueError, match="items"):
        readback.read_record(lists)


@pytest.mark.slow  # a decoding process of its own (torch imported), a million lists built in it
def test_a_torch_record_is_decoded_in_a_child_under_limits(tmp_path):
    # a torch pickle of EMPTY_LIST opcodes: loaded by a child process under limits, not by the grader
    bomb = tmp_path / "bomb.pt"
    bomb.write_bytes(empty_list_archive(2**20))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        assert readback.read_record(bomb) == []  # a million lists built and dropped in the child
    except ValueError as err:                   # or the child ran out of its time
        assert "decoder" in str(err)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss < 100 * 2**20
    import torch

    buffer = io.BytesIO()
    torch.save({1 + i * MODULUS: 0 for i in range(2_000)}, buffer)
    keys = tmp_path / "keys.pt"
    keys.write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="share one hash"):
        readback.read_record(keys)
    ok = tmp_path / "ok.pt"
    buffer = io.BytesIO()
    torch.save({"value": torch.arange(3), 7: [1.5, "x"]}, buffer)
    ok.write_bytes(buffer.getvalue())
    got = readback.read_record(ok)
    assert got["value"].tolist() == [0, 1, 2] and got[7] == [1.5, "x"]


def test_preallocated_blocks_are_counted(tmp_path):
    path = tmp_path / "sparse"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        # FALLOC_FL_KEEP_SIZE: real blocks, st_size 0
        if _libc().fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(64 * 2**20)) != 0:
            pytest.skip(f"fallocate: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
    assert path.stat().st_size == 0
    assert fstree.tree_size(tmp_path)[0] >= 64 * 2**20


def test_a_hard_link_between_submissions_is_a_pair_and_the_original_is_graded(tmp_path):
    subs = tmp_path / "subs"
    for who in ("victim", "copycat", "outsider", "alone"):
        (subs / who).mkdir(parents=True)
    (subs / "victim" / "quiz.ipynb").write_text("{}")
    os.link(subs / "victim" / "quiz.ipynb", subs / "copycat" / "quiz.ipynb")
    (tmp_path / "elsewhere.ipynb").write_text("{}")
    os.link(tmp_path / "elsewhere.ipynb", subs / "outsider" / "quiz.ipynb")
    (subs / "alone" / "quiz.ipynb").write_text("{}")
    collected = {who: collect.collect_submission(subs, who)[0] for who in ("victim", "copycat", "outsider", "alone")}
    kept, notes = collect.shared_files(collected)
    assert [nb.where for nb in kept["victim"]] == [nb.where for nb in kept["copycat"]] == ["quiz.ipynb"]
    assert kept["outsider"] == [] and len(kept["alone"]) == 1
    why = {(r.submission, r.why): r.detail for r in notes}
    assert "copycat/quiz.ipynb" in why[("victim", "shared")] and "victim/quiz.ipynb" in why[("copycat", "shared")]
    assert "outside the submissions" in why[("outsider", "link")]
    staging = tmp_path / "staging"
    staging.mkdir()
    staged = collect.stage(subs, kept["victim"][0], staging, 1)
    (subs / "victim" / "quiz.ipynb").write_text('{"changed": 1}')  # through either name
    assert collect.read_staged(staged) == b"{}"


def test_look_alike_names_are_flagged_and_told_apart():
    names = ["Jos\u00e9", "Jose\u0301", "alice", "\u0430lice", "Bob", "bob", "carol", "al\u200bice"]
    alike = collect.look_alikes(names)
    assert set(alike) == set(names) - {"carol"}
    assert sorted(alike["alice"]) == sorted(["\u0430lice", "al\u200bice"])
    shown = {collect.ascii_name(n) for n in names}
    assert len(shown) == len(names) and all(s.isascii() and s.isprintable() for s in shown)


def test_each_grader_takes_its_own_uid_range():
    if os.geteuid() != 0:
        pytest.skip("uid ranges are taken by a grader running as root")
    mine = sandbox.uid_base()
    code = "import sys; sys.path.insert(0, sys.argv[1]); from grading import sandbox; print(sandbox.uid_base())"
    other = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    theirs = int(other.stdout)
    assert theirs != mine and abs(theirs - mine) >= sandbox.UID_RANGE
    assert sandbox.sandbox_uid(3) == mine + 3


# ------------------------------------------------------------------------- one sandbox, probed


@needs_bwrap
@pytest.mark.slow
def test_the_sandbox_has_its_own_disk_and_keyring(course, tmp_path):
    machine = platform.machine()
    add_key, keyctl = KEY_SYSCALLS.get(machine, (None, None))
    secret = None
    if add_key is not None:  # a key in the grader's session keyring (a login's token, say)
        secret = _libc().syscall(ctypes.c_long(add_key), b"user", b"lectorch-walls-secret", b"s3cret",
                                 ctypes.c_size_t(6), ctypes.c_long(-3))  # KEY_SPEC_SESSION_KEYRING
    probe = notebook(
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "seen = {}\n"
        "seen['fallocate'] = []\n"
        "for name in ('a', 'b'):  # 300 MiB each, KEEP_SIZE: blocks, and st_size 0\n"
        "    fd = os.open(f'/grade/out/{name}', os.O_WRONLY | os.O_CREAT)\n"
        "    ok = libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(300 * 2**20)) == 0\n"
        "    seen['fallocate'].append('ok' if ok else errno.errorcode[ctypes.get_errno()])\n"
        "st = os.statvfs('/grade/out')\n"
        "seen['out_bytes'] = st.f_blocks * st.f_frsize\n"
        f"nr = {keyctl!r}\n"
        "if nr is not None:\n"
        "    seen['keyctl'] = libc.syscall(ctypes.c_long(nr), ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0))\n"
        "    seen['keyctl_errno'] = ctypes.get_errno()\n"
        "seen['proc_keys'] = open('/proc/keys').read() if os.path.exists('/proc/keys') else ''\n"
        "seen['uid'] = os.getuid()")
    item = {"index": 0, "id": "probe", "expr": "seen", "kind": "value", "inputs": None}
    iso = sandbox.detect("bwrap")
    try:
        with sandbox.run(nbformat.writes(probe).encode(), "probe.ipynb", [item], {}, limits=sandbox.Limits(timeout_s=30),
                         isolation=iso, workdir=tmp_path, slot=5) as ran:
            outcome, seen = ran.outcome, readback.read_record(ran.out / "0.json")["value"]
            out_dir = ran.out
    finally:
        if secret is not None and secret > 0:
            _libc().syscall(ctypes.c_long(keyctl), ctypes.c_long(21), ctypes.c_long(secret))  # KEYCTL_INVALIDATE
    assert outcome == "ok", ran.detail
    assert not out_dir.exists(), "the output folder (its tmpfs) was left behind"
    if sandbox.tmpfs_works():
        assert seen["fallocate"] == ["ok", "ENOSPC"]  # the second meets the tmpfs's size
        assert seen["out_bytes"] <= sandbox.OUT_MAX
        assert "tmpfs" in iso.description
    if keyctl is not None:
        assert seen["keyctl"] == -1 and seen["keyctl_errno"] == errno.EPERM
        assert "lectorch-walls-secret" not in seen["proc_keys"]
    if os.geteuid() == 0:
        assert seen["uid"] == sandbox.uid_base() + 5


def test_a_sandbox_cgroup_has_a_pids_limit_and_a_cpu_share():
    from grading import cgroups

    if cgroups.probe()[0] is None:
        pytest.skip("no cgroup for a sandbox here")
    group = cgroups.Cgroup.create(f"lectorch-grade-{os.getpid()}", memory_bytes=2**30, pids=64)
    try:
        assert (group.pids / "pids.max").read_text().strip() == "64"
        if group.cpu is None:
            pytest.skip("no CPU controller here")
        name = "cpu.shares" if group.version == 1 else "cpu.weight"
        want = cgroups.CPU_SHARES if group.version == 1 else cgroups.CPU_WEIGHT
        assert int((group.cpu / name).read_text()) == want
        assert str(group.cpu / "cgroup.procs") in group.procs_files()
    finally:
        group.remove()


# ------------------------------------------------------------------------- the class run


CLASS_HONEST = ["a_honest", "fallocate", "victim", "copycat", "z_later", "Jos\\xe9", "Jose\\u0301", "alice",
                "\\u0430lice", "Bob", "bob"]


@needs_bwrap
@pytest.mark.slow
def test_honest_neighbours_are_whole(graded_class):
    status = status_of(graded_class["report"])
    for who in CLASS_HONEST:
        assert status[(who, "quiz-bytes")] == status[(who, "quiz-scale")] == "passed", (who, grade.table(graded_class["report"]))
    for who in ("colliding_set", "empty_lists", "value_surrogate"):
        assert status[(who, "quiz-bytes")] != "passed", who
    assert status[("raise_surrogate", "quiz-scale")] == "error"


@needs_bwrap
@pytest.mark.slow
def test_the_outputs_are_written_and_merged(graded_class):
    report, base = graded_class["report"], graded_class["base"]
    message = {(g.submission, g.exercise): g.message for g in report.grades}
    assert "\\ud800" in message[("raise_surrogate", "quiz-scale")]
    data = json.loads((base / "out" / "grades.json").read_text(encoding="utf-8"))
    assert len(data["grades"]) == len(report.grades)
    text = grade.table(report)
    assert "\x1b" not in text and "\ud800" not in text
    out = subprocess.run([*GRADE, "--merge", str(base / "grades.jsonl"), "--json",
                          str(base / "out" / "merged.json")], capture_output=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((base / "out" / "merged.json").read_text(encoding="utf-8"))["grades"] == data["grades"]


@needs_bwrap
@pytest.mark.slow
def test_no_record_stalls_or_exhausts_the_grader(graded_class):
    runs = {r.submission: r for r in graded_class["report"].runs if r.outcome == "ok"}
    message = {(g.submission, g.exercise): g.message for g in graded_class["report"].grades}
    assert "could not be read back" in message[("empty_lists", "quiz-bytes")]
    assert message[("colliding_set", "quiz-bytes")].startswith("expected a number")  # the marker, not a set
    # Built, the set would take about an hour (quadratic: 10,000 such ints took 4 s); the bound leaves
    # room for a machine whose cores are all busy, which stretches the sandbox's own start-up.
    assert runs["colliding_set"].seconds < 5 * TIMEOUT
    assert graded_class["grown"] < 200 * 2**20, "the grader's memory grew by a record"


@needs_bwrap
@pytest.mark.slow
def test_collection_reports_pairs_and_look_alikes(graded_class):
    runs = graded_class["report"].runs
    shared = {r.submission: r.detail for r in runs if r.outcome == "shared"}
    assert "copycat/quiz.ipynb" in shared["victim"] and "victim/quiz.ipynb" in shared["copycat"]
    alike = {r.submission: r.detail for r in runs if r.outcome == "look-alike"}
    assert "Jose\\u0301" in alike["Jos\\xe9"] and "\\u0430lice" in alike["alice"] and "bob" in alike["Bob"]
    assert "to look at:" in grade.table(graded_class["report"])


@needs_bwrap
@pytest.mark.slow
def test_a_students_stalls_share_one_budget(graded_class):
    mine = [r for r in graded_class["report"].runs if r.submission == "staller"]
    assert len(mine) == 4
    assert sum(r.seconds for r in mine) <= STUDENT_S + 2 * sandbox.GRACE_S + 4
    assert sum(r.outcome == "budget" for r in mine) >= 1
    got = [g.status for g in graded_class["report"].grades if g.submission == "staller" and g.exercise == "quiz-bytes"]
    assert got.count("passed") == sum(r.outcome == "timeout" for r in mine)  # graded up to its stall, where it had time


@needs_bwrap
@pytest.mark.slow
def test_nothing_is_left_behind(graded_class):
    left = graded_class["left"]
    assert not mounts_under(graded_class["base"]) and not left["mounts"], "a sandbox's tmpfs is still mounted"
    assert not list(graded_class["work"].iterdir()), "a sandbox or staging folder was left behind"
    assert not left["cgroups"] and not left["processes"], left


@needs_bwrap
@pytest.mark.slow
def test_figures(graded_class, capsys):
    with capsys.disabled():
        runs = graded_class["report"].runs
        print(f"\n[walls] {len(runs)} runs in {graded_class['seconds']:.1f} s (4 jobs), grader memory grew "
              f"{graded_class['grown'] / 2**20:.0f} MiB; " + ", ".join(f"{r.submission} {r.outcome} {r.seconds:.1f}s"
                                                                     for r in runs if r.seconds))


# ------------------------------------------------------------------------- two graders on one host


HOG = ("import threading, time\n"
       "stop = threading.Event()\n"
       "threads = []\n"
       "for _ in range(240):\n"
       "    try:\n"
       "        t = threading.Thread(target=stop.wait, daemon=True)\n"
       "        t.start()\n"
       "        threads.append(t)\n"
       "    except RuntimeError:\n"
       "        break\n"
       "time.sleep(20)")


def _in_shard(prefix: str, shard: int, count: int = 2) -> str:
    return next(f"{prefix}{i}" for i in range(1000) if collect.shard_of(f"{prefix}{i}", count) == shard)


@needs_bwrap
@pytest.mark.rehearsal  # two graders, an attacker's class and an honest one, at once: `make rehearse`
def test_two_graders_on_one_host(course, tmp_path):
    """Shard 1/2 grades an attacker holding 240 threads (inside its own pids limit) and filling its
    output folder; shard 2/2, at the same time, an honest class. Same slot numbers, same host: the
    honest class is graded whole, and the merge of both shards' records is the class."""
    subs = tmp_path / "subs"
    attacker = _in_shard("attacker", 0)
    (subs / attacker).mkdir(parents=True)
    nbformat.write(notebook(FAKE, VALUE_OK, CHECK_VALUE, HOG, FUNC_OK, CHECK_FUNC), subs / attacker / "quiz.ipynb")
    honest_names = [_in_shard(f"honest{j}-", 1) for j in range(3)]
    for name in honest_names:
        (subs / name).mkdir(parents=True)
        nbformat.write(honest(), subs / name / "quiz.ipynb")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    procs = []
    for shard in (1, 2):
        procs.append(subprocess.Popen(
            cli(course, subs, "--shard", f"{shard}/2", "--jobs", "1", "--timeout", "40", "--isolation", "bwrap",
                "--records", str(tmp_path / f"shard-{shard}.jsonl"), "--no-progress"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT))
        if shard == 1:
            time.sleep(6)  # the attacker's threads are up when the honest class starts
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    merged = reports.merge([tmp_path / "shard-1.jsonl", tmp_path / "shard-2.jsonl"])
    status = status_of(merged)
    for name in honest_names:
        assert status[(name, "quiz-bytes")] == status[(name, "quiz-scale")] == "passed", grade.table(merged)
    assert {r.submission for r in merged.runs} == {attacker, *honest_names}
