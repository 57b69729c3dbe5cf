"""The launch a reader gets: chapters run in a fresh venv that has only lectorch installed as a
package (plus torch and a kernel), from a folder holding nothing but the notebook — no book tooling
(myst-nb, sphinx), no repository on the path.

Nothing is installed twice (torch alone is a 1 GB copy): the venv sees this environment's torch,
ipykernel and the dependencies lectorch's wheel *declares*, each with its own dependencies and
nothing else, through a folder of links; pip then installs the lectorch wheel (with the lock,
requirements.txt, as constraints for everything but torch) and finds every declared dependency
satisfied: the torch already there is kept, as in a student's kernel whose torch lectorch's range
admits (a dry run checks first that pip would install no torch). A dependency missing from pyproject.toml fails the chapter that imports it: the first chapter runs
whole (the launch itself), and every module that lectorch or any chapter imports, wherever the
import sits (inside a function too), is imported in the bare venv.

The kernel's torch is the newest release the course is tested on (tools/torch_matrix.py RELEASES), as
on Colab or a GPU box today: PyPI's build, kept in the torch matrix's cached venv (made once, a
multi-GB download) and linked from there. ``LECTORCH_BARE_TORCH=lock`` links this environment's torch
(the lock's) instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import json
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
import pytest
from packaging.utils import canonicalize_name
from source_imports import imports, python_of_cell

import lock
import torch_matrix

from _paths import ROOT
CHAPTERS = ["00_napkin_math"]
#: Linked (not installed) into the bare venv from this environment, with everything they depend on.
LINKED = ("ipykernel",)
pytestmark = pytest.mark.rehearsal


def _distribution(name: str, site: Path):
    """The distribution ``name`` installed in the site-packages folder ``site``, or None."""
    from importlib import metadata

    return next(iter(metadata.distributions(name=name, path=[str(site)])), None)


def _closure(names, site: Path) -> set[str]:
    """The distributions ``names`` need in ``site``, recursively (markers evaluated, extras left out)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        dist = _distribution(name, site)
        if dist is None:
            continue
        seen.add(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _declared(wheel: Path) -> list[str]:
    """The dependencies a wheel's metadata declares (what `pip install lectorch` would bring)."""
    import zipfile

    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        lines = zf.read(meta).decode().splitlines()
    reqs = [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]
    return [r.name for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _top_level_paths(name: str, site: Path) -> set[Path]:
    dist = _distribution(name, site)
    tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
    return {site / t for t in tops if t != "__pycache__" and (site / t).exists()}


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _site_of(python: Path | str) -> Path:
    return Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())


@pytest.fixture(scope="module")
def kernel_torch() -> Path:
    """The site-packages folder holding the torch the student's kernel already has."""
    if os.environ.get("LECTORCH_BARE_TORCH") == "lock":
        import torch

        return Path(torch.__file__).parent.parent
    newest = max(torch_matrix.RELEASES.values(), key=lambda v: tuple(map(int, v.split("."))))
    base = getattr(sys, "_base_executable", sys.executable)
    return _site_of(torch_matrix.torch_venv(torch_matrix.default_cache(), base, newest))


@pytest.fixture(scope="module")
def bare_kernel(tmp_path_factory, kernel_torch: Path):
    """A kernelspec whose python is a fresh venv with lectorch (as a wheel), linked torch, ipykernel."""
    tmp = tmp_path_factory.mktemp("bare")
    venv = tmp / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = _site_of(python)

    here = Path(sysconfig.get_paths()["purelib"])
    wheels = tmp / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels),
          str(ROOT)])
    wheel = next(wheels.glob("lectorch-*.whl"))
    links = tmp / "linked"
    links.mkdir()
    # torch and what it needs from the kernel's own torch first, then the rest from this environment
    linked = {site_: _closure(names, site_) for site_, names in
              ((kernel_torch, ["torch"]), (here, [*LINKED, *_declared(wheel)]))}
    assert "torch" in linked[kernel_torch], f"no torch in {kernel_torch}"
    for site_, names in linked.items():
        assert not names & {"lectorch", "myst-nb", "sphinx", "jupyter-book"}, names
        for name in names:
            for path in _top_level_paths(name, site_):
                if not (links / path.name).exists():
                    (links / path.name).symlink_to(path)
    (site / "linked.pth").write_text(f"{links}\n")

    # the lock as constraints, but not for torch: the torch already there (this environment's, linked)
    # must be kept by pip because lectorch's range admits it, as in a student's kernel
    # and not for what that torch itself requires (its own pins, which may differ from the lock's)
    torch_dist = _distribution("torch", kernel_torch)
    own = _closure(["torch"], kernel_torch)
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if not lock.TORCH_STACK.match(line) and canonicalize_name(re.split(r"[=<>!~;\s]", line)[0]) not in own]
    pins.append(f"torch=={torch_dist.version}")
    constraints = tmp / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    where = "import torch; print(torch.__version__, torch.__file__)"
    before = _run([str(python), "-c", where], cwd=tmp).stdout
    # this environment's pip installs into the bare venv (pip --python): no pip inside it to set up;
    # a dry run first, so that a torch pip would replace is reported, never downloaded
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check",
               "-c", str(constraints), str(wheel)]
    # a machine's pip configuration may cap torch (at the releases it keeps on disk): a student's has no cap
    pip_env = dict(os.environ, PIP_CONSTRAINT=os.devnull)
    _run([*install[:6], "--dry-run", "--report", str(tmp / "report.json"), *install[6:]], env=pip_env)
    planned = [i["metadata"]["name"] for i in json.loads((tmp / "report.json").read_text())["install"]]
    assert "torch" not in [name.lower() for name in planned], f"pip would replace the kernel's torch: {planned}"
    _run(install, env=pip_env)
    assert _run([str(python), "-c", where], cwd=tmp).stdout == before, "installing lectorch changed torch"
    probe = _run([str(python), "-c", "import importlib.util as u; print([m for m in ('myst_nb', 'sphinx', "
                  "'jupyter_book', 'nbval') if u.find_spec(m)])"], cwd=tmp)
    assert probe.stdout.strip() == "[]", f"the bare venv has book tooling: {probe.stdout}"
    jupyter = tmp / "jupyter"
    _run([str(python), "-m", "ipykernel", "install", "--prefix", str(jupyter), "--name", "lectorch-bare"])
    return jupyter / "share" / "jupyter"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_chapter_runs_in_a_bare_venv(bare_kernel: Path, stem: str, tmp_path: Path, monkeypatch):
    from nbclient import NotebookClient

    folder = tmp_path / "alone"
    folder.mkdir()
    shutil.copy(ROOT / "chapters" / f"{stem}.ipynb", folder)
    nb = nbformat.read(folder / f"{stem}.ipynb", as_version=4)
    monkeypatch.setenv("JUPYTER_PATH", str(bare_kernel))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("LECTORCH_DEVICE", "cpu")
    start = time.perf_counter()
    client = NotebookClient(nb, kernel_name="lectorch-bare", timeout=120, allow_errors=False,
                            resources={"metadata": {"path": str(folder)}})
    client.execute(cwd=str(folder), env={**os.environ})
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert not first.outputs, "lectorch was not importable: the install cell ran pip"
    print(f"{stem}: {time.perf_counter() - start:.1f} s in the bare venv")


def test_every_module_lectorch_and_the_chapters_import_is_in_the_bare_venv(bare_kernel: Path, tmp_path: Path):
    names = set()
    for path in (ROOT / "lectorch").rglob("*.py"):
        names |= imports(path.read_text(encoding="utf-8"), optional=False)
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                names |= imports(python_of_cell(cell.source), optional=False)
    third_party = sorted({name.split(".")[0] for name in names} - set(sys.stdlib_module_names) - {"__future__"})
    assert {"lectorch", "torch", "matplotlib"} <= set(third_party), third_party
    python = json.loads((bare_kernel / "kernels" / "lectorch-bare" / "kernel.json").read_text())["argv"][0]
    probe = ("import importlib, sys\nmissing = []\nfor name in sys.argv[1:]:\n    try:\n"
             "        importlib.import_module(name)\n    except ImportError as err:\n"
             "        missing.append(f'{name}: {err}')\nprint('\\n'.join(missing))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = _run([python, "-c", probe, *third_party], cwd=tmp_path, env={**env, "LECTORCH_DEVICE": "cpu"})
    assert not proc.stdout.strip(), f"imported by lectorch or a chapter, missing in a venv with only lectorch:\n{proc.stdout}"
