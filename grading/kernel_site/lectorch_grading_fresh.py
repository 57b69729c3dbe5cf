"""The grader's fresh process, inside the sandbox: each exercise's program (built by
grading/review.py from the notebook's source) runs in a child forked from the harness's process,
which imported torch and lectorch and ran nothing of the student's; before the program's first
statement, the routines the exercise forbids are replaced by raisers. A timer's simulated device and
runner stay in the harness's process, and the answer gets stubs.

It lives in the sandbox's read-only site folder (on its ``PYTHONPATH``), not in harness.py: the
student's kernel compiles harness.py at each collection, and this code never runs there. The
harness passes itself in (:func:`run`), for its plain-data helpers and :func:`collect`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

H: ModuleType  # the harness module (set by run)


def run(plan: dict, plan_path: Path, started: float, harness: ModuleType) -> dict:
    """Every exercise of ``plan`` in a fresh process; the harness's report."""
    global H
    H = harness
    return _fresh(plan, plan_path, started)




def _remove(spec: dict | None):
    """Before any of the student's source runs: each routine the exercise forbids replaced by one
    that raises, where it is defined and where the library exposes it (a copy or table made from
    it afterwards holds the raiser), and the checker's refusals switched on for good. Returns a
    maker of the "without creating a tensor" refusal, for the program's statements (None when not
    asked)."""
    if not spec:
        return None
    from lectorch.exercises.refuse import RefusedShortcut, refusing, resolve  # the sandbox's read-only lectorch

    what = spec.get("what", "this")

    def raiser(name: str):
        def refused(*args, **kwargs):
            raise RefusedShortcut(f"this exercise asks you to write {what} yourself: {name} does not exist "
                                  "while your answer is graded.")
        refused.__name__ = refused.__qualname__ = name.rsplit(".", 1)[-1]
        return refused

    names = list(spec.get("names", []))
    refusing(names, what).__enter__()  # never left: this process grades one exercise and ends
    held: set[str] = set()  # the modules the forbidden routines came from
    swaps = {}  # and every other module that holds one (torch.optim._functional.adam)
    for name in names:
        owner_name, _, attr = name.rpartition(".")
        try:
            obj, owner = resolve(name), resolve(owner_name)
        except ValueError:
            continue
        homes = [(owner, attr)]
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        if module is not None and getattr(module, attr, None) is obj:
            homes.append((module, attr))
        held.update(m.__name__ for m in (owner, module) if isinstance(m, ModuleType))
        refused = raiser(name)
        if callable(obj) and not isinstance(obj, ModuleType):
            swaps.setdefault(id(obj), (obj, refused))
        for home, key in homes:
            try:
                setattr(home, key, refused)
            except (AttributeError, TypeError):
                pass
    _replace_in_modules(swaps, spare="lectorch.exercises")
    if spec.get("autograd"):  # gradients by hand: autograd's engine, however it is reached
        _remove_engine(raiser("torch.autograd.graph._engine_run_backward"))
        _grad_modes_off(RefusedShortcut, what)
        held.update({"torch.autograd", "torch.autograd.graph", "torch.autograd.variable"})
    # a module loaded again (importlib.reload, or imported after leaving sys.modules) would hold
    # fresh copies of what was removed: those modules cannot be loaded again here
    held.discard("torch")
    sys.meta_path.insert(0, _NoReload(frozenset(held), what))
    # the routines' aten operators, and every operator where no tensor may be made: refused below
    # torch's Python layer, where torch-function modes and their switches do not reach
    _Operators(frozenset(o.strip("_") for o in spec.get("ops", ())), bool(spec.get("no_tensors")),
               what, RefusedShortcut).__enter__()
    _seal_dispatch(raiser)
    _seal_gc(raiser)
    if spec.get("no_tensors") or spec.get("numpy_off"):
        _numpy_off(raiser, what)
    return (lambda: refusing((), what, no_tensors=True)) if spec.get("no_tensors") else None


#: torch's switches that would take an operator past the refusing dispatch mode (pop it, push a mode
#: above it, exclude its dispatch key, call a kernel directly) or hook what autograd saves.
_DISPATCH_SWITCH = re.compile(r"Guard$|^_?(Disable|Enable|Auto|Restore|Preserve|Set)|_set_|_unset_|_push_|_pop_"
                              r"|_call_boxed")


def _seal_dispatch(raiser) -> None:
    """The switches of :data:`_DISPATCH_SWITCH` in ``torch._C`` and the mode stack's helpers of
    ``torch.utils._python_dispatch`` replaced by raisers, in every module that holds one: the
    refusing mode is on the stack already, and nothing may take it off, step past it or stack
    another above it."""
    import torch
    import torch.utils._python_dispatch as modes

    switches = {}
    for owner, prefix in ((torch._C, "torch._C"), (torch._C._autograd, "torch._C._autograd"), (modes, modes.__name__)):
        for name in dir(owner):
            if owner is modes:
                sealed = re.search(r"^_(disable|pop|push|set)_", name)  # what changes the stack (torch reads it)
            else:
                sealed = (_DISPATCH_SWITCH.search(name) and "torch_function" not in name
                          and re.search(r"ispatch|FuncTorch|Python|saved_tensors", name))
            if sealed:
                obj = getattr(owner, name)
                switches[id(obj)] = (obj, raiser(f"{prefix}.{name}"))  # obj held: its id stays its own
    _replace_in_modules(switches)


def _replace_in_modules(swaps: dict, spare: str | None = None) -> None:
    """Every module-level name bound to an object of ``swaps`` ({id(obj): (obj, replacement)}; the
    object held so that its id stays its own) rebound to the replacement, but in the modules under
    ``spare`` (the checker's own, whose runners may need a refused routine)."""
    for name, module in list(sys.modules.items()):
        if spare and (name == spare or name.startswith(spare + ".")):
            continue
        space = getattr(module, "__dict__", None)
        if isinstance(space, dict):
            for key, value in list(space.items()):
                if id(value) in swaps:
                    space[key] = swaps[id(value)][1]


def _seal_gc(raiser) -> None:
    """The garbage collector's object walks replaced by raisers: a removed routine's original may
    still be alive somewhere (a wrapper's closure, a registry), and these would find it."""
    import gc

    for name in ("get_objects", "get_referrers", "get_referents"):
        setattr(gc, name, raiser(f"gc.{name}"))


def _numpy_off(raiser, what: str) -> None:
    """No array made (where no tensor may be made, and where the gradients come from autograd):
    every routine and type of numpy (torch imported it) replaced by a raiser in every module that
    holds one, so numpy reached under any name (an alias, a module's private ``_np``) computes
    nothing."""
    numpy = [m for name, m in sorted(sys.modules.items(), key=lambda item: (item[0].count("."), item[0]))
             if name.split(".")[0] == "numpy" and isinstance(m, ModuleType)]  # numpy.empty named before its home
    def of_numpy(obj) -> bool:  # a routine, type or ufunc of numpy's, or a method bound to one
        home = getattr(obj, "__module__", None)
        home = home if isinstance(home, str) else type(obj).__module__
        bound = getattr(obj, "__self__", None)
        return home.split(".")[0] == "numpy" or (bound is not None and not isinstance(bound, ModuleType)
                                                 and type(bound).__module__.split(".")[0] == "numpy")

    swaps = {}
    for module in numpy:
        for key, value in list(vars(module).items()):
            if not key.startswith("__") and callable(value) and id(value) not in swaps and of_numpy(value):
                refused = raiser(f"{module.__name__}.{key}")
                swaps[id(value)] = (value, _type_that_refuses(value, refused) if isinstance(value, type) else refused)
            elif not callable(value) and type(value).__module__.split(".")[0] == "numpy" and (
                    hasattr(value, "item") or hasattr(value, "type") or hasattr(value, "dtype")):
                # a scalar, a dtype or an iinfo leads back to an array (np.True_.__array__(),
                # dtype.type): the plain value or its name instead
                swaps[id(value)] = (value, value.item() if hasattr(value, "item") else str(value))
    _replace_in_modules(swaps)
    sys.meta_path.insert(0, _NoReload(frozenset(), what, families=("numpy",)))  # a part not loaded yet stays so


def _type_that_refuses(original: type, refused) -> type:
    """A stand-in for the type ``original`` that ``isinstance`` and ``issubclass`` still answer for
    (torch asks them of numpy's types) but that makes nothing: calling it is ``refused``."""
    class Refusing(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, original)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, original)

        def __call__(cls, *args, **kwargs):
            return refused(*args, **kwargs)

    return Refusing(original.__name__, (), {"__module__": original.__module__})


def _remove_engine(refused) -> None:
    """autograd's engine replaced by ``refused`` wherever Python reaches it."""
    import torch
    import torch.autograd.graph as graph
    import torch.autograd.variable as variable

    engine = graph._engine_run_backward
    _replace_in_modules({id(engine): (engine, refused)})

    class _NoEngine:
        def __getattr__(self, name):
            return refused

    variable.Variable._execution_engine = _NoEngine()
    torch._C._ImperativeEngine = refused  # a new engine of one's own


def _grad_modes_off(refused_type, what: str) -> None:
    """Gradient recording off for good, backward and forward (dual numbers): no graph is built, so
    nothing of autograd's (a node's ``_grad_fn``, a tangent) can stand in for gradients by hand.
    Switching a mode off again (``torch.no_grad()``) still works; on is refused."""
    import torch

    swaps = {}
    for name in ("_set_grad_enabled", "_set_fwd_grad_enabled"):
        original = getattr(torch._C, name)
        original(False)

        def only_off(mode, _original=original, _name=name):
            if mode:
                raise refused_type(f"this exercise asks you to write {what} yourself: autograd records "
                                   f"nothing while your answer is graded (torch._C.{_name}).")
            return _original(False)

        swaps[id(original)] = (original, only_off)
    _replace_in_modules(swaps)


#: audited events refused to the answer's own code (the frame that raised them): code built or run
#: (a module's source run again, a refused routine's bytecode in a new function), a pickle's globals,
#: a frame (and through it the builtins, under no name the review reads)
_REFUSED_EVENTS = frozenset({"exec", "compile", "marshal.load", "marshal.loads", "function.__new__", "code.__new__",
                             "pickle.find_class", "sys._getframe", "sys._current_frames"})
#: attributes whose reading is audited (``object.__getattr__``): the frames and code objects
_REFUSED_READS = frozenset({"cr_frame", "gi_frame", "ag_frame", "tb_frame", "cr_code", "gi_code", "ag_code", "f_code",
                            "__code__"})


#: the library's code generators that may exec for the answer: their input is checked first
#: (a dataclass's fields and a namedtuple's names must be Python names)
_CODE_MAKERS = frozenset({"dataclasses", "collections"})


def _generated(filename: str) -> bool:
    """Whether code of this file name was made from a string at run time (``<string>``), not
    read from a file (nor frozen in the interpreter, as importlib is).

    >>> _generated("<string>"), _generated("<frozen importlib._bootstrap>"), _generated("/x/dataclasses.py")
    (True, False, False)
    """
    return filename.startswith("<") and not filename.startswith("<frozen ")


def _identifier_fields_only(refused_type, what: str) -> None:
    """A dataclass's fields must be identifiers: dataclasses writes their names into the source of
    the methods it generates and runs it, so a field named ``"+expr+"`` would run ``expr``."""
    import dataclasses

    process = getattr(dataclasses, "_process_class", None)
    if process is None:  # a Python whose dataclasses works otherwise: nothing to check here
        return

    def checked(cls, *args, **kwargs):
        names = cls.__dict__.get("__annotations__", {})
        odd = [n for n in names if not (isinstance(n, str) and n.isidentifier())]
        if odd:
            raise refused_type(f"this exercise asks you to write {what} yourself: a dataclass field named "
                               f"{str(odd[0])[:40]!r} is not a Python name.")
        return process(cls, *args, **kwargs)

    dataclasses._process_class = checked


def _audit_walls(namespace: dict, refused_type, what: str) -> None:
    """An audit hook (it cannot be removed) that refuses :data:`_REFUSED_EVENTS`, reading
    :data:`_REFUSED_READS` and setting ``__code__`` when the frame that raised them is the answer's
    own code (its globals are the program's namespace). The library keeps them for what it does on
    the answer's behalf: a module imported on first use, a dataclass, a warning's stack level; but
    not exec of a string it was handed (a Timer's statement, a docstring's examples).
    ctypes (a C library loaded, a symbol looked up, a C function called) is refused whenever the
    answer's code is on the stack, whoever calls it (numpy's ``ctypeslib`` loads libraries for it)."""
    getframe = sys._getframe
    inside = []  # the hook's own getframe is an audited event too

    def answer_on_stack(frame) -> bool:
        while frame is not None:
            if frame.f_globals is namespace:
                return True
            frame = frame.f_back
        return False

    def runs_a_string_for_the_answer(frame) -> bool:
        """Whether an exec (or eval) raised in ``frame`` runs code for the answer: the answer is on
        the stack, and neither a module's import (importlib's frozen frames, between) nor a
        generator whose input is checked (:data:`_CODE_MAKERS`) is the one running it. (Compiling
        alone runs nothing: typing compiles a forward reference to check it.)"""
        if frame.f_globals.get("__name__") in _CODE_MAKERS:
            return False
        while frame is not None:
            if frame.f_globals is namespace:
                return True
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return False
            frame = frame.f_back
        return False

    def hook(event: str, args: tuple) -> None:
        if inside:
            return
        if event.startswith("ctypes."):  # native code: refused while the answer runs, through any library
            inside.append(event)
            try:
                mine = answer_on_stack(getframe(1))
            finally:
                inside.pop()
            if mine:
                raise refused_type(f"this exercise asks you to write {what} yourself: native code ({event}) is "
                                   "refused while your answer is graded.")
            return
        if event in _REFUSED_EVENTS:
            name = event
        elif event in ("object.__getattr__", "object.__setattr__") and len(args) > 1 and (
                args[1] in _REFUSED_READS if event == "object.__getattr__" else args[1] == "__code__"):
            name = f".{args[1]}"
        else:
            return
        inside.append(event)
        try:
            frame = getframe(1)
            # the answer's own code, code the library generated from the answer's data (a
            # dataclass's __repr__ from its field names) running for it, or a string the library
            # runs as code for the answer (torch's benchmark Timer, doctest)
            mine = frame.f_globals is namespace or (_generated(frame.f_code.co_filename) and answer_on_stack(frame)) \
                or (event == "exec" and runs_a_string_for_the_answer(frame))
        finally:
            inside.pop()
        if mine:
            raise refused_type(f"this exercise asks you to write {what} yourself: {name} is refused to your "
                               "answer's code while it is graded.")

    sys.addaudithook(hook)
    _identifier_fields_only(refused_type, what)


class _NoReload:
    """A ``sys.meta_path`` finder that refuses to load again the modules the removed routines
    came from (``importlib.reload`` and a fresh import both ask the finders first), and any module
    of the packages ``families``."""

    def __init__(self, held: frozenset, what: str, families: tuple = ()):
        self.held, self.what, self.families = held, what, families

    def find_spec(self, name, path=None, target=None):
        if name in self.held or name.split(".")[0] in self.families:
            again = " again" if name in self.held else ""
            raise ImportError(f"this exercise asks you to write {self.what} yourself: {name} cannot be loaded"
                              f"{again} while your answer is graded.")
        return None


def _Operators(ops: frozenset, no_tensors: bool, what: str, refused: type):
    """A dispatch mode that refuses the aten operators named ``ops`` (and their variants:
    ``_log_softmax``, ``nll_loss_forward``), or every operator when ``no_tensors``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Operators(TorchDispatchMode):
        def __setattr__(self, name, value):
            if name == "__class__":  # into a mode that lets everything through
                raise refused(f"this exercise asks you to write {what} yourself: the refusing mode keeps its class.")
            object.__setattr__(self, name, value)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__.strip("_")
            if no_tensors:
                raise refused(f"this exercise asks for {what} without creating a tensor: {func.name()} is a "
                              "tensor operation, and none runs while your answer is graded.")
            if name in ops or any(name.startswith(o + "_") for o in ops):
                raise refused(f"this exercise asks you to write {what} yourself: the operator {func.name()} "
                              "does not run while your answer is graded.")
            return func(*args, **(kwargs or {}))

    return Operators()


#: What the answer's process may not do, whatever Python it runs: start a thread or a process (the
#: refusals above hold in this thread, and a new process would have none), replace itself with
#: another program, or reach into another process.
NO_NEW_TASKS = ("clone", "clone3", "fork", "vfork", "execve", "execveat", "ptrace",
                "process_vm_readv", "process_vm_writev")


def _no_new_tasks() -> None:
    """The kernel refuses :data:`NO_NEW_TASKS` to this process from now on (seccomp, through
    libseccomp: EPERM, so a thread or a subprocess raises in Python). torch's own threads are not
    needed: its intra-op pool is one thread (the caller)."""
    import ctypes
    import errno

    import torch

    torch.set_num_threads(1)  # a parallel region would need new threads, which cannot start now
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as err:
        raise RuntimeError("the grader needs libseccomp (Debian: apt install libseccomp2) to keep an "
                           f"answer from starting threads or processes: {err}") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EPERM  # SCMP_ACT_ALLOW, SCMP_ACT_ERRNO(EPERM)
    ctx = lib.seccomp_init(allow)  # other ABIs (i386, x32) are killed: libseccomp's default
    if not ctx:
        raise RuntimeError("libseccomp could not make a filter")
    for name in NO_NEW_TASKS:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number >= 0 and lib.seccomp_rule_add(ctx, deny, number, 0) != 0:
            raise RuntimeError(f"libseccomp could not refuse {name}")
    if lib.seccomp_load(ctx) != 0:
        raise RuntimeError("libseccomp could not load its filter")
    try:  # fail closed: the answer does not run where a process could still start
        pid = os.fork()
    except PermissionError:
        return
    if pid == 0:
        os._exit(0)
    raise RuntimeError("the filter did not stop a new process")


def _namespace(item: dict) -> tuple[dict, list[dict]]:
    """In a forked child: remove what the exercise forbids and refuse new threads and processes,
    then run the program the grader built from the notebook (statement by statement; a failing one
    does not stop the rest). Returns the namespace and the statements that raised (their cell, line
    and error)."""
    import ast
    import contextlib

    no_tensors = _remove(item.get("refuse"))
    try:
        _no_new_tasks()
    except RuntimeError as err:  # nothing of the student's runs: the grade names the grader's problem
        return {}, [{"cell": 0, "line": 0, "error": f"the grader: {err}"[:200]}]
    namespace: dict[str, Any] = {"__name__": "__main__"}
    origins = item.get("origins") or []
    errors = []
    codes = [compile(ast.Module(body=[node], type_ignores=[]), "<exercise>", "exec")
             for node in ast.parse(item["program"]).body]
    if item.get("refuse"):
        from lectorch.exercises.refuse import RefusedShortcut

        _audit_walls(namespace, RefusedShortcut, item["refuse"].get("what", "this"))
    for k, code in enumerate(codes):
        try:
            with no_tensors() if no_tensors is not None else contextlib.nullcontext():
                exec(code, namespace)  # the student's statements, as the grader read them
        except BaseException as err:  # noqa: BLE001 - like a cell that raised: the next one runs
            cell, line = origins[k] if k < len(origins) else (0, 0)
            first = (str(err).strip().splitlines() or [""])[0]
            errors.append({"cell": cell, "line": line, "error": f"{type(err).__name__}: {_without_folders(first)}"[:200]})
    return namespace, errors


def _without_folders(text: str) -> str:
    """``text`` with each absolute path cut to its last two parts: an error names the file, not
    the grader's folders.

    >>> _without_folders("cannot import x from 'y' (/opt/venv/lib/site-packages/torch/_dynamo/utils.py)")
    "cannot import x from 'y' (…/_dynamo/utils.py)"
    """
    return re.sub(r"(?<![\w.])/(?:[^\s/'\"()]+/)+(?=[^\s/'\"()]+/[^\s/'\"()]+)", "…/", text)


def _run_program(item: dict, plan: dict, plan_path: Path, out: Path) -> None:
    """In a forked child: the exercise's program, then its answer collected as in a notebook."""
    namespace, errors = _namespace(item)
    one = dict(item, program_errors=errors[:3])  # a plan of this exercise alone (its record is written even when not found)
    if one.get("inputs"):
        one["inputs"] = str(Path(plan_path).parent / one["inputs"])
    mine = out / "plan.json"
    mine.write_text(json.dumps({**plan, "exercises": [one]}), encoding="utf-8")
    H.collect(namespace, str(mine), str(out), only=None)


def _load_once() -> None:
    """What every exercise's process starts with, imported once before any fork: torch, the parts
    of numpy torch loads on first use (so that :func:`_numpy_off` reaches them), every exercise."""
    import numpy.fft, numpy.linalg, numpy.random  # noqa: F401,E401
    import torch  # noqa: F401

    import lectorch.exercises

    lectorch.exercises.exercises()


def _fresh(plan: dict, plan_path: Path, started: float) -> dict:
    """Each exercise's program in its own process, forked from one that imported torch and
    lectorch but ran nothing of the student's (the grader's programs, not the notebook)."""
    import tempfile

    _load_once()
    t_ready = time.monotonic()

    report = {"cells": len(plan["exercises"]), "ran": 0, "errors": 0, "timed_out": False, "kernel_died": False,
              "collected": False, "fresh": True}
    deadline = started + plan["timeout"]
    out = Path(plan["out"])
    # nothing an exercise's process leaves behind reaches the next one (an earlier exercise's
    # process, where a later one's forbidden routines exist, could otherwise work out the later
    # one's answers from its inputs and leave them behind): what it may write to is wiped after it
    # (in the sandbox, where /tmp and /dev/shm are its own), and the records, which it shapes, are
    # written to the output folder only once every exercise has run
    writable = [Path(tempfile.gettempdir()), Path("/dev/shm"), out] if str(out).startswith("/grade/") else []
    before = _contents(writable)
    records: list[tuple[Path, Any]] = []  # (where, a record to dump or a child's file as bytes)
    for item in plan["exercises"]:
        left = deadline - time.monotonic()
        if left <= 0:
            report["timed_out"] = True
            break
        if item.get("outside"):
            record, late = _outside(item, plan, plan_path, deadline)
            _wipe(writable, before)
            records.append((out / str(item["index"]), record))
            report["ran"] += 1
            if late:
                report["timed_out"] = True
                break
            continue
        private = Path(tempfile.mkdtemp(prefix="fresh-"))
        pid = os.fork()
        if pid == 0:  # the child: never returns
            try:
                os.setsid()
                _run_program(item, plan, plan_path, private)
            except BaseException:  # noqa: BLE001
                pass
            finally:
                os._exit(0)
        status = None
        while status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
            elif time.monotonic() > deadline:
                with _suppress():
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                report["timed_out"] = True
                break
            else:
                time.sleep(0.01)
        if status is not None and status != 0:
            report["errors"] += 1
        report["ran"] += 1
        # the record as the child left it (a file the student's code wrote under the output
        # folder's name is overwritten)
        for suffix in (".json", ".pt"):
            got = private / f"{item['index']}{suffix}"
            if got.is_file() and not got.is_symlink():
                records.append((out / f"{item['index']}{suffix}", got.read_bytes()[: 64 * 2**20]))
                break
        _wipe(writable, before)  # the private folder too
        if report["timed_out"]:
            break
    for where, record in records:
        if isinstance(record, bytes):
            tmp = out / f".fresh-{where.name}.tmp"
            tmp.write_bytes(record)
            os.replace(tmp, where)
        else:
            H.dump(record, where)
    report["collected"] = not report["timed_out"]
    report["import_s"] = round(t_ready - started, 2)  # torch and lectorch, once for every exercise
    return report


def _contents(roots: list[Path]) -> dict[str, tuple]:
    """Every path under ``roots`` with its kind, size and modification time."""
    found = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                with _suppress():
                    st = os.lstat(path)
                    found[path] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def _wipe(roots: list[Path], before: dict[str, tuple]) -> None:
    """Everything under ``roots`` that is not as it was in ``before`` removed (deepest first)."""
    import shutil

    for path, state in sorted(_contents(roots).items(), key=lambda item: -item[0].count("/")):
        if before.get(path) != state and not (path in before and os.path.isdir(path) and not os.path.islink(path)):
            with _suppress():
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)


# -------------------------------------------------- a simulated device outside the student's process

_MAX_MESSAGE_BYTES = 2**20


def _send(sock, obj: Any) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(len(data).to_bytes(4, "big") + data)


def _recv(sock) -> Any:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the answer's process ended")
            buf += chunk
        return buf

    size = int.from_bytes(exactly(4), "big")
    if size > _MAX_MESSAGE_BYTES:
        raise ValueError("message too large")
    return json.loads(exactly(size).decode("utf-8"))


def _as_json(value: Any) -> Any:
    try:
        plain = H._json_ready(H.to_plain(value))
        json.dumps(plain)
        return plain
    except (TypeError, ValueError, RecursionError):
        return {H.UNREADABLE: type(value).__name__}


def _answer_side(item: dict, sock) -> None:
    """In the forked child: run the program, then call the answer whenever the grader's process
    asks, with stubs for the callables it was given (each stub asks the grader's process to call
    the real one, e.g. a simulated device's run, sync or clock, and returns its number)."""
    namespace, _ = _namespace(item)
    try:
        answer = eval(item["expr"], namespace)
    except Exception as err:  # noqa: BLE001 - the answer is not there
        _send(sock, {"op": "ready", "found": False, "message": str(err)[:H._MAX_MESSAGE]})
        return
    found = {"op": "ready", "found": True, "callable": callable(answer)}
    if not callable(answer):
        found["value"] = _as_json(answer)
    _send(sock, found)
    while callable(answer):
        msg = _recv(sock)
        if msg.get("op") != "call":
            return

        def stub(k: int):
            def call(*args, **kwargs):
                _send(sock, {"op": "stub", "k": k})
                reply = _recv(sock)
                if reply.get("op") != "value":
                    raise RuntimeError(str(reply.get("message", "the device refused the call")))
                return reply.get("value")
            return call

        args = [stub(a["__stub__"]) if isinstance(a, dict) and set(a) == {"__stub__"} else H._from_json(a)
                for a in msg.get("args", [])]
        kwargs = {k: H._from_json(v) for k, v in msg.get("kwargs", {}).items()}
        try:
            got = answer(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the student's code failed on this case
            _send(sock, {"op": "raised", **H._raised(err)})
            continue
        _send(sock, {"op": "done", "value": _as_json(got)})


class _ChildRaised(Exception):
    def __init__(self, record: dict):
        super().__init__(record.get("message", ""))
        self.record = record


def _outside(item: dict, plan: dict, plan_path: Path, deadline: float) -> tuple[dict, bool]:
    """An exercise whose cases run on a simulated device: the device and the exercise's runner live
    in this process (the grader's copy, which nothing of the student's has run in), the answer in a
    forked child that gets stubs. The log the answer is judged by never enters the child, and the
    record is written here. Returns (the record, whether the time ran out)."""
    import socket

    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            parent.close()
            os.setsid()
            _answer_side(item, child)
        except BaseException:  # noqa: BLE001
            pass
        finally:
            os._exit(0)
    child.close()
    record: dict[str, Any] = {"id": item["id"], "found": True}
    timed_out = False
    try:
        parent.settimeout(max(0.1, deadline - time.monotonic()))
        ready = _recv(parent)
        if not ready.get("found"):
            record.update(found=False, message=str(ready.get("message", ""))[:H._MAX_MESSAGE])
            return record, False
        record["callable"] = bool(ready.get("callable"))
        record["value"] = None if record["callable"] else H._from_json(ready.get("value"))
        if not record["callable"]:
            return record, False
        runner = H._runner(item.get("runner"))
        path = Path(plan_path).parent / item["inputs"]
        cases, dead = [], None

        def proxy(*fargs, **fkwargs):
            stubs, spec = [], []
            for a in fargs:
                if callable(a):
                    stubs.append(a)
                    spec.append({"__stub__": len(stubs) - 1})
                else:
                    spec.append(_as_json(a))
            _send(parent, {"op": "call", "args": spec, "kwargs": {k: _as_json(v) for k, v in fkwargs.items()}})
            while True:
                msg = _recv(parent)
                op = msg.get("op")
                if op == "stub" and isinstance(msg.get("k"), int) and 0 <= msg["k"] < len(stubs):
                    value = stubs[msg["k"]]()
                    _send(parent, {"op": "value", "value": value if isinstance(value, (int, float)) else None})
                elif op == "done":
                    return H._from_json(msg.get("value"))
                elif op == "raised":
                    raise _ChildRaised({"raised": [str(n) for n in msg.get("raised", [])][:8],
                                        "message": str(msg.get("message", ""))[:H._MAX_MESSAGE]})
                else:
                    raise EOFError("the answer's process sent something else")

        for case in H.loads(path.read_bytes(), path.suffix):
            if dead is not None:
                cases.append(dead)
                continue
            try:
                args, kwargs = H.from_inputs(case["call"]) if case.get("call") else (
                    H.from_inputs(case["args"]), H.from_inputs(case["kwargs"]))
            except Exception as err:  # noqa: BLE001
                cases.append({"input_error": str(err)[:H._MAX_MESSAGE]})
                continue
            seconds = min(plan.get("case_timeout", 0) or 1e9, max(0.1, deadline - time.monotonic()))
            parent.settimeout(seconds)
            try:
                cases.append({"returned": H.to_plain(runner(proxy, args, kwargs))})
            except _ChildRaised as err:
                cases.append(err.record)
            except (socket.timeout, TimeoutError):
                dead = {"timeout": round(seconds, 3)}
                cases.append(dead)
                timed_out = time.monotonic() >= deadline
            except (EOFError, OSError, ValueError) as err:
                dead = {"raised": ["RuntimeError"], "message": f"your function's process ended ({str(err)[:100]})"}
                cases.append(dead)
        record["cases"] = cases
        return record, timed_out
    except (EOFError, OSError, ValueError, socket.timeout) as err:
        record.update(found=False, message=f"the answer's process ended ({str(err)[:100]})")
        return record, time.monotonic() >= deadline
    finally:
        parent.close()
        with _suppress():
            os.killpg(pid, signal.SIGKILL)
        with _suppress():
            os.waitpid(pid, 0)


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError)
