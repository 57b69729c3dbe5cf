"""`make torch-matrix`: the course on every torch release a student may already have, tested.

    python tools/torch_matrix.py                    # every release of RELEASES, on this Python
    python tools/torch_matrix.py --release 2.15     # one (or several) of them
    python tools/torch_matrix.py --newest           # the newest torch on PyPI (the weekly CI job)
    python tools/torch_matrix.py --python python3.12 --release 2.15

For each release: a venv holding that torch (PyPI's build, or a local copy pip is configured with;
made once and kept in ``~/.cache/lectorch/torch-matrix`` or ``$LECTORCH_TORCH_MATRIX_CACHE``),
into which pip installs the course's built wheel *with its dependencies* (and the test tools, at
the CPU lock's pins), as a student's ``pip install`` would: pip must keep the torch that is there,
which a dry run checks before anything is installed and the check after installing confirms. Then
the unit tests (`make unit`'s selection) and nbval over every chapter, on the CPU.

The result, one row per release and Python, goes to ``benchmarks/torch-matrix.json`` (rows of
releases not run this time are kept); the running page's table is rendered from it at build time
(:func:`table`, in both languages), and pyproject.toml's torch
range must admit exactly the releases that passed (tests/test_support.py). ``--newest`` also
tries a release beyond that range, installing the course without its torch requirement.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "torch-matrix.json"
#: The torch minor releases of the past year and the version of each that is tried (its newest patch).
RELEASES = {"2.11": "2.11.0", "2.12": "2.12.1", "2.13": "2.13.0", "2.14": "2.14.1", "2.15": "2.15.0"}
TORCH_STACK = re.compile(r"^(torch|triton|nvidia-[\w-]+|cuda-[\w-]+)==", re.I)
CHAPTERS = sorted(ROOT.glob("chapters/[0-9][0-9]_*.ipynb"))
#: The table's columns, in English; the running page's Chinese edition translates them (running.po).
COLUMNS = ("torch", "Python", "unit tests", "chapters (nbval)", "seconds (unit tests + chapters)")


def default_cache() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LECTORCH_TORCH_MATRIX_CACHE") or
                        pathlib.Path.home() / ".cache" / "lectorch" / "torch-matrix")


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    print("$", " ".join(map(str, cmd)), flush=True)
    return subprocess.run([str(c) for c in cmd], **kwargs)


def _pip_env() -> dict:
    # Each venv holds its own torch==X, and pip must keep it: a constraint file in pip's configuration
    # (a machine may cap torch at the releases it keeps on disk) would refuse the install of X, or ask
    # pip to replace it when the course is installed beside it.
    return dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_CONSTRAINT=os.devnull)


def newest_torch() -> str:
    """The newest torch release on PyPI (pip's resolver asked, nothing downloaded)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        _run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--ignore-installed",
              "--index-url", "https://pypi.org/simple", "--report", report, "torch"],
             check=True, env=dict(_pip_env(), PIP_CONFIG_FILE=os.devnull))
        return json.loads(report.read_text())["install"][0]["metadata"]["version"]


def _python_version(python: str | pathlib.Path) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def _torch_version(python: pathlib.Path) -> str | None:
    probe = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    return probe.stdout.strip() if probe.returncode == 0 else None


def _dist_version(python: pathlib.Path) -> str:
    """torch's version as pip knows it (PyPI's build: 2.11.0, whose torch.__version__ is 2.11.0+cu130)."""
    return subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def unsupported_python(version: str) -> str | None:
    """Why the course does not run on CPython ``version`` (tools/lock.py), or None where it does."""
    import lock

    minor = ".".join(version.split(".")[:2])
    first = lock.FIRST_PATCH.get(minor, f"{minor}.0")
    if minor in lock.SUPPORTED and tuple(map(int, version.split("."))) >= tuple(map(int, first.split("."))):
        return None
    named = [p + (f" ({lock.FIRST_PATCH[p]} or newer)" if p in lock.FIRST_PATCH else "") for p in lock.SUPPORTED]
    return (f"the course supports CPython {', '.join(named[:-1])} or {named[-1]}, not {version}: "
            "name one of those with --python")


def torch_venv(cache: pathlib.Path, base_python: str, version: str) -> pathlib.Path:
    """The cached venv of ``version`` (made once: minutes, torch with its CUDA libraries is ~3 GB)."""
    minor = ".".join(_python_version(base_python).split(".")[:2])
    venv = cache / f"torch-{'.'.join(version.split('.')[:2])}-py{minor}"
    python = venv / "bin" / "python"
    if not python.exists():
        cache.mkdir(parents=True, exist_ok=True)
        _run([base_python, "-m", "venv", "--clear", venv], check=True)
    have = _torch_version(python)
    if have is None or have.split("+")[0] != version:
        _run([python, "-m", "pip", "install", "--quiet", "--progress-bar", "off", f"torch=={version}"],
             check=True, env=_pip_env())
    return python


def course_wheel(dest: pathlib.Path) -> pathlib.Path:
    """The course's wheel, built once (what `pip install lectorch` installs), from a copy of what it
    is built from: a build in the source tree would share its build/ folder with any other run."""
    import shutil

    source = dest / "source"
    shutil.copytree(ROOT / "lectorch", source / "lectorch", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dest, source],
         check=True, env=_pip_env())
    return next(dest.glob("lectorch-*.whl"))


def test_requirements(dest: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """requirements.in without torch (the test tools) and the CPU lock without torch's stack as
    constraints: the same pins as the course's own environment, torch left to lectorch's range."""
    wanted = [line for line in (ROOT / "requirements.in").read_text().splitlines()
              if line.split("#")[0].strip() and not re.match(r"\s*torch\b", line)]
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#") and not TORCH_STACK.match(line)]
    (dest / "tests.txt").write_text("\n".join(wanted) + "\n")
    (dest / "pins.txt").write_text("\n".join(pins) + "\n")
    return dest / "tests.txt", dest / "pins.txt"


def _declared_without_torch(wheel: pathlib.Path) -> list[str]:
    """The wheel's declared dependencies but torch (its metadata's Requires-Dist lines)."""
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    deps = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    return [d for d in deps if not re.match(r"torch\b", d)]


def install_course(python: pathlib.Path, wheel: pathlib.Path, tests: pathlib.Path, pins: pathlib.Path,
                   *, beyond_range: bool = False) -> bool:
    """pip installs the wheel with its dependencies beside the torch that is there. The torch found
    is a constraint too, so that pip stops (ResolutionImpossible) instead of replacing it where the
    course's range does not admit it; the pins leave out what that torch itself requires (an older
    torch may cap e.g. setuptools below the lock's pin). ``beyond_range`` (a release newer than
    pyproject.toml's range, tried by --newest): the wheel without its torch requirement instead.
    Returns whether the torch is inside the range."""
    before = _torch_version(python)
    own = subprocess.run([str(python), "-c", "import importlib.metadata as m, re; print(*{re.split(r'[^\\w.-]', r)[0].lower() "
                          "for r in m.requires('torch') or [] if 'extra ==' not in r})"],
                         capture_output=True, text=True, check=True).stdout.split()
    kept = pins.with_name(f"pins-{before}.txt")
    kept.write_text("".join(line + "\n" for line in pins.read_text().splitlines()
                            if re.split(r"[=<>!~; ]", line)[0].lower().replace("_", "-") not in own)
                    + f"torch=={_dist_version(python)}\n")
    args = ["-m", "pip", "install", "--quiet", wheel, "-r", tests, "-c", kept]
    within = not beyond_range or _run([python, *args[:3], "--dry-run", *args[3:]], env=_pip_env()).returncode == 0
    if within:
        done = _run([python, *args], env=_pip_env())
        if done.returncode:
            raise SystemExit(f"pip cannot install the course beside torch {before} without replacing it "
                             "(above: what it said): pyproject.toml's torch range does not admit it")
    else:
        print(f"torch {before} is outside pyproject.toml's range: the course's wheel is installed without "
              "its torch requirement, to see whether the range can be widened", flush=True)
        _run([python, *args[:3], "-r", tests, "-c", kept, *_declared_without_torch(wheel)], check=True, env=_pip_env())
    # a venv of an earlier run may hold a lectorch of the same version: this build replaces it
    _run([python, *args[:3], "--force-reinstall", "--no-deps", wheel], check=True, env=_pip_env())
    after = _torch_version(python)
    if after != before:
        raise SystemExit(f"installing the course changed torch {before} to {after}")
    return within


def _junit(path: pathlib.Path) -> list[tuple[str, str]]:
    """(class name, outcome) of every test case of a JUnit XML report; a notebook's cells have the
    class name of its path (``chapters.00_napkin_math.ipynb``)."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        cases.append((case.get("classname", ""), outcome))
    return cases


def _chapter(classname: str) -> str | None:
    found = re.search(r"(\d\d_\w+\.ipynb)$", classname)
    return found.group(1) if found else None


def unit_selection() -> list[str]:
    """`make unit`'s markers (the Makefile's UNIT_MARKERS) over the course and its tests: the
    doctests of tools/ and grading/ are the maintainer's build, not what meets the student's torch."""
    markers = subprocess.run(["make", "--no-print-directory", "-s", "--eval", "print-unit-markers: ; @echo $(UNIT_MARKERS)",
                              "print-unit-markers"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    if not markers:
        raise SystemExit("the Makefile has no UNIT_MARKERS: make unit's selection is what this tool runs")
    # tests/test_support.py checks this tool's committed result, not the torch at hand
    return ["lectorch", "tests", "-m", markers, "--ignore=tests/test_support.py"]


def _test_file(classname: str) -> str | None:
    """The test file of a JUnit class name (``tests.test_bench`` → ``tests/test_bench.py``)."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (ROOT / path).is_file():
            return path
    return None


def run_tests(python: pathlib.Path, args: list[str], report: pathlib.Path, workers: int) -> tuple[list, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LECTORCH_DEVICE="cpu", PYTHONUNBUFFERED="1")
    xdist = ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []
    start = time.monotonic()
    _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *xdist, f"--junitxml={report}", *args],
         cwd=ROOT, env=env)
    return (_junit(report) if report.exists() else []), time.monotonic() - start


def run_release(python: pathlib.Path, wheel, tests, pins, work: pathlib.Path, workers: int,
                beyond_range: bool = False) -> dict:
    t0 = time.monotonic()
    in_range = install_course(python, wheel, tests, pins, beyond_range=beyond_range)
    installed = time.monotonic() - t0
    unit, unit_s = run_tests(python, unit_selection(), work / "unit.xml", workers)
    # a file with a failure runs once more, alone: a timing test can fail on a busy machine, which
    # says nothing of torch; the row names the files that needed it
    again = sorted({f for f in (_test_file(name) for name, outcome in unit if outcome == "failed") if f})
    if again and len(again) <= 5:
        rerun, rerun_s = run_tests(python, [*unit_selection()[2:4], *again], work / "unit-again.xml", 1)
        unit = [(n, o) for n, o in unit if _test_file(n) not in again] + rerun
        unit_s += rerun_s
    cells, chapters_s = run_tests(python, [str(p.relative_to(ROOT)) for p in CHAPTERS], work / "chapters.xml", workers)
    failed_chapters = sorted({_chapter(name) for name, outcome in cells if outcome == "failed"})
    ran = {_chapter(name) for name, _ in cells}
    missing = sorted(p.name for p in CHAPTERS if p.name not in ran)
    return {
        "torch": _torch_version(python),
        "python": _python_version(python),
        "in_range": in_range,
        "unit": {**{o: sum(1 for _, x in unit if x == o) for o in ("passed", "failed", "skipped")}, "run_again": again},
        "chapters": {"passed": len(CHAPTERS) - len(set(failed_chapters) | set(missing)), "of": len(CHAPTERS),
                     "failed": failed_chapters + missing},
        "seconds": {"install": round(installed), "unit": round(unit_s), "chapters": round(chapters_s)},
    }


def passed(row: dict) -> bool:
    return row["unit"]["failed"] == 0 and row["unit"]["passed"] > 0 and row["chapters"]["passed"] == row["chapters"]["of"]


def load(path: pathlib.Path = RESULT) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"rows": []}


def passing_releases(result: dict | None = None) -> list[str]:
    """The minor releases (``"2.13"``) whose every row passed."""
    rows = (result or load())["rows"]
    minors = sorted({r["release"] for r in rows}, key=lambda m: tuple(map(int, m.split("."))))
    return [m for m in minors if all(passed(r) for r in rows if r["release"] == m)]


def table(result: dict | None = None, columns=COLUMNS) -> list[list[str]]:
    """The rows of the support table (header first), newest release first."""
    rows = sorted((result or load())["rows"], key=lambda r: (tuple(map(int, r["release"].split("."))), r["python"]),
                  reverse=True)
    out = [list(columns)]
    for r in rows:
        unit = f"{r['unit']['passed']} passed, {r['unit']['failed']} failed"
        chapters = f"{r['chapters']['passed']}/{r['chapters']['of']}"
        s = r["seconds"]
        out.append([r["torch"], r["python"], unit, chapters, f"{s['unit']} + {s['chapters']}"])
    return out


def markdown(result: dict | None = None) -> str:
    rows = table(result)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(f"`{c}`" if i == 0 else c for i, c in enumerate(r)) + " |" for r in rows[1:]]
    meta = (result or load()).get("machine", "")
    return "\n".join([*lines, "", f"Measured by `make torch-matrix` on {meta}."])


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores of {cpu}, {datetime.date.today().isoformat()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", action="append", help=f"a minor release of {', '.join(RELEASES)} (repeatable)")
    parser.add_argument("--newest", action="store_true", help="the newest torch on PyPI instead")
    parser.add_argument("--python", default=getattr(sys, "_base_executable", sys.executable),
                        help="the Python each venv is made from (default: the one running this)")
    parser.add_argument("--cache", type=pathlib.Path, default=default_cache())
    parser.add_argument("--workers", type=int, default=min(os.cpu_count() or 1, 4), help="pytest-xdist workers")
    parser.add_argument("--out", type=pathlib.Path, default=RESULT)
    args = parser.parse_args(argv)
    if args.newest:
        versions = [newest_torch()]
    else:
        unknown = [r for r in args.release or [] if r not in RELEASES]
        if unknown:
            parser.error(f"--release {unknown[0]}: use one of {', '.join(RELEASES)} (or --newest)")
        versions = [RELEASES[r] for r in args.release or RELEASES]
    why = unsupported_python(_python_version(args.python))
    if why:
        parser.error(f"--python {args.python}: {why}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="torch-matrix-") as tmp:
        work = pathlib.Path(tmp)
        wheel = course_wheel(work / "wheel")
        tests, pins = test_requirements(work)
        for version in versions:
            print(f"\n===== torch {version}", flush=True)
            python = torch_venv(args.cache, args.python, version)
            row = {"release": ".".join(version.split(".")[:2]), **run_release(python, wheel, tests, pins, work, args.workers,
                                                                       beyond_range=args.newest)}
            print(json.dumps(row), flush=True)
            failed += [] if passed(row) else [row["torch"]]
            key = (row["release"], row["python"].rsplit(".", 1)[0])
            result = load(args.out)  # as it is now: another run may have written its rows meanwhile
            result["rows"] = [r for r in result["rows"] if (r["release"], r["python"].rsplit(".", 1)[0]) != key] + [row]
            result["machine"] = machine()
            args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("\n" + markdown(result))
    print(f"passing: {', '.join(passing_releases(result))}; pyproject.toml's torch range must admit exactly these")
    if failed:
        print(f"FAIL: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
