"""Grader benchmark: a class graded serially and in parallel, shards merged, the grader's memory,
the time a stalling notebook holds its slot.

    python benchmarks/bench_grading.py done-when                           # the issue's measurements, one command
    python benchmarks/bench_grading.py class --students 30 --jobs 1 2     # 60 notebooks (chapters 00, 02)
    python benchmarks/bench_grading.py shards --students 8 --shards 4     # 4 shards merged == one run
    python benchmarks/bench_grading.py memory                              # peak RSS: hostile vs honest
    python benchmarks/bench_grading.py stall --timeout 30                  # slot held by a stalling notebook

``class`` makes a class of STUDENTS folders, each with chapter 00 and chapter 02 (honest solutions;
``--stubs``: the student edition's stub for every odd student), grades it with each ``--jobs`` value
(``python -m grading grade``, a fresh process each time) and prints the wall time, the speed-up and
whether the grades are the same. ``shards`` grades a class as n separate shard
processes at once, merges them and compares with one run. ``memory`` measures the grader's peak
RSS (``ru_maxrss`` of the grader's own process, not its sandboxes) on honest answers and on hostile
files (a deflated torch archive, sparse 49 MiB notebooks, a 1,500-deep folder tree). ``stall``
grades a notebook that ignores SIGINT and SIGALRM after its first answer, beside an honest one,
and prints how long it held its slot (the goal: at most the timeout + 10 s). ``done-when`` runs
``class`` (60 students, --jobs 1 and 2), ``memory`` and ``stall`` in turn and prints the figures
with the goals. Timings depend on the machine's load: run it on a quiet one; ``--students 2``
checks that it works.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "book"))  # plain_notebook: the student edition
CHAPTERS = ["00_napkin_math.ipynb", "02_device.ipynb"]


def make_bundle(folder: Path) -> Path:
    import grading

    ids = []
    for name in CHAPTERS:
        ids += [i for i, _ in grading.check_calls(grading.read_notebook_json(ROOT / "chapters" / name))]
    return grading.write_bundle(grading.build_bundle(4242, exercise_ids=ids), folder / "bundle.pt")


def make_class(folder: Path, students: int, *, stubs: bool = True) -> Path:
    """STUDENTS folders, each with the two chapters: honest (outputs cleared), or with ``stubs`` the
    student edition (every solution a stub) for each odd student."""
    import plain_notebook

    subs = folder / "subs"
    for name in CHAPTERS:
        reference = nbformat.read(ROOT / "chapters" / name, as_version=4)
        for cell in reference.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        stub = plain_notebook.student_notebook(nbformat.read(ROOT / "chapters" / name, as_version=4))
        for i in range(students):
            (subs / f"student-{i:03}").mkdir(parents=True, exist_ok=True)
            nbformat.write(stub if stubs and i % 2 else reference, subs / f"student-{i:03}" / name)
    return subs


_RUN = ("import resource, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from grading import grade\n"
        "grade.main(sys.argv[2:])\n"
        "print('peak-rss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)\n")


def grade(subs: Path, bundle: Path, out: Path, *extra: str) -> tuple[float, int, dict]:
    """(seconds, the grader process's own peak RSS in bytes, the JSON report) of one `python -m grading grade` run."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _RUN, str(ROOT), str(subs), "--bundle", str(bundle),
                           "--json", str(out), "--no-progress", *extra],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"python -m grading grade exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    rss = int(proc.stderr.rsplit("peak-rss", 1)[1].split()[0])
    return seconds, rss, json.loads(out.read_text())


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def key(report: dict) -> list:
    return [(g["submission"], g["notebook"], g["exercise"], g["status"]) for g in report["grades"]]


def bench_class(args) -> dict[int, float]:
    """Grade one class with each ``--jobs`` value; return the wall seconds of each."""
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        bundle, subs = make_bundle(tmp), make_class(tmp, args.students, stubs=args.stubs)
        print(f"class: {args.students} students x {len(CHAPTERS)} chapters ({args.students * len(CHAPTERS)} notebooks"
              f"{', odd students: stubs' if args.stubs else ', honest'}); {os.cpu_count()} CPUs; {load()}", flush=True)
        results = {}
        for jobs in args.jobs:
            seconds, _, report = grade(subs, bundle, tmp / f"jobs{jobs}.json", "--jobs", str(jobs))
            results[jobs] = (seconds, report)
            passed = sum(g["status"] == "passed" for g in report["grades"])
            print(f"--jobs {jobs}: {len(report['runs'])} notebooks in {seconds:.1f} s "
                  f"({passed}/{len(report['grades'])} exercises passed); {load()}", flush=True)
        first = args.jobs[0]
        for jobs in args.jobs[1:]:
            print(f"--jobs {jobs} vs --jobs {first}: {results[first][0] / results[jobs][0]:.2f}x faster; "
                  f"same grades: {key(results[first][1]) == key(results[jobs][1])}")
        return {jobs: seconds for jobs, (seconds, _) in results.items()}


def bench_shards(args) -> None:
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        bundle, subs = make_bundle(tmp), make_class(tmp, args.students)
        _, _, one = grade(subs, bundle, tmp / "one.json", "--jobs", "2")
        start = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-m", "grading", "grade", str(subs), "--bundle", str(bundle),
                                   "--shard", f"{i}/{args.shards}", "--records", str(tmp / f"shard-{i}.jsonl"),
                                   "--jobs", "1", "--no-progress"], stdout=subprocess.DEVNULL, cwd=ROOT)
                 for i in range(1, args.shards + 1)]
        assert all(p.wait() == 0 for p in procs)
        subprocess.run([sys.executable, "-m", "grading", "grade", "--merge",
                        *map(str, sorted(tmp.glob("shard-*.jsonl"))), "--json", str(tmp / "merged.json")],
                       check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        merged = json.loads((tmp / "merged.json").read_text())
        print(f"{args.shards} shards in {time.monotonic() - start:.1f} s; merged == one run: {key(merged) == key(one)} "
              f"({len(merged['grades'])} grades)")


HOSTILE_CELL = (
    "import os, zipfile\n"
    "for n in os.listdir('/grade/out'):\n"
    "    if n[0].isdigit():\n"
    "        os.remove('/grade/out/' + n)\n"
    "        with zipfile.ZipFile('/grade/out/.bomb', 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as z:\n"
    "            z.writestr('archive/data.pkl', b'\\x80\\x02}q\\x00.')\n"
    "            with z.open('archive/data/0', 'w', force_zip64=True) as f:\n"
    "                for _ in range(128):\n"
    "                    f.write(bytes(2**24))\n"
    "        os.replace('/grade/out/.bomb', '/grade/out/' + n.split('.')[0] + '.pt')\n")


def bench_memory(args) -> tuple[int, int]:
    """The grader's peak RSS in bytes: (honest run, hostile run)."""
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        bundle = make_bundle(tmp)
        honest = make_class(tmp / "honest", 2)
        _, rss_honest, _ = grade(honest, bundle, tmp / "honest.json", "--jobs", "2")
        hostile = make_class(tmp / "hostile", 2)
        for nb_path in hostile.rglob("*.ipynb"):  # after the first check cell: its answer becomes a 2 GiB bomb
            nb = nbformat.read(nb_path, as_version=4)
            first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "check(" in c.source)
            nb.cells.insert(first + 1, nbformat.v4.new_code_cell(HOSTILE_CELL))
            nbformat.write(nb, nb_path)
        for i in range(20):
            with open(hostile / "student-000" / f"sparse{i}.ipynb", "wb") as f:
                f.truncate(49 * 2**20)
        deep = os.open(hostile / "student-001", os.O_RDONLY)
        for _ in range(1500):
            os.mkdir("t", dir_fd=deep)
            new = os.open("t", os.O_RDONLY, dir_fd=deep)
            os.close(deep)
            deep = new
        os.close(deep)
        _, rss_hostile, report = grade(hostile, bundle, tmp / "hostile.json", "--jobs", "2")
        passed = sum(g["status"] == "passed" for g in report["grades"])
        print(f"grader peak RSS: honest {rss_honest / 2**20:.0f} MiB, hostile {rss_hostile / 2**20:.0f} MiB "
              f"(+{(rss_hostile - rss_honest) / 2**20:.0f} MiB); hostile exercises passed: {passed}")
        from grading.fstree import remove_tree

        remove_tree(hostile / "student-001")
        return rss_honest, rss_hostile


STALL = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)")


def bench_stall(args) -> float:
    """Seconds a notebook that ignores SIGINT and SIGALRM (after its first answer) holds its slot."""
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        bundle, subs = make_bundle(tmp), make_class(tmp, 2, stubs=False)
        for other in subs.glob(f"*/{CHAPTERS[1]}"):  # chapter 00 alone: the stall and an honest neighbour
            other.unlink()
        path = subs / "student-000" / CHAPTERS[0]
        nb = nbformat.read(path, as_version=4)
        first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "check(" in c.source)
        nb.cells.insert(first + 1, nbformat.v4.new_code_cell(STALL))
        nbformat.write(nb, path)
        seconds, _, report = grade(subs, bundle, tmp / "stall.json", "--jobs", "1", "--timeout", str(args.timeout),
                                   "--shard", "1/1")
        run = next(r for r in report["runs"] if r["submission"] == "student-000" and r["notebook"] == CHAPTERS[0])
        honest = [g["status"] for g in report["grades"] if g["submission"] == "student-001"]
        first_answer = next(g["status"] for g in report["grades"]
                            if g["submission"] == "student-000" and g["notebook"] == CHAPTERS[0])
        print(f"stall: held its slot {run['seconds']:.1f} s at --timeout {args.timeout:g} (goal <= {args.timeout + 10:g} s; "
              f"outcome {run['outcome']}); its first answer: {first_answer}; honest neighbour: "
              f"{honest.count('passed')}/{len(honest)} passed; {load()}")
        return run["seconds"]


def bench_done_when(args) -> None:
    """The issue's measurements in one run: class serial vs --jobs 2, memory, stall."""
    start = time.monotonic()
    args.jobs = [1, 2]
    times = bench_class(args)
    rss_honest, rss_hostile = bench_memory(args)
    stall = bench_stall(args)
    speedup = times[1] / times[2]
    print(f"\nsummary ({time.monotonic() - start:.0f} s in all):\n"
          f"  {args.students} students ({args.students * len(CHAPTERS)} notebooks): serial {times[1]:.1f} s, "
          f"--jobs 2 {times[2]:.1f} s: {speedup:.2f}x (goal >= 1.6x on 2 cores){'' if speedup >= 1.6 else '  NOT MET'}\n"
          f"  grader peak memory: honest {rss_honest / 2**20:.0f} MiB, hostile {rss_hostile / 2**20:.0f} MiB "
          f"(goal: <= 1024 MiB more){'' if rss_hostile - rss_honest <= 2**30 else '  NOT MET'}\n"
          f"  stall: {stall:.1f} s at --timeout {args.timeout:g} (goal <= {args.timeout + 10:g} s)"
          f"{'' if stall <= args.timeout + 10 else '  NOT MET'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("done-when", "class", "shards", "memory", "stall"))
    parser.add_argument("--students", type=int, default=None, help="default: 60 for done-when, else 30")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--stubs", action="store_true", help="class: odd students hand in the stubs")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=30, help="stall: the grader's --timeout (default 30)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the class is made (default: tmp)")
    args = parser.parse_args()
    if args.students is None:
        args.students = 60 if args.what == "done-when" else 30
    {"done-when": bench_done_when, "class": bench_class, "shards": bench_shards, "memory": bench_memory,
     "stall": bench_stall}[args.what](args)


if __name__ == "__main__":
    main()
