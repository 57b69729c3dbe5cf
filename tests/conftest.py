"""Shared fixtures: the book built once per test session (from the stored notebook outputs)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


def _assert_clean(proc, edition: str) -> None:
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{edition} book build failed:\n{log[-6000:]}"
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert not warnings, f"{edition} book build warnings:\n" + "\n".join(warnings)


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build both editions from clean with -n -W --keep-going: English in the returned html folder,
    Chinese in its zh/ sub-folder (as `make book` lays them out).

    Built once per run: pytest-xdist workers share it through a file lock in the run's temporary
    folder (the first worker builds, the others wait and reuse it; a failed build fails them all)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: no one to share with
        return _build_book(tmp_path_factory.mktemp("book"))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / "built-book"
    with FileLock(str(shared) + ".lock"):
        done, failure = shared / "DONE", shared / "FAILED"
        if not (done.exists() or failure.exists()):
            shared.mkdir(exist_ok=True)
            try:
                _build_book(shared)
            except BaseException as error:
                failure.write_text(str(error))
                raise
            done.touch()
        if failure.exists():
            pytest.fail("the book build failed in another worker:\n" + failure.read_text()[-6000:])
    return shared / "en" / "_build" / "html"


def _build_book(root: Path) -> Path:
    import build_book
    import i18n

    from concurrent.futures import ThreadPoolExecutor

    out = root / "en"  # build_book.build empties its output folder first
    html = out / "_build" / "html"
    zh = root / "zh-build" / "zh"
    # the two editions read the same stored outputs and build independently: one per core
    with ThreadPoolExecutor(max_workers=2) as pool:
        english, chinese = pool.submit(build_book.build, out), pool.submit(i18n.build, zh)
        _assert_clean(english.result(), "English")
        _assert_clean(chinese.result(), "Chinese")
    shutil.copytree(zh, html / "zh")
    return html


@pytest.fixture(autouse=True)
def _fresh_exercise_attempts():
    """Every test starts with no earlier failures on record, so graded hints start from the first."""
    from lectorch.exercises import reset_attempts

    reset_attempts()
    yield
    reset_attempts()


class FakeClock:
    """A clock that only the work moves: each call of ``work()`` takes exactly ``seconds``.

    Timing tests run on it so that they hold on a machine whose cores are all busy (a real
    ``time.sleep`` oversleeps there by whole scheduler slices)."""

    def __init__(self, seconds: float):
        self.now, self.seconds, self.calls = 0.0, seconds, 0

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.calls += 1
        self.now += self.seconds


@pytest.fixture
def fake_clock(monkeypatch):
    """``fake_clock(seconds)``: lectorch.bench reads the returned FakeClock instead of time.perf_counter."""
    def install(seconds: float) -> FakeClock:
        clock = FakeClock(seconds)
        from lectorch import bench

        monkeypatch.setattr(bench, "time", type("fake_time", (), {"perf_counter": staticmethod(clock)}))
        return clock
    return install
