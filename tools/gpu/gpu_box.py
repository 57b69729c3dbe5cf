"""The GPU box's packages and what the GPU check carries to it, from two committed lists.

    python tools/gpu/gpu_box.py wheels DIR   # download the carried wheels (`make gpu-wheels`)
    python tools/gpu/gpu_box.py lock         # re-resolve tools/gpu/carried.txt (needs uv and PyPI)
    python tools/gpu/gpu_box.py guard        # every module the course imports is on the box or carried

``box-packages.txt`` pins what the box's python3 holds (its documented image); ``carried.txt`` pins
the wheels `make gpu-check` installs there: the closure of :data:`NEEDS` resolved against the box's
pins, less what the box has and less :data:`OPTIONAL`. The guard imports, in the current
environment, everything the chapters, lectorch, the check and its tests import, and maps every
module loaded to its distribution: each must be on one of the two lists (or be optional). It reads
the lists, not the wheels, so it runs on a fresh clone.

>>> "torch" in box_names() and "nbval" in carried_names() and "nbval" not in box_names()
True
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from source_imports import imports, python_of_cell

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = ROOT / "tools" / "gpu"
BOX = HERE / "box-packages.txt"
CARRIED = HERE / "carried.txt"
PYPI = "https://pypi.org/simple"
PLATFORM = "x86_64-manylinux_2_28"
BOX_PYTHON = "3.12.3"
#: What the check runs on the box and the box lacks: nbval and its kernel, the chapters' widgets and
#: beartype, myst-nb for lectorch.glue (its stored glue outputs are part of every chapter; its glue
#: needs docutils, the rest of it only in the book build).
NEEDS = ["nbval", "ipykernel", "nbclient", "nbformat", "ipywidgets", "beartype", "myst-nb"]
#: Dependencies of those that nothing the check runs needs, left out to keep the wheels small; each
#: is imported only inside try/except ImportError, or never at run time. The guard accepts them.
OPTIONAL = {
    "debugpy": "ipykernel's debugger, imported only when a client asks to debug",
    "jedi": "IPython's tab completion (no completion requests under nbval)",
    "parso": "jedi's parser",
    "widgetsnbextension": "the classic notebook's widget extension (a data-only package)",
    "jupyterlab-widgets": "JupyterLab's widget extension (a data-only package)",
    "sphinx": "myst-nb's Sphinx extension: only the book build loads it, not lectorch.glue",
    "myst-parser": "myst-nb's Markdown parser: only the book build",
    "jupyter-cache": "myst-nb's execution cache: only the book build",
    "sqlalchemy": "jupyter-cache's database",
    "greenlet": "sqlalchemy's",
    "alabaster": "Sphinx's default theme", "babel": "Sphinx's", "imagesize": "Sphinx's",
    "snowballstemmer": "Sphinx's", "roman-numerals-py": "Sphinx's", "roman-numerals": "Sphinx's",
    "sphinxcontrib-applehelp": "Sphinx's", "sphinxcontrib-devhelp": "Sphinx's",
    "sphinxcontrib-htmlhelp": "Sphinx's", "sphinxcontrib-jsmath": "Sphinx's", "sphinxcontrib-qthelp": "Sphinx's",
    "sphinxcontrib-serializinghtml": "Sphinx's", "mdit-py-plugins": "myst-parser's",
    "tabulate": "jupyter-cache's (on the box anyway)", "click": "jupyter-cache's CLI (on the box anyway)",
    "importlib-metadata": "a backport for old Pythons", "zipp": "importlib-metadata's",
    # jsonschema (nbformat's validator) imports its format checkers' packages only where they are
    # installed (try/except ImportError): JupyterLab's requirements bring them to `make test`'s venv
    **{name: "jsonschema's optional format checkers (JupyterLab installs them; the box need not)"
       for name in ("arrow", "fqdn", "isoduration", "jsonpointer", "lark", "rfc3339-validator",
                    "rfc3986-validator", "rfc3987-syntax", "uri-template", "webcolors")},
}
GPU_WHEELS_MAX_MIB = 50


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: pathlib.Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def box_pins() -> list[str]:
    return pins(BOX)


def box_names() -> set[str]:
    return {norm(p.split("==")[0]) for p in box_pins()}


def image_names() -> set[str]:
    """Every package of the box's image, by name (the comment block of box-packages.txt)."""
    block = BOX.read_text().split("# Every package of the image", 1)[1].split("\n\n", 1)[0]
    return {norm(w) for line in block.splitlines()[1:] for w in line.lstrip("#").split()}


def carried_names(path: pathlib.Path = CARRIED) -> set[str]:
    return {norm(p.split("==")[0]) for p in pins(path)}


# --------------------------------------------------------------------------------------------- the guard

PROBE = r"""
import importlib, importlib.metadata as md, json, os, pathlib, pkgutil, sys, sysconfig
root = pathlib.Path(sys.argv[1])
sys.path[:0] = [str(root), str(root / "tools" / "gpu")]
# the import roots as they are now: a vendored package that its owner puts on sys.path when imported
# (setuptools/_vendor/jaraco) is counted as the owner's
roots = sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)
before = set(sys.modules)
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
import lectorch
for info in pkgutil.walk_packages(lectorch.__path__, "lectorch."):
    importlib.import_module(info.name)
import matplotlib.pyplot as plt
plt.figure(); plt.plot([0, 1]); plt.savefig(__import__("io").BytesIO(), format="png")
lectorch.glue("guard", 1, display=False)
importlib.import_module("myst_nb")  # lectorch.glue writes only where myst-nb is installed: it looks, not imports
dists = md.packages_distributions()
stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
found = {}
for name in sorted({m.split(".")[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)):
    mod = sys.modules.get(name)
    where = getattr(mod, "__file__", None) or next(iter(getattr(mod, "__path__", None) or []), None)
    if not where:
        continue  # built in, or made at run time
    where = os.path.realpath(where)
    top_root = next((r for r in roots if where.startswith(r + os.sep)), None)
    if top_root is None or (top_root in stdlib and "site-packages" not in where):
        continue  # the standard library
    # the distribution owning the file: a package vendored inside another counts as that one's
    top = os.path.relpath(where, top_root).split(os.sep)[0].split(".")[0]
    found[name] = dists.get(top, []) or [top]
print(json.dumps(found))
"""

LOCAL = {"lectorch", "gpu_check", "gpu_check_capture", "gpu_box", "conftest", "tests", "bench_matmul",
         "_hypothesis_pytestplugin", "__main__",
         # the tests' own helpers (tests/_paths.py, tests/_answers/ ...), on pytest's pythonpath
         *(p.stem for p in (ROOT / "tests").glob("_*") if p.suffix == ".py" or p.is_dir())}


def imported_modules() -> list[str]:
    """Top-level modules the chapters, lectorch's tools for the check, the check's tests and the
    benchmark import (statically, from their sources), and the plugins and kernel the check loads."""
    sources: list[str] = []
    for nb in sorted(ROOT.glob("chapters/**/*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                sources.append(python_of_cell("".join(cell["source"])))
    sys.path.insert(0, str(ROOT / "tools" / "gpu"))
    import gpu_check

    files = [ROOT / f for f in gpu_check.CUDA_TEST_FILES] + [ROOT / "conftest.py", ROOT / "benchmarks" /
                                                             "bench_matmul.py", ROOT / "tools" / "gpu" / "gpu_check_capture.py"]
    sources += [f.read_text() for f in files if f.exists()]
    names = set().union(*map(imports, sources))  # optional imports too: the box must have them all
    # what gpu_check's pytest runs load (-p …) and the kernel nbval starts
    names |= {"pytest", "nbval.plugin", "pytest_timeout", "_hypothesis_pytestplugin", "ipykernel.kernelapp",
              "ipykernel.ipkernel", "nbclient", "jupyter_client", "matplotlib_inline.backend_inline"}
    return sorted(n for n in names if n.split(".")[0] not in LOCAL and n.split(".")[0] not in sys.stdlib_module_names)


@functools.lru_cache(maxsize=None)
def loaded_modules(python: str = sys.executable) -> dict[str, list[str]]:
    """Imports, in a fresh ``python``, what the course imports; returns every top-level module that
    got loaded (stdlib aside) with the distributions that provide it there."""
    proc = subprocess.run([python, "-c", PROBE, str(ROOT), json.dumps(imported_modules())], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, MPLBACKEND="Agg"))
    if proc.returncode != 0:
        raise RuntimeError(f"the import probe failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def guard(python: str = sys.executable, carried: pathlib.Path = CARRIED) -> list[str]:
    """The problems: each module loaded that is neither on the box nor carried (nor optional)."""
    found = loaded_modules(python)
    have = box_names() | carried_names(carried) | {norm(n) for n in OPTIONAL} | {"lectorch"}
    problems = []
    for module, dists in sorted(found.items()):
        if module in LOCAL:
            continue
        if not any(norm(d) in have for d in dists):
            problems.append(f"{module} (from {', '.join(sorted(set(dists)))}): neither on the GPU box "
                            f"({BOX.name}) nor carried ({carried.name})")
    return problems


# -------------------------------------------------------------------------------- the lock and the wheels


def lock(uv: str = "uv") -> None:
    """Re-resolve carried.txt: the closure of NEEDS for the box's Python, with the box's pins as
    constraints, less what the box has and less OPTIONAL."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "in.txt").write_text("\n".join(NEEDS) + "\n")
        (tmp / "c.txt").write_text("\n".join(box_pins()) + "\n")
        subprocess.run([uv, "pip", "compile", str(tmp / "in.txt"), "-c", str(tmp / "c.txt"), "--python-version",
                        BOX_PYTHON, "--python-platform", PLATFORM, "--no-header", "--no-annotate", "--index-url", PYPI,
                        "-o", str(tmp / "out.txt"), "--quiet"], check=True, env=dict(os.environ, UV_NO_CONFIG="1"))
        resolved = pins(tmp / "out.txt")
    box, optional = box_names(), {norm(n) for n in OPTIONAL}
    carried = [p for p in resolved if norm(p.split("==")[0]) not in box | optional]
    header = CARRIED.read_text().split("\n\n", 1)[0] if CARRIED.exists() else "#"
    CARRIED.write_text(header + "\n\n" + "\n".join(carried) + "\n")
    print(f"wrote {CARRIED.relative_to(ROOT)}: {len(carried)} pins")


def download_wheels(folder: pathlib.Path) -> None:
    """cp312 manylinux x86-64 wheels of carried.txt into ``folder`` (kept where already there), and
    its requirements.txt, which the check installs offline with --no-deps."""
    folder.mkdir(parents=True, exist_ok=True)
    want = pins(CARRIED)
    wanted = {norm(p.split("==")[0]): p.split("==")[1] for p in want}
    for old in folder.glob("*.whl"):  # nothing left over from another list
        name, version = old.name.split("-")[:2]
        if wanted.get(norm(name)) != version:
            old.unlink()
    (folder / "requirements.txt").write_text(
        f"# What `make gpu-check` installs on the GPU box: {CARRIED.relative_to(ROOT)}, written by `make gpu-wheels`.\n"
        + "\n".join(want) + "\n")
    platforms = [f"manylinux_2_{v}_x86_64" for v in range(28, 4, -1)] + ["manylinux2014_x86_64", "manylinux1_x86_64"]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", "-d", str(folder), "-r", str(folder / "requirements.txt"), "--quiet",
           "--index-url", PYPI] + [a for p in platforms for a in ("--platform", p)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull,
                                                                           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(cmd, check=True, env=env)
    wheels = sorted(folder.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"{folder}: {len(wheels)} wheels, {size / 2**20:.1f} MiB")
    if len(wheels) != len(want):
        raise SystemExit(f"{len(wheels)} wheels for {len(want)} pins in {CARRIED.name}")
    if size > GPU_WHEELS_MAX_MIB * 2**20:
        raise SystemExit(f"the GPU wheels take {size / 2**20:.1f} MiB, over the {GPU_WHEELS_MAX_MIB} MiB budget")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["wheels", "lock", "guard"])
    parser.add_argument("folder", nargs="?", default=str(ROOT / "wheels" / "gpu-cp312"))
    parser.add_argument("--uv", default="uv")
    args = parser.parse_args(argv)
    if args.what == "wheels":
        download_wheels(pathlib.Path(args.folder))
    elif args.what == "lock":
        lock(args.uv)
    else:
        problems = guard()
        print("\n".join(problems) or "every module imported is on the GPU box or carried")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
