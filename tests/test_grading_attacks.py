"""The grader against dishonest (and clumsy) submissions: every attack of tests/_graded_class.py
(forged results, a patched checker, a tampered neighbour, fork storms, memory hogs, floods, zip
bombs, ...) is played against the grader, all of them in ONE run (in parallel) beside honest and stub
neighbours, and none raises a grade; every honest neighbour is graded right, and nothing outlives
the run (processes, folders, cgroups, memory).

A small fixture course (tests/_grading_course.py) keeps it fast: one public exercise module (``quizex.py``: a sealed value and
a function with one public case), its grading module (the plain value, hidden random cases), a
reference chapter, and one tiny notebook per attack (tests/_graded_class.py). Most notebooks do not import torch. The tests
judge only what they made: sandboxes go to their own folder, cgroups carry the grader's pid. The
command line's own tests (a parent's death, SIGTERM, shards): tests/test_grading_cli.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import psutil
import pytest

from _paths import ROOT
from grading import grade
import grading
from grading import cgroups, collect, fstree, readback, report as reports, sandbox

from _graded_class import EVIL_NAME, LIMIT_GIB, TIMEOUT, marked_processes, sha
from _grading_course import (CGROUP, HAVE_BWRAP, honest, make_course, needs_bwrap, notebook, run_grader, status_of)

# grades a class in sandboxed kernels: left out of `make unit`
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


# ------------------------------------------------------------------------- the attack run
# (in the class of tests/_graded_class.py, graded once for this file and test_grading_walls.py:
# tests/conftest.py's graded_class)



ATTACK_NAMES = ["forged_results", "patched_checker", "harvester", "sibling_tamper", "out_tree", "zip_bomb",
                "dup3", "link_ref", "link_peer", "link_dir", "hard_link", collect.escape(EVIL_NAME)]
HONEST = ["a_honest", "z_later", "package_edit", "output_flood", "forked_idle", "fork_storm", "detached_hog",
          "memfd_shm", "upload_tree"]


@needs_bwrap
def test_honest_work_passes_and_a_stub_passes_nothing(graded_class):
    status = status_of(graded_class["report"])
    for who in HONEST:
        assert status[(who, "quiz-bytes")] == status[(who, "quiz-scale")] == "passed", (who, status)
    assert status[("b_stub", "quiz-bytes")] == status[("b_stub", "quiz-scale")] == "not implemented"


@needs_bwrap
@pytest.mark.parametrize("who", ATTACK_NAMES)
def test_no_attack_raises_a_grade(graded_class, who):
    status = status_of(graded_class["report"])
    assert status.get((who, "quiz-bytes")) != "passed"   # (a folder link has no row: nothing to grade)
    assert status.get((who, "quiz-scale")) != "passed"


@needs_bwrap
def test_the_sandbox_hides_the_instructors_files_and_other_submissions(graded_class):
    report = graded_class["report"]
    message = {(g.submission, g.exercise): g.message for g in report.grades}
    # the harvester would have answered with the secret files it could read: it read none
    assert message[("harvester", "quiz-bytes")].startswith("12 is not the expected answer")
    # the package holds a seal, not the value: the token is no answer
    assert "expected a number" in message[("patched_checker", "quiz-bytes")]
    for path, digest in graded_class["before"].items():
        assert sha(path) == digest, f"{path} was changed during grading"
    assert not graded_class["results"].exists(), "a notebook wrote outside its sandbox"


@needs_bwrap
def test_killers_crashes_and_stalls_do_not_stop_the_run(graded_class):
    status = status_of(graded_class["report"])
    runs = {r.submission: r for r in graded_class["report"].runs if r.outcome not in ("refused", "duplicate")}
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
def test_memory_is_counted_by_the_kernel(graded_class):
    runs = {r.submission: r for r in graded_class["report"].runs}
    if CGROUP is None:
        pytest.skip("no cgroup here: memfds and shared memory are not counted")
    assert runs["memfd_shm"].outcome == "memory", runs["memfd_shm"]
    assert "cgroup" in graded_class["report"].isolation


@needs_bwrap
def test_the_upload_is_what_is_graded(graded_class):
    report = graded_class["report"]
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
def test_answers_are_read_back_with_bounds(graded_class):
    message = {(g.submission, g.exercise): g.message for g in graded_class["report"].grades}
    assert "could not be read back" in message[("zip_bomb", "quiz-bytes")]
    assert graded_class["grown"] < 200 * 2**20, "the grader's memory grew by the size of an archive"


@needs_bwrap
def test_a_deleted_or_renamed_check_cell_is_missing_not_dropped(graded_class):
    status = status_of(graded_class["report"])
    assert status[("deleted_check", "quiz-bytes")] == "missing"
    assert status[("deleted_check", "quiz-scale")] == "missing"


@needs_bwrap
def test_grades_are_recorded_as_decided(graded_class):
    header, runs, grades = reports.read_records(graded_class["records"])
    assert header["finished"] and header["shard"] == "1/1"
    assert sorted(map(json.dumps, map(vars, grades))) == sorted(map(json.dumps, map(vars, graded_class["report"].grades)))


@needs_bwrap
def test_nothing_outlives_the_run(graded_class):
    # no waiting needed: a detached writer (it sleeps 4 s, then writes grades.json) that escaped is
    # either still alive, with the marker in its command line, or has written by now
    assert not marked_processes(graded_class["marker"]), "a process started by a submission outlived the run"
    assert not graded_class["left"]["processes"], "a sandbox's process outlived the run"
    assert not graded_class["left"]["cgroups"], "a sandbox's cgroup was left behind"
    assert not (graded_class["course"]["base"] / "grades.json").exists()  # sibling_tamper's detached writer
    site = Path(psutil.__file__).resolve().parent.parent  # the venv's site-packages
    for path in [*(ROOT / "lectorch").rglob("*.py"), *site.glob("sitecustomize.py")]:
        assert graded_class["marker"] not in path.read_text(errors="replace"), f"{path} (the package) was changed by a submission"
    assert not list(graded_class["work"].iterdir()), "a sandbox folder was left behind"


@needs_bwrap
def test_figures(graded_class, capsys):
    runs = graded_class["report"].runs
    with capsys.disabled():
        print(f"\n[grading] {len(runs)} runs in {graded_class['seconds']:.1f} s (4 jobs); "
              + ", ".join(f"{collect.escape(r.submission)} {r.seconds:.1f}s" for r in runs if r.seconds))
        for g in graded_class["report"].grades:
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
