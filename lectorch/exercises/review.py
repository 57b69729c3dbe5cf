"""The review of an exercise's code: what it calls, and what it needs (one engine for the grade and
the practice check).

The grader reads each submission's notebook itself; ``lectorch.check`` reads the cells the kernel
ran so far. Both build, with :func:`build`, the exercise's **program**: the statements before the
check call that the answer needs (its definition, the imports and module-level names it uses, the
helpers they call, transitively). Both then :func:`review` that program's AST: a reference to what
the exercise forbids under any spelling visible in the source (aliases, ``from x import y as z``,
attribute chains, the aten op, a numpy or scipy routine of the same name), and the escape hatches
(threads and processes, ``torch._C``, ``torch.ops``, ``torch.overrides``, autograd's engine,
``ctypes``, ``importlib``, ``eval`` and ``exec``, computed ``getattr``, ``types.FunctionType``,
frames and code objects, names whose definition is not in the cells before the check).

A finding names the cell, the line and its text; the grade is then "needs review", never a silent
pass and never a silent zero, and the practice check says the same (:func:`verdict`). The practice
check's review is feedback on code the student controls; the grade is decided by the grader's own
read of the submitted file (``grading/review.py``).

>>> nb = {"cells": [{"cell_type": "code", "source": "import torch as t\\nf = t.log_softmax"},
...                 {"cell_type": "code", "source": "def log_softmax(x):\\n    return f(x, -1)"},
...                 {"cell_type": "code", "source": 'lectorch.check("precision-log-softmax", log_softmax)'}]}
>>> program = build(nb, "precision-log-softmax", "log_softmax")
>>> [f.where() for f in review(program, ["torch.log_softmax"])]
['cell 1, line 2', 'cell 2, line 2']
"""

from __future__ import annotations

import ast
import builtins
import math
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from lectorch.i18n import N_, tr

#: names a notebook may use without defining them (the builtins)
#: ast.parse is not thread-safe in CPython 3.11 before 3.11.8 ("AST constructor recursion depth
#: mismatch", CPython gh-106905), and the grader reviews notebooks in threads
_PARSING = threading.Lock()


def _parse(source: str, mode: str = "exec") -> ast.AST:
    with _PARSING:
        return ast.parse(source, mode=mode)


_BUILTINS = frozenset(dir(builtins))

#: modules an exercise's code may import (and their submodules); anything else is for a human
ALLOWED_MODULES = frozenset({
    "torch", "numpy", "math", "cmath", "statistics", "fractions", "decimal", "functools", "itertools",
    "operator", "collections", "dataclasses", "typing", "random", "time", "os", "tempfile", "pathlib",
    "io", "json", "re", "string", "copy", "bisect", "heapq", "struct", "enum", "abc", "numbers",
    "warnings", "contextlib", "einops", "lectorch", "__future__",
})

#: escape hatches: a reference to any of these (a dotted prefix) is a finding, in every exercise
ESCAPES = {
    "threading": N_("starts a thread"), "_thread": N_("starts a thread"), "concurrent": N_("starts a thread or process"),
    "multiprocessing": N_("starts a process"), "subprocess": N_("starts a process"), "asyncio": N_("runs an event loop"),
    "os.system": N_("starts a process"), "os.popen": N_("starts a process"), "os.fork": N_("starts a process"),
    "os.forkpty": N_("starts a process"), "os.posix_spawn": N_("starts a process"), "os.posix_spawnp": N_("starts a process"),
    "os.kill": N_("signals a process"), "os.environ": N_("reads or sets the environment"),
    "ctypes": N_("calls native code"), "cffi": N_("calls native code"), "numpy.ctypeslib": N_("calls native code"), "importlib": N_("imports by name"),
    "pickle": N_("unpickles code"), "marshal": N_("loads code"), "gc": N_("reaches objects through the garbage collector"),
    "inspect": N_("inspects frames or closures"), "types.FunctionType": N_("copies a function"),
    "types.CodeType": N_("builds code"), "types.LambdaType": N_("copies a function"), "types.MethodType": N_("rebinds a function"),
    "types.ModuleType": N_("builds a module"), "sys.modules": N_("reaches loaded modules"), "sys._getframe": N_("reads frames"),
    "sys.settrace": N_("traces calls"), "sys.setprofile": N_("traces calls"), "sys.meta_path": N_("hooks imports"),
    "builtins": N_("reaches the builtins"), "operator.attrgetter": N_("looks attributes up by name"),
    "operator.methodcaller": N_("calls methods by name"),
    "torch._C": N_("calls torch's C internals"), "torch.ops": N_("calls an aten operator directly"),
    "torch._ops": N_("calls an aten operator directly"), "torch.overrides": N_("switches torch-function modes"),
    "torch.library": N_("registers operators"), "torch.utils.cpp_extension": N_("compiles native code"),
    "torch._dynamo": N_("compiles code"), "torch.compile": N_("compiles code"), "torch.jit": N_("compiles code"),
    "torch.autograd.graph": N_("reaches autograd's engine"), "torch.autograd.Variable": N_("reaches autograd's engine"),
    "torch.autograd.function": N_("reaches autograd's engine"),
    "torch.utils.flop_counter": N_("counts FLOPs by running the code"),
    "torch.profiler": N_("measures the code by running it"), "torch.autograd.profiler": N_("measures the code by running it"),
    "torch.autograd.profiler_util": N_("measures the code by running it"),
    "torch.utils.benchmark": N_("measures the code by running it"),
    # evaluators: they turn a string into an object
    "typing.get_type_hints": N_("evaluates strings as code"), "typing.ForwardRef": N_("evaluates strings as code"),
    "typing._eval_type": N_("evaluates strings as code"), "string.Formatter": N_("looks objects up by a string"),
    "pydoc": N_("looks objects up by a string"), "pkgutil": N_("looks objects up by a string"), "runpy": N_("runs code by name"),
    "code": N_("runs a string as code"), "codeop": N_("compiles a string"), "copyreg": N_("unpickles code"),
    "shelve": N_("unpickles code"), "dill": N_("unpickles code"), "cloudpickle": N_("unpickles code"), "joblib": N_("unpickles code"),
    # loaders that run code, and graph capture that counts or computes for the student
    "torch.hub": N_("loads and runs code"), "torch.package": N_("loads and runs code"),
    "torch.fx": N_("traces the code instead of working it out"), "torch.export": N_("traces the code instead of working it out"),
}
_ESCAPE_OS = ("os.exec", "os.spawn")  # os.execv, os.spawnlp, ...

#: loaders that unpickle, where unpickling runs code unless told not to: the keyword that must be
#: absent or literally the safe value (and no third positional argument, no ``**kwargs``)
LOADERS = {"torch.load": ("weights_only", True), "torch.serialization.load": ("weights_only", True),
           "numpy.load": ("allow_pickle", False)}

#: builtins that run or reach code by name
ESCAPE_BUILTINS = {
    "eval": N_("evaluates a string as code"), "exec": N_("executes a string as code"), "compile": N_("compiles code"),
    "__import__": N_("imports by name"), "globals": N_("reaches the module's namespace"), "locals": N_("reaches a namespace"),
    "vars": N_("reaches a namespace"), "breakpoint": N_("starts a debugger"), "get_ipython": N_("reaches the kernel"),
    "memoryview": N_("reads raw memory"), "__builtins__": N_("reaches the builtins"),
}
#: builtins through which a statement binds names the review cannot read (``exec("f = ...")``): such
#: a statement before the check is part of every program, so that it is reviewed
_OUT_OF_SIGHT = frozenset({"exec", "eval", "compile", "globals", "locals", "vars", "__import__", "__builtins__",
                           "get_ipython", "setattr"})
#: builtins that look attributes up by name: only called with a constant name, never as a value
_BY_NAME = ("getattr", "setattr", "delattr", "hasattr")

#: a frame's and what leads to one (a generator's, a coroutine's, an async generator's, a traceback's):
#: a frame holds its builtins, globals and callers, so exec and __import__ under no name the review reads
_FRAMES = ("f_back", "f_builtins", "f_globals", "f_locals", "f_code", "f_trace", "gi_frame", "gi_code", "gi_yieldfrom",
           "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code", "ag_await", "tb_frame", "tb_next",
           "__traceback__")
#: ctypes under other names (numpy's ``ctypeslib``, a library object's loader) and the class attributes
#: that make a C function callable (a subclass of a ctypes function pointer)
_NATIVE = ("ctypeslib", "load_library", "CDLL", "PyDLL", "cdll", "pydll", "pythonapi", "_flags_", "_argtypes_",
           "_restype_")
#: a code object's parts: what a function is built again from
_CODE = ("co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_qualname", "co_firstlineno")

#: attributes that reach code, frames or another function's internals
ESCAPE_ATTRIBUTES = {
    "__code__": N_("reads or swaps a function's code"), "__closure__": N_("reads a function's closure"),
    "__globals__": N_("reads a function's globals"), "__builtins__": N_("reaches the builtins"),
    "__subclasses__": N_("walks the class tree"), "__wrapped__": N_("unwraps a library function"),
    "__func__": N_("unwraps a method"), "__self__": N_("reaches a bound method's object"),
    **{name: N_("reads frames") for name in _FRAMES}, **{name: N_("reads or swaps a function's code") for name in _CODE},
    "__dict__": N_("reaches an object's namespace"), "__getattribute__": N_("looks attributes up by name"),
    "__setattr__": N_("sets attributes by name"), "__delattr__": N_("deletes attributes by name"),
    "__getattr__": N_("looks attributes up by name"), "get_objects": N_("reaches objects through the garbage collector"),
    "get_referrers": N_("reaches objects through the garbage collector"),
    "get_referents": N_("reaches objects through the garbage collector"),
    "__spec__": N_("reloads a module"), "__loader__": N_("reloads a module"), "exec_module": N_("reloads a module"),
    "load_module": N_("reloads a module"),
    "_execution_engine": N_("calls autograd's engine"), "run_backward": N_("calls autograd's engine"),
    "grad_fn": N_("walks autograd's graph"), "next_functions": N_("walks autograd's graph"),
    "_pop_mode_temporarily": N_("switches torch-function modes"), "DisableTorchFunction": N_("switches torch-function modes"),
    "apply_": N_("runs a Python callback inside a torch call"), "map_": N_("runs a Python callback inside a torch call"),
    "map2_": N_("runs a Python callback inside a torch call"),
    "DisableTorchFunctionSubclass": N_("switches torch-function modes"),
    "_make_wrapper_subclass": N_("builds a tensor subclass that sees torch's calls"),
    "_make_subclass": N_("builds a tensor subclass that sees torch's calls"),
    **{name: N_("calls native code") for name in _NATIVE},
    "__annotations__": N_("writes a class's fields by name (dataclasses runs them as code)"),
    "__torch_dispatch__": N_("sees every torch call (a counter or a replacement of torch's own)"),
    "__torch_function__": N_("sees every torch call (a counter or a replacement of torch's own)"),
}

def _escape_attribute(attr: str) -> str | None:
    """The reason (untranslated) why reaching ``.attr`` is an escape hatch, also under its private
    spelling (``._grad_fn`` is autograd's ``.grad_fn``), or None.

    >>> _escape_attribute("_grad_fn") == _escape_attribute("grad_fn") == "walks autograd's graph"
    True
    >>> _escape_attribute("grad"), _escape_attribute("__init__")
    (None, None)
    """
    if attr in ESCAPE_ATTRIBUTES:
        return ESCAPE_ATTRIBUTES[attr]
    if attr.startswith("_") and not attr.endswith("__"):
        return ESCAPE_ATTRIBUTES.get(attr.lstrip("_"))
    return None


#: the Gaussian integrated by numbers instead of reasoned about: quadrature routines, a ready density
#: (statistics.NormalDist), and the constants and exp that a hand-written density needs
_GAUSSIAN_BY_NUMBERS = ("trapezoid", "trapz", "cumulative_trapezoid", "simpson", "simps", "quad", "romb", "romberg",
                        "fixed_quad", "quadrature", "exp", "expm1", "exp2", "erf", "erfc", "e", "pi", "tau",
                        "NormalDist", "cosh", "sinh", "tanh")  # exp(-x) is cosh(x) - sinh(x)
#: the constants of a hand-written Gaussian density, under the name that EQUIVALENTS forbids: typed
#: as digits (2.718281828459045) they are the same constant
_CONSTANT_DIGITS = {"e": (math.e, 1 / math.e),
                    "pi": (math.pi, 2 * math.pi, math.sqrt(2 * math.pi), 1 / math.sqrt(2 * math.pi), math.sqrt(math.pi),
                           1 / math.sqrt(math.pi))}


def _constant_of(value: float, forbidden: set[str]) -> str | None:
    """The forbidden constant (``"e"``, ``"pi"``) that ``value`` writes as digits (3 or more, within
    0.1 %), or None.

    >>> _constant_of(2.718281828459045, {"e"}), _constant_of(0.3989, {"pi"}), _constant_of(2.5, {"pi"})
    ('e', 'pi', None)
    """
    if len(repr(abs(value)).replace(".", "").strip("0")) < 3:
        return None
    for name, values in _CONSTANT_DIGITS.items():
        if name in forbidden and any(abs(value - c) <= 1e-3 * c for c in values):
            return name
    return None


#: per exercise, routines of the same purpose a student may reach under another library's name
#: (matched by the last name of any library path, or any method of that name)
EQUIVALENTS = {
    "precision-log-softmax": ("log_softmax", "logsumexp", "logcumsumexp", "logaddexp", "logaddexp2", "softmax",
                              "log_softmax_backward_data", "LogSoftmax", "Softmax", "cross_entropy", "nll_loss",
                              "CrossEntropyLoss", "NLLLoss", "softmin", "Softmin", "gumbel_softmax",
                              "softplus", "Softplus",  # softplus(b - a) + a is logaddexp(a, b)
                              # attention kernels that return their rows' logsumexp beside the output
                              "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                              "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                              "_scaled_dot_product_fused_attention_overrideable", "_flash_attention_forward",
                              "_efficient_attention_forward",
                              # a softmax or a logaddexp computed inside another routine
                              "scaled_dot_product_attention", "_safe_softmax", "logsigmoid", "log_sigmoid",
                              "log_sigmoid_forward", "LogSigmoid", "binary_cross_entropy_with_logits",
                              "BCEWithLogitsLoss"),
    "backprop-skip-grads": ("backward", "grad", "vjp", "jvp", "jacrev", "jacfwd", "jacobian", "hessian",
                            "grad_and_value", "vmap", "functional_call"),
    "optim-adamw-step": ("adam", "adamw", "Adam", "AdamW", "_fused_adam", "_fused_adamw", "_fused_adam_",
                         "_fused_adamw_", "sparse_adam"),
    "optim-rmsprop": ("rmsprop", "RMSprop", "RMSProp", "sparse_adam"),
    "optim-clip-grad-norm": ("clip_grad_norm_", "clip_grad_norm", "get_total_norm", "clip_grads_with_norm_",
                             "grad_norm", "_foreach_norm"),
    "train-lr-at-step": ("cosine_lr", "cosine_schedule", "CosineSchedule", "CosineAnnealingLR", "LambdaLR",
                         "OneCycleLR", "LRScheduler", "SequentialLR", "LinearLR", "get_lr", "get_last_lr",
                         "CosineAnnealingWarmRestarts", "ChainedScheduler", "PolynomialLR", "_get_closed_form_lr"),
    "train-get-batch": ("get_batch",),
    "einsum-gqa-scores": ("scaled_dot_product_attention", "attention", "multi_head_attention_forward",
                          "MultiheadAttention"),
    # a formula of two numbers: numerical integration of the Gaussian (and the constants and exp
    # that a hand-written one needs) reaches the tolerance without the derivation
    "init-leaky-std": ("calculate_gain", "kaiming_normal_", "kaiming_uniform_", "init_std", *_GAUSSIAN_BY_NUMBERS),
    # (exp and e stay: (1/√2)ⁿ written as exp(-n·ln 2 / 2) is the derivation)
    "init-relu-depth": tuple(n for n in _GAUSSIAN_BY_NUMBERS if n not in ("exp", "expm1", "exp2", "e")),
}
#: random draws: in an exercise answered without tensors (a prediction, a formula) they are a
#: simulation standing in for the reasoning
_RANDOM = ("random", "numpy.random", "secrets", "os.urandom")
#: exercises about autograd by hand: any reference into autograd or torch.func is a finding
AUTOGRAD_BY_HAND = frozenset({"backprop-skip-grads"})
#: exercises whose gradients come from torch's autograd: numpy is off there as where no tensor may be made
NUMPY_OFF = frozenset({"train-accumulate"})
_AUTOGRAD = ("torch.autograd", "torch.func", "functorch", "torch._functorch")

#: library roots: a dotted path from one of them is the library's (never the student's)
_LIBRARIES = ("torch", "numpy", "scipy", "jax", "lectorch", "einops", "math", "statistics", "sklearn", "tensorflow")

#: the course package's names every exercise may use: the checker's entry point. Any other
#: ``lectorch.*`` name computes a piece of some exercise's answer: a finding unless the exercise
#: lists it (``Exercise.allow``)
LECTORCH_ALLOWED = ("lectorch.check", "lectorch.get_device", "lectorch.__version__")

#: what a "without creating a tensor" exercise may still reach in torch: dtypes and their facts
_NO_TENSOR_OK = ("torch.finfo", "torch.iinfo", "torch.dtype", "torch.Size")


@dataclass(frozen=True)
class Finding:
    """One line the grader will not pass without a human: where it is, its text, and why."""

    cell: int   # 1-based, counting every cell of the notebook (markdown too)
    line: int   # 1-based, within the cell
    text: str
    why: str

    def where(self) -> str:
        """Where the line is: the notebook's cell (in a kernel, the run's ``In [n]``) and line."""
        return tr("cell {cell}, line {line}").format(cell=self.cell, line=self.line)

    def describe(self) -> str:
        return tr("{where}: `{text}`: {why}").format(where=self.where(), text=self.text.strip()[:120], why=self.why)


@dataclass
class _Statement:
    cell: int
    node: ast.stmt
    lines: list[str]
    binds: set[str]
    trusted: bool = False  # the grader's own (a helper of the check expression): not reviewed
    mutates: set[str] = field(default_factory=set)  # names it changes in place without binding them

    @property
    def replaces(self) -> set[str]:
        """Names this statement binds afresh, whatever they held (so earlier bindings are dead)."""
        n = self.node
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            return self.binds
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and getattr(n, "value", None) is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            out: set[str] = set()
            for t in targets:
                for e in ast.walk(t):
                    if isinstance(e, ast.Name) and isinstance(e.ctx, ast.Store) and (
                            t is e or isinstance(t, (ast.Tuple, ast.List))):
                        out.add(e.id)
            # A = dataclass(A), SIZES = dict(SIZES, y=2): the value reads the binding before
            read = {e.id for e in ast.walk(n.value) if isinstance(e, ast.Name) and isinstance(e.ctx, ast.Load)}
            return out - read
        return set()


@dataclass
class Program:
    """The statements one exercise's answer needs, in notebook order, and what could not be found."""

    exercise: str
    expr: str
    statements: list[_Statement] = field(default_factory=list)
    unresolved: list[Finding] = field(default_factory=list)
    found: bool = True        # False: no check call, or the answer's definition was not seen

    def source(self) -> str:
        """Python source of the statements, to run in a fresh process."""
        return "\n\n".join(ast.unparse(s.node) for s in self.statements) + "\n"

    def origins(self) -> list[list[int]]:
        """(cell, line) of each statement of :meth:`source` in the notebook ((0, 0): the grader's
        own), so that a statement that raises in the fresh process is named where the student wrote it."""
        return [[s.cell, s.node.lineno if s.cell else 0] for s in self.statements]


def _cell_text(cell: Mapping) -> str:
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    # IPython magics and shell escapes are not Python: blank them so the rest parses
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _bound_names(node: ast.AST) -> set[str]:
    """Names a top-level statement binds in the module namespace."""
    found: set[str] = set()

    def targets(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            found.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)
        elif isinstance(t, (ast.Attribute, ast.Subscript)):
            root = t
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):  # x.a = ... or x[i] = ...: changes what x holds
                found.add(root.id)

    def visit(n: ast.AST) -> None:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(n.name)
            return
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                found.add((a.asname or a.name).split(".")[0])
            return
        if isinstance(n, ast.Assign):
            for t in n.targets:
                targets(t)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets(n.target)
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            targets(n.target)
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if item.optional_vars is not None:
                    targets(item.optional_vars)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            found.add(n.name)
        elif isinstance(n, ast.NamedExpr):
            targets(n.target)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:  # case object(x=name), case [*rest]
            found.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            found.add(n.rest)
        elif isinstance(n, ast.Delete):
            for t in n.targets:
                targets(t)
        elif isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return found


def _mutated_names(node: ast.stmt) -> set[str]:
    """Names a top-level statement changes in place through a method call, without binding them:
    ``TABLE.update(...)``, ``ROWS.append(...)``, ``GROUPS.setdefault(k, []).append(v)``, also inside
    a ``for``/``while``/``if``/``with``/``try``. (``TABLE[k] = v`` and ``TABLE.x = v`` bind ``TABLE``
    already: :func:`_bound_names`.)

    >>> sorted(_mutated_names(ast.parse("for n in NAMES:\\n    SIZES.append(BYTES[n])").body[0]))
    ['SIZES']
    """
    found: set[str] = set()

    def root(call: ast.Call) -> str | None:  # NAME.m(), NAME.a.m(), NAME[k].m(), NAME.get(k).m()
        e: ast.AST = call.func
        if not isinstance(e, ast.Attribute):
            return None  # f(x): a call of NAME, not a change of it
        while isinstance(e, (ast.Attribute, ast.Subscript, ast.Call)):
            if isinstance(e, ast.Call):
                if not isinstance(e.func, ast.Attribute):
                    return None
                e = e.func
            e = e.value
        return e.id if isinstance(e, ast.Name) else None

    def visit(n: ast.stmt) -> None:
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
            name = root(n.value)
            if name is not None:
                found.add(name)
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.TryStar)):
            for field_name in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(n, field_name, ()):
                    if isinstance(child, ast.ExceptHandler):
                        for inner in child.body:
                            visit(inner)
                    else:
                        visit(child)

    visit(node)
    return found


def _holds_a_check(node: ast.AST) -> bool:
    """Whether ``node`` calls a checker (``lectorch.check("...", ...)``, of any exercise)."""
    return any(isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant)
               and isinstance(n.args[0].value, str)
               and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)) == "check"
               for n in ast.walk(node))


def _local_names(node: ast.AST) -> set[str]:
    """Every name bound anywhere inside ``node`` (parameters, targets, imports, nested defs)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            found.add(n.id)
        elif isinstance(n, ast.arg):
            found.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            found.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            found.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            found.add(n.rest)
    return found


def _free_names(node: ast.AST) -> set[str]:
    """Names ``node`` reads that it does not bind itself (module globals or builtins), and the
    module globals its functions declare ``global`` (``global CALLS; CALLS += 1`` needs ``CALLS = 0``).

    >>> sorted(_free_names(ast.parse("def f():\\n    global n\\n    n += len(x)").body[0]))
    ['len', 'n', 'x']
    """
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    declared = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return (used | declared) - (_local_names(node) - {node.name} - declared)
    return (used | declared) - (_local_names(node) - _bound_names(node) - declared)


def _is_check_call(node: ast.AST, exercise: str) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and n.args:
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = n.args[0]
            if name == "check" and isinstance(first, ast.Constant) and first.value == exercise:
                return True
    return False


def build(notebook: Mapping, exercise: str, expr: str, helpers: Mapping[str, str] | None = None, *,
          last: bool = False) -> Program:
    """The program of ``exercise`` whose answer is ``expr`` (the reference chapter's expression).

    ``helpers``: names of ``expr`` that are the grader's (e.g. ``optimizer_trainer`` of
    ``optimizer_trainer(MyRMSprop)``), by the ``lectorch.exercises`` module they come from: the
    program imports them itself, whatever the notebook binds to those names. ``last``: the program
    is what precedes the *last* check call of ``exercise`` (a kernel's history, where a check may
    have run several times), not the first (a notebook file, where it is written once)."""
    program = Program(exercise, expr)
    candidates: list[_Statement] = []
    helpers = dict(helpers or {})
    reached = 0  # how many candidates precede the check call (the first one, or the last)
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        text = _cell_text(cell)
        try:
            tree = _parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # it cannot run either
        lines = text.splitlines()
        for stmt in tree.body:
            if _is_check_call(stmt, exercise):
                reached = len(candidates) + 1
                if not last:
                    break
                continue
            # a table filled in place (TABLE.update(...)) is part of the program that needs TABLE;
            # a statement that runs a check never is
            mutates = set() if _holds_a_check(stmt) else _mutated_names(stmt)
            candidates.append(_Statement(number, stmt, lines, _bound_names(stmt), mutates=mutates))
        if reached and not last:
            break
    candidates = candidates[:max(reached - 1, 0)]
    if not reached:
        program.found = False
        return program
    try:
        wanted = _free_names(_parse(expr, mode="eval"))
    except SyntaxError:
        program.found = False
        return program
    chosen: set[int] = set()
    seen: set[str] = set(helpers)
    todo = sorted(wanted - set(helpers))
    for i, s in enumerate(candidates):  # a statement that runs a string or rebinds names out of sight
        if not isinstance(s.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
                isinstance(n, ast.Name) and n.id in _OUT_OF_SIGHT for n in ast.walk(s.node)):
            chosen.add(i)
            todo += sorted(_free_names(s.node))
    trusted = []
    for name, module in sorted(helpers.items()):
        if not module.startswith("lectorch.exercises") or not name.isidentifier():
            raise ValueError(f"a helper must come from lectorch.exercises, got {module}:{name}")
        node = _parse(f"from {module} import {name}").body[0]
        trusted.append(_Statement(0, node, [], {name}, trusted=True))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        binders = [i for i, s in enumerate(candidates) if name in s.binds]
        last = [i for i in binders if name in candidates[i].replaces]
        if last:  # bindings before the last fresh one are dead
            binders = [i for i in binders if i >= last[-1]]
        # the statements that change it in place after it was bound (TABLE = {} then
        # TABLE.update(...)): not a module's (torch.manual_seed(0) is not part of a table)
        if binders and not any(isinstance(candidates[i].node, (ast.Import, ast.ImportFrom)) for i in binders):
            binders = sorted({*binders, *(i for i, s in enumerate(candidates)
                                          if name in s.mutates and i > binders[0])})
        if not binders:
            if name not in _BUILTINS:
                program.unresolved.append(Finding(0, 0, name, tr(
                    "uses `{name}`, whose definition the grader cannot see in the cells before the check"
                ).format(name=name)))
            continue
        for i in binders:
            if i not in chosen:
                chosen.add(i)
                todo += sorted(_free_names(candidates[i].node) - seen)
    if any(name in wanted for name in {f.text for f in program.unresolved}):
        program.found = False
    program.statements = trusted + [candidates[i] for i in sorted(chosen)]
    located = []
    for f in program.unresolved:  # the line that uses the name, when the program has one
        use = next(((st, n) for st in program.statements if not st.trusted for n in ast.walk(st.node)
                    if isinstance(n, ast.Name) and n.id == f.text), None)
        if use is None:
            located.append(Finding(0, 0, f.text, f.why))
        else:
            at = _line(*use)
            located.append(Finding(at.cell, at.line, at.text, f.why))
    program.unresolved = located
    return program


def helpers_of(reference: Mapping, expr: str) -> dict[str, str]:
    """The names of ``expr`` that the reference chapter imports from ``lectorch.exercises``."""
    try:
        names = _free_names(_parse(expr, mode="eval"))
    except SyntaxError:
        return {}
    found: dict[str, str] = {}
    for cell in reference.get("cells", []):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        try:
            tree = _parse(_cell_text(cell))
        except (SyntaxError, ValueError):
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("lectorch.exercises"):
                for a in n.names:
                    if (a.asname or a.name) in names and not a.asname:
                        found[a.name] = n.module
    return found


# --------------------------------------------------------------------------------- the review


class _Aliases:
    """What each name of the program stands for, as a dotted library path (imports and plain
    assignments of library paths, anywhere in the program)."""

    def __init__(self, nodes: Iterable[ast.AST]):
        self.paths: dict[str, str] = {}
        self.imported: dict[str, set[str]] = {}  # every import each name is bound to
        assigns = []
        for root in nodes:
            for n in ast.walk(root):
                if isinstance(n, ast.Import) or (isinstance(n, ast.ImportFrom) and n.module and not n.level):
                    for a in n.names:
                        if isinstance(n, ast.ImportFrom):
                            bound, path = a.asname or a.name, f"{n.module}.{a.name}"
                        else:  # import a.b binds a; import a.b as c binds c to a.b
                            bound = a.asname or a.name.split(".")[0]
                            path = a.name if a.asname else bound
                        self.paths[bound] = path
                        self.imported.setdefault(bound, set()).add(path)
                elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                    assigns.append(n)
        for _ in range(3):  # x = torch.nn; f = x.functional: a few rounds settle chains
            for n in assigns:
                path = self.dotted(n.value)
                if path and n.targets[0].id not in self.paths:
                    self.paths[n.targets[0].id] = path

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.paths.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def _canonical(path: str) -> str:
    """``path`` under the names of the modules it passes through: ``np.`` is ``numpy.``, and a
    module reached as another's attribute goes by its own name (``os.sys.modules`` is
    ``sys.modules``, ``torch.ctypes`` is ``ctypes``)."""
    for short, long in (("np.", "numpy."), ("F.", "torch.nn.functional."), ("nn.", "torch.nn.")):
        if path.startswith(short):
            path = long + path[len(short):]
            break
    parts = path.split(".")
    for cut in range(len(parts), 1, -1):
        obj = _lookup(".".join(parts[:cut]))
        if isinstance(obj, types.ModuleType) and obj.__name__ != ".".join(parts[:cut]):
            return ".".join([obj.__name__, *parts[cut:]])
    return path


#: modules that the allowed ones expose under another name (``os.path`` is ``posixpath``)
_ALLOWED_UNDER_ANOTHER_NAME = frozenset({"posixpath", "ntpath", "genericpath", "_collections_abc", "_operator",
                                         "_functools", "_json", "_struct", "_bisect", "_heapq", "_random"})


def _unexpected_module(path: str) -> str | None:
    """Why ``path`` reaches a module that an answer may not import, through another module (``os.sys``), or None."""
    top = _canonical(path).split(".")[0]
    if top in ALLOWED_MODULES or top in _ALLOWED_UNDER_ANOTHER_NAME or path.split(".")[0] == top:
        return None
    if isinstance(sys.modules.get(top), types.ModuleType):
        return tr("reaches the module {module} through another ({path}), which the grader does not expect "
                  "in this exercise").format(module=top, path=path)
    return None


def _library(path: str) -> bool:
    return path.split(".")[0] in _LIBRARIES


def _lookup(path: str) -> Any:
    """The object a dotted library path names in the grader's own process, or None. Only modules
    already imported here are walked (a student's dotted name never makes the grader import)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        obj = module
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except Exception:  # noqa: BLE001 - a name the library lacks
            return None
        return obj
    return None


class _Forbidden:
    def __init__(self, exercise: str, names: Iterable[str], no_tensors: bool, allowed: Iterable[str] = ()):
        self.exercise = exercise
        self.paths = tuple(names)
        self.no_tensors = no_tensors
        self.no_numpy = no_tensors or exercise in NUMPY_OFF
        self.allowed = (*LECTORCH_ALLOWED, *allowed)
        self.objects: dict[int, str] = {}
        for name in self.paths:
            obj = _lookup(name)
            if obj is not None:
                self.objects[id(obj)] = name
        # the last names of library routines, matched under any library path or as a method
        self.last: set[str] = {n.rsplit(".", 1)[-1] for n in self.paths if not n.startswith("lectorch.exercises.")}
        self.last |= set(EQUIVALENTS.get(exercise, ()))
        self.last |= {n.lstrip("_") for n in self.last if n.startswith("_")}

    def path(self, path: str) -> str | None:
        """Why a reference to library path ``path`` is forbidden, or None."""
        path = _canonical(path)
        for name in self.paths:
            if path == name or path.startswith(name + "."):
                return tr("uses {name}, which this exercise asks you to write yourself").format(name=name)
        if path.startswith("lectorch.exercises"):
            return tr("reaches into the checker (lectorch.exercises)")
        if self.exercise in AUTOGRAD_BY_HAND and path.startswith(_AUTOGRAD):
            return tr("reaches autograd, in an exercise of gradients by hand")
        if self.exercise in NUMPY_OFF and path.split(".")[0] == "numpy":
            return tr("uses {path}: in this exercise the gradients come from torch's autograd, one backward per "
                      "micro-batch").format(path=path)
        if (path == "lectorch" or path.startswith("lectorch.")) and not any(
                path == a or path.startswith(a + ".") for a in self.allowed):
            return tr("uses {path}: the course's helpers compute pieces of the exercises' answers; this "
                      "exercise asks for your own code").format(path=path)
        obj = _lookup(path)
        if obj is not None and id(obj) in self.objects:
            return tr("uses {name} (as {path}), which this exercise asks you to write yourself").format(
                name=self.objects[id(obj)], path=path)
        if _library(path):
            for part in path.split(".")[1:]:
                if part in self.last or part.lstrip("_") in self.last:
                    return tr("uses {path}, which does what this exercise asks you to write").format(path=path)
        return None


    def string(self, value: str | bytes, *, code: bool = False) -> str | None:
        """Why a string or bytes literal names code (a dotted path into a module, a forbidden
        routine, an escape hatch, a pickle's global), or None. Such a string reaches code through
        an evaluator the review cannot follow (an annotation, a format field, a pickle). ``code``:
        the string is evaluated as code wherever it stands (an annotation), prose or not."""
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        if "__builtin__" in text:  # a pickle's GLOBAL opcode, protocol 0-2
            return tr("a string names the builtins")
        # a string with whitespace is prose, which names nothing: an error message may name the
        # routine ("... unlike torch.log_softmax"); a name or a path that an evaluator would look up
        # has no whitespace (bytes are a pickle's opcodes: judged whole)
        if not code and not isinstance(value, bytes) and _prose(text):
            return None
        for token in _TOKEN.findall(text):
            parts = [p for p in token.split(".") if p]
            if not code and len(parts) == 2 and parts[1].lower() in _FILE_SUFFIXES:
                continue  # a file's name ("random.pt", "_rng.pt"), not a path into a module
            if len(parts) > 1 and (parts[0] in _CODE_ROOTS or any(
                    p.startswith("_") and not p.startswith("__") for p in parts)):
                return tr("a string names code (`{path}`)").format(path=token)
            for part in parts:
                if len(parts) > 1 and len(part) < 3:
                    continue
                # a lone word ("eval" as a model's mode, "code") reaches nothing but through a
                # lookup by name, which is a finding of its own; in an annotation it is evaluated
                if (part in ESCAPE_BUILTINS or part in ESCAPE_ATTRIBUTES or part in _ESCAPE_MODULES) and (
                        code or len(parts) > 1 or part.startswith("__") or isinstance(value, bytes)):
                    return tr("a string names `{name}`, an escape hatch").format(name=part)
                if part in self.last or part.lstrip("_") in self.last:
                    return tr("a string names `{name}`, which does what this exercise asks you to write").format(
                        name=part)
        return None

    def random(self, path: str) -> str | None:
        """Why a reference to ``path`` is a simulation in this exercise, or None."""
        path = _canonical(path)
        if self.no_tensors and any(path == r or path.startswith(r + ".") for r in _RANDOM):
            return tr("uses {path}: random draws simulate what this exercise asks you to reason out").format(path=path)
        return None


def _prose(text: str) -> bool:
    """Whether a string is prose (words with whitespace between them), not a name or a path.

    >>> _prose("expects floats, unlike torch.log_softmax"), _prose(" torch.log_softmax\\n")
    (True, False)
    """
    return any(c.isspace() for c in text.strip())


#: the suffixes of file names, which a string of two words joined by a dot usually is ("ckpt.pt")
_FILE_SUFFIXES = frozenset({"pt", "pth", "bin", "ckpt", "json", "jsonl", "txt", "log", "csv", "tsv", "npy", "npz",
                            "yaml", "yml", "safetensors", "tmp", "md", "png", "svg", "optim"})
#: a name or dotted path inside a string (not a number's exponent, not part of a longer word)
_TOKEN = re.compile(r"(?<!\w)[A-Za-z_]\w*(?:\.\w+)*", re.ASCII)
#: modules that are escape hatches as a whole (their names, in a string, name code)
_ESCAPE_MODULES = frozenset(p for p in ESCAPES if "." not in p) | {"__builtin__", "_io", "posix"}
#: module names that no object of an answer has as an attribute, whatever it is (``[os][0].sys``, a
#: returned module's ``.importlib``): "code" is left out, a common attribute's name
_MODULE_ATTRIBUTES = (_ESCAPE_MODULES | {"sys"}) - {"code"}
#: where no tensor may be made: what makes a buffer with a layout to read off (a memoryview cast to a
#: shape has C strides; ``io.BytesIO().getbuffer()`` is one). Not ``.strides`` itself: an answer's own
#: layout class has that attribute
_MEASURED_LAYOUT = frozenset({"cast", "getbuffer", "__buffer__", "data_ptr", "untyped_storage"})
#: the first names of dotted paths that lead into code
_CODE_ROOTS = frozenset(_LIBRARIES) | ALLOWED_MODULES | _ESCAPE_MODULES | {"np", "F", "nn", "sys", "typing"}


def _line(statement: _Statement, node: ast.AST) -> Finding:
    line = getattr(node, "lineno", statement.node.lineno)
    text = statement.lines[line - 1] if 0 < line <= len(statement.lines) else ""
    return Finding(statement.cell, line, text, "")


def _own_names(program: Program) -> set[str]:
    """The names that the program's own code gives to methods and attributes, which the rule "a
    method of a forbidden routine's name" does not judge: ``self.logsumexp(x)`` of the answer's own
    class, ``Schedule(...).get_lr(step)``. This is safe because the library's routine of that name
    does not exist in the grader's process anyway (it, its aten operator and a class's methods are
    raisers there): a tensor's ``x.logsumexp()`` fails the grade whatever this review says.

    Every exercise: the methods its classes define. Gradients by hand: also its functions
    (``relu.backward(g)``) and the attributes its classes set (``self.grad = ...``), since autograd's
    engine does not exist there either (no tensor's ``.grad`` is ever filled)."""
    by_hand = program.exercise in AUTOGRAD_BY_HAND
    own: set[str] = set()
    for statement in program.statements:
        if statement.trusted:
            continue
        for node in ast.walk(statement.node):
            if by_hand and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(node.name)
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                own.add(item.name)
                if by_hand and item.args.args:  # self.grad = ... in its methods
                    me = item.args.args[0].arg
                    own.update(n.attr for n in ast.walk(item) if isinstance(n, ast.Attribute)
                               and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) and n.value.id == me)
    return own


def review(program: Program, forbidden: Iterable[str] = (), *, no_tensors: bool = False,
           allowed: Iterable[str] = ()) -> list[Finding]:
    """The findings of ``program``'s statements (one per line and reason), in notebook order.
    ``allowed``: the ``lectorch`` names the exercise lets its answer use (any other is a finding)."""
    rules = _Forbidden(program.exercise, forbidden, no_tensors, allowed)
    aliases = _Aliases(s.node for s in program.statements)
    findings: list[Finding] = list(program.unresolved)
    seen: set[tuple[int, int, str]] = set()
    own = _own_names(program)
    used = {n.id for s in program.statements for n in ast.walk(s.node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def add(statement: _Statement, node: ast.AST, why: str) -> None:
        f = _line(statement, node)
        key = (f.cell, f.line, why)
        if key not in seen:
            seen.add(key)
            findings.append(Finding(f.cell, f.line, f.text, why))

    for statement in program.statements:
        if statement.trusted:
            continue
        called = {id(n.func) for n in ast.walk(statement.node) if isinstance(n, ast.Call)}
        docs = {id(n.value) for n in ast.walk(statement.node) if isinstance(n, ast.Expr)}  # bare strings
        # annotations: typing.get_type_hints or functools.singledispatch evaluate their strings
        annotations = {id(e) for n in ast.walk(statement.node)
                       for a in ((n.annotation,) if isinstance(n, (ast.arg, ast.AnnAssign))
                                 else (n.returns,) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else ())
                       if a is not None for e in ast.walk(a)}
        parents: dict[int, ast.AST] = {}
        for n in ast.walk(statement.node):
            for child in ast.iter_child_nodes(n):
                parents[id(child)] = n
        for node in ast.walk(statement.node):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                           else [f"{node.module}.{a.name}" for a in node.names] if node.module and not node.level
                           else ["(a relative import)"])
                for a, module in zip(node.names, modules):
                    top = module.split(".")[0]
                    # a routine the program uses, judged where it is imported too (whatever its name
                    # stands for later); a module is judged where its routines are used
                    judged = module.startswith("lectorch.exercises") or (
                        isinstance(node, ast.ImportFrom) and (a.asname or a.name) in used
                        and not isinstance(_lookup(module), types.ModuleType))
                    why = _escape(module) or (rules.path(module) if judged else None) or rules.random(module)
                    if why:
                        add(statement, node, why)
                    elif top not in ALLOWED_MODULES:
                        add(statement, node, tr("imports {module}, which the grader does not expect in this exercise").format(
                            module=module))
                    elif any(p.lstrip("_") in _MODULE_ATTRIBUTES for p in module.split(".")[1:]):  # from tempfile import _sys
                        add(statement, node, tr("reaches the module {module} as an object's attribute").format(
                            module=module.rsplit(".", 1)[-1]))
                for a in node.names:
                    name = a.asname or a.name.split(".")[0]
                    if len(aliases.imported.get(name, ())) > 1:  # the last import wins in the alias table
                        add(statement, node, tr("binds {name} to more than one import ({paths}): the review cannot tell "
                                                "which one a use of it means").format(
                            name=name, paths=", ".join(sorted(aliases.imported[name]))))
                continue
            if isinstance(node, ast.MatchClass) and node.kwd_attrs:  # case object(_C=c): getattr by a name
                add(statement, node, tr("a `case` pattern looks attributes up by name ({names})").format(
                    names=", ".join(node.kwd_attrs)))
            if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(node.ctx, (ast.Store, ast.Del)):
                add(statement, node, tr("changes an object's class"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                    and len(node.args) == 3 and "type" not in aliases.paths:  # its methods named by strings
                add(statement, node, tr("`type` with three arguments builds a class from names in strings"))
            if isinstance(node, ast.Name) and (node.id in _NATIVE or node.id == "__annotations__"):  # class F(CFuncPtr): _flags_ = ...
                add(statement, node, f"`{node.id}` {tr(ESCAPE_ATTRIBUTES[node.id])}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ESCAPE_ATTRIBUTES:
                add(statement, node, f"`{node.name}` {tr(ESCAPE_ATTRIBUTES[node.name])}")  # def __torch_dispatch__
            if isinstance(node, ast.Constant) and type(node.value) is float and _constant_of(node.value, rules.last):
                add(statement, node, tr("writes the constant {name} as digits ({value}), which this exercise's "
                                        "derivation does not need").format(name=_constant_of(node.value, rules.last),
                                                                           value=node.value))
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and id(node) not in docs:
                whole = parents.get(id(node))  # a piece of an f-string: prose when the whole is
                if id(node) in annotations:
                    why = rules.string(node.value, code=True)
                elif isinstance(whole, ast.JoinedStr) and _prose("".join(
                        v.value if isinstance(v, ast.Constant) else "{}" for v in whole.values)):
                    why = None
                else:
                    why = rules.string(node.value)
                if why:
                    add(statement, node, why)
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in _BY_NAME and id(node) not in called and node.id not in aliases.paths:
                    add(statement, node, tr("`{name}` handed over as a value looks attributes up by name").format(
                        name=node.id))
                if node.id in ESCAPE_BUILTINS and node.id not in aliases.paths:
                    add(statement, node, f"`{node.id}` {tr(ESCAPE_BUILTINS[node.id])}")
                elif node.id in ("getattr", "setattr", "delattr", "hasattr") and id(node) in called:
                    call = parents.get(id(node))
                    if isinstance(call, ast.Call) and (len(call.args) < 2 or not isinstance(call.args[1], ast.Constant)):
                        add(statement, node, tr("`{name}` with a computed name looks attributes up by name").format(name=node.id))
                    elif isinstance(call, ast.Call):  # getattr(torch, "log_softmax"): the same as torch.log_softmax
                        attr = str(call.args[1].value)
                        base = aliases.dotted(call.args[0])
                        why = (_escape(f"{base}.{attr}") or rules.path(f"{base}.{attr}")) if base else None
                        if why is None and (_escape_attribute(attr) or attr in rules.last or attr in ESCAPE_BUILTINS
                                            or attr in _ESCAPE_MODULES or attr.lstrip("_") in rules.last):
                            why = tr("`{name}` reaches .{attr}").format(name=node.id, attr=attr)
                        if why is None and node.id in ("setattr", "delattr") and base and _library(_canonical(base)):
                            why = tr("changes the library ({path})").format(path=f"{base}.{attr}")
                        if why:
                            add(statement, node, why)
            if isinstance(node, ast.Attribute):
                escape = _escape_attribute(node.attr)
                if escape:
                    add(statement, node, f"`.{node.attr}` {tr(escape)}")
                    continue
                if rules.no_tensors and node.attr in _MEASURED_LAYOUT and node.attr not in own \
                        and isinstance(node.ctx, ast.Load):
                    add(statement, node, tr("uses .{name}, which makes a buffer to measure a layout on: this exercise "
                                            "asks for the answer without creating a tensor or an array").format(name=node.attr))
                    continue
                if node.attr.lstrip("_") in _MODULE_ATTRIBUTES or (
                        rules.no_numpy and node.attr.lstrip("_") in ("np", "numpy")):  # also a private alias: tempfile._sys
                    add(statement, node, tr("reaches the module {module} as an object's attribute").format(module=node.attr))
                    continue
                if isinstance(parents.get(id(node)), ast.Attribute):
                    continue  # judged as part of the longest chain
            if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
                continue
            if isinstance(node, ast.Name) and isinstance(parents.get(id(node)), ast.Attribute):
                continue
            path = aliases.dotted(node)
            if path is None:
                # a method of an unknown object (a tensor, type(x)...): forbidden by its name
                if isinstance(node, ast.Attribute) and node.attr not in own and (
                        node.attr in rules.last or node.attr.lstrip("_") in rules.last):
                    add(statement, node, tr("uses .{name}, which does what this exercise asks you to write").format(
                        name=node.attr))
                continue
            why = _escape(path) or rules.path(path) or rules.random(path) or _unexpected_module(path)
            if why is None and _canonical(path) in LOADERS:
                why = _unsafe_load(_canonical(path), parents.get(id(node)) if id(node) in called else None)
            if why is None and rules.no_tensors and _canonical(path).split(".")[0] in ("torch", "numpy") \
                    and not _canonical(path).startswith(_NO_TENSOR_OK):
                if id(node) in called:
                    why = tr("calls {path}: this exercise asks for the answer without creating a tensor").format(path=path)
                elif _maker(_canonical(path)):  # kept for later: MAKE = [np.empty]
                    why = tr("refers to {path}: this exercise asks for the answer without creating a tensor "
                             "or an array").format(path=path)
            if why is None and isinstance(node, ast.Attribute) \
                    and (node.attr in rules.last or node.attr.lstrip("_") in rules.last):
                why = tr("uses {path}, which does what this exercise asks you to write").format(path=path)
            if why:
                add(statement, node, why)
        # assignments into a library (torch.x = ..., np.y = ...)
        for node in ast.walk(statement.node):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute):
                        path = aliases.dotted(t.value)
                        if path and _library(_canonical(path)):
                            add(statement, node, tr("changes the library ({path})").format(path=f"{path}.{t.attr}"))
    findings.sort(key=lambda f: (f.cell, f.line))
    return findings


def operator_names(exercise: str, names: Iterable[str]) -> list[str]:
    """The names of the torch routines ``exercise`` forbids (``names``) and of its equivalents:
    the grader's fresh process refuses the aten operators of these names."""
    return sorted(n for n in _Forbidden(exercise, names, False).last if n.isidentifier() and len(n) > 2)


def _unsafe_load(path: str, call: ast.AST | None) -> str | None:
    """Why this use of a loader (``torch.load``, ``numpy.load``) may run code, or None."""
    if not isinstance(call, ast.Call):
        return tr("{path} handed over as a value may unpickle code").format(path=path)
    keyword, safe = LOADERS[path]
    given = {k.arg: k.value for k in call.keywords}
    value = given.get(keyword)
    if None in given or "pickle_module" in given or len(call.args) > 2 or (
            value is not None and not (isinstance(value, ast.Constant) and value.value is safe)):
        return tr("{path} without {keyword}={safe} unpickles code").format(path=path, keyword=keyword, safe=safe)
    return None


def _maker(path: str) -> bool:
    """Whether library path ``path`` (of torch or numpy) may make a tensor or an array: anything but
    a dtype or a constant (a module, a function, a class)."""
    if path.split(".")[0] == "numpy":
        return True
    obj = _lookup(path)
    return obj is None or isinstance(obj, types.ModuleType) or callable(obj)


def _escape(path: str) -> str | None:
    path = _canonical(path)
    for prefix, why in ESCAPES.items():
        if path == prefix or path.startswith(prefix + "."):
            return f"{path} {tr(why)}"
    if path.startswith(_ESCAPE_OS):
        return f"{path} {tr('starts a process')}"
    parts = path.split(".")
    if parts[0] in _LIBRARIES and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
        if parts[0] == "torch":
            return tr("{path} is a private torch internal").format(path=path)
        return tr("{path} is a private internal of {library}").format(path=path, library=parts[0])
    return None


def summary(findings: list[Finding], limit: int = 3) -> str:
    """The findings as one message (the first ``limit``, and how many more)."""
    shown = "; ".join(f.describe() if f.cell else f.why for f in findings[:limit])
    more = tr(" (and {n} more)").format(n=len(findings) - limit) if len(findings) > limit else ""
    return tr("needs review: {findings}{more}").format(findings=shown, more=more)


#: the status of an exercise whose code has a finding (the grade's and the practice check's)
NEEDS_REVIEW = "needs review"


def verdict(status: str, message: str, findings: list[Finding], *, hidden: bool = True) -> tuple[str, str]:
    """The verdict of a reviewed exercise: its cases' verdict, unless its code has a finding. The
    grader judges the hidden cases (``hidden``), the practice check the public ones; the words are
    the same (the grade's table cuts the cases' message short).

    >>> verdict("passed", "Correct.", [Finding(2, 3, "t = threading.Thread(...)", "starts a thread")], hidden=False)
    ('needs review', 'needs review: cell 2, line 3: `t = threading.Thread(...)`: starts a thread. Its public cases: passed (Correct.)')
    """
    if not findings:
        return status, message
    text = (tr("{summary}. Its hidden cases: {status} ({message})") if hidden
            else tr("{summary}. Its public cases: {status} ({message})"))
    return NEEDS_REVIEW, text.format(summary=summary(findings), status=status,
                                     message=message[:160] if hidden else message)


def spec_of(exercise: Any) -> dict | None:
    """What the review of ``exercise`` (an ``Exercise``) judges by: the routines it forbids, whether
    it is answered without tensors, the ``lectorch`` helpers it allows; None when it forbids nothing
    (its code is not reviewed). The grader receives the same, as data (``refusals()``)."""
    from lectorch.exercises import refused_names

    names = refused_names(exercise)
    if not names and not exercise.no_tensors:
        return None
    return {"names": list(names), "what": exercise.refuse_what or exercise.title,
            "no_tensors": exercise.no_tensors, "allow": list(exercise.allow)}


def findings_in(notebook: Mapping, exercise: str, expr: str, spec: Mapping, helpers: Mapping[str, str] | None = None,
                *, last: bool = False) -> tuple[Program, list[Finding]]:
    """The program of ``exercise``'s answer ``expr`` in ``notebook``, and its review under ``spec``
    (:func:`spec_of`): the one build and review the grade and the practice check both run."""
    program = build(notebook, exercise, expr, helpers, last=last)
    return program, review(program, spec.get("names", ()), no_tensors=spec.get("no_tensors", False),
                           allowed=spec.get("allow", ()))


# ----------------------------------------------------------------------- in the student's kernel


def kernel_cells() -> list[str] | None:
    """The cells this IPython kernel ran so far, as typed (cell ``k`` of the list is ``In [k+1]``),
    or None outside IPython (or where cells run without history, as a test runner may)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None:
        return None
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if raw is None:
        raw = getattr(shell, "user_ns", {}).get("In")
    return [str(c) for c in raw[1:]] if raw else None  # In[0] is IPython's empty placeholder


def _answer_expr(cells: list[str], exercise: str) -> str | None:
    """The answer expression of the last check call of ``exercise`` in ``cells`` (as written)."""
    for text in reversed(cells):
        try:
            tree = _parse(_cell_text({"source": text}))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_check_call(n, exercise)]
        for call in reversed(calls):
            answer = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "answer"), None)
            if answer is not None:
                return ast.unparse(answer)
    return None


def _source_cells(answer: Any, exercise: str) -> list[str] | None:
    """Outside IPython: the answer's own source as cells (the modules and library routines its
    globals name, then its definition, then the check call), or None when it has no source."""
    import inspect
    import textwrap
    import types

    name = getattr(answer, "__name__", "")
    try:
        source = textwrap.dedent(inspect.getsource(answer))
        tree = _parse(source)
    except (OSError, TypeError, SyntaxError):  # defined by exec, in a doctest, or a callable object
        return None
    if not name.isidentifier() or not tree.body:
        return None
    module = sys.modules.get(getattr(answer, "__module__", None) or "")
    space = dict(getattr(answer, "__globals__", None) or (vars(module) if module is not None else {}))
    if isinstance(answer, types.FunctionType):
        space.update(inspect.getclosurevars(answer).nonlocals)
    lines = []
    for used in sorted(_free_names(tree.body[0]) - {name}):
        if used not in space:
            continue  # a builtin, or a name the review reports as unseen
        value = space[used]
        owner = str(getattr(value, "__module__", "") or "")
        if isinstance(value, types.ModuleType):
            lines.append(f"import {value.__name__} as {used}")
        elif callable(value) and owner.split(".")[0] in _LIBRARIES and str(getattr(value, "__qualname__", "")).isidentifier():
            lines.append(f"from {owner} import {value.__qualname__} as {used}")
        else:  # a value, or the author's own helper: seen, not the library's
            lines.append(f"{used} = ...")
    return ["\n".join(lines), source, f"lectorch.check({exercise!r}, {name})"]


def practice_review(exercise: Any, answer: Any, cells: list[str] | None = None) -> tuple[list[Finding], str]:
    """The practice check's review of ``answer`` to ``exercise`` (an ``Exercise``): the findings of
    the same build and review the grader runs, on the kernel's cells up to this check (``cells``,
    by default :func:`kernel_cells`), else on the function's source; and a note when neither could
    be read (then nothing was reviewed)."""
    spec = spec_of(exercise)
    if spec is None:
        return [], ""
    if cells is None:
        cells = kernel_cells()
    expr = _answer_expr(cells, exercise.id) if cells else None
    program = None
    if expr is not None:
        notebook = {"cells": [{"cell_type": "code", "source": c} for c in cells]}
        program, found = findings_in(notebook, exercise.id, expr, spec, helpers_of(notebook, expr), last=True)
    if program is None or not program.found:
        if str(getattr(answer, "__module__", "") or "").startswith("lectorch.exercises"):
            # made by the checker's own helper from the student's code (``optimizer_trainer(MyRMSprop)``):
            # its source is the helper's; the student's part is reviewed from the kernel's cells only
            return [], ""
        source = _source_cells(answer, exercise.id)
        if source is None:
            return [], tr("The source of your answer could not be read, so its code was not reviewed as the "
                          "grader will review it.")
        notebook = {"cells": [{"cell_type": "code", "source": c} for c in source]}
        program, found = findings_in(notebook, exercise.id, answer.__name__, spec, last=True)
    return found, ""


__all__ = ["ALLOWED_MODULES", "EQUIVALENTS", "ESCAPES", "NEEDS_REVIEW", "Finding", "Program", "build", "findings_in",
           "helpers_of", "kernel_cells", "practice_review", "review", "spec_of", "summary", "verdict"]


