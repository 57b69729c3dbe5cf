"""Grade a class: collect each submission, run each notebook in its own sandbox (several at once),
read its answers back with bounds, judge them, record each grade as it is decided.

    report = grade_folder("submissions", bundle="grading-bundle/bundle.pt", jobs=2,
                          records="grades.jsonl")      # doctest: +SKIP

A submission can only hurt itself: whatever goes wrong while collecting, running, reading back or
cleaning up one notebook is caught and recorded for that notebook alone. Results do not depend on
``jobs``; ``shard=(i, n)`` grades the submissions whose name hashes to shard i of n
(:func:`grading.collect.shard_of`), and :func:`grading.report.merge` combines the shards' records.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grading
from grading import collect, readback, review, sandbox
from lectorch.exercises import review as engine
from grading.collect import Notebook, Refused, ascii_name, escape
from grading.judge import judge
from grading.report import Grade, Records, Report, Run
from grading.sandbox import Isolation, Limits
from lectorch import i18n
from lectorch.i18n import tr


def _refusals() -> dict[str, dict]:
    """What each exercise switches off while the student's function runs (plain data, from the
    grader's own lectorch), so that the grader refuses the same library shortcuts as the checker."""
    global _REFUSALS
    if _REFUSALS is None:
        from lectorch.exercises import refusals

        _REFUSALS = refusals()
    return _REFUSALS


_REFUSALS: dict[str, dict] | None = None


def _runners() -> dict[str, str]:
    """Each exercise's runner ("module:name" in lectorch.exercises): the sandbox calls the answer
    through it, as the checker does (a timer's calls on a simulated device are logged and judged)."""
    from lectorch.exercises import runners

    return runners()


@dataclass
class Chapter:
    """A reference chapter: its check calls ``(exercise id, answer expression)``."""

    name: str
    calls: list[tuple[str, str]]
    helpers: dict[str, dict[str, str]] | None = None  # by exercise: names of its check expression that are the checker's


def reference_chapters(reference_dir: Path) -> dict[str, Chapter]:
    reference_dir = Path(reference_dir)
    if not reference_dir.is_dir():
        raise ValueError(f"--reference {reference_dir} is not a folder of reference chapters")
    out = {}
    for path in sorted(reference_dir.glob("*.ipynb")):
        nb = grading.read_notebook_json(path)
        calls = grading.check_calls(nb)
        out[path.name] = Chapter(path.name, calls, {ex_id: engine.helpers_of(nb, expr) for ex_id, expr in calls})
    return out


@dataclass
class Context:
    folder: Path
    chapters: dict[str, Chapter]
    bundle: dict
    registry: dict
    limits: Limits
    isolation: Isolation
    public: list[Path]
    workdir: Path | None = None
    shown: dict[str, str] = dataclasses.field(default_factory=dict)  # submission -> its name as shown
    budget: "Budget | None" = None

    def name(self, submission: str) -> str:
        return self.shown.get(submission) or escape(submission)


class Budget:
    """Seconds of sandbox time each submission may use in all (its notebooks together): a student
    whose every chapter stalls costs this much slot time, not one timeout per chapter. A run
    reserves its timeout first and is charged what it used (so parallel runs cannot overspend)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.used: dict[str, float] = {}
        self.lock = threading.Lock()

    def reserve(self, submission: str, want: float) -> float:
        """Seconds granted for one run (0: the submission's time is spent)."""
        with self.lock:
            left = self.seconds - self.used.get(submission, 0.0)
            grant = max(0.0, min(want, left))
            if grant < 1.0:
                return 0.0
            self.used[submission] = self.used.get(submission, 0.0) + grant
            return grant

    def settle(self, submission: str, granted: float, used: float) -> None:
        with self.lock:
            self.used[submission] -= granted - min(used, granted)


def _not_graded(submission: str, notebook: str, chapter: Chapter | None, status: str, why: str) -> list[Grade]:
    if chapter is None:
        return [Grade(submission, notebook, "-", "not graded", why)]
    return [Grade(submission, notebook, ex_id, status, why) for ex_id, _ in chapter.calls]


def grade_notebook(ctx: Context, nb: Notebook, slot: int = 0) -> tuple[list[Grade], Run]:
    """Grade one collected notebook; never raises (a failure is this notebook's grade)."""
    start = time.monotonic()
    sub, name, where = ctx.name(nb.submission), escape(nb.name), escape(nb.where)
    chapter = ctx.chapters.get(nb.name)
    if chapter is None:
        run = Run(sub, name, "no reference", 0.0, f"no reference chapter named {name}", where)
        return _not_graded(sub, name, None, "not graded", run.detail), run
    try:
        with i18n.language(None):  # the notebook's own, once _grade has read its metadata
            grades, outcome, detail = _grade(ctx, nb, chapter, sub, name, slot)
    except Exception as err:  # noqa: BLE001 - the grader's own failure on this notebook only
        detail = f"the grader failed on this notebook ({type(err).__name__}: {escape(str(err))[:200]})"
        grades, outcome = _not_graded(sub, name, chapter, "not graded", detail), "error"
    return grades, Run(sub, name, outcome, round(time.monotonic() - start, 2), detail, where)


def _grade(ctx: Context, nb: Notebook, chapter: Chapter, sub: str, name: str,
           slot: int) -> tuple[list[Grade], str, str]:
    grades: dict[str, Grade] = {}
    todo = []
    for index, (ex_id, expr) in enumerate(chapter.calls):
        entry = ctx.bundle["exercises"].get(ex_id)
        if ex_id not in ctx.registry or entry is None:
            grades[ex_id] = Grade(sub, name, ex_id, "not graded",
                                  "this exercise is not in the grading bundle: rebuild it (make grading-bundle)")
        else:
            todo.append((index, ex_id, expr, entry))

    def result(outcome: str, detail: str) -> tuple[list[Grade], str, str]:
        return [grades[i] for i, _ in chapter.calls], outcome, detail

    try:
        data = collect.read_staged(nb) if nb.staged else collect.read_notebook(ctx.folder, nb)
        text = data.decode("utf-8")
        import json

        import nbformat

        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("cells"), list):
            raise ValueError("no list of cells")
        nbformat.reads(text, as_version=4)
    except Exception as err:  # noqa: BLE001 - anything a submission may be
        detail = f"the file is not a notebook ({type(err).__name__}: {escape(str(err))[:100]})"
        for _, ex_id, _, _ in todo:
            grades[ex_id] = Grade(sub, name, ex_id, "not reached", detail)
        return result("invalid", detail)
    i18n.switch(i18n.notebook_language(parsed.get("metadata")))  # its student reads the messages
    present = {ex_id for ex_id, _ in grading.check_calls(parsed)}
    del text
    plan_items, inputs = [], {}
    for index, ex_id, expr, entry in todo:
        if ex_id not in present:
            grades[ex_id] = Grade(sub, name, ex_id, "missing",
                                  tr('the check cell was deleted or changed: restore lectorch.check("{id}", {expr})')
                                  .format(id=ex_id, expr=expr))
            continue
        plan_items.append({"index": index, "id": ex_id, "expr": expr, "kind": entry["kind"], "inputs": None,
                           "refuse": _refusals().get(ex_id), "runner": _runners().get(ex_id)})
        if entry["kind"] == "function":
            inputs[index] = [{"args": c["args"], "kwargs": c["kwargs"], "call": c.get("call")} for c in entry["cases"]]
    if not plan_items:
        return result("ok", "")
    limits, granted = ctx.limits, None
    if ctx.budget is not None:
        granted = ctx.budget.reserve(nb.submission, limits.timeout_s)
        if not granted:
            detail = (f"this submission's grading time is spent ({ctx.budget.seconds:g} s for all its notebooks, "
                      "set by grade's --student-seconds)")
            for item in plan_items:
                grades[item["id"]] = Grade(sub, name, item["id"], "not reached", detail)
            return result("budget", detail)
        limits = dataclasses.replace(limits, timeout_s=granted)
    # the static review, in this process: exercises with something to forbid are read, and run as
    # their program in a fresh process (grading/review.py)
    plain, fresh, findings = review.split(parsed, plan_items, _refusals(), chapter.helpers or {})
    del parsed
    outcomes, used = [], 0.0
    try:
        for items, notebook in ((plain, data), (fresh, b'{"cells": []}')):
            if not items:
                continue
            # the two runs share one grant: the second gets what the first left
            run_limits = dataclasses.replace(limits, timeout_s=max(1.0, limits.timeout_s - used))
            with sandbox.run(notebook, nb.name, items, inputs, limits=run_limits, isolation=ctx.isolation,
                             public=ctx.public, slot=slot, workdir=ctx.workdir) as ran:
                used += ran.seconds
                for item in items:  # one answer in memory at a time
                    grade = _judge_item(ctx, ran, item, sub, name)
                    if item["id"] in findings:
                        grade.status, grade.message = review.verdict(grade.status, grade.message, findings[item["id"]])
                    grades[item["id"]] = grade
            outcomes.append(ran)
    finally:
        if granted:
            ctx.budget.settle(nb.submission, granted, used)
    del data
    ran = next((r for r in outcomes if r.outcome != "ok"), outcomes[0])
    if ran.outcome == "timeout" and granted is not None and granted < ctx.limits.timeout_s:
        ran.detail += f" (what was left of this submission's {ctx.budget.seconds:g} s)"
    cleanup = "; ".join(r.cleanup for r in outcomes if r.cleanup)
    if cleanup:  # the grades stand; the instructor hears of it
        return result(ran.outcome, f"{ran.detail}; clean-up: {cleanup}".lstrip("; "))
    return result(ran.outcome, ran.detail)


def _judge_item(ctx: Context, ran: sandbox.Ran, item: dict, sub: str, name: str) -> Grade:
    ex_id = item["id"]
    record: Any = None
    for suffix in (".json", ".pt"):
        path = ran.out / f"{item['index']}{suffix}"
        if os.path.lexists(path):
            try:
                record = readback.read_record(path)
            except Exception as err:  # noqa: BLE001 - tampered, truncated or too big: unreadable
                record = {"unreadable": f"{type(err).__name__}: {str(err)[:100]}"}
            break
    if record is None:
        why = ran.detail or tr("its answer was never collected (an earlier cell crashed the kernel?)")
        return Grade(sub, name, ex_id, "not reached", why)
    try:
        status, message = judge(ctx.registry[ex_id], ctx.bundle["exercises"][ex_id], record, item["expr"])
    except Exception as err:  # noqa: BLE001 - a tampered record must not stop the run
        status, message = "error", tr("the answer could not be graded ({type})").format(type=type(err).__name__)
    if status == "missing" and ran.outcome != "ok":
        status, message = "not reached", ran.detail
    if isinstance(record, dict):
        message = review.program_errors(status, message, record.get("program_errors"))
    return Grade(sub, name, ex_id, status, message)


def _refused_rows(ctx: Context, refused: list[Refused], graded: list[Notebook]) -> list[tuple[Run, list[Grade]]]:
    """A refused notebook: a run that says why; its chapter "not graded" unless another copy is."""
    rows = []
    graded_names = {(nb.submission, nb.name) for nb in graded}
    for r in refused:
        sub, name = ctx.name(r.submission), escape(r.name) if r.name else ""
        outcome = r.why if r.why in ("duplicate", "shared") else "refused"
        run = Run(sub, name, outcome, 0.0, f"{r.why}: {escape(r.detail)}", escape(r.where))
        grades = []
        if outcome != "shared" and r.name and (r.submission, r.name) not in graded_names and r.name in ctx.chapters:
            graded_names.add((r.submission, r.name))
            grades = _not_graded(sub, name, ctx.chapters[r.name], "not graded", run.detail)
        rows.append((run, grades))
    return rows


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` as (i, n) with 1 ≤ i ≤ n."""
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: give i/n, e.g. --shard 3/8") from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text!r}: i must be between 1 and n")
    return i, n


def grade_folder(folder: Path, *, bundle: Path | dict, reference_dir: Path, registry: dict | None = None,
                 timeout_s: float = 300, memory_gb: float = 4, isolation: str = "auto", public: list[Path] = (),
                 max_tasks: int = 256, jobs: int | None = None, shard: tuple[int, int] = (1, 1),
                 records: Path | None = None, progress: bool = False, use_cgroups: bool = True,
                 workdir: Path | None = None, student_s: float | None = None) -> Report:
    """Grade every submission of ``folder`` (of shard ``shard``) with ``jobs`` sandboxes at a time.

    ``public``: extra exercise modules (Python files) the students have too; the sandbox can import
    them. ``registry`` (default: every exercise of lectorch) must hold their exercises. ``records``:
    the JSONL file each graded notebook is appended to as soon as it is decided. ``workdir``: where
    the sandboxes' folders and the private copies of the submissions are made (default: the
    temporary folder). ``student_s``: the sandbox seconds of one submission, all its notebooks
    together (default: three timeouts)."""
    from lectorch.exercises import exercises

    if timeout_s <= 0 or memory_gb <= 0:
        raise ValueError("timeout_s and memory_gb must be > 0")
    student_s = 3 * timeout_s if student_s is None else float(student_s)
    if student_s <= 0:
        raise ValueError(f"student_s={student_s:g}: give a number of seconds > 0 (--student-seconds)")
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: give at least 1 (--jobs N)")
    index, count = shard
    folder = Path(folder)
    chapters = reference_chapters(reference_dir)
    everyone = collect.submissions(folder)
    if not everyone:
        raise ValueError(f"no submissions (folders or .ipynb files) in {folder}")
    names = [(n, d) for n, d in everyone if collect.shard_of(n, count) == index - 1]
    if isinstance(bundle, dict):
        info = {"fingerprint": "in memory", "created": bundle.get("created"), "lectorch": bundle.get("lectorch")}
    else:
        path, bundle = bundle, grading.read_bundle(bundle)
        info = {"fingerprint": grading.fingerprint(path), "created": bundle.get("created"),
                "lectorch": bundle.get("lectorch")}
    registry = exercises() if registry is None else registry
    iso = sandbox.detect(isolation, use_cgroups=use_cgroups)
    sandbox.remove_stale_folders(workdir)  # what a killed grader left behind
    if iso.mode != "bwrap" and iso.cgroup is None:
        jobs = 1  # orphans are found as our own new children: one sandbox at a time
        sandbox.become_subreaper()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    limits = Limits(timeout_s=timeout_s, memory_bytes=int(memory_gb * 2**30), max_tasks=max_tasks,
                    threads=max(1, cores // jobs) if jobs > 1 else 0)
    ctx = Context(folder, chapters, bundle, registry, limits, iso, [Path(p) for p in public], workdir,
                  budget=Budget(student_s))
    # names that look alike are decided over the whole class (every shard shows them the same way)
    alike = collect.look_alikes([n for n, _ in everyone])
    ctx.shown = {n: ascii_name(n) for n in alike}
    report = Report(iso.description, info, shard=f"{index}/{count}")
    log = Records(records, {"isolation": iso.description, "bundle": info, "shard": f"{index}/{count}"})
    staging = sandbox.make_folder(workdir)
    os.chmod(staging, 0o700)
    try:
        def note(run: Run, grades: list[Grade]) -> None:
            report.runs.append(run)
            report.grades += grades
            log.add(run, grades)

        mine = {n for n, _ in names}
        for name in sorted(mine & set(alike)):
            note(Run(ctx.name(name), "", "look-alike", 0.0,
                     "looks like " + ", ".join(ctx.name(o) for o in alike[name])
                     + ": names shown with their non-ASCII characters escaped; check who is who"), [])
        # every submission is walked (a hard link's other name may be in another shard's), this
        # shard's are graded
        collected, refused_all = {}, {}
        for name, _ in everyone:
            collected[name], refused_all[name] = collect.collect_submission(folder, name)
        kept, notes = collect.shared_files(collected)
        for r in notes:
            refused_all[r.submission].append(r)
        notebooks: list[Notebook] = []
        number = 0
        for name, _ in names:
            found, refused = [], refused_all[name]
            for nb in kept[name]:  # copied now, before anything is judged
                number += 1
                try:
                    found.append(collect.stage(folder, nb, staging, number))
                except (OSError, ValueError) as err:
                    refused.append(Refused(name, nb.where, nb.name, "unreadable",
                                           f"it could not be copied for grading ({type(err).__name__}: "
                                           f"{escape(str(err))[:100]})"))
            notebooks += found
            for run, grades in _refused_rows(ctx, refused, found):
                note(run, grades)
        _grade_all(ctx, notebooks, jobs, report, log, progress)
        log.finish(len(report.runs))
    finally:
        log.close()
        try:
            sandbox.remove_folder(staging)
        except OSError:  # left for the next grader's sweep of stale folders (it carries our marker)
            pass
    report.sort()
    return report


def _grade_all(ctx: Context, notebooks: list[Notebook], jobs: int, report: Report, log: Records,
               progress: bool) -> None:
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)

    def work(nb: Notebook) -> tuple[list[Grade], Run]:
        slot = slots.get()
        try:
            return grade_notebook(ctx, nb, slot)
        finally:
            slots.put(slot)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(notebooks), unit="notebook", desc=f"grading ({jobs} at a time)", dynamic_ncols=True)
    try:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade") as pool:
            futures = [pool.submit(work, nb) for nb in notebooks]
            for future in as_completed(futures):
                grades, run = future.result()
                report.grades += grades
                report.runs.append(run)
                log.add(run, grades)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{run.submission[:20]}: {run.outcome}", refresh=False)
    finally:
        if bar is not None:
            bar.close()
