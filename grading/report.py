"""Grades as records: appended one per line as they are decided (a killed run keeps every grade
decided so far), the final table and JSON written atomically, shards merged.

Names from the file system are stored escaped (:func:`grading.collect.escape`) and printed with
anything non-printable escaped: a file name holding a newline or a terminal escape sequence cannot
forge a line of the table.

>>> g = Grade("ann\\x1b[2K", "00.ipynb", "ex-1", "passed", "Correct")
>>> table([g]).splitlines()[2]
'ann\\\\x1b[2K  00.ipynb  ex-1      passed'
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from grading.collect import escape


def printable(text: str) -> str:
    """``text`` with its non-printable characters escaped (idempotent: names are stored escaped)."""
    return text if text.isprintable() else escape(text)


def _clean_fields(record) -> None:
    """Every text field of a grade or run made printable: a student's text (an exception message,
    a name) may hold lone surrogates or control characters, which no file or terminal must see."""
    for name, value in vars(record).items():
        if isinstance(value, str):
            setattr(record, name, printable(value))
        elif name != "seconds":
            setattr(record, name, printable(str(value)))


STATUSES = ("passed", "failed", "not implemented", "error", "missing", "not reached", "not graded",
            "needs review")
RECORDS_FORMAT = "lectorch-grades-records"


@dataclass
class Grade:
    submission: str
    notebook: str
    exercise: str
    status: str
    message: str

    def __post_init__(self) -> None:
        _clean_fields(self)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Run:
    submission: str
    notebook: str
    outcome: str        # ok | timeout | memory | output | crashed | invalid | no reference | refused | duplicate |
    #                     error | budget | shared (one file in two submissions) | look-alike (two names alike)
    seconds: float
    detail: str = ""
    where: str = ""     # the path inside the submission

    def __post_init__(self) -> None:
        _clean_fields(self)


@dataclass
class Report:
    isolation: str
    bundle: dict
    grades: list[Grade] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    shard: str = "1/1"

    def as_json(self) -> dict:
        return {"isolation": self.isolation, "bundle": self.bundle, "shard": self.shard,
                "runs": [asdict(r) for r in self.runs], "grades": [asdict(g) for g in self.grades]}

    def sort(self) -> None:
        """A fixed order, whatever order the workers finished in (grades keep their chapter order)."""
        self.runs.sort(key=lambda r: (r.submission, r.notebook, r.where, r.outcome))
        index = {id(g): i for i, g in enumerate(self.grades)}
        self.grades.sort(key=lambda g: (g.submission, g.notebook, index[id(g)]))


def table(report: Report | list[Grade]) -> str:
    grades = report.grades if isinstance(report, Report) else report
    rows = [("submission", "notebook", "exercise", "status")] + [
        (printable(g.submission), printable(g.notebook), printable(g.exercise), g.status) for g in grades]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed = sum(g.passed for g in grades)
    lines.append(f"\n{passed} passed, {len(grades) - passed} not passed")
    review = [g for g in grades if g.status == "needs review"]
    if review:  # the offending lines, for the human who decides
        lines.append("\nneeds review:")
        lines += [f"  {printable(g.submission)}/{printable(g.notebook)} {printable(g.exercise)}: {printable(g.message)}"
                  for g in review]
    if isinstance(report, Report):
        notes = [r for r in report.runs if r.outcome in ("refused", "duplicate", "error", "budget")]
        if notes:
            lines.append("\nnot graded:")
            lines += [f"  {printable(r.submission)}/{printable(r.where or r.notebook)}: {printable(r.detail)}"
                      for r in notes]
        flags = [r for r in report.runs if r.outcome in ("shared", "look-alike")]
        if flags:
            lines.append("\nto look at:")
            lines += [f"  {printable(r.submission)}{'/' + printable(r.where) if r.where else ''}: {printable(r.detail)}"
                      for r in flags]
        lines.insert(0, f"isolation: {report.isolation}\n")
    return "\n".join(lines)


class Records:
    """An append-only JSONL file: a header line, then one line per notebook (its run and grades),
    flushed and synced as each is decided. Thread-safe."""

    def __init__(self, path: Path | None, header: dict):
        self.path = Path(path) if path else None
        self.lock = threading.Lock()
        self.file = None
        if self.path is not None:
            self.file = open(self.path, "w", encoding="utf-8")
            self._write({"format": RECORDS_FORMAT, **header})

    def _write(self, obj: dict) -> None:
        self.file.write(json.dumps(obj, ensure_ascii=True) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def add(self, run: Run, grades: list[Grade]) -> None:
        if self.file is None:
            return
        with self.lock:
            self._write({"run": asdict(run), "grades": [asdict(g) for g in grades]})

    def finish(self, runs: int) -> None:
        """The last line: the shard ran to its end (a merge tells a finished shard from a cut one)."""
        if self.file is not None:
            with self.lock:
                self._write({"finished": True, "runs": runs})

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def read_records(path: Path) -> tuple[dict, list[Run], list[Grade]]:
    """(header, runs, grades) of a records file; a last line cut short by a kill is skipped."""
    header, runs, grades = None, [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a kill
            if header is None:
                if obj.get("format") != RECORDS_FORMAT:
                    raise ValueError(f"{path}: not a grades records file (write it with python -m grading grade --records)")
                header = obj
                continue
            if "finished" in obj:
                header["finished"] = True
                continue
            try:
                runs.append(Run(**obj["run"]))
                grades += [Grade(**g) for g in obj["grades"]]
            except (TypeError, KeyError) as err:
                raise ValueError(f"{path}: line {number} is not a record of the grader ({err})") from None
    if header is None:
        raise ValueError(f"{path}: empty records file")
    return header, runs, grades


def merge(paths: Iterable[Path]) -> Report:
    """One report from the records of shards 1/n … n/n of one class (checked: same bundle, same n,
    every shard once)."""
    paths = list(paths)
    if not paths:
        raise ValueError("merge: give the records files of the shards")
    report, seen, total = None, {}, None
    for path in paths:
        header, runs, grades = read_records(path)
        index, _, count = str(header.get("shard", "1/1")).partition("/")
        index, count = int(index), int(count)
        if total is None:
            total = count
            report = Report(header["isolation"], header["bundle"], shard=f"merged {count}")
        if count != total:
            raise ValueError(f"{path}: shard {index}/{count}, but another file is of {total} shards")
        if header["bundle"] != report.bundle:
            raise ValueError(f"{path}: graded with another bundle ({header['bundle']}) than {paths[0]}")
        if index in seen:
            raise ValueError(f"{path}: shard {index}/{count} is also in {seen[index]}")
        if not header.get("finished"):  # its records are grades decided: merged, and said
            report.isolation += f" | shard {index}/{count} did not finish"
        seen[index] = path
        if header["isolation"] != report.isolation:
            report.isolation = f"{report.isolation} | shard {index}: {header['isolation']}"
        report.runs += runs
        report.grades += grades
    missing = sorted(set(range(1, total + 1)) - set(seen))
    if missing:
        raise ValueError(f"merge: shards {', '.join(f'{i}/{total}' for i in missing)} are missing")
    report.sort()
    return report


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a reader sees the old file or the new one)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: every non-ASCII character escaped
        text = json.dumps(data, indent=2, ensure_ascii=True)
    _atomic(Path(path), text)


def write_text(path: Path, text: str) -> None:
    _atomic(Path(path), text)


def _atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=".grades-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_output_path(path: Path, flag: str = "--json") -> None:
    """Fail now, not after an hour of grading, when ``path`` cannot be written."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a folder; give a file name")
    if not parent.is_dir():
        raise ValueError(f"{flag} {path}: the folder {parent} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".grades-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"{flag} {path}: cannot write in {parent} ({err.strerror})") from None
