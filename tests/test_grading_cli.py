"""The grader's command line (python -m grading grade) on the fixture course (tests/_grading_course.py): it
survives the death of its parent and writes a table and JSON that agree; a run stopped by SIGTERM
keeps every grade decided so far and leaves nothing behind; four shards run as separate processes
and merged equal one run; a bad --json path or --shard is refused before grading. (A file of its
own: the test runner's workers take test files, so these run beside the attack run.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from _paths import ROOT
from _grading_course import (CHECK_VALUE, FAKE, GRADE, STALL, VALUE_OK, cheat, cli, honest, make_course,
                             needs_bwrap, notebook, run_grader, sandbox_processes)
from grading import cgroups, collect, report as reports
from grading import grade


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


@needs_bwrap
@pytest.mark.slow  # starts graders that start sandboxed kernels: `make test`, not `make unit`
def test_the_cli_survives_the_death_of_its_parent_and_writes_table_and_json_that_agree(course, tmp_path):
    subs = tmp_path / "subs"
    for name, nb in {"alice": honest(), "bob": cheat(), "carol": honest("import time\ntime.sleep(1)")}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    out, table = tmp_path / "grades.json", tmp_path / "table.txt"
    grader = cli(course, subs, "--json", str(out), "--timeout", "20", "--isolation", "bwrap", "--jobs", "2")
    cmd = " ".join(f"'{a}'" for a in grader)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(["sh", "-c", f"{cmd} > '{table}' 2>/dev/null & wait"], start_new_session=True, env=env,
                              cwd=ROOT)
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
@pytest.mark.slow  # starts graders that start sandboxed kernels: `make test`, not `make unit`
def test_a_stopped_run_keeps_every_grade_decided_so_far_and_leaves_nothing(course, tmp_path):
    subs = tmp_path / "subs"
    for name, nb in {"alice": honest(), "bob": honest(), "carol": notebook(FAKE, VALUE_OK, CHECK_VALUE, STALL)}.items():
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / "quiz.ipynb")
    records = tmp_path / "records.jsonl"
    proc = subprocess.Popen(cli(course, subs, "--records", str(records), "--timeout", "60", "--jobs", "1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp_path)},
                            cwd=ROOT)
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
@pytest.mark.rehearsal  # five graders that start sandboxed kernels
def test_four_shards_merged_equal_one_run(course, tmp_path):
    subs = tmp_path / "subs"
    _small_class(subs)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    shards = [subprocess.Popen(cli(course, subs, "--shard", f"{i}/4", "--records", str(tmp_path / f"shard-{i}.jsonl"),
                                    "--timeout", "30", "--jobs", "1"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT) for i in range(1, 5)]
    one = run_grader(course, subs, timeout_s=30, jobs=2)
    for p in shards:
        assert p.wait(timeout=180) == 0, p.stderr.read()
    out = tmp_path / "merged.json"
    merged = subprocess.run([*GRADE, "--merge", *map(str, sorted(tmp_path.glob("shard-*.jsonl"))), "--json", str(out)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
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


def test_one_command_for_the_instructors_side(capsys):
    """``python -m grading student|bundle|grade|class``: each command's own options, and a clear
    word for a missing or unknown command."""
    from grading.__main__ import COMMANDS, main

    assert main([]) == 2 and "use one of student, bundle, grade" in capsys.readouterr().err
    assert main(["grades"]) == 2 and "unknown command 'grades'" in capsys.readouterr().err
    for command in COMMANDS:
        with pytest.raises(SystemExit) as stop:
            main([command, "--help"])
        assert stop.value.code == 0 and f"python -m grading {command}" in capsys.readouterr().out
