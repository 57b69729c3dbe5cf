"""Grade a folder of completed student notebooks, each in its own sandbox, against a grading bundle.

    python -m grading grade SUBMISSIONS --bundle BUNDLE [--json grades.json] [--jobs N] [--shard i/n]
    python -m grading grade --merge shard-*.jsonl --json grades.json

SUBMISSIONS holds one sub-folder per student (or notebooks directly). Every grade is appended to
the records file (``--records``, default: the ``--json`` path with ``.jsonl``) as soon as it is
decided; the table is printed and ``--json`` written atomically at the end. ``--shard i/n`` grades
one deterministic share of the students (an array job); ``--merge`` combines the shards' records.
Exit status 0 when grading ran, whatever the grades. The work is done by the rest of this package
(collect, sandbox, readback, judge, report, grader); see chapters/reference/grading.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

# jsonschema (under nbformat, which checks each notebook) imports rfc3987_syntax, when installed,
# only for a string format no notebook uses, and that import builds a parser: a second of every
# run. Skipped, as in the sandboxes (grading/kernel_site/rfc3987_syntax.py); no-op once imported.
sys.modules.setdefault("rfc3987_syntax", None)

from grading import ROOT, grader, report as reports, sandbox  # noqa: E402
from grading.report import table  # noqa: E402,F401 - the table of a report, for callers of this command
from grading.sandbox import Limits, bwrap_works  # noqa: E402,F401


def grade_folder(folder: Path, *, bundle, reference_dir: Path = ROOT / "chapters", **kwargs):
    """:func:`grading.grader.grade_folder` with this repository's chapters as the reference."""
    return grader.grade_folder(folder, bundle=bundle, reference_dir=reference_dir, **kwargs)


def _records_path(args) -> Path | None:
    if args.records:
        return args.records
    if args.json:
        return args.json.with_suffix(".jsonl")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, nargs="?")
    parser.add_argument("--bundle", type=Path, help="the instructor's grading bundle (make grading-bundle)")
    parser.add_argument("--reference", type=Path, default=ROOT / "chapters", help="reference chapters (default chapters/)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per notebook, all included (default 300)")
    parser.add_argument("--student-seconds", type=float, default=None,
                        help="sandbox seconds per student, all their notebooks together (default: 3 timeouts)")
    parser.add_argument("--memory-gb", type=float, default=4, help="memory limit per notebook in GiB (default 4)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help=f"notebooks graded at once (default: the CPU count, {os.cpu_count()})")
    parser.add_argument("--shard", default="1/1", help="grade shard i of n of the students (default 1/1)")
    parser.add_argument("--json", type=Path, help="write the report here as JSON (atomically, at the end)")
    parser.add_argument("--records", type=Path, help="append each grade here as decided (default: --json's .jsonl)")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="RECORDS",
                        help="combine the records files of shards 1/n … n/n (no grading)")
    parser.add_argument("--isolation", choices=("auto", "bwrap", "none"), default="auto",
                        help="sandbox: bubblewrap when it works (auto), required (bwrap) or none (weak)")
    parser.add_argument("--exercises", type=Path, action="append", default=[],
                        help="a Python file that registers extra exercises (public: the sandbox can import it)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.merge:
        if args.submissions:
            parser.error("--merge combines records files: give no SUBMISSIONS")
        try:
            if args.json:
                reports.check_output_path(args.json)
            report = reports.merge(args.merge)
        except (ValueError, OSError, KeyError, TypeError) as err:
            parser.error(str(err))
        return _finish(report, args)
    if args.submissions is None or args.bundle is None:
        parser.error("give SUBMISSIONS and --bundle (or --merge RECORDS...)")
    if args.timeout <= 0 or args.memory_gb <= 0:
        parser.error("--timeout and --memory-gb must be > 0")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: give at least 1")
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the run outlives a closed terminal or a killed parent
    signal.signal(signal.SIGTERM, _stop)
    try:
        shard = grader.parse_shard(args.shard)
        if args.json:
            reports.check_output_path(args.json)
        records = _records_path(args)
        if records:
            reports.check_output_path(records, "--records")
        for extra in args.exercises:
            import runpy

            runpy.run_path(str(extra), run_name="lectorch_extra_exercises")
        report = grade_folder(args.submissions, bundle=args.bundle, reference_dir=args.reference,
                              timeout_s=args.timeout, memory_gb=args.memory_gb, isolation=args.isolation,
                              public=args.exercises, jobs=args.jobs, shard=shard, records=records,
                              student_s=args.student_seconds,
                              progress=not args.no_progress and sys.stderr.isatty())
    except ValueError as err:
        parser.error(str(err))
    return _finish(report, args)


def _stop(signum, frame) -> None:
    """SIGTERM (a scheduler's cancel, `kill`): kill the sandboxes, remove their folders and cgroups,
    and leave; the records file holds every grade decided so far."""
    sandbox.abort_all()
    os._exit(128 + signum)


def _finish(report, args) -> int:
    if args.json:
        reports.write_json(args.json, report.as_json())
    try:
        # whatever the terminal's encoding, a character it cannot show is written as an escape
        sys.stdout.reconfigure(errors="backslashreplace")
        print(table(report), flush=True)
    except BrokenPipeError:  # whoever read our output is gone; the JSON is written
        pass
    return 0


