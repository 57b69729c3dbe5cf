"""The instructor's side of grading: hidden cases, plain expected values, the grading bundle.

Students never get this folder (``make student`` leaves it out, and so does the lectorch package).
Each chapter topic has a module ``grading/topics/<topic>.py`` (the topic is the name of the exercise
module in ``lectorch/exercises``) that ends with ``TOPIC = Topic(...)``
(:class:`grading.topics.Topic`): the plain answers of its value and prediction exercises, the
hidden cases of its function exercises, the references, slips and practice settings.
:func:`load_topics` finds them by listing the package.

:func:`build_bundle` turns them into one bundle of plain data (hidden inputs with their expected
results, expected values), generated from a secret seed; ``python -m grading bundle`` writes it and
``python -m grading grade`` reads it. The bundle is loaded with ``torch.load(weights_only=True)``.

>>> calls = check_calls({"cells": [{"cell_type": "code",
...     "source": 'x = 1\\nlectorch.check("demo-id", x, measured=m)'}]})
>>> calls
[('demo-id', 'x')]
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as _dt
import functools
import hashlib
import hmac
import importlib.util
import io
import json
import os
import pkgutil
import random
import tempfile
from pathlib import Path
from typing import Any, Mapping

from grading.topics import Topic

#: the repository the grader works in (its chapters, the student edition's default place)
ROOT = Path(__file__).resolve().parent.parent
BUNDLE_FORMAT = "lectorch-grading-bundle"
BUNDLE_VERSION = 1


# --------------------------------------------------------------------------- grading topics


def load_topics(directory: Path | None = None) -> dict[str, Topic]:
    """Every grading topic's ``TOPIC``, by topic: the modules of the :mod:`grading.topics` package
    (imported once per process, as any import of them), or with ``directory``, every ``<topic>.py``
    of that folder (a test's fixture course), executed afresh on each call."""
    modules = {}
    if directory is None:
        package = importlib.import_module("grading.topics")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
            if not info.name.startswith("_"):
                modules[info.name] = importlib.import_module(f"grading.topics.{info.name}")
    else:
        directory = Path(directory)
        if not directory.is_dir():
            raise ValueError(f"grading directory {directory} does not exist; pass the folder of grading modules")
        for path in sorted(directory.glob("*.py")):
            if path.stem.startswith("_"):
                continue
            spec = importlib.util.spec_from_file_location(f"_lectorch_grading_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules[path.stem] = module
    found = {}
    for name, module in modules.items():
        topic = module.__dict__.get("TOPIC")
        if not isinstance(topic, Topic):
            raise TypeError(f"grading topic {name!r} ({module.__file__}) has no TOPIC: end the module with "
                            "TOPIC = Topic(expected=..., hidden=...) (grading.topics.Topic)")
        found[name] = topic
    return found


def expected_values(topics: Mapping[str, Topic]) -> dict[str, Any]:
    """The plain expected values of every topic's ``expected``, by exercise id."""
    values: dict[str, Any] = {}
    for name, topic in topics.items():
        for ex_id, value in topic.expected.items():
            if ex_id in values:
                raise ValueError(f"grading topic {name!r}: expected[{ex_id!r}] is also defined by another topic")
            values[ex_id] = value
    return values


def hidden_cases(topics: Mapping[str, Topic], exercise_id: str, rng: random.Random) -> list:
    """Hidden cases of ``exercise_id`` from every topic."""
    cases: list = []
    for topic in topics.values():
        cases += topic.hidden_cases(exercise_id, rng)
    return cases


# --------------------------------------------------------------------------- plain data


DATACLASS = "__dataclass__"
_DATACLASS_HOMES = ("lectorch.", "grading.")


def encode(value: Any, where: str, *, expected: bool = False) -> Any:
    """``value`` as plain data (``GeneratorSeed`` → a marker); refuses anything else, naming ``where``.

    An ``expected`` value may also be a dataclass of lectorch or grading (e.g. a result with the
    numbers that reveal known slips): it is stored by name and fields, and rebuilt by :func:`decode`
    in the grader. Such values never go into the sandbox (only inputs do)."""
    import dataclasses

    import torch

    from grading.harness import GENERATOR
    from lectorch.exercises import GeneratorSeed

    if isinstance(value, GeneratorSeed):
        return {GENERATOR: int(value.seed)}
    if expected and dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith(_DATACLASS_HOMES):
            raise TypeError(f"{where}: expected value of class {cls.__qualname__} must come from lectorch or grading")
        fields = {f.name: encode(getattr(value, f.name), where, expected=True) for f in dataclasses.fields(value)}
        return {DATACLASS: f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if isinstance(value, (tuple, list)):
        items = [encode(v, where, expected=expected) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: encode(v, where, expected=expected) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, complex, str, torch.dtype, torch.device)):
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    home = getattr(type(getattr(value, "__self__", value)), "__module__", "")
    if not expected and home.startswith(("lectorch.", "torch", "numpy")):
        # an input object of lectorch (e.g. a simulated device's bound method): pickled for the
        # sandbox's kernel, which has the same lectorch; the grader itself never unpickles it
        import base64
        import pickle

        from grading.harness import PICKLED

        try:
            return {PICKLED: base64.b64encode(pickle.dumps(value)).decode("ascii")}
        except Exception as err:  # noqa: BLE001
            raise TypeError(f"{where}: input {type(value).__name__} cannot be pickled ({err})") from None
    raise TypeError(f"{where}: a {type(value).__name__} cannot go into the grading bundle; use numbers, "
                    "strings, tuples, lists, dicts, tensors, dtypes, GeneratorSeed or objects of lectorch")


def _pickled_key() -> str:
    from grading.harness import PICKLED

    return PICKLED


def decode(value: Any) -> Any:
    """An expected value from the bundle, with its lectorch/grading dataclasses rebuilt."""
    import importlib

    if isinstance(value, dict):
        if set(value) == {DATACLASS, "fields"} and isinstance(value[DATACLASS], str):
            module_name, _, qualname = value[DATACLASS].partition(":")
            if not module_name.startswith(_DATACLASS_HOMES):
                raise ValueError(f"the bundle names a class outside lectorch and grading: {value[DATACLASS]}")
            obj: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            return obj(**{k: decode(v) for k, v in value["fields"].items()})
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [decode(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _pickled_call(args: tuple, kwargs: dict, where: str) -> dict:
    """Arguments that hold objects (e.g. three bound methods of one simulated device) pickled
    TOGETHER, so that the kernel rebuilds one device, not three."""
    import base64
    import pickle

    from grading.harness import PICKLED

    try:
        data = pickle.dumps((tuple(args), dict(kwargs)))
    except Exception as err:  # noqa: BLE001
        raise TypeError(f"{where}: the arguments cannot be pickled ({err})") from None
    return {PICKLED: base64.b64encode(data).decode("ascii")}


def _case(case: Any, where: str) -> dict:
    try:
        args, kwargs = encode(tuple(case.args), where), encode(dict(case.kwargs), where)
        if any(isinstance(v, dict) and set(v) == {_pickled_key()} for v in (*args, *kwargs.values())):
            raise TypeError("holds objects")
        call = None
    except TypeError:
        args, kwargs, call = (), {}, _pickled_call(case.args, case.kwargs, where)
    return {
        "args": args,
        "kwargs": kwargs,
        "call": call,
        "expected": encode(case.expected, where, expected=True),
        "raises": case.raises.__name__ if case.raises is not None else None,
        "description": str(case.description),
    }


def build_bundle(seed: str | int, *, directory: Path | None = None, registry: Mapping | None = None,
                 exercise_ids: list[str] | None = None) -> dict:
    """The grading bundle (a dict of plain data) for every exercise of ``registry`` (default: all).

    Function exercises get their public cases, ``generate(rng)`` cases and hidden cases; so do value
    and prediction exercises asked as a function of their setting (``Exercise.takes_function``:
    the public case's seal is swapped for the plain value from ``EXPECTED``); other value and
    prediction exercises get their plain value from ``EXPECTED`` (checked against the package's seal).
    ``rng`` is :func:`grading_rng` (HMAC of the seed's key and the exercise id): one exercise's
    cases do not depend on which other exercises exist, and none of its draws reveals the seed.
    """
    from lectorch import __version__
    from lectorch.exercises import Sealed, exercises

    registry = dict(exercises() if registry is None else registry)
    grading_key(seed)  # a seed that cannot be used is refused before any work (a weak one warns once)
    found = load_topics(directory)
    values = expected_values(found)
    unknown = sorted(set(values) - set(registry))
    if unknown:
        raise ValueError(f"EXPECTED names exercises that are not registered: {', '.join(unknown)}")
    entries: dict[str, dict] = {}
    problems: list[str] = []
    for ex_id in exercise_ids or sorted(registry):
        ex = registry[ex_id]
        rng = grading_rng(seed, ex_id)
        if ex.takes_function:
            if ex.kind == "function":
                from grading.case_seals import expected_of, references

                refs = references(found)  # the package holds only seals of the public cases' results
                cases = [dataclasses.replace(c, expected=expected_of(refs, ex_id, c)) for c in ex.cases]
            else:
                cases = []
                for case in ex.cases:
                    if isinstance(case.expected, Sealed):  # the page's numbers: their plain answer
                        if ex_id not in values or not case.expected.matches(ex_id, values[ex_id]):
                            problems.append(f"{ex_id}: EXPECTED does not match the public case's seal (re-seal it)")
                            continue
                        case = dataclasses.replace(case, expected=values[ex_id])
                    cases.append(case)
            if ex.generate is not None:
                cases += list(ex.generate(rng))
            cases += hidden_cases(found, ex_id, rng)
            # a value or prediction asked as a function is graded like a function exercise
            entries[ex_id] = {"kind": "function",
                              "cases": [_case(c, f"{ex_id} case {i}") for i, c in enumerate(cases, 1)]}
            continue
        if ex_id in values:
            value = values[ex_id]
            if isinstance(ex.expected, Sealed) and not ex.expected.matches(ex_id, value):
                problems.append(f"{ex_id}: EXPECTED does not match the package's seal (re-seal it)")
            # a Sealed subclass has its own matching (e.g. it accepts a set, a list or a string of
            # names): the grader then uses the seal, whose agreement with EXPECTED was just checked
            custom = isinstance(ex.expected, Sealed) and type(ex.expected) is not Sealed
            entries[ex_id] = {"kind": ex.kind, "expected": encode(value, ex_id, expected=True), "sealed_only": custom}
        elif isinstance(ex.expected, Sealed):  # graded against the seal, in the grader's process
            entries[ex_id] = {"kind": ex.kind, "expected": None, "sealed_only": True}
        else:
            entries[ex_id] = {"kind": ex.kind, "expected": encode(ex.expected, ex_id, expected=True),
                              "sealed_only": False}
    if problems:
        raise ValueError("the grading data disagree with the package:\n  " + "\n  ".join(problems))
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "seed": seed,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "lectorch": __version__,
        "exercises": entries,
    }


def write_bundle(bundle: dict, path: Path) -> Path:
    """Write ``bundle`` atomically to ``path`` (readable by its owner only)."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(bundle, buffer)
    buffer.seek(0)
    torch.load(buffer, weights_only=True)  # what the grader will do: fail here, not there
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".bundle-")
    with os.fdopen(fd, "wb") as f:
        f.write(buffer.getvalue())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def read_bundle(path: Path) -> dict:
    """The bundle written by :func:`write_bundle` (plain data only: ``weights_only=True``)."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no grading bundle at {path}: build one with `make grading-bundle`")
    bundle = torch.load(path, weights_only=True)
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"{path} is not a lectorch grading bundle")
    if bundle.get("version") != BUNDLE_VERSION:
        raise ValueError(f"{path}: bundle version {bundle.get('version')}, this grader reads {BUNDLE_VERSION}; "
                         "rebuild it with `make grading-bundle`")
    return bundle


def fingerprint(path: Path) -> str:
    """A short hash of the bundle file (safe to publish: it does not reveal the seed)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


# --------------------------------------------------------------------------- check cells


def _python_lines(source: str) -> str:
    # IPython magics and shell escapes are not Python: blank them so the rest parses
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def check_calls(notebook: Mapping) -> list[tuple[str, str]]:
    """``(exercise id, answer expression)`` of every ``lectorch.check("id", answer)`` in code cells,
    in order, each id once. A cell that does not parse contributes nothing."""
    calls: list[tuple[str, str]] = []
    seen: set[str] = set()
    for cell in notebook.get("cells", []):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        text = _python_lines(source)
        try:
            from lectorch.exercises import review  # one parse at a time: CPython 3.11's ast is not thread-safe

            tree = review._parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) >= 2]
        for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if name != "check" or not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if first.value not in seen:
                seen.add(first.value)
                calls.append((first.value, ast.get_source_segment(text, node.args[1]) or ""))
    return calls


def read_notebook_json(path: Path, max_bytes: int = 50 * 2**20) -> dict:
    """A notebook file's JSON (``ValueError`` when it is too big, not JSON or not a notebook)."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{path.name} is {size / 2**20:.0f} MiB, over the {max_bytes / 2**20:.0f} MiB limit")
    try:
        nb = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"{path.name} is not a notebook (not JSON: {str(err)[:80]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"{path.name} is not a notebook (no list of cells)")
    return nb


#: a grading seed must carry at least this many bits of entropy to be used as it is
SEED_BITS = 128
_KDF_ITERATIONS = 200_000


class WeakSeedWarning(UserWarning):
    """A grading seed short or guessable enough to be searched for: it was stretched, not refused."""


def seed_bits(seed: Any) -> float:
    """A generous estimate of a seed's entropy in bits (its length times its alphabet's bits):
    an integer or a date counts as its digits, a hex string 4 bits a character.

    >>> seed_bits(20261201) < SEED_BITS <= seed_bits("9f" * 32)
    True
    """
    if isinstance(seed, bytes):
        return 8.0 * len(seed)
    text = str(seed)
    if not text:
        return 0.0
    import math
    import string

    for alphabet in (string.digits, string.hexdigits, string.ascii_letters + string.digits + "-_"):
        if all(c in alphabet for c in text):
            return len(text) * math.log2(len(set(alphabet)))
    return len(text) * math.log2(95)


def grading_key(seed: Any, *, weak_ok: bool = True) -> bytes:
    """The secret key every exercise's cases are drawn from.

    A seed of at least :data:`SEED_BITS` bits (``python -c "import secrets; print(secrets.token_hex(32))"``)
    is used as it is. A shorter one (an integer, a date, a word) can be searched for from any number
    a sandbox sees: with ``weak_ok=False`` it is refused; otherwise it is stretched with PBKDF2 (so
    each guess costs a search a fifth of a second) and a :class:`WeakSeedWarning` says so."""
    key, strong = _key(seed)
    if strong:
        return key
    if not weak_ok:
        raise ValueError(f"the grading seed has about {seed_bits(seed):.0f} bits of entropy, under "
                         f"{SEED_BITS}: a sandboxed notebook could search for it. Use a random one: "
                         "GRADING_SEED=$(python -c 'import secrets; print(secrets.token_hex(32))')")
    import warnings

    warnings.warn(f"the grading seed has about {seed_bits(seed):.0f} bits of entropy (under {SEED_BITS}): "
                  "stretched with PBKDF2, but use a random one for a real class (secrets.token_hex(32))",
                  WeakSeedWarning, stacklevel=3)
    return key


def _key(seed: Any) -> tuple[bytes, bool]:
    """(the key, whether the seed was strong enough to be used as it is)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, str, bytes)):
        raise ValueError(f"the grading seed must be a string (or bytes), got {type(seed).__name__}")
    raw = seed if isinstance(seed, bytes) else str(seed).strip().encode("utf-8")
    if seed_bits(seed if isinstance(seed, bytes) else str(seed).strip()) >= SEED_BITS:
        return hashlib.sha256(b"lectorch-grading-key\0" + raw).digest(), True
    return _stretched(raw), False


@functools.lru_cache(maxsize=8)
def _stretched(raw: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", raw, b"lectorch-grading-seed", _KDF_ITERATIONS)


class KeyedRandom(random.Random):
    """A ``random.Random`` whose every draw is an HMAC of the key and a counter: no number drawn
    (a hidden input, a simulated device's timing) tells anything of the key or of another draw.

    >>> a, b = KeyedRandom(b"k" * 32, "x"), KeyedRandom(b"k" * 32, "x")
    >>> [a.randrange(100) for _ in range(3)] == [b.randrange(100) for _ in range(3)]
    True
    """

    def __init__(self, key: bytes, label: str):
        self._key = hmac.new(key, b"lectorch-exercise\0" + label.encode("utf-8"), hashlib.sha256).digest()
        self._counter = 0
        super().__init__(0)

    def seed(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102 - the stream restarts
        self._counter = 0
        self.gauss_next = None

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        out, have = 0, 0
        while have < k:
            block = hmac.new(self._key, self._counter.to_bytes(8, "big"), hashlib.sha256).digest()
            self._counter += 1
            out, have = (out << 256) | int.from_bytes(block, "big"), have + 256
        return out >> (have - k)

    def random(self) -> float:
        return self.getrandbits(53) / 2**53

    def getstate(self) -> Any:
        return (self._key, self._counter, self.gauss_next)

    def setstate(self, state: Any) -> None:
        self._key, self._counter, self.gauss_next = state


def grading_rng(seed: Any, exercise_id: str) -> random.Random:
    """The random generator an exercise's cases are drawn from: keyed by HMAC(key, exercise id),
    the key from :func:`grading_key` (one exercise's draws say nothing of another's)."""
    return KeyedRandom(_key(seed)[0], exercise_id)


__all__ = ["KeyedRandom", "SEED_BITS", "WeakSeedWarning", "build_bundle", "check_calls", "encode", "expected_values",
           "fingerprint", "grading_key", "grading_rng", "seed_bits",
           "hidden_cases", "read_bundle", "read_notebook_json", "load_topics", "write_bundle", "ROOT", "Topic"]
