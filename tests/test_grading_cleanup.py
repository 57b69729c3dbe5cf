"""The sandboxes' housekeeping: what a killed grader leaves behind is cleaned up at the next start
(only what a grader made, and only once that grader is gone); the cgroup v2 path, which a v1
machine cannot run, works against a fake cgroup file system; parallel sandboxes share the cores."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import ROOT

from grading import cgroups, sandbox


def _folder_of_a_killed_grader(workdir: Path) -> Path:
    """A grader process that makes a sandbox folder and is SIGKILLed; its folder."""
    code = ("import os, sys, signal\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from grading import sandbox\n"
            "box = sandbox.make_folder(sys.argv[1])\n"
            "(box / 'out').mkdir(); (box / 'out' / 'answer.pt').write_bytes(b'x')\n"
            "print(box, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(workdir)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL
    return Path(proc.stdout.strip())


def test_a_killed_graders_folders_are_removed_and_nothing_else(tmp_path):
    stale = _folder_of_a_killed_grader(tmp_path)
    assert stale.is_dir() and stale.name.startswith(sandbox.FOLDER_PREFIX)
    live = sandbox.make_folder(tmp_path)                         # this grader's: still running
    foreign = tmp_path / f"{sandbox.FOLDER_PREFIX}other-program"  # no marker: not a grader's
    foreign.mkdir()
    reused = tmp_path / f"{sandbox.FOLDER_PREFIX}reused-pid"      # a live pid, but another process
    reused.mkdir()
    (reused / sandbox.MARKER).write_text(f"{os.getpid()} 1")
    link = tmp_path / f"{sandbox.FOLDER_PREFIX}link"             # a link is never followed
    link.symlink_to(stale)

    removed = sandbox.remove_stale_folders(tmp_path)

    assert sorted(removed) == sorted([stale, reused])
    assert not stale.exists() and not reused.exists()
    assert live.is_dir() and foreign.is_dir() and link.is_symlink()


def test_stopping_removes_this_graders_folders_even_unregistered_ones(tmp_path, monkeypatch):
    """SIGTERM's abort_all: a folder whose sandbox has left the live table (a signal during its
    cleanup) or had not entered it yet is still this grader's and goes; another's stays."""
    monkeypatch.setattr(sandbox.tempfile, "gettempdir", lambda: str(tmp_path))
    mine = sandbox.make_folder(tmp_path)
    (mine / "out" / "deep").mkdir(parents=True)
    (mine / "out" / "deep" / "answer.pt").write_bytes(b"x")
    other = tmp_path / f"{sandbox.FOLDER_PREFIX}other"
    other.mkdir()
    (other / sandbox.MARKER).write_text(f"{os.getpid()} 1")  # a live pid, but another process's
    sandbox.abort_all()
    assert not mine.exists() and other.is_dir()


def test_stopping_removes_a_folder_whose_removal_had_started(tmp_path, monkeypatch):
    """A worker thread removing its sandbox's folder when SIGTERM comes has already taken the marker
    (and the rest is cut short by the exit): abort_all still knows the folder as this grader's."""
    monkeypatch.setattr(sandbox.tempfile, "gettempdir", lambda: str(tmp_path))
    box = sandbox.make_folder(tmp_path)
    (box / "out").mkdir()
    (box / "out" / "answer.pt").write_bytes(b"x")
    (box / sandbox.MARKER).unlink()  # the removal's first steps
    sandbox.abort_all()
    assert not box.exists()
    gone = sandbox.make_folder(tmp_path)
    sandbox.remove_folder(gone)  # removed in full: forgotten
    assert gone not in sandbox._FOLDERS and not gone.exists()


def test_a_folder_of_another_user_is_left_alone(tmp_path, monkeypatch):
    stale = _folder_of_a_killed_grader(tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    assert sandbox.remove_stale_folders(tmp_path) == [] and stale.is_dir()


def test_grading_starts_by_removing_stale_folders(tmp_path, monkeypatch):
    """grade_folder cleans its work folder before it grades (here: a class with nothing to run)."""
    from grading import grader

    stale = _folder_of_a_killed_grader(tmp_path)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "no_such_chapter.ipynb").write_text("{}")
    monkeypatch.setattr(sandbox, "detect", lambda *a, **k: sandbox.Isolation("none", "v1", "test"))
    (tmp_path / "reference").mkdir()
    report = grader.grade_folder(subs, bundle={"exercises": {}}, reference_dir=tmp_path / "reference",
                                 registry={}, workdir=tmp_path)
    assert report.runs and not stale.exists()


# ---------------------------------------------------------------- cgroup v2, on a fake cgroupfs

@pytest.fixture
def fake_v2(tmp_path, monkeypatch) -> Path:
    """A cgroup2 mount with this process in /grader (a delegated cgroup), no v1 hierarchy."""
    mount = tmp_path / "cgroup2"
    own = mount / "grader"
    own.mkdir(parents=True)
    (mount / "cgroup.controllers").write_text("cpu memory pids\n")
    (own / "cgroup.subtree_control").write_text("")
    monkeypatch.setattr(cgroups, "_mounts", lambda: [(str(mount), "cgroup2", ["rw", "nosuid"])])
    monkeypatch.setattr(cgroups, "_own", lambda controller: "/grader" if controller is None else None)
    return own


def test_v2_group_gets_its_limits_and_enables_the_controllers(fake_v2):
    group = cgroups.Cgroup.create("lectorch-grade-1", memory_bytes=2**30, pids=64)
    assert group.version == 2 and group.memory == group.pids and group.memory.parent == fake_v2
    assert (fake_v2 / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (group.memory / "memory.max").read_text() == str(2**30)
    assert (group.memory / "pids.max").read_text() == "64"
    assert group.procs_files() == [str(group.memory / "cgroup.procs")]  # one file: one hierarchy


def test_v2_swap_is_switched_off_where_the_kernel_offers_it(fake_v2, monkeypatch):
    real_mkdir = Path.mkdir

    def mkdir_with_swap(self, *args, **kwargs):  # the kernel makes a new group's files
        real_mkdir(self, *args, **kwargs)
        if self.parent == fake_v2:
            (self / "memory.swap.max").write_text("max")

    monkeypatch.setattr(Path, "mkdir", mkdir_with_swap)
    group = cgroups.Cgroup.create("lectorch-grade-1", memory_bytes=2**30, pids=64)
    assert (group.memory / "memory.swap.max").read_text() == "0"


def test_v2_reads_peak_and_oom_kills_and_kills_through_cgroup_kill(fake_v2):
    group = cgroups.Cgroup.create("lectorch-grade-1", memory_bytes=2**30, pids=64)
    (group.memory / "memory.peak").write_text("123456\n")
    (group.memory / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n")
    (group.memory / "cgroup.kill").write_text("0")
    (group.memory / "cgroup.procs").write_text("")
    assert group.peak() == 123456 and group.oom_kills() == 2
    assert group.kill_all(0.1) and (group.memory / "cgroup.kill").read_text() == "1"


def test_v2_without_delegation_says_what_to_do(fake_v2, monkeypatch):
    real_write = Path.write_text

    def busy(self, *args, **kwargs):  # the kernel's answer when the grader's own cgroup holds processes
        if self.name == "cgroup.subtree_control":
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", busy)
    with pytest.raises(OSError, match="delegated cgroup"):
        cgroups.Cgroup.create("lectorch-grade-1", memory_bytes=2**30, pids=64)


def test_v2_stale_groups_of_dead_graders_are_removed(fake_v2):
    dead = fake_v2 / "lectorch-grade-999999999-abc"   # no such pid
    alive = fake_v2 / f"lectorch-grade-{os.getpid()}-def"
    other = fake_v2 / "someone-else"
    for d in (dead, alive, other):
        d.mkdir()
    assert cgroups.remove_stale() == 1
    assert not dead.exists() and alive.is_dir() and other.is_dir()


# ---------------------------------------------------------------- parallel sandboxes share the cores

def test_parallel_sandboxes_get_their_share_of_the_cores():
    assert "OMP_NUM_THREADS" not in sandbox._env("/h", "/t", "/r")  # one at a time: the libraries' default
    env = sandbox._env("/h", "/t", "/r", threads=3)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "3"
