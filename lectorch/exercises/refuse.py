"""Switch library shortcuts off while a student's function runs under a checker.

An implement exercise asks the student to write something the libraries already have (torch's
``log_softmax``, ``torch.optim.AdamW``, lectorch's ``cosine_lr``...). While the student's function
runs, :func:`refusing` makes those routines raise :class:`RefusedShortcut`, whose message says what
the exercise asks for, and puts them back afterwards. It catches the routine under any name:

- torch functions, ``torch.Tensor`` methods and properties are refused by identity in a
  ``TorchFunctionMode``, however they are reached (name each form: ``torch.log_softmax``,
  ``torch.Tensor.log_softmax`` and ``torch.nn.functional.log_softmax`` are three functions);
- a class has its ``__init__`` and ``step``/``forward`` replaced, which also refuses subclasses
  that inherit them;
- a Python function is replaced wherever a loaded module holds it (``from lectorch.train import
  cosine_lr`` included, the notebook's own namespace too).

``no_tensors=True`` refuses every torch call ("without creating a tensor"). This is teaching, not
security: the student controls their kernel. The module needs only the standard library and torch,
so the grader's sandbox can load it by path.

>>> import torch
>>> with refusing(["torch.log_softmax"], "the stable log-softmax"):
...     torch.log_softmax(torch.zeros(2), 0)
Traceback (most recent call last):
...
lectorch.exercises.refuse.RefusedShortcut: this exercise asks you to write the stable log-softmax yourself: torch.log_softmax is switched off while your function is checked.
>>> torch.log_softmax(torch.zeros(2), 0).shape
torch.Size([2])
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
import types
from typing import Any, Iterable, Iterator

import torch  # noqa: F401  (the doctests' namespace)
from torch.overrides import TorchFunctionMode

try:
    from lectorch.i18n import tr
except ImportError:  # loaded alone, by path, in a grader's sandbox: its messages stay English
    def tr(message: str) -> str:
        return message

#: the methods of a refused class that are replaced too (besides ``__init__``)
_CLASS_METHODS = ("step", "forward", "__call__")

#: torch methods that run a Python callback inside a torch call, where the mode does not see the
#: calls the callback makes: refused in every check that refuses anything
CALLBACKS = ("torch.Tensor.apply_", "torch.Tensor.map_", "torch.Tensor.map2_")


class RefusedShortcut(Exception):
    """Raised when a student's function calls a routine the exercise asks them to write.

    Not a ``RuntimeError``: library code that turns a ``RuntimeError`` into its own error (a
    device string's check, say) must let the refusal through, with its message."""


def _message(name: str, what: str) -> str:
    return tr("this exercise asks you to write {what} yourself: {name} is switched off while your function "
              "is checked.").format(what=tr(what), name=name)


_SCAN: dict[str, bool] = {}  # module name -> may hold a student's alias (cached: scanning costs)
_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})


def _modules_to_scan(owners: set[str]) -> list:
    """The loaded modules where a Python function may sit under another name: lectorch's, the
    notebook's (``__main__``), any module outside the Python installation (a student's own file),
    and the functions' own modules (``owners``, e.g. ``torch.nn.utils`` for ``clip_grad_norm_``)."""
    found = []
    for mod_name, module in list(sys.modules.items()):
        ok = _SCAN.get(mod_name)
        if ok is None:
            path = getattr(module, "__file__", None) or ""
            ok = (mod_name == "__main__" or mod_name.startswith("lectorch")
                  or bool(path) and not path.startswith(_PREFIXES))
            _SCAN[mod_name] = ok
        if ok or mod_name in owners:
            found.append(module)
    return found


def _no_such(name: str, owner: Any, owner_name: str, attr: str) -> ValueError:
    """The error for a dotted ``name`` whose ``attr`` ``owner`` lacks, with the names that exist."""
    import difflib

    have = sorted(n for n in dir(owner) if not n.startswith("_"))
    close = difflib.get_close_matches(attr, have, n=3)
    exists = (f"did you mean {', '.join(f'{owner_name}.{c}' for c in close)}?" if close else
              f"it has {', '.join(have[:8])}{', …' if len(have) > 8 else ''}" if have else "it has no public names")
    return ValueError(f"cannot refuse {name!r}: {owner_name} has no {attr!r}; {exists}")


@functools.lru_cache(maxsize=None)  # failed imports of a dotted name's tail search the disk
def resolve(name: str) -> Any:
    """The object a dotted ``name`` such as ``"torch.nn.functional.log_softmax"`` names; a
    ``ValueError`` naming the part that does not exist, and what does, for a typo.

    >>> resolve("torch.Tensor.stride") is torch.Tensor.stride
    True
    >>> resolve("torch.log_softmx")
    Traceback (most recent call last):
    ...
    ValueError: cannot refuse 'torch.log_softmx': torch has no 'log_softmx'; did you mean torch.log_softmax, torch.softmax, torch.logsumexp?
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a refused name must be a dotted path such as 'torch.log_softmax', got {name!r}")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for k, attr in enumerate(parts[cut:]):
            if not hasattr(obj, attr):
                raise _no_such(name, obj, ".".join(parts[:cut + k]), attr)
            obj = getattr(obj, attr)
        return obj
    raise ValueError(f"cannot refuse {name!r}: no module {parts[0]!r} can be imported; give a dotted "
                     "path that starts with a module, such as 'torch.log_softmax'")


def _refusable(name: str) -> Any:
    """``resolve(name)``, checked to be a routine or class that ``refusing`` can switch off."""
    obj = resolve(name)
    if isinstance(obj, types.ModuleType) or not (callable(obj) or hasattr(type(obj), "__get__")):
        raise ValueError(f"cannot refuse {name!r}: it names a {type(obj).__name__}, not a function, "
                         "method, property or class")
    return obj


def _torch_name(func: Any) -> str:
    """The name a student would write for a torch function, method or class (``torch.device``)."""
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    for inner, public in (("_VariableFunctionsClass.", "torch."), ("TensorBase.", "torch.Tensor."),
                          ("Tensor.", "torch.Tensor.")):
        if qual.startswith(inner):
            return public + qual[len(inner):]
    module = getattr(func, "__module__", None) or ""
    return f"{module}.{qual}" if module.startswith("torch") else qual


def _entry_point() -> str | None:
    """The outermost library routine (torch's or lectorch's) between the student's code and the
    current torch call, e.g. ``lectorch.models.TinyLM.__init__``; None when the student's code made
    the torch call itself."""
    frame, entry = sys._getframe(2), None  # 0: here, 1: the mode's __torch_function__
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        top = module.split(".")[0]
        if module.startswith("lectorch.exercises") or top not in ("torch", "lectorch", "contextlib", "functools"):
            break  # the student's frame (or the checker's, around it)
        if top in ("torch", "lectorch"):
            entry = f"{module}.{frame.f_code.co_qualname}"
        frame = frame.f_back
    return entry


class _Refuse(TorchFunctionMode):
    def __init__(self, refused: dict[int, str], what: str, no_tensors: bool) -> None:
        super().__init__()
        self.refused, self.what, self.no_tensors = refused, what, no_tensors

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        name = self.refused.get(id(func))
        if name is not None:
            raise RefusedShortcut(_message(name, self.what))
        if self.no_tensors:
            name, entry = _torch_name(func), _entry_point()
            if entry and entry.endswith(".__init__"):
                entry = "building " + entry.removesuffix(".__init__")
            via = (tr("{entry} (called by your function) uses {name}").format(entry=entry, name=name)
                   if entry and not entry.startswith("torch") else tr("{name} is a torch call").format(name=name))
            raise RefusedShortcut(tr("this exercise asks for {what} without creating a tensor: {via}, and every "
                                     "torch call is switched off while your function is checked. Work it out from "
                                     "the sizes in plain Python (ints and floats).").format(what=tr(self.what), via=via))
        return func(*args, **(kwargs or {}))


_RAISER = compile("def refused(*args, **kwargs):\n"
                  "    raise __import__('lectorch.exercises.refuse', fromlist=['_'])"
                  ".refusal(__import__('sys')._getframe().f_code)\n", "<refused>", "exec")
_RAISER_CODE = next(c for c in _RAISER.co_consts if isinstance(c, types.CodeType))
_MESSAGES: dict[types.CodeType, str] = {}


def _refusing_code(fn: types.FunctionType, message: str) -> types.CodeType:
    """A code object for ``fn`` that raises ``RefusedShortcut(message)`` (its own, by name)."""
    code = _RAISER_CODE.replace(co_name=fn.__name__, co_qualname=f"{fn.__qualname__} (refused)",
                                co_filename=f"<refused {fn.__module__}.{fn.__qualname__}>")
    _MESSAGES[code] = message
    return code


def refusal(code: types.CodeType) -> RefusedShortcut:
    """The error a swapped-out function raises (called from its refusing code)."""
    return RefusedShortcut(_MESSAGES.get(code) or tr("this routine is switched off while your function is checked."))


def _raiser(name: str, what: str):
    def refused(*args, **kwargs):
        raise RefusedShortcut(_message(name, what))

    refused.__name__ = refused.__qualname__ = name.rsplit(".", 1)[-1]
    return refused


def refusing(names: Iterable[str] = (), what: str = "this", *, no_tensors: bool = False) -> Iterator[None]:
    """Within the block, each routine in ``names`` raises ``RefusedShortcut`` (see the module).

    Every name is checked when ``refusing`` is called: a name that does not resolve raises
    ``ValueError`` naming it and what exists (a typo would otherwise refuse nothing).

    >>> refusing(["lectorch.views.contigous_strides"], "the strides")
    Traceback (most recent call last):
    ...
    ValueError: cannot refuse 'lectorch.views.contigous_strides': lectorch.views has no 'contigous_strides'; did you mean lectorch.views.contiguous_strides?
    """
    names = tuple(names)
    resolved = [_refusable(name) for name in names]  # before the block: a bad name is the checker's bug
    return _refusing(names, resolved, what, no_tensors)


@contextlib.contextmanager
def _refusing(names: tuple, resolved: list, what: str, no_tensors: bool) -> Iterator[None]:
    if not names and not no_tensors:
        yield
        return
    torch_refused: dict[int, str] = {}
    functions: dict[int, tuple[Any, Any]] = {}  # id -> (the Python function, its raiser)
    owners: set[str] = set()
    undo: list[tuple[Any, str, Any]] = []  # (owner, attribute, original or _MISSING)
    try:
        for name, obj in zip(names, resolved):
            if inspect.isclass(obj):
                for attr in ("__init__", *_CLASS_METHODS):
                    if attr == "__init__" or attr in vars(obj):
                        undo.append((obj, attr, vars(obj).get(attr, _MISSING)))
                        setattr(obj, attr, _raiser(name, what))
            elif isinstance(obj, types.FunctionType) and obj.__closure__ is None:
                # its code is swapped, which refuses it under every name (a reference held
                # anywhere, a partial, a default argument), then put back
                torch_refused[id(obj)] = name  # (torch's own dispatch to the mode with itself)
                undo.append((obj, "__code__", obj.__code__))
                obj.__code__ = _refusing_code(obj, _message(name, what))
            elif isinstance(obj, types.FunctionType):  # a closure: replaced wherever a module holds it
                torch_refused[id(obj)] = name
                functions[id(obj)] = (obj, _raiser(name, what))
                owners.update((obj.__module__ or "", name.rsplit(".", 1)[0]))
            else:  # a torch function, Tensor method or property: refused in the mode, by identity
                torch_refused[id(obj)] = name
                for part in ("__get__", "__wrapped__"):
                    inner = getattr(obj, part, None)
                    if inner is not None:
                        torch_refused[id(inner)] = name
        for name in CALLBACKS:
            torch_refused.setdefault(id(resolve(name)), name)
        if functions:  # one pass over the modules that may hold them, under any name
            for module in _modules_to_scan(owners):
                space = getattr(module, "__dict__", None)
                if not isinstance(space, dict):
                    continue
                for attr, value in list(space.items()):
                    hit = functions.get(id(value))
                    if hit is not None and hit[0] is value:
                        undo.append((module, attr, value))
                        space[attr] = hit[1]
        global _ACTIVE
        _ACTIVE += 1
        try:
            with _Refuse(torch_refused, what, no_tensors):
                yield
        finally:
            _ACTIVE -= 1
    finally:
        for owner, attr, original in reversed(undo):
            if isinstance(owner, types.ModuleType):
                owner.__dict__[attr] = original
            elif original is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
_ACTIVE = 0  # how many ``refusing`` blocks are open (a checker's own reference runs outside them)


def active() -> bool:
    """True while a student's function runs under ``refusing``."""
    return _ACTIVE > 0


def refuse_subclass(cls: Any, bases: Iterable[str], what: str) -> None:
    """Raise ``RefusedShortcut`` when class ``cls`` is, or derives from, one of ``bases`` (dotted
    names), while a student's function is checked (``active()``).

    >>> class Mine(torch.optim.RMSprop): pass
    >>> refuse_subclass(Mine, ["torch.optim.RMSprop"], "RMSProp")  # outside a check: allowed
    >>> with refusing(no_tensors=False, names=["torch.optim.Adam"]):
    ...     refuse_subclass(Mine, ["torch.optim.RMSprop"], "RMSProp")
    Traceback (most recent call last):
    ...
    lectorch.exercises.refuse.RefusedShortcut: this exercise asks you to write RMSProp yourself: your class derives from torch.optim.RMSprop; subclass torch.optim.Optimizer instead.
    """
    if not inspect.isclass(cls) or not active():
        return
    for name in bases:
        base = resolve(name)
        if inspect.isclass(base) and issubclass(cls, base):
            raise RefusedShortcut(tr("this exercise asks you to write {what} yourself: your class derives from "
                                     "{name}; subclass torch.optim.Optimizer instead.").format(what=tr(what), name=name))
