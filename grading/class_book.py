"""Build the class edition of the book: the chapters with every solution replaced by its stub, in
English and 中文 (what an instructor gives a class; ``make book EDITION=class`` builds the same).

    python -m grading class [OUTPUT]      # default _build/class/html (中文: OUTPUT/zh)

The build itself is the book's (tools/book/class_edition.py, also the Sphinx extension of that build).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading import ROOT

# the book's build is scripts of tools/book/, not a package
sys.path.insert(0, str(ROOT / "tools" / "book"))
import class_edition  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading class", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", nargs="?", type=Path, default=class_edition.OUTPUT)
    args = parser.parse_args(argv)
    builds = class_edition.build(args.output)
    for name, proc in zip(("English", "中文"), builds):
        if proc.returncode:
            print(f"the class edition's {name} build failed:\n{(proc.stdout + proc.stderr)[-5000:]}",
                  file=sys.stderr)
    if any(proc.returncode for proc in builds):
        return 1
    print(f"Open {args.output / 'index.html'} in a browser (中文: {args.output / 'zh' / 'index.html'}).")
    return 0
