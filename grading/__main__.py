"""The instructor's commands, run from the repository's root:

    python -m grading student [OUTPUT]                 # the student edition (make student)
    python -m grading bundle [OUTPUT]                  # the grading bundle (make grading-bundle)
    python -m grading grade SUBMISSIONS --bundle FILE  # grade a class (make grade)
    python -m grading class [OUTPUT]                   # the class edition of the book (make book EDITION=class)

``python -m grading COMMAND --help`` gives each command's options.
"""

from __future__ import annotations

import sys

COMMANDS = {"student": "grading.student", "bundle": "grading.bundle", "grade": "grading.grade",
            "class": "grading.class_book"}


def main(argv: list[str] | None = None) -> int:
    import importlib

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        given = f"unknown command {argv[0]!r}: " if argv and not argv[0].startswith("-") else ""
        print(f"{given}use one of {', '.join(COMMANDS)}\n\n{__doc__}", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
