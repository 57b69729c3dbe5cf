"""Shared fixtures: the book built once per test session (from the stored notebook outputs)."""

from __future__ import annotations

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
    Chinese in its zh/ sub-folder (as `make book` lays them out)."""
    import build_book
    import i18n

    out = tmp_path_factory.mktemp("book")
    _assert_clean(build_book.build(out), "English")
    html = out / "_build" / "html"
    _assert_clean(i18n.build(html / "zh"), "Chinese")
    return html
