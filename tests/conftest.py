"""Shared fixtures: the book's editions (built once, reused while their sources are unchanged),
the worker's one headless Chromium, fresh exercise attempts, a fake clock."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings


# A property is about values, not speed: with every core busy one example can take a second, which
# hypothesis's default deadline (200 ms) would report as a failure.
settings.register_profile("lectorch", deadline=None)
settings.load_profile("lectorch")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    # a test that needs a built edition is a book test (left out of `make unit`), marked or not
    for item in items:
        if "book_edition" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.book)


@pytest.fixture(scope="session")
def book_edition(tmp_path_factory):
    """``book_edition(name)``: the folder of one edition of tools/book/build_book.py's ``EDITIONS``
    ("book": the reader's book, English with 中文 in its zh/; "gettext": the English messages'
    templates), built from clean with zero warnings.

    What `make book` built is reused while its stamp matches the sources (chapters, catalogs,
    config, the book's tools, vendor, lectorch, the installed packages); otherwise the edition is built once,
    into its place under _build (so the next `make book` or run reuses it): the first pytest-xdist
    worker to ask builds it, the others wait and reuse it, and a failed build fails them all at once.
    A book built with the chapters executed (`make book EXECUTE=1`) is left alone: the tests build
    their own from the stored outputs, in the run's temporary folder.

    A new edition (e.g. the class edition) is an entry in ``build_book.EDITIONS``; its tests ask
    ``book_edition("class")``."""
    import build_book

    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent  # shared by the workers of this run
    found: dict[str, Path] = {}

    def get(name: str = "book") -> Path:
        from filelock import FileLock

        if name in found:
            return found[name]
        failed = run_dir / f"book-{name}.FAILED"
        with FileLock(str(run_dir / f"book-{name}.lock")):  # held until a failure is on record
            if failed.exists():
                pytest.fail(f"the {name} build failed in another worker:\n{failed.read_text()}")
            stamp = build_book.read_stamp(build_book.EDITIONS[name].output)
            output = None
            if stamp is not None and stamp.get("options"):  # e.g. executed: not the tests' book, not ours
                output = run_dir / f"book-{name}"
            built = build_book.ensure(name, output=output)
            problem = None
            if built.stamp is None:
                problem = f"the {name} build failed:\n{built.log()}"
            elif built.stamp["warnings"]:
                problem = f"the {name} build has warnings:\n" + "\n".join(built.stamp["warnings"])
            if problem:
                failed.write_text(problem[-6000:])
                pytest.fail(problem[-6000:])
        found[name] = built.path
        return built.path

    return get


@pytest.fixture(scope="session")
def built_book(book_edition) -> Path:
    """The reader's book: English in the returned html folder, 中文 in its zh/ (as `make book` lays them out)."""
    return book_edition("book")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--no-first-run",
    # offline: every host name fails to resolve but the book's server (a test that routes requests
    # also records them; chapter_tour's pages cannot route, since routing turns the HTTP cache off)
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


@pytest.fixture(scope="session")
def chromium():
    """The pytest-xdist worker's one headless Chromium (Debian's ``chromium``, installed by .ci/run),
    started on first use and shared by every browser test the worker runs: each test opens its
    pages in contexts of its own. Playwright's sync API allows one instance per thread, so a browser
    test asks for this one (test_browser.py's ``browser`` returns it) and never starts its own.

    Without Chromium the tests skip with a reason, unless LECTORCH_REQUIRE_BROWSER=1 (set in CI),
    where a missing browser fails."""
    if CHROMIUM is None:
        if os.environ.get("LECTORCH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed; `apt-get install chromium` to run the browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def book_server(built_book) -> str:
    """The reader's book served on 127.0.0.1 (a free port) for the worker's browser tests: its base URL."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built_book)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def browser(chromium):
    """The browser tests' name for the worker's one Chromium."""
    return chromium


@pytest.fixture(scope="session")
def book(built_book) -> Path:
    """The browser tests' name for the reader's book (its html folder)."""
    return built_book


@pytest.fixture(scope="session")
def server(book_server) -> str:
    """The base URL of the worker's book server (``base`` in the reader's tests)."""
    return book_server


@pytest.fixture(scope="session")
def base(book_server) -> str:
    return book_server


@pytest.fixture(scope="session")
def chapter_tour(chromium, book_server, built_book, tmp_path_factory):
    """``chapter_tour(edition)``: tests/_tour.py's facts of every chapter page of the edition ("" or
    "zh/"), {path: facts}, gathered once per run for all the pytest-xdist workers: the first worker
    to ask visits an edition (the other edition is left to a worker that asks meanwhile) and writes
    the facts beside the shared book; the others read them."""
    import json

    from filelock import FileLock, Timeout

    import _tour

    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent  # shared by the workers of this run
    editions = ("", "zh/")
    seen: dict[str, dict] = {}

    def visit(edition: str, *, wait: bool) -> None:
        name = f"tour-{edition.strip('/') or 'en'}"
        facts, failed = run_dir / f"{name}.json", run_dir / f"{name}.FAILED"
        try:
            with FileLock(str(run_dir / f"{name}.lock"), timeout=-1 if wait else 0):
                if failed.exists():
                    pytest.fail(f"the visit of the {edition or 'English'} chapters failed:\n{failed.read_text()}")
                if not facts.exists():
                    try:
                        found = _tour.visit_chapters(chromium, book_server, built_book, edition)
                    except Exception:
                        import traceback

                        failed.write_text(traceback.format_exc()[-6000:])
                        raise
                    facts.write_text(json.dumps(found, ensure_ascii=False))
        except Timeout:  # another worker is visiting it: read it when asked for it
            return
        seen[edition] = json.loads(facts.read_text())

    def get(edition: str) -> dict[str, dict]:
        if edition not in editions:
            raise ValueError(f"edition={edition!r}: the book's editions are {editions}")
        if not seen:  # the first call: the asked edition, then any other that no worker is visiting
            for one in sorted(editions, key=lambda e: e != edition):
                visit(one, wait=False)
        if edition not in seen:
            visit(edition, wait=True)
        return seen[edition]

    return get


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory) -> dict:
    """tests/_graded_class.py's class, graded once per run for all the pytest-xdist workers (the
    attacks' and the walls' tests read the same run): the first worker to ask grades it and leaves
    the result beside the shared book, the others wait for it and read it. Skips without bubblewrap."""
    import pickle

    from filelock import FileLock

    import _graded_class
    from _grading_course import HAVE_BWRAP

    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not usable here")
    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent  # shared by the workers of this run
    result, failed = run_dir / "graded-class.pickle", run_dir / "graded-class.FAILED"
    with FileLock(str(run_dir / "graded-class.lock")):
        if failed.exists():
            pytest.fail(f"grading the class failed in another worker:\n{failed.read_text()}")
        if not result.exists():
            try:
                graded = _graded_class.grade_class(run_dir / "graded-class")
            except Exception:
                import traceback

                failed.write_text(traceback.format_exc()[-6000:])
                raise
            result.write_bytes(pickle.dumps(graded))
    return pickle.loads(result.read_bytes())


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
