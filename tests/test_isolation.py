"""The suite judges only what it created: its own temporary folder, its own processes."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _graded_class import MARKER, marked_processes


def test_the_run_has_a_temporary_folder_of_its_own_that_subprocesses_inherit():
    system = Path(os.environ["LECTORCH_SYSTEM_TMPDIR"])
    ours = Path(tempfile.gettempdir())
    assert ours != system and ours.name.startswith("lectorch-tests-") and ours.is_dir()
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True)
    assert Path(child.stdout.strip()) == ours


def test_a_stray_sandbox_folder_and_process_of_another_program_are_not_judged():
    """What `test_nothing_outlives_the_run` checks, with another grading run's left-overs around."""
    system = Path(os.environ["LECTORCH_SYSTEM_TMPDIR"])
    stray_folder = Path(tempfile.mkdtemp(prefix="lectorch-grade-", dir=system))
    # another program's process, carrying the marker an earlier (or concurrent) run's attacks used
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "lectorch-attack-marker-7f3a"])
    try:
        assert not list(Path(tempfile.gettempdir()).glob("lectorch-grade-*"))
        assert not marked_processes(MARKER)
    finally:
        stray.kill()
        stray.wait()
        stray_folder.rmdir()
