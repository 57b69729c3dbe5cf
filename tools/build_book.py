"""Build the book from the outputs stored in the notebooks (no execution), from clean.

    python tools/build_book.py OUTPUT_DIR       # one strict English build into OUTPUT_DIR/_build/html
    python tools/build_book.py --edition book   # `make book`: English into _build/html, 中文 into
                                                # _build/html/zh; nothing is done when they are current
    python tools/build_book.py --edition book --execute   # the chapters executed (jupyter-cache) first

An edition (:data:`EDITIONS`) is built whole, from clean, and stamped: its folder gets a
``.lectorch-build.json`` with the digest of every input of the build (chapters, catalogs, config,
the book's tools, vendored assets, lectorch's sources, the installed packages), the build's options and its
warnings. :func:`ensure` rebuilds only when that digest changed, so a second ``make book`` with
nothing changed is a check of a second or so, and the tests (tests/conftest.py, ``book_edition``)
reuse what ``make book`` built instead of building it again.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


def build(output: Path, *, builder: str = "html", language: str | None = None,
          execute: str = "off", strict: bool = True, source: Path = ROOT) -> subprocess.CompletedProcess:
    """Run jupyter-book with -n --keep-going (and -W when ``strict``), execution off by default;
    return the finished process.

    ``language`` builds that translation (e.g. "zh_CN", from locales/); ``builder`` "gettext"
    extracts the message catalogs into OUTPUT/_build/gettext. ``source`` is the folder holding the
    book's _config.yml, _toc.yml and chapters (another one: the class edition, tools/class_edition.py);
    the config's other paths (extensions, catalogs, cache) stay this repository's.
    """
    output = Path(output)
    if output.exists():
        shutil.rmtree(output)
    config = yaml.safe_load((Path(source) / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = execute
    config["execute"]["cache"] = str(ROOT / config["execute"].get("cache", "_build/.jupyter_cache"))
    sphinx_config = config["sphinx"]["config"]
    sphinx_config["locale_dirs"] = [str(ROOT / d) for d in sphinx_config.get("locale_dirs", [])]
    if language:
        sphinx_config["language"] = language
    # the temporary config lives elsewhere: make its local-extension paths absolute
    local = config.get("sphinx", {}).get("local_extensions", {})
    for name, path in local.items():
        local[name] = str(ROOT / path)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "_config.yml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        cmd = [
            str(Path(sys.executable).with_name("jupyter-book")), "build", str(source), "--path-output", str(output),
            "--config", str(cfg), "-n", "--keep-going", "--all", *(["-W"] if strict else []),
        ]
        cmd += ["--builder", "custom", "--custom-builder", builder] if builder == "gettext" else ["--builder", builder]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if builder == "html" and proc.returncode == 0:
        _name_the_icon(output / "_build" / "html" / "index.html")
    return proc


def _name_the_icon(redirect: Path) -> None:
    """Give jupyter-book's redirect page (index.html, one line sending the reader to the first
    chapter) the book's icon: without it, the browser asks for /favicon.ico and gets a 404."""
    page = redirect.read_text(encoding="utf-8") if redirect.exists() else ""
    if page.startswith('<meta http-equiv="Refresh"') and "rel=\"icon\"" not in page:
        redirect.write_text('<link rel="icon" href="_static/favicon.svg" />' + page, encoding="utf-8")


# ------------------------------------------------------------------------------ the editions


def build_reader_book(output: Path, execute: str = "off") -> list[subprocess.CompletedProcess]:
    """The reader's book: English into ``output``, 中文 into ``output/zh`` (as `make book` lays them
    out). The two builds read the same notebooks and run side by side, one per core. ``output`` is
    replaced only when both builds finish (their warnings are reported, not fatal)."""
    import i18n

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{output.name}-building-", dir=output.parent))
    try:
        # executed: English first (it fills the jupyter-cache), then 中文 from the cache
        with ThreadPoolExecutor(max_workers=2 if execute == "off" else 1) as pool:
            english = pool.submit(build, work / "en", execute=execute, strict=False)
            chinese = pool.submit(build, work / "zh", language=i18n.LANGUAGE, execute=execute, strict=False)
            procs = [english.result(), chinese.result()]
        if all(p.returncode == 0 for p in procs):
            import plain_notebook

            html = work / "en" / "_build" / "html"
            (work / "zh" / "_build" / "html").rename(html / "zh")
            # the download buttons give the notebook a reader works in, in the page's language
            plain_notebook.replace_downloads(html, "en", solutions="fold")
            plain_notebook.replace_downloads(html / "zh", i18n.LANGUAGE, solutions="fold")
            _replace(output, html)
        return procs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_gettext(output: Path) -> list[subprocess.CompletedProcess]:
    """The English messages as gettext templates (``*.pot`` per page and ``_ui.pot``), into ``output``."""
    import i18n

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{output.name}-building-", dir=output.parent))
    try:
        pot = i18n.extract(work / "gettext")  # raises when no template was written
        _replace(output, pot)
        return []
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replace(output: Path, new: Path) -> None:
    """Put the folder ``new`` where ``output`` is (the old one removed after the swap)."""
    old = output.with_name(f".{output.name}-old-{os.getpid()}")
    if output.exists():
        output.rename(old)
    new.rename(output)
    shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class Edition:
    """One thing :func:`ensure` builds: where it goes, and the function that builds it.

    ``build`` ("module:function", in tools/) is called as ``function(output, **options)`` and
    returns the finished build processes; it replaces ``output`` only when it succeeds. ``ignore``
    names input folders the edition does not read (a change there does not rebuild it)."""

    output: Path
    build: str
    ignore: tuple[str, ...] = ()


#: The editions by name (``make book EDITION=name``; tests: ``book_edition(name)``).
EDITIONS: dict[str, Edition] = {
    # grading/ only for its messages to students (the gettext templates)
    "book": Edition(ROOT / "_build" / "html", "build_book:build_reader_book", ignore=("grading",)),
    # lectorch/locale: the package's catalogs, made from locales/
    "gettext": Edition(ROOT / "_build" / "gettext", "build_book:build_gettext", ignore=("locales", "lectorch/locale")),
    "class": Edition(ROOT / "_build" / "class" / "html", "class_edition:build", ignore=("grading",)),  # both languages
}

#: The tools the builds read: the build, its Sphinx extensions and the modules they import, their
#: templates and static assets. The others (the GPU check and its rehearsal) change no
#: page, so a change to them rebuilds nothing (tests/test_book_stamp.py checks the imports).
BOOK_TOOLS = tuple(f"tools/{name}" for name in (
    "build_book.py", "class_edition.py", "i18n.py", "plain_notebook.py", "sphinx_lectorch.py",
    "sphinx_lectorch_i18n.py", "book_light.py", "book_css.py", "torch_matrix.py", "lock.py", "reader_metrics.py", "serve.py",
    "book_layout", "book_static", "book_templates", "i18n_static"))
#: Everything the builds read: a change to any file under these rebuilds.
INPUTS = ("_config.yml", "_toc.yml", "pyproject.toml", "chapters", "locales", "lectorch", "grading", *BOOK_TOOLS,
          "vendor", "benchmarks/torch-matrix.json")  # the running page's table of tested torch releases
SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", "_traces"}  # _traces: exclude_patterns
SKIPPED_SUFFIXES = (".pyc", ".mo")  # .mo: compiled from the .po by the build itself
STAMP = ".lectorch-build.json"


def input_files(ignore: tuple[str, ...] = ()) -> list[Path]:
    """The files the build reads, sorted (see :data:`INPUTS`), but those under the folders ``ignore``
    names (e.g. "locales", "lectorch/locale")."""
    found = []
    for name in INPUTS:
        if name in ignore:
            continue
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        found += [p for p in paths if p.is_file() and not SKIPPED_PARTS & set(p.relative_to(ROOT).parts)
                  and not p.name.endswith(SKIPPED_SUFFIXES)
                  and not any(p.relative_to(ROOT).as_posix().startswith(f"{i}/") for i in ignore)]
    return found


def digest(name: str, options: dict) -> str:
    """The digest of an edition's inputs: file names and contents, the Python and every installed
    package's version (a new jupyter-book renders differently), the edition and its options."""
    import sysconfig
    from importlib import metadata

    h = hashlib.sha256(json.dumps([name, options, sys.version], sort_keys=True).encode())
    for path in input_files(EDITIONS[name].ignore):
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    # the environment's own packages (what jupyter-book runs with), whatever else is on sys.path
    # (only the book's lock, requirements.txt: JupyterLab's extra packages, which `make test`
    # installs after `make book`, must not make the book look stale)
    where = sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})
    locked = _locked_names(ROOT / "requirements.txt")
    packages = sorted({f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=where)
                       if locked is None or _normal(d.metadata["Name"]) in locked})
    h.update("\n".join(packages).encode())
    return h.hexdigest()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked_names(lock: Path) -> set[str] | None:
    r"""The package names pinned in ``lock`` (``name==version`` lines) for this machine, or None
    without one. A pin whose marker does not hold here is left out (``cffi==2.1.1 ; implementation_name
    == 'pypy'``): the book's install skips it, but JupyterLab's install brings it, and counting it made
    every edition look stale once `make test` had installed JupyterLab.

    >>> import tempfile; lock = Path(tempfile.mkdtemp()) / "r.txt"
    >>> _ = lock.write_text("Jinja2==3.1.6\ncffi==2.1.1 ; implementation_name == 'pypy'\n")
    >>> sorted(_locked_names(lock))  # on CPython
    ['jinja2']
    """
    from packaging.markers import Marker

    try:
        lines = lock.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    names = set()
    for line in lines:
        pin = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==[^;#]*(?:;([^#]*))?", line)
        if pin and (pin.group(2) is None or Marker(pin.group(2).strip()).evaluate()):
            names.add(_normal(pin.group(1)))
    return names


def read_stamp(output: Path) -> dict | None:
    try:
        return json.loads((Path(output) / STAMP).read_text())
    except (OSError, ValueError):
        return None


def warnings(procs: list[subprocess.CompletedProcess]) -> list[str]:
    """The WARNING and ERROR lines of the builds' logs."""
    return [line for p in procs for line in (p.stdout + p.stderr).splitlines() if "WARNING" in line or "ERROR" in line]


@dataclass
class Built:
    """What :func:`ensure` found or made: the folder, its stamp (None: the build failed), whether it
    was current (``reused``) and the builds it ran."""

    path: Path
    stamp: dict | None
    reused: bool
    procs: list[subprocess.CompletedProcess]

    def log(self, limit: int = 6000) -> str:
        return "\n".join((p.stdout + p.stderr)[-limit:] for p in self.procs)


def ensure(name: str = "book", *, output: Path | None = None, force: bool = False, **options) -> Built:
    """Build the edition ``name`` into ``output`` (default: its place under _build) unless the
    stamp there says it was built, from the same inputs with the same options, before.

    One build at a time per folder (a file lock beside it): pytest-xdist workers and a `make book`
    running alongside wait for the build in progress and then reuse it.

    >>> ensure("book").path.relative_to(ROOT).as_posix()  # doctest: +SKIP
    '_build/html'
    """
    from filelock import FileLock

    edition = EDITIONS[name]
    output = Path(output or edition.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(output.parent / f".{output.name}.lock")):
        wanted = digest(name, options)
        stamp = read_stamp(output)
        if not force and stamp is not None and stamp.get("digest") == wanted:
            return Built(output, stamp, True, [])
        (output / STAMP).unlink(missing_ok=True)
        for stale in output.parent.glob(f".{output.name}-building-*"):  # left by a build that was killed
            shutil.rmtree(stale, ignore_errors=True)
        module, function = edition.build.split(":")
        start = time.monotonic()
        procs = getattr(importlib.import_module(module), function)(output, **options)
        if any(p.returncode for p in procs) or not output.is_dir():
            return Built(output, None, False, procs)
        stamp = {"edition": name, "options": options, "digest": wanted, "seconds": round(time.monotonic() - start, 1),
                 "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "warnings": warnings(procs)}
        if digest(name, options) == wanted:  # an input edited during the build: no stamp, rebuilt next time
            (output / STAMP).write_text(json.dumps(stamp, indent=1, ensure_ascii=False) + "\n")
        return Built(output, stamp, False, procs)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", type=Path, help="one strict English build into OUTPUT/_build/html")
    parser.add_argument("--edition", choices=sorted(EDITIONS), help="build this edition unless it is current")
    parser.add_argument("--execute", action="store_true", help="execute the chapters (jupyter-cache) first")
    parser.add_argument("--force", action="store_true", help="build even when the stamp says it is current")
    args = parser.parse_args(argv)
    if (args.output is None) == (args.edition is None):
        parser.error("give an OUTPUT folder or --edition NAME")
    if args.output is not None:
        proc = build(args.output, execute="cache" if args.execute else "off")
        print(proc.stdout[-5000:])
        print(proc.stderr[-5000:], file=sys.stderr)
        return proc.returncode
    options = {"execute": "cache"} if args.execute else {}
    built = ensure(args.edition, force=args.force, **options)
    where = built.path.relative_to(ROOT) if built.path.is_relative_to(ROOT) else built.path
    if built.stamp is None:
        print(f"the {args.edition} build failed:\n{built.log()}", file=sys.stderr)
        return 1
    if built.reused:
        print(f"{where} is current (built {built.stamp['built']} from these sources): nothing to do "
              "(--force rebuilds)")
    else:
        print(f"built {where} in {built.stamp['seconds']:.0f} s")
    if built.stamp["warnings"]:
        print(f"{len(built.stamp['warnings'])} warnings (make test fails on any):", *built.stamp["warnings"], sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
