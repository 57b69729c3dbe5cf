"""The part of grading that runs INSIDE a submission's sandbox (untrusted territory).

Three roles, one self-contained file (stdlib + torch + nbclient, and the sandbox's read-only
lectorch for refusals and runners; no grading data):

* ``python harness.py PLAN`` is the executor: it drops root (when started as root), sets the
  kernel-enforced limits, runs the student's notebook in a Jupyter kernel (errors do not stop it,
  outputs are discarded) within the plan's time budget, and right after each check cell runs
  :func:`collect` for that cell's exercises in the same kernel (a final pass after the last cell
  collects what is left). At the deadline it reports and leaves at once: the kernel dies with the
  sandbox, whatever signals it ignores.
* in a **fresh process** (plan items that carry a ``program``, built by grading/review.py from the
  notebook's source), ``kernel_site/lectorch_grading_fresh.py`` runs each exercise's program in a
  child forked from this process after the routines the exercise forbids were replaced by raisers,
  and collects it there with this file's :func:`collect`; a timer's simulated device and runner
  stay in this process, the answer gets stubs.
* :func:`collect` fetches each answer named by the grader's plan (the variable of the reference
  chapter's check cell), calls function answers on the hidden INPUTS the grader sent (never the
  expected values: those never enter the sandbox) and writes only plain data (``torch.save`` of
  numbers, strings, tuples, lists, dicts and tensors) to the output folder.

Everything here can be subverted by the student's code, which runs in the same kernel first. That
is fine: the grader trusts none of it. It reads the files back with bounds (grading/readback.py),
compares in its own process with its own lectorch and the expected values of its bundle.

>>> to_plain((1, 2.5, "x", [None, True]))
(1, 2.5, 'x', [None, True])
>>> to_plain(object())
{'__unreadable__': 'object'}
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

#: Marker of an unreadable answer part, and of a generator argument in hidden inputs.
UNREADABLE = "__unreadable__"
GENERATOR = "__generator_seed__"
TUPLE = "__tuple__"
SET = "__set__"
PICKLED = "__pickled_input__"
_MAX_DEPTH = 32
_MAX_MESSAGE = 300


def to_plain(obj: Any, _depth: int = 0) -> Any:
    """``obj`` as plain data that ``torch.load(weights_only=True)`` reads back (else a marker)."""
    torch = sys.modules.get("torch")  # an answer holds a tensor only if torch was imported
    if torch is None:
        torch = _NoTorch

    if _depth > _MAX_DEPTH:
        return {UNREADABLE: "too deeply nested"}
    if obj is None or type(obj) in (bool, int, float, str, complex, bytes):
        return obj
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, torch.Tensor):
        try:
            return obj.detach().as_subclass(torch.Tensor).cpu().contiguous().clone()
        except Exception:  # meta, sparse or exotic tensors
            return {UNREADABLE: "tensor"}
    if isinstance(obj, (torch.dtype, torch.device)):
        return obj
    if isinstance(obj, torch.Size):
        return torch.Size(int(d) for d in obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if type(obj).__module__ == "numpy":
        try:
            return obj.item() if getattr(obj, "ndim", 1) == 0 else torch.from_numpy(obj.copy())
        except Exception:
            return {UNREADABLE: type(obj).__qualname__}
    if isinstance(obj, (tuple, list)):
        items = [to_plain(x, _depth + 1) for x in obj]
        return items if isinstance(obj, list) else tuple(items)
    if isinstance(obj, (set, frozenset)):
        return {SET: [to_plain(x, _depth + 1) for x in obj]}
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if type(key) not in (str, int, bool, float):
                return {UNREADABLE: "dict with non-plain keys"}
            out[key] = to_plain(value, _depth + 1)
        return out
    return {UNREADABLE: type(obj).__qualname__}


class _NoTorch:
    class Tensor: ...
    class dtype: ...
    class device: ...
    class Size: ...


def _json_ready(obj: Any) -> Any:
    """Plain data as JSON, tuples tagged (``TypeError`` for what only torch.save can hold)."""
    if obj is None or type(obj) in (bool, int, float, str):
        return obj
    if type(obj) is tuple:
        return {TUPLE: [_json_ready(x) for x in obj]}
    if type(obj) is list:
        return [_json_ready(x) for x in obj]
    if type(obj) is dict and all(type(k) is str for k in obj):
        return {k: _json_ready(v) for k, v in obj.items()}
    raise TypeError(type(obj).__name__)


def _from_json(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_from_json(x) for x in obj]
    if isinstance(obj, dict):
        if set(obj) == {TUPLE} and isinstance(obj[TUPLE], list):
            return tuple(_from_json(x) for x in obj[TUPLE])
        return {k: _from_json(v) for k, v in obj.items()}
    return obj


def dump(obj: Any, stem: Path) -> Path:
    """Write plain data next to ``stem``: as JSON when it can (no torch needed), else torch.save."""
    stem = Path(stem)
    try:
        data, path = json.dumps(_json_ready(obj)).encode(), stem.with_suffix(".json")
    except (TypeError, ValueError, RecursionError):
        import io

        import torch

        buffer = io.BytesIO()
        torch.save(obj, buffer)
        data, path = buffer.getvalue(), stem.with_suffix(".pt")
    tmp = stem.with_name(f".{stem.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def loads(data: bytes, suffix: str) -> Any:
    """Read back what :func:`dump` wrote (``weights_only=True`` for torch files: plain data only)."""
    if suffix == ".json":
        return _from_json(json.loads(data.decode("utf-8")))
    import io

    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


def from_inputs(obj: Any) -> Any:
    """Hidden inputs as the student's function receives them (generator markers → generators)."""
    if isinstance(obj, dict):
        if set(obj) == {GENERATOR}:
            import torch

            return torch.Generator().manual_seed(int(obj[GENERATOR]))
        if set(obj) == {PICKLED}:  # an input object from the grader (never from the student)
            import base64
            import pickle

            return pickle.loads(base64.b64decode(obj[PICKLED]))
        return {k: from_inputs(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [from_inputs(x) for x in obj]
        return items if isinstance(obj, list) else tuple(items)
    if hasattr(obj, "clone"):
        return obj.clone()
    return obj


def _raised(err: BaseException) -> dict:
    names = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"]
    return {"raised": names[:8], "message": str(err)[:_MAX_MESSAGE]}


class _CaseTimeout(BaseException):
    pass


def _on_alarm(signum, frame):  # pragma: no cover - timing dependent
    raise _CaseTimeout()


def _refusing(spec: dict | None):
    """The checker's own refusals (``lectorch.exercises.refuse``, loaded in the kernel) for one
    exercise, or a no-op. Teaching, not security: the student's kernel can undo it, which gains
    them nothing the grader's comparison would not also see."""
    import contextlib

    if not spec:
        return contextlib.nullcontext()
    from lectorch.exercises.refuse import refusing  # the sandbox's read-only lectorch

    return refusing(spec["names"], spec["what"], no_tensors=spec.get("no_tensors", False))


def _runner(name: str | None):
    """The exercise's runner ``"module:name"`` from the sandbox's own lectorch.exercises, or None."""
    if not name:
        return None
    import importlib

    module, _, attr = name.partition(":")
    if not module.startswith("lectorch.exercises."):
        raise ValueError(f"a runner must come from lectorch.exercises, got {name!r}")
    return getattr(importlib.import_module(module), attr)


def _call(fn, args, kwargs, seconds: float, refuse: dict | None = None, runner: str | None = None) -> dict:
    """Call the student's ``fn`` on one case (through the exercise's ``runner`` when it has one,
    e.g. a timer on a simulated device: the result then carries the log of the calls made)."""
    run = _runner(runner)
    use_alarm = seconds > 0 and hasattr(signal, "setitimer")
    try:
        if use_alarm:
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            with _refusing(refuse):
                got = run(fn, args, kwargs) if run is not None else fn(*args, **kwargs)
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _CaseTimeout:
        return {"timeout": seconds}
    except Exception as err:  # the student's code failed on this case: record it
        return _raised(err)
    return {"returned": to_plain(got)}


def collect(namespace: dict, plan_path: str, out_dir: str, only: list[str] | None = None) -> None:
    """Write one plain-data record per exercise of the plan into ``out_dir`` (kernel side).

    ``only``: right after a check cell, the exercises of that cell, each written only when its
    answer exists (else the final pass, after the last cell, tries again)."""
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    out = Path(out_dir)
    for item in plan["exercises"]:
        if only is not None and item["id"] not in only:
            continue
        record: dict[str, Any] = {"id": item["id"], "found": True}
        if item.get("program_errors"):  # the fresh process's statements that raised
            record["program_errors"] = item["program_errors"]
        try:
            answer = eval(item["expr"], namespace)  # the reference chapter's expression
        except NameError as err:
            record.update(found=False, message=str(err)[:_MAX_MESSAGE])
            answer = None
        except Exception as err:
            record.update(found=False, **_raised(err))
            answer = None
        if not record["found"] and only is not None:
            continue
        if record["found"]:
            if item["kind"] == "function":
                record["callable"] = callable(answer)
                record["value"] = None if callable(answer) else to_plain(answer)
                if callable(answer):
                    path = Path(plan_path).parent / item["inputs"]
                    inputs = loads(path.read_bytes(), path.suffix)
                    cases = []
                    for case in inputs:
                        # decoded per case, so a function that mutates its arguments changes nothing
                        try:
                            if case.get("call"):  # objects pickled together by the grader
                                args, kwargs = from_inputs(case["call"])
                            else:
                                args, kwargs = from_inputs(case["args"]), from_inputs(case["kwargs"])
                        except Exception as err:  # noqa: BLE001 - e.g. the student replaced a class
                            cases.append({"input_error": str(err)[:_MAX_MESSAGE]})
                            continue
                        cases.append(_call(answer, args, kwargs, plan.get("case_timeout", 0), item.get("refuse"),
                                           item.get("runner")))
                    record["cases"] = cases
            else:
                record["value"] = to_plain(answer)
        dump(record, out / str(item["index"]))


# ----------------------------------------------------------------------------- executor


def _drop_root(uid: int) -> None:
    """Become ``uid`` (e.g. nobody) for good, so that RLIMIT_NPROC applies and no capability stays."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    status = Path("/proc/self/status").read_text()
    cap_eff = next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff"))
    if os.getuid() == 0 or int(cap_eff, 16) != 0:
        raise SystemExit("lectorch-grade: could not drop privileges")


def _set_limits(limits: dict) -> None:
    import resource

    for name, value in limits.items():
        value = int(value)
        resource.setrlimit(getattr(resource, name), (value, value))


def _collect_code(plan: dict, plan_path: Path, only: list[str] | None) -> str:
    """A cell that loads this file in the kernel (no name left behind) and collects answers."""
    return ("def _lectorch_grading_collect():\n"
            "    import importlib.util as u\n"
            f"    s = u.spec_from_file_location('lectorch_grading_harness', {plan['harness']!r})\n"
            "    m = u.module_from_spec(s)\n"
            "    s.loader.exec_module(m)\n"
            f"    m.collect(globals(), {str(plan_path)!r}, {plan['out']!r}, only={only!r})\n"
            "_lectorch_grading_collect()\n"
            "del _lectorch_grading_collect\n")


def _has_record(plan: dict, item: dict) -> bool:
    return any(os.path.lexists(Path(plan["out"]) / f"{item['index']}{suffix}") for suffix in (".json", ".pt"))


def _execute(plan: dict, plan_path: Path, started: float, finish) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionComplete, DeadKernelError

    class QuietClient(NotebookClient):
        """Discards every output (a flood costs nothing) and keeps only the completion signal."""

        def process_message(self, msg, cell, cell_index):
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                raise CellExecutionComplete()
            if msg["msg_type"] == "error":
                self.errors += 1
            return None

    work = Path(plan["workdir"])
    work.mkdir(parents=True, exist_ok=True)
    source = Path(plan["notebook"]).read_text(encoding="utf-8")
    nb = nbformat.reads(source, as_version=4)
    cells = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for _, cell in cells:
        cell.outputs, cell.execution_count = [], None
    (work / plan["notebook_name"]).write_text(source, encoding="utf-8")
    # iopub_timeout: after a timed-out cell, wait 1 s (not 4) for its last output
    client = QuietClient(nb, timeout=1, allow_errors=True, kernel_name="python3", iopub_timeout=1,
                         interrupt_on_timeout=True, record_timing=False,
                         error_on_timeout={"ename": "Timeout", "evalue": "grading time limit", "traceback": []},
                         resources={"metadata": {"path": str(work)}})
    client.errors = 0
    report = {"cells": len(cells), "ran": 0, "errors": 0, "timed_out": False, "kernel_died": False,
              "collected": False}
    deadline = started + plan["timeout"]
    t0 = time.monotonic()

    def run(cell, index) -> bool:
        """Run one cell within the time left; False once the time is up."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        client.timeout = max(1, math.ceil(left))
        client.execute_cell(cell, index)
        return time.monotonic() < deadline

    try:
        with client.setup_kernel():
            report["kernel_start_s"] = round(time.monotonic() - t0, 2)
            for index, cell in cells:
                in_time = run(cell, index)
                report["ran"] += in_time
                if not in_time:
                    report["timed_out"] = True
                    break
                # the answers of this cell's check calls, collected now (a later cell cannot take
                # them back, and a notebook that stalls later keeps them)
                source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
                ids = [item["id"] for item in plan["exercises"]
                       if re.search(r"check\(\s*[\"']" + re.escape(item["id"]) + r"[\"']", source)]
                if ids and not run(nbformat.v4.new_code_cell(_collect_code(plan, plan_path, ids)), index):
                    report["timed_out"] = True
                    break
            if not report["timed_out"]:
                left = [item["id"] for item in plan["exercises"] if not _has_record(plan, item)]
                t1 = time.monotonic()
                nb.cells.append(nbformat.v4.new_code_cell(_collect_code(plan, plan_path, None)))
                if left and not run(nb.cells[-1], len(nb.cells) - 1):
                    report["timed_out"] = True
                else:
                    report["collected"] = True
                report["collect_s"] = round(time.monotonic() - t1, 2)
            report["errors"] = client.errors
            finish(report)  # now: the kernel may be stuck, and its shutdown with it
    except DeadKernelError:
        report["kernel_died"] = True
    report["errors"] = client.errors
    return report


def _write_report(out: Path, report: dict, started: float) -> None:
    report["started"], report["finished"] = started, time.time()
    (out / ".run.tmp").write_text(json.dumps(report), encoding="utf-8")
    os.replace(out / ".run.tmp", out / "run.json")
    print("lectorch-grade:", json.dumps(report), flush=True)


def main(argv: list[str]) -> int:
    started, wall = time.monotonic(), time.time()
    plan_path = Path(argv[0])
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    if os.getuid() == 0 and plan.get("drop_to") is not None:
        _drop_root(int(plan["drop_to"]))
    _set_limits(plan.get("limits", {}))
    for folder in plan.get("make_dirs", []):
        Path(folder).mkdir(parents=True, exist_ok=True)
    out = Path(plan["out"])

    def finish(report: dict) -> None:
        """Report and leave at once: the kernel and whatever it started die with the sandbox."""
        _write_report(out, report, wall)
        os._exit(0)

    try:
        if plan["exercises"] and all("program" in item for item in plan["exercises"]):
            import lectorch_grading_fresh  # grading/kernel_site, on the sandbox's PYTHONPATH

            report = lectorch_grading_fresh.run(plan, plan_path, started, sys.modules[__name__])
        else:
            report = _execute(plan, plan_path, started, finish)
    except Exception as err:  # noqa: BLE001 - reported to the grader as data
        report = {"crashed": f"{type(err).__name__}: {str(err)[:_MAX_MESSAGE]}"}
    finish(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
