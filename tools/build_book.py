"""Build the book from the outputs stored in the notebooks (no execution), from clean, strictly.

    python tools/build_book.py OUTPUT_DIR        # writes OUTPUT_DIR/_build/html

Used by the test suite; authors run it to check a chapter renders with zero warnings.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def build(output: Path, *, builder: str = "html", language: str | None = None,
          execute: str = "off", source: Path = ROOT) -> subprocess.CompletedProcess:
    """Run jupyter-book with -n -W --keep-going (execution off by default); return the finished process.

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
            "--config", str(cfg), "-n", "-W", "--keep-going", "--all",
        ]
        cmd += ["--builder", "custom", "--custom-builder", builder] if builder == "gettext" else ["--builder", builder]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    proc = build(Path(sys.argv[1]))
    print(proc.stdout[-5000:])
    print(proc.stderr[-5000:], file=sys.stderr)
    sys.exit(proc.returncode)
