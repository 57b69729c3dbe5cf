"""The first command on a newcomer's machine: which Pythons `make book` accepts, and how fast it refuses."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import lock

ROOT = Path(__file__).resolve().parent.parent
PYENV = Path.home() / ".pyenv" / "versions"


def _make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def _python_check(python: str) -> int:
    """The Makefile's own version check (PY_CHECK), run with ``python``."""
    return _make("--eval", "py-check: ; @$(PYTHON) -c '$(PY_CHECK)'", "py-check", f"PYTHON={python}").returncode


@pytest.mark.parametrize("python", [str(PYENV / "3.10.13" / "bin" / "python3"), "python-that-is-not-installed"])
def test_an_unsupported_or_missing_python_stops_make_book_at_once(python, tmp_path):
    if "3.10" in python and not Path(python).exists():
        pytest.skip("no CPython 3.10 here")
    start = time.monotonic()
    done = _make("install", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}")
    assert time.monotonic() - start < 5  # generous: it runs one `python -c`
    assert done.returncode == 2
    assert "3.11 (3.11.5 or newer), 3.12 or 3.13" in done.stdout and "PYTHON=python3.12 make book" in done.stdout
    assert not (tmp_path / "venv").exists()  # nothing was created


def test_the_check_accepts_the_pythons_the_locks_cover():
    assert _python_check(sys.executable) == 0
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in lock.SUPPORTED
    for version in PYENV.glob("3.*") if PYENV.is_dir() else []:
        python = version / "bin" / "python3"
        minor = ".".join(version.name.split(".")[:2])
        if python.exists():
            assert (_python_check(str(python)) == 0) == (minor in lock.SUPPORTED), version.name


def test_the_cpu_install_names_pytorchs_cpu_index_and_falls_back_to_pypis_build(tmp_path):
    plan = _make("-n", "install", "ACCEL=cpu", f"VENV={tmp_path / 'venv'}").stdout
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in plan
    assert "requirements-pypi-torch.txt" in plan  # the fallback: the same version from PyPI
    # the fallback's lock: only torch's pin changes, to the same version without +cpu
    fallback = subprocess.run(["sed", "-E", r"s/^(torch==[^+ ]+)\+cpu/\1/", str(ROOT / "requirements.txt")],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    original = (ROOT / "requirements.txt").read_text().splitlines()
    changed = [(a, b) for a, b in zip(original, fallback) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("torch==") and changed[0][1] + "+cpu" == changed[0][0]


def test_the_install_check_accepts_pypis_build_of_the_pinned_version_on_a_cpu(monkeypatch):
    pinned = next(line for line in lock._body(lock.LOCKS["cpu"]) if line.startswith("torch=="))
    version = pinned.split("==", 1)[1].removesuffix("+cpu")
    monkeypatch.setattr(torch, "__version__", version)
    message = lock.check_install("cpu")
    assert "PyPI's build" in message and "runs on a CPU" in message and lock.TORCH_CPU_INDEX in message
    monkeypatch.setattr(torch, "__version__", "2.0.0")
    with pytest.raises(SystemExit, match="remove the venv"):
        lock.check_install("cpu")
