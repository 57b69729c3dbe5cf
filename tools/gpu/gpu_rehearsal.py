"""`make gpu-rehearsal`: the GPU box's run, rehearsed here on a replica of the box, short of the GPU.

    python3 tools/gpu/gpu_rehearsal.py [--cache DIR] [--keep]

1. The replica (built once, cached outside the repository, in ``~/.cache/lectorch/gpu-rehearsal``
   or ``$LECTORCH_REHEARSAL_CACHE``): a virtual environment made from CPython 3.12 holding PyPI's
   torch 2.11.0 (a CUDA build, which runs on a CPU) and the box's packages that the course touches,
   pinned in tools/gpu/box-packages.txt. Its ``python`` plays the box's ``python3``, which is
   such a venv too. Building it uses the package registry; nothing after it does.
2. The carried wheels (``make gpu-wheels``: tools/gpu/carried.txt) and a copy of what the device
   tool sends: the tracked and the untracked-not-ignored files, plus the wheels folder. Its size is
   printed against the 64 MiB the box receives.
3. In that copy, ``tools/gpu/gpu_check.py --cpu`` with the replica's python, as the box would run it but
   on the CPU, with pip's local configuration off (PIP_CONFIG_FILE=/dev/null, no PIP_* variable, no
   index) and a fresh HOME: the offline install from the carried wheels, then every step that needs
   no CUDA for real, nbval over every chapter included.

One PASS/FAIL/SKIP line per step and chapter; the exit status is 0 only when nothing failed.
Python 3.12 is found as ``$PYTHON312``, ``python3.12`` on PATH, or under pyenv's versions.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import gpu_box  # this folder's: a script's own folder is on its sys.path

ROOT = gpu_box.ROOT

BOX_MIB = 64  # what the device tool sends: the working tree and the carried paths together
PYPI = "https://pypi.org/simple"


def default_cache() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LECTORCH_REHEARSAL_CACHE") or
                        pathlib.Path.home() / ".cache" / "lectorch" / "gpu-rehearsal")


def find_python312() -> str:
    """CPython 3.12, the box's Python: $PYTHON312, python3.12 on PATH, or one of pyenv's versions."""
    candidates = [os.environ.get("PYTHON312"), shutil.which("python3.12")]
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv") / "versions"
    candidates += [str(p) for p in sorted(pyenv.glob("3.12.*/bin/python3.12"), reverse=True)]
    for c in candidates:
        if c and pathlib.Path(c).exists():  # a pyenv shim may exist and still not run: ask it
            probe = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                                   capture_output=True, text=True)
            if probe.stdout.strip() == "True":
                return c
    raise SystemExit("gpu-rehearsal needs CPython 3.12 (the GPU box's Python): set PYTHON312=/path/to/python3.12, "
                     "or install it (pyenv install 3.12)")


def registry_env() -> dict:
    """This machine's pip configuration off (local wheel folders, extra indexes, constraint caps):
    the replica is the box's package set from PyPI, not what happens to lie on this machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def replica(cache: pathlib.Path) -> pathlib.Path:
    """The cached replica venv's python; built (minutes: torch with its CUDA libraries is ~3 GB)
    when missing or when tools/gpu/box-packages.txt changed."""
    venv = cache / "box-venv"
    python = venv / "bin" / "python"
    pins = gpu_box.box_pins()
    digest = hashlib.sha256("\n".join(pins).encode()).hexdigest()
    stamp = venv / ".box-packages.sha256"
    if python.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return python
    print(f"building the replica of the GPU box's python3 in {venv} (once; minutes)", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([find_python312(), "-m", "venv", "--clear", str(venv)], check=True)
    req = cache / "box-requirements.txt"
    req.write_text("\n".join(pins) + "\n")
    downloads = cache / "downloads"  # the big wheels, kept between rebuilds
    downloads.mkdir(exist_ok=True)
    env = registry_env()
    subprocess.run([str(python), "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--index-url", PYPI, "-d", str(downloads), "-r", str(req)], check=True, env=env)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--find-links",
                    str(downloads), "-r", str(req)], check=True, env=env)
    stamp.write_text(digest + "\n")
    return python


def sent_files() -> list[str]:
    """What the device tool sends of the working tree: tracked and untracked-not-ignored files."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def copy_tree(dest: pathlib.Path, wheels: pathlib.Path) -> tuple[int, int]:
    """Copy the sent files and the wheels folder into ``dest``; returns (tree bytes, wheel bytes)."""
    tree = 0
    for f in sent_files():
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, target)
        tree += target.stat().st_size
    rel = wheels.resolve().relative_to(ROOT)
    shutil.copytree(wheels, dest / rel)
    return tree, sum(p.stat().st_size for p in (dest / rel).iterdir() if p.is_file())


def box_env(python: pathlib.Path, home: pathlib.Path) -> dict:
    """The environment of a command on the box: its python3 first on PATH, no pip configuration, no
    index, a fresh home, nothing of this machine's venvs."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env.update(HOME=str(home), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PYTHONUNBUFFERED="1")
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=pathlib.Path, default=default_cache())
    parser.add_argument("--wheels", type=pathlib.Path, default=ROOT / "wheels" / "gpu-cp312")
    parser.add_argument("--budget", type=float, default=5400.0,
                        help="seconds for the check on this CPU (the box's default is tools/gpu/gpu_check.py's)")
    parser.add_argument("--chapter-timeout", type=float, default=900.0)
    parser.add_argument("--out", type=pathlib.Path, help="where the check's files go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the copied tree (its path is printed)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    python = replica(args.cache)
    t_replica = time.monotonic() - t0
    version = subprocess.run([str(python), "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"replica: Python {version.replace(' ', ', torch ')} ({t_replica:.0f}s)", flush=True)
    t1 = time.monotonic()
    gpu_box.download_wheels(args.wheels)
    t_wheels = time.monotonic() - t1
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpu-rehearsal-"))
    try:
        tree_dir, home = work / "tree", work / "home"
        home.mkdir(parents=True)
        tree, wheels = copy_tree(tree_dir, args.wheels)
        total = tree + wheels
        fits = total < BOX_MIB * 2**20
        size_line = (f"{'PASS' if fits else 'FAIL'} size: tree {tree / 2**20:.1f} MiB + wheels {wheels / 2**20:.1f} MiB = "
                     f"{total / 2**20:.1f} MiB of the {BOX_MIB} MiB the box receives")
        print(size_line, flush=True)
        out = args.out or work / "out"
        out.mkdir(parents=True, exist_ok=True)
        cmd = ["python3", "tools/gpu/gpu_check.py", "--cpu", "--out", str(out), "--wheels",
               str(args.wheels.resolve().relative_to(ROOT)), "--budget", str(args.budget),
               "--chapter-timeout", str(args.chapter_timeout)]
        print(f"$ {' '.join(cmd)}   (in the copy, with the replica's python3, offline)", flush=True)
        t2 = time.monotonic()
        code = subprocess.run(cmd, cwd=tree_dir, env=box_env(python, home)).returncode
        t_check = time.monotonic() - t2
        print(f"\n===== {out / 'summary.txt'}")
        print((out / "summary.txt").read_text() if (out / "summary.txt").exists() else "(no summary.txt)")
        print(size_line)
        print(f"timings: replica {t_replica:.0f}s, wheels {t_wheels:.0f}s, check {t_check:.0f}s, "
              f"total {time.monotonic() - t0:.0f}s")
        ok = code == 0 and fits
        print(f"{'PASS' if ok else 'FAIL'} gpu-rehearsal")
        if args.keep:
            print(f"kept: {work}")
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
