"""Shared fixtures: the book built once per test session (from the stored notebook outputs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build the HTML book from clean with -n -W --keep-going; return its html folder."""
    import build_book

    out = tmp_path_factory.mktemp("book")
    proc = build_book.build(out)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"book build failed:\n{log[-6000:]}"
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert not warnings, "book build warnings:\n" + "\n".join(warnings)
    return out / "_build" / "html"
