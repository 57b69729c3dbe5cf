"""Grade a folder of completed student notebooks, each in its own sandbox, against a grading bundle.

    python tools/grade.py SUBMISSIONS --bundle BUNDLE [--json grades.json] [--timeout 300] [--memory-gb 4]

SUBMISSIONS holds one sub-folder per student (or notebooks directly). For every notebook:

1. The exercises are those of the reference chapter of the same name (``--reference``, default
   ``chapters/``): each ``lectorch.check("id", answer)`` cell gives an id and the answer's variable.
   A check cell that the submission deleted or renamed is graded "missing".
2. The notebook runs in a sandbox (bubblewrap: no network, a private /tmp, a read-only view of the
   system and of lectorch only, a scrubbed environment, kernel-enforced limits, its own PID
   namespace so that nothing it starts outlives it). After the notebook, a harness in the same
   kernel hands back the answers, and the results of function answers on the bundle's hidden
   INPUTS, as plain data. Expected values never enter the sandbox.
3. This process loads that data with ``torch.load(weights_only=True)`` and compares it with the
   bundle's expected values using ITS OWN lectorch. It never imports or runs student code.

The table is printed and ``--json`` written once, atomically, at the end. Exit status 0 when grading
ran, whatever the grades. See chapters/reference/grading.md for the trust model.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grading  # noqa: E402
from grading import harness  # noqa: E402

HARNESS = Path(harness.__file__).resolve()
NOBODY = 65534
OUTPUT_TAIL = 64 * 1024            # bytes of the sandbox's stdout kept for messages
RECORD_MAX = 256 * 2**20           # bytes of one answer file the grader agrees to read
OUT_MAX = 512 * 2**20              # bytes the sandbox may write to its output folder
NOTEBOOK_MAX = 50 * 2**20
STATUSES = ("passed", "failed", "not implemented", "error", "missing", "not reached", "not graded")


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


@dataclass
class Run:
    submission: str
    notebook: str
    outcome: str        # ok | timeout | memory | output | crashed | invalid | no reference
    seconds: float
    detail: str = ""


@dataclass
class Report:
    isolation: str
    bundle: dict
    grades: list[Grade] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"isolation": self.isolation, "bundle": self.bundle,
                "runs": [asdict(r) for r in self.runs], "grades": [asdict(g) for g in self.grades]}


# ------------------------------------------------------------------------------ the sandbox


def bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc",
                                "--dev", "/dev", "--die-with-parent", "true"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def describe_isolation(mode: str) -> str:
    if mode == "bwrap":
        who = "as uid 65534 (nobody)" if os.geteuid() == 0 else "in a user namespace"
        return (f"bubblewrap: own PID, network, IPC and mount namespaces {who}; read-only system, Python and "
                "lectorch only; private /tmp; rlimits (memory, processes, CPU, file size); PSS watched")
    root = " (as root: the process limit does not apply)" if os.geteuid() == 0 else ""
    return ("WEAK (no bubblewrap): process group and subreaper, private temporary folder, scrubbed "
            f"environment, rlimits{root}, PSS watched; the notebook CAN read your files, use the network "
            "and signal your processes")


def _python_roots() -> list[Path]:
    """Folders the kernel needs read-only: the interpreter, the venv, site-packages, lectorch."""
    import importlib.util

    package = Path(importlib.util.find_spec("lectorch").origin).resolve().parent  # without importing torch
    roots = {Path(sys.base_prefix), Path(sys.prefix), package}
    roots.add(Path(os.path.realpath(sys.executable)).parent.parent)
    for entry in sys.path:
        p = Path(entry)
        if entry and p.is_dir() and "site-packages" in p.parts:
            roots.add(p.resolve())
    out: list[Path] = []
    for r in sorted(roots, key=lambda p: len(p.parts)):
        if str(r).startswith(("/usr/", "/etc/")) or any(r.is_relative_to(o) for o in out):
            continue
        out.append(r)
    return out


def _env(home: str, tmp: str, runtime: str, pythonpath: str = "") -> dict[str, str]:
    venv_bin = str(Path(sys.prefix) / "bin")
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": tmp,
        "JUPYTER_RUNTIME_DIR": runtime, "JUPYTER_PLATFORM_DIRS": "1", "IPYTHONDIR": f"{home}/.ipython",
        "MPLCONFIGDIR": f"{home}/.matplotlib", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8", "VIRTUAL_ENV": sys.prefix,
    }
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    for name in ("LECTORCH_DEVICE", "CUDA_VISIBLE_DEVICES"):  # the instructor's choices, not secrets
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _bwrap_command(box: Path, env: dict[str, str], memory_bytes: int, public: list[Path] = ()) -> list[str]:
    cmd = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--clearenv"]
    if os.geteuid() != 0:
        cmd.append("--unshare-user")
    for name, value in env.items():
        cmd += ["--setenv", name, value]
    cmd += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    # the private /tmp first: the Python roots may live under /tmp (a checkout there), and a later
    # tmpfs would hide them
    cmd += ["--perms", "1777", "--size", str(memory_bytes), "--tmpfs", "/tmp"]
    made: set[Path] = set()
    for root in _python_roots():
        for parent in reversed(root.parents[:-1]):  # traversable by the sandbox's user (/root is 0700)
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind", str(root), str(root)]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for dev in sorted(Path("/dev").glob("nvidia*")):  # a GPU box: the kernel may use the GPU
        cmd += ["--dev-bind", str(dev), str(dev)]
    cmd += ["--perms", "0755", "--dir", "/grade",
            "--ro-bind", str(box / "in"), "/grade/in", "--bind", str(box / "out"), "/grade/out",
            "--ro-bind", str(HARNESS), "/grade/harness.py", "--chdir", "/tmp",
            *(["--perms", "0755", "--dir", "/grade/public"] if public else []),
            *[a for m in public for a in ("--ro-bind", str(m), f"/grade/public/{m.name}")],
            sys.executable, "/grade/harness.py", "/grade/in/plan.json"]
    return cmd


class _Drain(threading.Thread):
    """Reads a pipe until EOF, keeping only its last ``OUTPUT_TAIL`` bytes (a flood costs nothing)."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.tail, self.total = pipe, bytearray(), 0

    def run(self) -> None:
        while True:
            chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
            if not chunk:
                return
            self.total += len(chunk)
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL]


def _pss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def _tree(pid: int) -> list[int]:
    import psutil

    try:
        proc = psutil.Process(pid)
        return [pid] + [p.pid for p in proc.children(recursive=True)]
    except psutil.Error:
        return []


def _dir_size(path: Path, max_entries: int = 10_000) -> int:
    total, count = 0, 0
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            count += 1
            if count > max_entries:
                return OUT_MAX + 1
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _processes_in_ns(ns: str) -> list[int]:
    """Live processes of the PID namespace ``ns`` (zombies are reaped when they are ours, else skipped:
    a dead process holds no memory and runs nothing)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or _pid_ns(int(entry)) != ns:
            continue
        try:
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("Z", "X"):
            try:
                os.waitpid(int(entry), os.WNOHANG)
            except OSError:
                pass
            continue
        found.append(int(entry))
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _remove_tree(path: Path) -> None:
    def unlock(func, p, exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=unlock)


def _read_record(path: Path) -> Any:
    """Load one file the sandbox wrote: a regular file (no link, no FIFO), not too big, plain data
    (JSON, or torch.load with ``weights_only=True``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > RECORD_MAX:
            raise ValueError("not a regular file of a sensible size")
        data = f.read(RECORD_MAX + 1)
    if path.suffix == ".json" and path.name == "run.json":
        return json.loads(data.decode("utf-8"))
    return harness.loads(data, path.suffix)


@dataclass
class Limits:
    timeout_s: float = 300
    memory_bytes: int = 4 * 2**30
    harness_s: float = 120
    case_s: float = 30
    max_tasks: int = 1024


def run_in_sandbox(notebook_bytes: bytes, name: str, plan_items: list[dict], inputs: dict[int, list],
                   *, limits: Limits, mode: str, public: list[Path] = ()) -> tuple[str, str, dict[int, Any], dict]:
    """Run one notebook with the harness; return (outcome, detail, records by index, run report)."""
    box = Path(tempfile.mkdtemp(prefix="lectorch-grade-"))
    try:
        (box / "in" / "inputs").mkdir(parents=True)
        (box / "out").mkdir()
        (box / "tmp").mkdir()
        (box / "in" / "notebook.ipynb").write_bytes(notebook_bytes)
        for index, cases in inputs.items():
            written = harness.dump(cases, box / "in" / "inputs" / str(index))
            next(i for i in plan_items if i["index"] == index)["inputs"] = f"inputs/{written.name}"
        if mode == "bwrap":
            inside = {"in": "/grade/in", "out": "/grade/out", "tmp": "/tmp", "harness": "/grade/harness.py"}
        else:
            inside = {"in": str(box / "in"), "out": str(box / "out"), "tmp": str(box / "tmp"), "harness": str(HARNESS)}
        home, runtime = f"{inside['tmp']}/home", f"{inside['tmp']}/runtime"
        plan = {
            "notebook": f"{inside['in']}/notebook.ipynb", "notebook_name": name,
            "workdir": f"{inside['tmp']}/work", "out": inside["out"], "harness": inside["harness"],
            "make_dirs": [home, runtime], "timeout": limits.timeout_s, "harness_timeout": limits.harness_s,
            "case_timeout": limits.case_s, "drop_to": NOBODY if os.geteuid() == 0 and mode == "bwrap" else None,
            "exercises": plan_items,
            # one process hits its data limit (MemoryError, the notebook goes on) before the whole
            # sandbox's PSS reaches the limit (killed)
            "limits": {"RLIMIT_DATA": int(limits.memory_bytes * 0.85), "RLIMIT_NPROC": limits.max_tasks,
                       "RLIMIT_CPU": int(limits.timeout_s + limits.harness_s + 60), "RLIMIT_FSIZE": OUT_MAX,
                       "RLIMIT_CORE": 0},
        }
        (box / "in" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
        for p in [box / "in", *(box / "in").rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if os.geteuid() == 0 and mode == "bwrap":
            for p in (box / "out", box / "tmp"):
                os.chown(p, NOBODY, NOBODY)
        public = [Path(m).resolve() for m in public]
        pythonpath = ":".join(["/grade/public"] if mode == "bwrap" else sorted({str(m.parent) for m in public}))
        env = _env(home, inside["tmp"], runtime, pythonpath if public else "")
        if mode == "bwrap":
            cmd = _bwrap_command(box, env, limits.memory_bytes, public)
        else:
            os.chmod(box, 0o755)
            cmd = [sys.executable, str(HARNESS), str(box / "in" / "plan.json")]
            _become_subreaper()
        before = set(_tree(os.getpid()))
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, cwd=str(box / "tmp") if mode != "bwrap" else "/", start_new_session=True)
        drain = _Drain(proc.stdout)
        drain.start()
        outcome, detail, sandbox_ns = _watch(proc, box / "out", limits)
        _kill_leftovers(proc, mode, before, sandbox_ns)
        drain.join(timeout=5)
        records: dict[int, Any] = {}
        report: dict = {}
        for item in plan_items:
            for suffix in (".json", ".pt"):
                path = box / "out" / f"{item['index']}{suffix}"
                if os.path.lexists(path) and item["index"] not in records:
                    try:
                        records[item["index"]] = _read_record(path)
                    except Exception as err:  # noqa: BLE001 - tampered or truncated: graded as unreadable
                        records[item["index"]] = {"unreadable": f"{type(err).__name__}"}
        if os.path.lexists(box / "out" / "run.json"):
            try:
                report = _read_record(box / "out" / "run.json")
                report = report if isinstance(report, dict) else {}
            except Exception:  # noqa: BLE001
                report = {}
        if outcome == "ok" and not report.get("collected"):
            outcome = "crashed"
            reason = report.get("crashed") or ("its kernel died" if report.get("kernel_died") else
                                               "its processes were killed: did it kill its own kernel?")
            detail = f"the notebook stopped before its answers were collected ({reason})"
        if outcome == "ok" and report.get("timed_out"):
            outcome = "timeout"
            detail = f"stopped after {limits.timeout_s:g} s (an endless loop?); later cells did not run"
        return outcome, detail, records, report
    finally:
        _remove_tree(box)


def _watch(proc: subprocess.Popen, out: Path, limits: Limits) -> tuple[str, str, str | None]:
    start = time.monotonic()
    wall = limits.timeout_s + limits.harness_s + 60
    outcome, detail, tick = "ok", "", 0
    own_ns, sandbox_ns = _pid_ns(os.getpid()), None
    while proc.poll() is None:
        time.sleep(0.2)
        tick += 1
        if sandbox_ns is None:
            for pid in _tree(proc.pid)[1:]:
                ns = _pid_ns(pid)
                if ns is not None and ns != own_ns:
                    sandbox_ns = ns
                    break
        elapsed = time.monotonic() - start
        if elapsed > wall:
            outcome, detail = "timeout", f"stopped after {limits.timeout_s:g} s (an endless loop?)"
        elif tick % 2 == 0 and _pss(_tree(proc.pid)) > limits.memory_bytes:
            outcome, detail = "memory", f"stopped: used more than {limits.memory_bytes / 2**30:g} GiB of memory"
        elif tick % 5 == 0 and _dir_size(out) > OUT_MAX:
            outcome, detail = "output", "stopped: wrote too much into the grading folder"
        if outcome != "ok":
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            break
    return outcome, detail, sandbox_ns


def _kill_leftovers(proc: subprocess.Popen, mode: str, before: set[int], sandbox_ns: str | None = None) -> None:
    """Make sure that nothing the submission started is still running."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    if sandbox_ns is not None:  # the PID namespace dies with its first process; check, and insist
        for _ in range(50):
            left = _processes_in_ns(sandbox_ns)
            if not left:
                break
            _kill(left)
            time.sleep(0.05)
    if mode != "bwrap":  # orphans were reparented to this process (subreaper): kill the new ones
        for _ in range(3):
            extra = [p for p in _tree(os.getpid()) if p not in before and p != os.getpid()]
            if not extra:
                break
            _kill(extra)
            for p in extra:
                try:
                    os.waitpid(p, 0)
                except OSError:
                    pass


# ------------------------------------------------------------------------------ judging


def _unreadable(value: Any) -> str | None:
    if isinstance(value, dict):
        if set(value) == {harness.UNREADABLE}:
            return str(value[harness.UNREADABLE])
        for v in value.values():
            found = _unreadable(v)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for v in value:
            found = _unreadable(v)
            if found:
                return found
    return None


def _restore(value: Any) -> Any:
    """Sets come back from the sandbox as ``{SET: [...]}``: make them sets again (plain data only)."""
    if isinstance(value, dict):
        if set(value) == {harness.SET} and isinstance(value[harness.SET], list):
            items = [_restore(v) for v in value[harness.SET]]
            try:
                return set(items)
            except TypeError:  # unhashable items: leave the marker, the comparison fails
                return value
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_restore(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _not_done(value: Any) -> bool:
    return value is None or _unreadable(value) == "ellipsis"


def judge(ex: Any, entry: dict, record: Any, expr: str) -> tuple[str, str]:
    """(status, message) of one exercise from its bundle entry and the sandbox's plain record."""
    from lectorch.exercises import _short, compare

    if not isinstance(record, dict) or "unreadable" in record:
        return "error", "the answer could not be read back from the notebook's kernel"
    if not record.get("found"):
        why = str(record.get("message", ""))[:200]
        return "missing", f"no `{expr}` after running the notebook ({why})" if why else f"no `{expr}`"

    def against(got: Any, expected: Any) -> str | None:
        what = _unreadable(got)
        if what:
            return f"your answer contains a {what}, which the grader cannot read back (use numbers, tuples, lists or tensors)."
        try:
            return compare(ex, _restore(got), expected)
        except Exception as err:  # noqa: BLE001 - a strange answer must not stop grading
            return f"your answer could not be compared ({type(err).__name__}): is it of the asked type?"

    if entry["kind"] != "function":
        got = record.get("value")
        if _not_done(got):
            return "not implemented", "Not implemented yet."
        expected = ex.expected if entry.get("sealed_only") else grading.decode(entry["expected"])
        problem = against(got, expected)
        return ("passed", f"Correct: {ex.title}.") if problem is None else ("failed", problem)
    if not record.get("callable"):
        got = record.get("value")
        if _not_done(got):
            return "not implemented", "Not implemented yet."
        return "failed", f"Expected a function, got {_short(got)}."
    cases, results = entry["cases"], record.get("cases")
    if not isinstance(results, list) or len(results) != len(cases):
        return "not reached", "the hidden cases did not all run (time limit?)"
    for i, (case, res) in enumerate(zip(cases, results), start=1):
        where = f"Case {i} of {len(cases)}" + (f" ({case['description']})" if case["description"] else "")
        if not isinstance(res, dict):
            return "error", f"{where}: no result"
        if "input_error" in res:
            return "error", f"{where}: the hidden input could not be rebuilt in your kernel (did you replace part of lectorch?)"
        if "timeout" in res:
            return "failed", f"{where}: your function took longer than {res['timeout']:g} s."
        if "raised" in res:
            names = [str(n) for n in res.get("raised", [])]
            if "NotImplementedError" in names:
                return "not implemented", "Not implemented yet: your function still raises NotImplementedError."
            if case["raises"] is not None and case["raises"] in names:
                continue
            kind = names[0] if names else "an error"
            return "error", f"{where}: your function raised {kind}: {str(res.get('message', ''))[:200]}."
        if "returned" not in res:
            return "error", f"{where}: no result"
        got = res["returned"]
        if case["raises"] is not None:
            return "failed", f"{where}: expected an error ({case['raises']}) for this input, but your function returned {_short(got)}."
        if _unreadable(got) == "ellipsis" or (got is None and case["expected"] is not None):
            return "not implemented", "Not implemented yet: your function returns nothing."
        problem = against(got, grading.decode(case["expected"]))
        if problem is not None:
            return "failed", f"{where}: {problem}"
    n = len(cases)
    return "passed", f"Correct: {ex.title} ({n} case{'s' if n != 1 else ''} pass)."


# ------------------------------------------------------------------------------ grading


def grade_notebook(submission: str, name: str, data: bytes, *, reference_dir: Path, bundle: dict,
                   registry: dict, limits: Limits, mode: str, public: list[Path] = ()) -> tuple[list[Grade], Run]:
    start = time.monotonic()
    ref = reference_dir / name
    if not ref.is_file():
        run = Run(submission, name, "no reference", 0.0, f"no reference chapter named {name}")
        return [Grade(submission, name, "-", "not graded", run.detail)], run
    calls = grading.check_calls(grading.read_notebook_json(ref))
    grades: dict[str, Grade] = {}
    plan_items, inputs, todo = [], {}, []
    for index, (ex_id, expr) in enumerate(calls):
        entry = bundle["exercises"].get(ex_id)
        if ex_id not in registry or entry is None:
            grades[ex_id] = Grade(submission, name, ex_id, "not graded",
                                  "this exercise is not in the grading bundle: rebuild it (make grading-bundle)")
            continue
        todo.append((index, ex_id, expr, entry))
    try:
        nb = json.loads(data.decode("utf-8"))
        if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
            raise ValueError("no list of cells")
        import nbformat

        nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as err:  # noqa: BLE001 - anything a submission may be
        detail = f"the file is not a notebook ({type(err).__name__}: {str(err)[:100]})"
        for _, ex_id, _, _ in todo:
            grades[ex_id] = Grade(submission, name, ex_id, "not reached", detail)
        return [grades[i] for i, _ in calls], Run(submission, name, "invalid", time.monotonic() - start, detail)
    present = {ex_id for ex_id, _ in grading.check_calls(nb)}
    for index, ex_id, expr, entry in todo:
        if ex_id not in present:
            grades[ex_id] = Grade(submission, name, ex_id, "missing",
                                  f'the check cell was deleted or changed: restore lectorch.check("{ex_id}", {expr})')
            continue
        plan_items.append({"index": index, "id": ex_id, "expr": expr, "kind": entry["kind"],
                           "inputs": f"inputs/{index}.pt" if entry["kind"] == "function" else None})
        if entry["kind"] == "function":
            inputs[index] = [{"args": c["args"], "kwargs": c["kwargs"], "call": c.get("call")} for c in entry["cases"]]
    outcome, detail, records = "ok", "", {}
    if plan_items:
        outcome, detail, records, _ = run_in_sandbox(data, name, plan_items, inputs, limits=limits, mode=mode,
                                                     public=public)
    for item in plan_items:
        ex_id = item["id"]
        record = records.get(item["index"])
        if record is None:
            why = detail or "its answer was never collected (an earlier cell crashed the kernel?)"
            grades[ex_id] = Grade(submission, name, ex_id, "not reached", why)
            continue
        try:
            status, message = judge(registry[ex_id], bundle["exercises"][ex_id], record, item["expr"])
        except Exception as err:  # noqa: BLE001 - a tampered record must not stop the run
            status, message = "error", f"the answer could not be graded ({type(err).__name__})"
        if status == "missing" and outcome != "ok":
            status, message = "not reached", detail
        grades[ex_id] = Grade(submission, name, ex_id, status, message)
    run = Run(submission, name, outcome, round(time.monotonic() - start, 2), detail)
    return [grades[i] for i, _ in calls], run


def collect_submissions(folder: Path) -> list[tuple[str, str, bytes]]:
    """Read every notebook ONCE, up front: a submission cannot change a later one on disk."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"SUBMISSIONS={folder} is not a folder of notebooks")
    paths = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and p.is_file())
    if not paths:
        raise ValueError(f"no .ipynb files under {folder}")
    out = []
    for p in paths:
        rel = p.relative_to(folder)
        submission = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        size = p.stat().st_size
        data = p.read_bytes() if size <= NOTEBOOK_MAX else b"too big"
        out.append((submission, p.name, data))
    return out


def grade_folder(folder: Path, *, bundle: Path | dict, reference_dir: Path = ROOT / "chapters",
                 registry: dict | None = None, timeout_s: float = 300, memory_gb: float = 4,
                 isolation: str = "auto", progress=None, public: list[Path] = (),
                 max_tasks: int = 1024) -> Report:
    """Grade every notebook under ``folder``; the submission is its first sub-folder (or the file).

    ``public``: extra exercise modules (Python files) the students have too; the sandbox can import
    them. ``registry`` (default: every exercise of lectorch) must hold their exercises."""
    from lectorch.exercises import exercises

    if timeout_s <= 0 or memory_gb <= 0:
        raise ValueError("timeout_s and memory_gb must be > 0")
    notebooks = collect_submissions(folder)
    if isinstance(bundle, dict):
        info = {"fingerprint": "in memory", "created": bundle.get("created"), "lectorch": bundle.get("lectorch")}
    else:
        path, bundle = bundle, grading.read_bundle(bundle)
        info = {"fingerprint": grading.fingerprint(path)}
        info.update(created=bundle.get("created"), lectorch=bundle.get("lectorch"))
    registry = exercises() if registry is None else registry
    if isolation == "auto":
        mode = "bwrap" if bwrap_works() else "none"
    elif isolation == "bwrap" and not bwrap_works():
        raise ValueError("bubblewrap (bwrap) is not usable here: install it, or pass --isolation none")
    else:
        mode = isolation
    limits = Limits(timeout_s=timeout_s, memory_bytes=int(memory_gb * 2**30), max_tasks=max_tasks)
    report = Report(describe_isolation(mode), info)
    for submission, name, data in notebooks:
        grades, run = grade_notebook(submission, name, data, reference_dir=Path(reference_dir), bundle=bundle,
                                     registry=registry, limits=limits, mode=mode, public=list(public))
        report.grades += grades
        report.runs.append(run)
        if progress:
            progress(f"graded {submission}/{name}: {run.outcome}, {run.seconds:.1f} s")
    return report


def table(report: Report | list[Grade]) -> str:
    grades = report.grades if isinstance(report, Report) else report
    rows = [("submission", "notebook", "exercise", "status")] + [(g.submission, g.notebook, g.exercise, g.status)
                                                                 for g in grades]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    passed = sum(g.passed for g in grades)
    lines.append(f"\n{passed} passed, {len(grades) - passed} not passed")
    if isinstance(report, Report):
        lines.insert(0, f"isolation: {report.isolation}\n")
    return "\n".join(lines)


def check_output_path(path: Path) -> None:
    """Fail now, not after an hour of grading, when ``path`` cannot be written."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ValueError(f"--json {path} is a folder; give a file name")
    if not parent.is_dir():
        raise ValueError(f"--json {path}: the folder {parent} does not exist")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".grades-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"--json {path}: cannot write in {parent} ({err.strerror})") from None


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a reader sees the old file or the new one)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=".grades-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _progress(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--bundle", type=Path, required=True, help="the instructor's grading bundle (make grading-bundle)")
    parser.add_argument("--reference", type=Path, default=ROOT / "chapters", help="reference chapters (default chapters/)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per notebook (default 300)")
    parser.add_argument("--memory-gb", type=float, default=4, help="memory limit per notebook in GiB (default 4)")
    parser.add_argument("--json", type=Path, help="also write the report here as JSON")
    parser.add_argument("--isolation", choices=("auto", "bwrap", "none"), default="auto",
                        help="sandbox: bubblewrap when it works (auto), required (bwrap) or none (weak)")
    parser.add_argument("--exercises", type=Path, action="append", default=[],
                        help="a Python file that registers extra exercises (public: the sandbox can import it)")
    args = parser.parse_args(argv)
    if args.timeout <= 0 or args.memory_gb <= 0:
        parser.error("--timeout and --memory-gb must be > 0")
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the run outlives a closed terminal or a killed parent
    try:
        if args.json:
            check_output_path(args.json)
        for extra in args.exercises:
            import runpy

            runpy.run_path(str(extra), run_name="lectorch_extra_exercises")
        report = grade_folder(args.submissions, bundle=args.bundle, reference_dir=args.reference,
                              timeout_s=args.timeout, memory_gb=args.memory_gb, isolation=args.isolation,
                              progress=_progress, public=args.exercises)
    except ValueError as err:
        parser.error(str(err))
    if args.json:
        write_json(args.json, report.as_json())
    try:
        print(table(report), flush=True)
    except BrokenPipeError:  # whoever read our output is gone; the JSON is written
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
