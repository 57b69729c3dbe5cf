"""Resolve requirements.in into one lock per accelerator (the GPU box's wheels: tools/gpu/gpu_box.py).

    python tools/lock.py cpu cuda          # write requirements.txt and requirements-cuda.txt
    .venv/bin/python tools/lock.py install-cpu   # `make install ACCEL=cpu`: the CPU lock into this venv

The resolver is uv (`uv pip compile`, installed from PyPI into a scratch venv by `make lock`), which
resolves for every Python at once: the locks are universal (`--universal`), one pin per package
for CPython 3.11.5 and newer (3.11, 3.12, 3.13; 3.10 cannot have jupyter-book 1's theme), with
markers where a package is needed only on some platforms, whatever machine runs this. The old lock is passed as a constraint, so pins
that still fit are kept. The CPU build of torch (``torch==X+cpu``) is not on PyPI: it comes from
the wheel folders pip is configured to look in (``pip config``/``PIP_FIND_LINKS``) or else from
PyTorch's CPU index.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
INPUT = ROOT / "requirements.in"
LOCKS = {"cpu": ROOT / "requirements.txt", "cuda": ROOT / "requirements-cuda.txt"}
PYTHON = "3.11.5"  # the oldest Python the locks cover: soupsieve 4.1.3 (jupyter-book's theme) needs 3.11.5
#: What the Makefile and the README name as working (and test_install.py checks).
SUPPORTED = ("3.11", "3.12", "3.13")
#: The first patch release the course runs on, where it is not the minor's first: on 3.13.0 torch.compile
#: warns on stderr (Dynamo's guards cannot use dict versions: CPython bug gh-125608, fixed in 3.13.1),
#: output a chapter does not have.
FIRST_PATCH = {"3.11": PYTHON, "3.13": "3.13.1"}
PLATFORM = "x86_64-manylinux_2_28"
PYPI = "https://pypi.org/simple"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Packages the GPU box brings with its own torch build; never carried, never pinned there.
TORCH_STACK = re.compile(r"^(torch|triton|nvidia-[\w-]+|cuda-[\w-]+)==", re.I)

HEADER = """\
# {title}
# Made by `make lock` (tools/lock.py): uv {uv} `pip compile --universal` of requirements.in for
# CPython {python} and newer (3.11, 3.12, 3.13) on Linux x86-64, with the previous lock as a
# constraint (pins that still fit are kept).
# {torch_note}
# Install: `make install ACCEL={accel}` (checks afterwards that torch is this build). Do not edit by hand.
"""
TORCH_NOTES = {
    "cpu": "torch is the CPU build (+cpu) from PyTorch's CPU index, which `make install` names\n"
           f"# (--extra-index-url {TORCH_CPU_INDEX}; a local copy pip knows of is used first);\n"
           "# where that index cannot be reached, it installs PyPI's build of the same version. No nvidia-* packages.",
    "cuda": "torch is PyPI's CUDA build; its whole CUDA runtime stack (nvidia-*, cuda-*, triton) is pinned here.",
}


def _uv() -> str:
    uv = shutil.which("uv") or str(pathlib.Path(sys.executable).with_name("uv"))
    if not pathlib.Path(uv).exists() and not shutil.which(uv):
        sys.exit("tools/lock.py needs uv: `make lock` installs it into a scratch venv (or: pip install uv)")
    return uv


def _find_links() -> list[str]:
    """The wheel folders pip is configured to look in (where a local torch+cpu may lie)."""
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             check=False).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.split("=", 1)[0].endswith(".find-links"):
            links += line.split("=", 1)[1].strip("'\"").split()
    return [link for link in dict.fromkeys(links) if link]


def _torch_version() -> str:
    for line in INPUT.read_text().splitlines():
        m = re.match(r"\s*torch==([\w.]+)", line)
        if m:
            return m.group(1)
    sys.exit("requirements.in must pin torch (torch==X.Y.Z): an unpinned torch would pull a multi-GB build")


def _body(lock: pathlib.Path) -> list[str]:
    return [line for line in lock.read_text().splitlines() if line and not line.startswith("#")] if lock.exists() else []


def compile_lock(accel: str) -> pathlib.Path:
    uv = _uv()
    version = _torch_version()
    torch_pin = f"torch=={version}+cpu" if accel == "cpu" else f"torch=={version}"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "in.txt").write_text(re.sub(r"(?m)^\s*torch==\S+", torch_pin, INPUT.read_text()))
        # keep the previous pins; the CUDA lock also agrees with the CPU lock on every other package
        previous = _body(LOCKS[accel]) + ([] if accel == "cpu" else _body(LOCKS["cpu"]))
        old = list(dict.fromkeys(line for line in previous if not TORCH_STACK.match(line)))
        (tmp / "old.txt").write_text("\n".join(old) + "\n")
        cmd = [uv, "pip", "compile", str(tmp / "in.txt"), "-c", str(tmp / "old.txt"), "--universal",
               "--python-version", PYTHON, "--no-header", "--no-annotate", "--index-url", PYPI,
               "-o", str(tmp / "out.txt"), "--quiet"]
        if accel == "cpu":
            links = _find_links()
            cmd += [a for link in links for a in ("--find-links", link)] if links else ["--extra-index-url", TORCH_CPU_INDEX]
            cmd += ["--index-strategy", "unsafe-best-match"]
        env = dict(os.environ, UV_NO_CONFIG="1")
        subprocess.run(cmd, check=True, env=env)
        body = [line for line in (tmp / "out.txt").read_text().splitlines()
                if line and not line.startswith(("#", "--", "-f ", "-i "))]
    uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.split()[1]
    title = {"cpu": "The CPU lock: the exact environment on a machine without a CUDA GPU.",
             "cuda": "The CUDA lock: the exact environment on a Linux x86-64 machine with an NVIDIA GPU."}[accel]
    header = HEADER.format(title=title, uv=uv_version, python=PYTHON,
                           torch_note=TORCH_NOTES[accel], accel=accel)
    check(accel, body)
    LOCKS[accel].write_text(header + "\n".join(body) + "\n")
    print(f"wrote {LOCKS[accel].name}: {len(body)} pins")
    return LOCKS[accel]


def _reachable(url: str) -> bool:
    """Can pip read this index page? (asked once, up front: an unreachable extra index costs pip
    retries for every package)"""
    import urllib.parse
    import urllib.request

    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return pathlib.Path(urllib.request.url2pathname(parsed.path)).is_dir()
    try:
        urllib.request.urlopen(url, timeout=10).close()
    except (OSError, ValueError):
        return False
    return True


def _torch_pin(accel: str) -> str:
    pins = [line.split(";")[0].strip() for line in _body(LOCKS[accel]) if line.lower().startswith("torch==")]
    if len(pins) != 1:
        raise SystemExit(f"{LOCKS[accel].name} must pin torch once, got {pins}")
    return pins[0]


def cpu_install_plan(index: str = TORCH_CPU_INDEX, *, fallback: pathlib.Path, env: dict | None = None
                     ) -> tuple[list[str], str]:
    """What `make install ACCEL=cpu` hands pip, and the line it says about torch.

    torch's CPU build (``torch==X+cpu``, not on PyPI) comes from PyTorch's CPU index ``index`` where
    it can be reached, else from a local copy pip is configured with (``find-links``). Where neither
    has it for this Python, the plan is the CPU lock with PyPI's build of the same version and its
    CUDA libraries, pinned as the CUDA lock pins them (written to ``fallback``): it runs on a CPU.
    ``env``: the environment of pip's probe (tests point it at a ``file://`` index).

        args, said = cpu_install_plan("file:///srv/simple", fallback=Path(".venv/requirements-pypi-torch.txt"))
    """
    pin = _torch_pin("cpu")
    if _reachable(index.rstrip("/") + "/torch/"):
        return (["-r", str(LOCKS["cpu"]), "--extra-index-url", index],
                f"{pin}: torch's CPU build, from PyTorch's CPU index {index}")
    # Is there a copy pip can install for this Python? (a dry run reads a local wheel's metadata only)
    probe = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                            "--quiet", "--disable-pip-version-check", pin],
                           capture_output=True, text=True, check=False, env=env)
    python = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    if probe.returncode == 0:
        return (["-r", str(LOCKS["cpu"])],
                f"{pin}: torch's CPU build, from a local copy pip knows of (PyTorch's CPU index {index} "
                "cannot be reached)")
    version = pin.split("==", 1)[1].removesuffix("+cpu")
    stack = [line for line in _body(LOCKS["cuda"]) if TORCH_STACK.match(line)]
    if not any(line.split(";")[0].strip() == f"torch=={version}" for line in stack):
        raise SystemExit(f"{LOCKS['cuda'].name} must pin torch=={version}, as {LOCKS['cpu'].name} pins {pin}: "
                         "run make lock")
    rest = [line for line in _body(LOCKS["cpu"]) if not line.lower().startswith("torch==")]
    fallback.write_text(f"# {LOCKS['cpu'].name} with PyPI's torch {version} and its CUDA stack as "
                        f"{LOCKS['cuda'].name} pins them (written by tools/lock.py install-cpu)\n"
                        + "\n".join(rest + stack) + "\n")
    return (["-r", str(fallback)],
            f"PyTorch's CPU index {index} cannot be reached and pip knows no local copy of {pin} for {python}: "
            f"installing PyPI's build torch=={version} instead (CUDA-enabled, with its nvidia-* libraries "
            f"as {LOCKS['cuda'].name} pins them: a few GB more; it runs on a CPU)")


def install_cpu(index: str = TORCH_CPU_INDEX) -> None:
    """`make install ACCEL=cpu`: install the CPU lock into the venv whose Python runs this."""
    args, said = cpu_install_plan(index, fallback=pathlib.Path(sys.prefix) / "requirements-pypi-torch.txt")
    print(said, flush=True)
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    print(" ".join(cmd), flush=True)
    if subprocess.run(cmd, check=False).returncode:
        raise SystemExit(f"pip could not install {args[1]} (above: what it said)")


def check(accel: str, body: list[str]) -> None:
    """A lock is only a lock if torch is pinned to the build it claims and, for CUDA, its stack too."""
    torch_lines = [line for line in body if line.lower().startswith("torch==")]
    if len(torch_lines) != 1:
        raise SystemExit(f"{accel} lock: expected one torch pin, got {torch_lines}")
    is_cpu = torch_lines[0].endswith("+cpu")
    stack = [line for line in body if TORCH_STACK.match(line) and not line.lower().startswith("torch==")]
    if accel == "cpu" and (not is_cpu or stack):
        raise SystemExit(f"cpu lock: torch must be +cpu with no CUDA packages, got {torch_lines[0]} and {stack[:3]}")
    if accel == "cuda" and (is_cpu or not any(s.lower().startswith("triton==") for s in stack)):
        raise SystemExit(f"cuda lock: torch must be the CUDA build with triton pinned, got {torch_lines[0]}")
    unpinned = [line for line in body if "==" not in line]
    if unpinned:
        raise SystemExit(f"{accel} lock has unpinned lines: {unpinned}")


def check_install(accel: str, *, system_torch: bool = False) -> str:
    """After `make install`: is the torch this Python imports the build the lock promised?"""
    import torch

    cuda = torch.version.cuda
    if system_torch:
        if accel == "cuda" and cuda is None:
            raise SystemExit(f"SYSTEM_TORCH=1 ACCEL=cuda, but the machine's torch {torch.__version__} is a CPU build")
        return f"torch {torch.__version__} (the machine's own, CUDA {cuda})"
    want = _torch_pin(accel).split("==", 1)[1]
    have = str(torch.__version__)  # PyPI's builds carry a local label too: 2.13.0+cu130
    if have.split("+")[0] != want.split("+")[0]:
        raise SystemExit(f"{LOCKS[accel].name} pins torch {want}, but this venv has torch {have}: "
                         f"remove the venv and run make install ACCEL={accel} again")
    if accel == "cpu" and cuda is not None:
        # make install's fallback where neither PyTorch's CPU index nor a local copy had the CPU build
        return (f"torch {have}: PyPI's build (CUDA {cuda}), which runs on a CPU; {LOCKS[accel].name} pins "
                f"the CPU build {want} (from {TORCH_CPU_INDEX}), which pip could not get here")
    if (accel == "cpu") != (cuda is None):
        raise SystemExit(f"ACCEL={accel} but torch {have} is a {'CUDA' if cuda else 'CPU'} build")
    return f"torch {have} ({'CPU build' if cuda is None else f'CUDA {cuda}'}), as {LOCKS[accel].name} pins"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="+", help="cpu, cuda; install-cpu; check-install cpu|cuda [--system-torch]")
    parser.add_argument("--index", default=TORCH_CPU_INDEX, help="install-cpu: PyTorch's CPU wheel index")
    args = parser.parse_args(argv)
    what = [w for w in args.what if w != "--system-torch"]
    if what == ["install-cpu"]:
        install_cpu(args.index)
        return
    if what[0] == "check-install":
        if len(what) != 2 or what[1] not in LOCKS:
            parser.error("usage: tools/lock.py check-install cpu|cuda [--system-torch]")
        print(check_install(what[1], system_torch="--system-torch" in args.what))
        return
    for accel in what:
        if accel not in LOCKS:
            parser.error(f"unknown lock {accel!r}: use cpu or cuda")
        compile_lock(accel)


if __name__ == "__main__":
    main()
