"""pytest at the repository root (tests, doctests and nbval alike).

Every run (and every pytest-xdist worker) gets a temporary folder of its own: ``TMPDIR`` and
``tempfile.gettempdir()`` point into a fresh ``lectorch-tests-*`` folder, inherited by every kernel,
grader and subprocess the tests start. A test that looks for left-overs (``lectorch-grade-*``
sandboxes, kernel files) looks there, so another program's files in the system's temporary folder
cannot fail it. The folder is removed after a run that passed and kept (its path printed) otherwise.

``LECTORCH_REQUIRE_GPU=1`` turns a machine where torch sees no CUDA device into an immediate error,
before anything is collected: without it every chapter would quietly take its CPU branch and a
"GPU" run would prove nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

#: The machine's own temporary folder, as it was before the run replaced TMPDIR (for tests that
#: plant files "from another program" there).
SYSTEM_TMPDIR_ENV = "LECTORCH_SYSTEM_TMPDIR"
_RUN_TMPDIR = pytest.StashKey[str]()


def _use_private_tmpdir(config: pytest.Config) -> None:
    os.environ.setdefault(SYSTEM_TMPDIR_ENV, tempfile.gettempdir())
    private = tempfile.mkdtemp(prefix="lectorch-tests-")
    os.environ["TMPDIR"] = private
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    assert tempfile.gettempdir() == private
    config.stash[_RUN_TMPDIR] = private


def _nbval_skips_svg() -> None:
    """nbval leaves PNG figures uncompared; the course's figures are SVG (lectorch.plots): left
    uncompared the same way (their words and sizes are checked by tests/test_figures.py)."""
    try:
        from nbval.plugin import IPyNbFile
    except ImportError:
        return
    if getattr(IPyNbFile, "_lectorch_svg", False):
        return
    original = IPyNbFile.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.skip_compare = self.skip_compare + ("image/svg+xml",)

    IPyNbFile.__init__ = __init__
    IPyNbFile._lectorch_svg = True


def pytest_configure(config: pytest.Config) -> None:
    _use_private_tmpdir(config)
    _nbval_skips_svg()
    if os.environ.get("LECTORCH_REQUIRE_GPU", "").strip() in ("", "0"):
        return  # the usual case: nothing to import before collection
    from lectorch.device import REQUIRE_GPU_ENV, cuda_problem, gpu_required

    if gpu_required():
        problem = cuda_problem()
        if problem is not None:
            raise pytest.UsageError(f"{REQUIRE_GPU_ENV}=1 but no CUDA GPU is usable: {problem}")


#: The test files slowest first (quiet 2-core machine), for pytest-xdist (`make test`: --dist loadfile
#: --no-loadscope-reorder): a file's tests stay on one worker (its module fixtures run once), and the
#: longest files start first so that the workers finish together instead of one running the last long
#: file alone. Then the chapters (nbval, 10-20 s each), then the rest as collected. (xdist's loadgroup
#: would split a file finer, but its groups are lost with pytest 9.2: split a slow file instead.)
SLOWEST_FIRST = [  # summed durations of `make test` on 2 cores (pytest --junitxml, a busy machine), in s
    "tests/test_class_edition.py",         # 206: builds the editions when `make book` has not
    "tests/test_student_and_grading.py",   # 142
    "tests/test_grading_attacks.py",       # 90: the class graded for both files (tests/_graded_class.py)
    "tests/test_grading_review.py",        # 91
    "tests/test_grading_walls.py",         # 60: waits for that class, then its own tests
    "tests/test_browser_pages.py",         # 50: the English chapters' visit (tests/_tour.py) and pages
    "tests/test_browser_pages_zh.py",      # 50: the same of the 中文 edition, on another worker
    "tests/test_browser_light.py",         # 54
    "tests/test_exercises_matrix.py",      # 44
    "tests/test_browser_reader.py",        # 41
    "tests/test_browser.py",               # 39
    "tests/test_grading_cli.py",           # 25 (less its rehearsal)
    "tests/test_exercises_hidden.py",      # 26
    "tests/test_exercises_train.py",       # 18
    "tests/test_browser_panels.py",        # 17
    "tests/test_gpu_box.py",               # 16
    "tests/test_book_stamp.py",            # 16
    "tests/test_translation.py",
]


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist (-p no:xdist) does not know the hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (`make test`): one more than the cores, as memory allows (2 GiB each:
    a worker, its Chromium and its kernels). Many tests wait (a browser's page, a grader's stalled
    sandbox, a subprocess starting torch), and the extra worker fills those waits (on 2 cores, 3
    workers finish a sixth sooner than 2; a fourth adds nothing)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    memory_gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    return max(1, min(cores + 1, int(memory_gib // 2)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process: nothing to balance
    rank = {file: i for i, file in enumerate(SLOWEST_FIRST)}

    def order(item: pytest.Item) -> int:
        file = item.nodeid.split("::")[0]
        return rank.get(file, len(rank) + (not file.startswith("chapters/")))

    items.sort(key=order)  # stable: a file's tests keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    private = config.stash.get(_RUN_TMPDIR, None)
    if private is None or hasattr(config, "workerinput"):
        return  # an xdist worker's folder lies inside the controller's, which cleans up
    if getattr(config, "_lectorch_failed", False):
        print(f"\nthis run's temporary files are kept in {private}")
    else:
        shutil.rmtree(private, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._lectorch_failed = exitstatus not in (0, 5)  # 5: no tests collected

