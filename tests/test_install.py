"""The first command on a newcomer's machine: which Pythons `make book` accepts, and how fast it refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

import lock

from _paths import ROOT
PYENV = Path.home() / ".pyenv" / "versions"


def _make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def _python_check(python: str) -> int:
    """The Makefile's own version check (PY_CHECK), run with ``python``."""
    return _make("--eval", "py-check: ; @$(PYTHON) -c '$(PY_CHECK)'", "py-check", f"PYTHON={python}").returncode


def _python310() -> str | None:
    found = PYENV / "3.10.13" / "bin" / "python3"
    return str(found) if found.exists() else shutil.which("python3.10")


@pytest.mark.parametrize("python", ["3.10", "fake 3.10", "python-that-is-not-installed"])
def test_an_unsupported_or_missing_python_stops_make_book_at_once(python, tmp_path):
    if python == "3.10":
        python = _python310() or pytest.skip("no CPython 3.10 here (the fake one stands in)")
    elif python == "fake 3.10":  # what the check sees of a 3.10 it cannot run: its version and a failing check
        python = str(tmp_path / "python3.10")
        Path(python).write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Python 3.10.12"\nexit 1\n')
        Path(python).chmod(0o755)
    start = time.monotonic()
    done = _make("book", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}")
    assert time.monotonic() - start < 5  # generous: it runs one `python -c`
    assert done.returncode == 2, done.stdout + done.stderr
    assert "3.11 (3.11.5 or newer), 3.12 or 3.13 (3.13.1 or newer)" in done.stdout and "PYTHON=python3.12 make book" in done.stdout
    assert not (tmp_path / "venv").exists()  # nothing was created
    if "3.10" in python:
        assert "Python 3.10" in done.stdout  # it names the Python it was given


def test_the_check_accepts_the_pythons_the_locks_cover():
    assert _python_check(sys.executable) == 0
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in lock.SUPPORTED
    for version in PYENV.glob("3.*") if PYENV.is_dir() else []:
        python = version / "bin" / "python3"
        minor = ".".join(version.name.split(".")[:2])
        if python.exists():
            first = lock.FIRST_PATCH.get(minor, f"{minor}.0")
            works = minor in lock.SUPPORTED and _release(version.name) >= _release(first)
            assert (_python_check(str(python)) == 0) == works, version.name


def _wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal installable wheel (metadata only) for any Python: what pip's dry run reads."""
    info = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as whl:
        for arcname, text in files.items():
            whl.writestr(arcname, text)
        whl.writestr(f"{info}/RECORD", "".join(f"{a},,\n" for a in files) + f"{info}/RECORD,,\n")
    return path


def _index(root: Path, *wheels: Path) -> str:
    """A PEP 503 simple index of ``wheels`` (all of one project) as a file:// URL."""
    (root / "torch").mkdir(parents=True)
    links = "".join(f'<a href="{w.as_uri()}">{w.name}</a>\n' for w in wheels)
    (root / "torch" / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    return root.as_uri()


@pytest.fixture
def offline_pip(tmp_path, monkeypatch):
    """pip with no configuration and an empty default index (so nothing is asked of PyPI)."""
    (tmp_path / "empty").mkdir()
    for key in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "empty").as_uri())
    return tmp_path


def test_make_install_cpu_hands_the_choice_of_torch_build_to_lock_py(tmp_path):
    plan = _make("-n", "install", "ACCEL=cpu", f"VENV={tmp_path / 'venv'}").stdout
    assert "tools/lock.py install-cpu --index https://download.pytorch.org/whl/cpu" in plan
    assert "tools/lock.py check-install cpu" in plan  # and then says which build it got


def test_torch_cpu_comes_from_the_cpu_index_where_it_can_be_reached(offline_pip):
    pin = lock._torch_pin("cpu")
    index = _index(offline_pip / "cpu-index", _wheel(offline_pip, "torch", pin.split("==")[1]))
    args, said = lock.cpu_install_plan(index, fallback=offline_pip / "unused.txt")
    assert args == ["-r", str(lock.LOCKS["cpu"]), "--extra-index-url", index]
    assert "CPU build, from PyTorch's CPU index" in said and not (offline_pip / "unused.txt").exists()


def test_a_local_copy_is_used_where_the_cpu_index_cannot_be_reached(offline_pip, monkeypatch):
    pin = lock._torch_pin("cpu")
    (offline_pip / "wheels").mkdir()
    _wheel(offline_pip / "wheels", "torch", pin.split("==")[1])
    monkeypatch.setenv("PIP_FIND_LINKS", str(offline_pip / "wheels"))
    args, said = lock.cpu_install_plan((offline_pip / "gone").as_uri(), fallback=offline_pip / "unused.txt")
    assert args == ["-r", str(lock.LOCKS["cpu"])] and "from a local copy" in said


def test_without_index_or_copy_it_installs_pypis_build_of_the_same_version_pinned_by_the_cuda_lock(offline_pip):
    pin = lock._torch_pin("cpu")
    version = pin.split("==")[1].removesuffix("+cpu")
    (offline_pip / "wheels").mkdir()
    _wheel(offline_pip / "wheels", "torch", "2.0.0+cpu")  # a local copy of another version does not count
    fallback = offline_pip / "requirements-pypi-torch.txt"
    args, said = lock.cpu_install_plan((offline_pip / "gone").as_uri(), fallback=fallback,
                                       env={**os.environ, "PIP_FIND_LINKS": str(offline_pip / "wheels")})
    assert args == ["-r", str(fallback)]
    assert f"installing PyPI's build torch=={version}" in said and "cannot be reached" in said
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in said
    pins = lock._body(fallback)
    lock.check("cuda", pins)  # torch with its CUDA stack, every line pinned
    assert f"torch=={version}" in pins
    # everything but torch's stack exactly as the CPU lock pins it; the stack as the CUDA lock does
    assert {p for p in pins if not lock.TORCH_STACK.match(p)} == \
        {p for p in lock._body(lock.LOCKS["cpu"]) if not p.startswith("torch==")}
    assert {p for p in pins if lock.TORCH_STACK.match(p)} == \
        {p for p in lock._body(lock.LOCKS["cuda"]) if lock.TORCH_STACK.match(p)}


def test_the_install_check_accepts_pypis_build_of_the_pinned_version_on_a_cpu(monkeypatch):
    version = lock._torch_pin("cpu").split("==", 1)[1].removesuffix("+cpu")
    assert lock._torch_pin("cuda") == f"torch=={version}"
    # PyPI's Linux build, as pip installs it: a local label naming its CUDA, and CUDA compiled in
    monkeypatch.setattr(torch, "__version__", f"{version}+cu130")
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    message = lock.check_install("cpu")
    assert f"torch {version}+cu130: PyPI's build (CUDA 13.0)" in message and "runs on a CPU" in message
    assert lock.TORCH_CPU_INDEX in message
    assert "as requirements-cuda.txt pins" in lock.check_install("cuda")  # the CUDA lock's own torch
    monkeypatch.setattr(torch, "__version__", "2.0.0+cu130")
    for accel in ("cpu", "cuda"):
        with pytest.raises(SystemExit, match="remove the venv"):
            lock.check_install(accel)
    monkeypatch.setattr(torch, "__version__", f"{version}+cpu")
    monkeypatch.setattr(torch.version, "cuda", None)
    assert "CPU build), as requirements.txt pins" in lock.check_install("cpu")
    with pytest.raises(SystemExit, match="is a CPU build"):
        lock.check_install("cuda")


def test_system_torch_from_a_venvs_python_sees_that_venvs_torch(tmp_path):
    """`make install SYSTEM_TORCH=1 PYTHON=some-venv/bin/python`: the new venv's base is the base
    Python, so the Makefile adds the given venv's site-packages with a .pth file (OUTER_SITE)."""
    assert sys.prefix != sys.base_prefix  # the tests run in a venv, which has torch
    plan = _make("-n", "install", "SYSTEM_TORCH=1", f"VENV={tmp_path / 'venv'}").stdout
    assert "--system-site-packages" in plan and "lectorch-system-torch.pth" in plan
    inner = tmp_path / "inner"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(inner)], check=True)
    site = subprocess.run([inner / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    pth = _make("--eval", "outer: ; @$(PYTHON) -c '$(OUTER_SITE)'", "outer", f"PYTHON={sys.executable}").stdout
    assert pth.strip(), "OUTER_SITE printed nothing for a venv's Python"
    (Path(site) / "lectorch-system-torch.pth").write_text(pth)
    seen = subprocess.run([inner / "bin" / "python", "-c", "import importlib.util as u; print(u.find_spec('torch').origin)"],
                          capture_output=True, text=True, check=True).stdout
    assert Path(seen).resolve().is_relative_to(Path(torch.__file__).resolve().parent.parent)
    # the base Python's own packages stay visible too, behind both
    base = _make("--eval", "outer: ; @$(PYTHON) -c '$(OUTER_SITE)'", "outer", f"PYTHON={sys._base_executable}")
    assert base.stdout == "" and base.returncode == 0  # a plain Python: nothing to add
