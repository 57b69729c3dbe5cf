"""Grade a folder of completed student notebooks.

    python tools/grade.py SUBMISSIONS [--timeout 300] [--memory-gb 4] [--json report.json]

Every ``*.ipynb`` under SUBMISSIONS is executed in its own process group, with a wall-clock limit
and a memory limit (the resident memory of the whole process tree, kernel included, is watched; a
notebook that exceeds it is killed). Errors in cells do not stop the notebook: the remaining
exercises are still graded. Each ``lectorch.check`` call records its outcome; an exercise of the
chapter whose check never ran counts as failed ("not reached"). The report is printed as a table
and optionally written as JSON. The exit status is 0 when grading ran, whatever the grades.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK_CALL = re.compile(r"""lectorch\.check\(\s*["']([\w.-]+)["']""")


@dataclass
class Grade:
    submission: str
    notebook: str
    exercise: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def expected_exercises(notebook: Path) -> list[str]:
    """Exercise ids checked by the reference chapter of the same name (else by the notebook)."""
    reference = ROOT / "chapters" / notebook.name
    source = reference if reference.exists() else notebook
    nb = json.loads(source.read_text(encoding="utf-8"))
    ids: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            for found in CHECK_CALL.findall("".join(cell["source"])):
                if found not in ids:
                    ids.append(found)
    return ids


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_notebook(notebook: Path, results: Path, *, timeout_s: float, memory_bytes: int) -> tuple[str, str]:
    """Execute ``notebook`` in a child process; return (outcome, detail). Outcome: ok|timeout|memory|crashed."""
    env = dict(os.environ, LECTORCH_RESULTS=str(results), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--execute-one", str(notebook), "--timeout", str(timeout_s)]
    proc = subprocess.Popen(cmd, env=env, cwd=notebook.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    start = time.monotonic()
    outcome = "ok"
    while proc.poll() is None:
        if time.monotonic() - start > timeout_s:
            outcome = "timeout"
        elif _tree_rss(proc.pid) > memory_bytes:
            outcome = "memory"
        if outcome != "ok":
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.1)
    log = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if outcome == "ok" and proc.returncode != 0:
        outcome = "crashed"
    detail = {
        "timeout": f"stopped after {timeout_s:g} s (an endless loop?)",
        "memory": f"stopped: used more than {memory_bytes / 2**30:g} GiB of memory",
        "crashed": f"the notebook could not run: {log.strip().splitlines()[-1] if log.strip() else 'no output'}",
        "ok": "",
    }[outcome]
    return outcome, detail


def grade_notebook(notebook: Path, submission: str, *, timeout_s: float, memory_bytes: int) -> list[Grade]:
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        outcome, detail = run_notebook(notebook, results, timeout_s=timeout_s, memory_bytes=memory_bytes)
        recorded: dict[str, dict] = {}
        if results.exists():
            for line in results.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    recorded[row["exercise"]] = row  # the last check of an exercise counts
    grades = []
    for ex in expected_exercises(notebook) or list(recorded):
        if ex in recorded:
            grades.append(Grade(submission, notebook.name, ex, recorded[ex]["status"], recorded[ex]["message"]))
        else:
            why = detail or "its check never ran (an earlier cell failed?)"
            grades.append(Grade(submission, notebook.name, ex, "not reached", why))
    return grades


def grade_folder(folder: Path, *, timeout_s: float = 300, memory_gb: float = 4) -> list[Grade]:
    """Grade every notebook under ``folder``; the submission is its first sub-folder (or the file)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS={folder} is not a folder of notebooks")
    notebooks = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not notebooks:
        raise ValueError(f"no .ipynb files under {folder}")
    grades: list[Grade] = []
    for nb in notebooks:
        rel = nb.relative_to(folder)
        submission = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        grades += grade_notebook(nb, submission, timeout_s=timeout_s, memory_bytes=int(memory_gb * 2**30))
    return grades


def table(grades: list[Grade]) -> str:
    rows = [("submission", "notebook", "exercise", "status")] + [(g.submission, g.notebook, g.exercise, g.status) for g in grades]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed = sum(g.passed for g in grades)
    lines.append(f"\n{passed} passed, {len(grades) - passed} failed")
    return "\n".join(lines)


def _execute_one(path: Path, timeout_s: float) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=int(timeout_s), allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, nargs="?")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per notebook (default 300)")
    parser.add_argument("--memory-gb", type=float, default=4, help="memory limit per notebook in GiB (default 4)")
    parser.add_argument("--json", type=Path, help="also write the report here as JSON")
    parser.add_argument("--execute-one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.execute_one:
        _execute_one(args.execute_one, args.timeout)
        return 0
    if args.submissions is None:
        parser.error("SUBMISSIONS is required")
    if args.timeout <= 0 or args.memory_gb <= 0:
        parser.error("--timeout and --memory-gb must be > 0")
    try:
        grades = grade_folder(args.submissions, timeout_s=args.timeout, memory_gb=args.memory_gb)
    except ValueError as err:
        parser.error(str(err))
    print(table(grades))
    if args.json:
        args.json.write_text(json.dumps([asdict(g) for g in grades], indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
