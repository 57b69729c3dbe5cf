"""The one sealing engine: expected answers the package can check but does not print.

Every expected answer the student's package holds (a value or prediction exercise's answer, the
wrong values of its named slips, the results of public cases) is *sealed*: stored as salted hashes
in ``seals.json`` (package data, written by the instructor's ``python -m grading.seals`` from the
plain answers in ``grading/``). A seal is a token string; this module makes them and checks them.

**The accepted interval is exactly the stated one.** Every exercise accepts
``|x - expected| <= max(rtol·|expected|, atol)`` (:func:`within`). A seal of a number hashes the
index of a *bucket* of a grid whose buckets have the interval's own width and are aligned so that
the interval's two edges are bucket boundaries: "x falls in the sealed bucket" is then
"lo <= x <= hi", with no bin of slack (only float rounding at the edge itself, ~1e-16 relative).

- relative tolerance: in log space the interval ``[|e|(1-rtol), |e|(1+rtol)]`` has the width
  ``log((1+rtol)/(1-rtol))`` whatever ``e`` is, so the grid's width says nothing about ``e``; its
  offset (``log lo`` modulo the width, stored in clear) says only that ``lo`` lies on a lattice
  that has a point within every ±rtol of every number. The sign is part of the hashed text.
- absolute tolerance: the same on a linear grid of width ``2·atol``.
- exact answers (ints, strings, dtypes, tuples and sets of them, a float with no tolerance, and
  ``0`` under a purely relative tolerance): a salted hash of a canonical text (an integral float
  is written as the int, so ``19.0`` is ``19``).

When both tolerances are given, the seal uses the one that decides at the answer (``rtol·|e|``
versus ``atol``); that choice (``r`` or ``a`` in the token) tells whether ``|e|`` is above
``atol / rtol``, nothing more. An order-preserving encoding would let an answer be compared
without a grid, but it is not hiding: the order alone finds the answer by bisection.

Hashes hide a number from reading, not from search: whoever hashes candidate buckets near a guess
finds the accepted one, as with any offline checker. The grade does not rest on the seals: it runs
hidden cases whose answers never reach the student's machine.

For feedback a number's seal also holds the salted hash of its power of ten. "How far off" is then
said only as "too large/too small: the answer has a smaller/larger power of ten", or "not within
the tolerance" when the powers of ten agree: no factor that a student's number could be multiplied
by to land in the interval (:func:`how_far`).

Public cases of function exercises are sealed as structures (:func:`seal`, :func:`view`):
containers keep their structure, tensors their shape and dtype, every number its bucket.

>>> s = Sealed.of("doc-seal", 12, rtol=0.05)
>>> s.matches("doc-seal", 12 * 1.0499), s.matches("doc-seal", 12 * 1.0501), s.matches("doc-seal", 12 * 0.9501)
(True, False, True)
>>> "12" in s.token.split("|")[3:]  # the tolerances, the grid's offset and hashes only
False
>>> import torch
>>> e = torch.tensor([1.0, -2.0, 0.0])
>>> v = view(seal("doc#0", e, rtol=1e-5, atol=1e-6), "doc#0")
>>> close(e + 1e-7, v), close(e + 1e-3, v)
(True, False)
>>> mismatch(torch.tensor([1.0, -2.0, 5.0]), v).tolist()
[False, False, True]

The instructor's one-value command prints a seal token:

    python -m lectorch.exercises.seal EXERCISE_ID VALUE [--rtol R] [--atol A]
"""

from __future__ import annotations

from lectorch.i18n import tr

import argparse
import ast
import dataclasses
import functools
import hashlib
import json
import math
import numbers
import sys
from pathlib import Path
from typing import Any

import torch

#: the seals of every exercise (package data; written by ``python -m grading.seals``)
SEALS_FILE = Path(__file__).with_name("seals.json")
_KIND = "§"


# ------------------------------------------------------------------------------ the interval


def within(x: float, expected: float, rtol: float, atol: float) -> bool:
    """The accepted interval of every exercise: ``|x - expected| <= max(rtol·|expected|, atol)``
    (``rtol=0.25`` accepts 6 to 10 for 8; the page states it as "within ±25 %").

    >>> within(10.0, 8, 0.25, 0), within(10.1, 8, 0.25, 0)
    (True, False)
    """
    return abs(x - expected) <= max(rtol * abs(expected), atol) or x == expected


def tolerance_text(rtol: float, atol: float) -> str:
    """The accepted interval in words, as the page states it.

    >>> tolerance_text(0.05, 0), tolerance_text(0, 0), tolerance_text(0, 0.5)
    ('within ±5 % of the answer', 'exactly', 'within ±0.5')
    """
    if rtol:
        if rtol >= 0.001:
            return tr("within ±{percent:.3g} % of the answer").format(percent=rtol * 100)
        return tr("exactly, up to rounding") if rtol <= 1e-6 else tr("within ±{rtol:.1g} (relative)").format(rtol=rtol)
    if atol:
        return tr("within ±{atol:g}").format(atol=atol)
    return tr("exactly")


# ------------------------------------------------------------------------------ tokens


def _digest(salt: str, text: str) -> str:
    return hashlib.sha256(f"lectorch|{salt}|{text}".encode()).hexdigest()[:16]


def exact_text(value: Any) -> str:
    """The canonical text of an exact answer (``TypeError`` for what has none).

    >>> exact_text(19.0), exact_text((8, 1)), exact_text({"k", "i"}), exact_text(torch.float32)
    ('19', '[8,1]', '{"i","k"}', '"torch.float32"')
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.dim() == 0:
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)
    if isinstance(value, torch.dtype):
        return json.dumps(str(value))
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(exact_text(v) for v in value)) + "}"
    if isinstance(value, (tuple, list, torch.Size)):
        return "[" + ",".join(exact_text(v) for v in value) + "]"
    raise TypeError(f"cannot seal a {type(value).__name__} exactly; give a number with rtol/atol, "
                    "or ints, strings, bools, dtypes and tuples/sets of them")


def _log_width(rtol: float) -> float:
    return math.log1p(rtol) - math.log1p(-rtol)


def _decade(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return repr(value)
    return ("+" if value > 0 else "-") + str(math.floor(math.log10(abs(value))))


def number_token(salt: str, value: Any, *, rtol: float = 0.0, atol: float = 0.0, exact: bool = False,
                 decade: bool = True) -> str:
    """The seal of one expected answer: ``kind|rtol|atol|offset|digest|decade``.

    ``kind`` is ``r`` (a relative interval, log grid), ``a`` (an absolute one, linear grid), ``e``
    (a number accepted only when equal) or ``x`` (an exact non-number or an int asked exactly)."""
    if not (rtol >= 0 and atol >= 0) or math.isinf(rtol) or math.isinf(atol):
        raise ValueError(f"rtol and atol must be finite and >= 0, got rtol={rtol}, atol={atol}")
    if rtol >= 0.99:
        raise ValueError(f"rtol={rtol} is too wide to seal; use rtol < 0.99")
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if exact or not is_real:
        return f"x|0|0||{_digest(salt, exact_text(value))}|"
    x = float(value)
    tail = _digest(salt + "#decade", _decade(x)) if decade and math.isfinite(x) else ""
    if math.isfinite(x) and rtol > 0 and x != 0 and rtol * abs(x) >= atol:
        width = _log_width(rtol)
        offset = (math.log(abs(x)) + math.log1p(-rtol)) % width
        text = ("+" if x > 0 else "-") + str(math.floor((math.log(abs(x)) - offset) / width))
        return f"r|{rtol!r}|{atol!r}|{offset!r}|{_digest(salt, text)}|{tail}"
    if math.isfinite(x) and atol > 0:
        offset = (x - atol) % (2 * atol)
        text = str(math.floor((x - offset) / (2 * atol)))
        return f"a|{rtol!r}|{atol!r}|{offset!r}|{_digest(salt, text)}|{tail}"
    return f"e|{rtol!r}|{atol!r}||{_digest(salt, exact_text(x))}|{tail}"


def _real(value: Any) -> float | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def token_matches(salt: str, token: str, answer: Any) -> bool:
    """True when ``answer`` lies in the interval sealed by ``token`` (exactly: see the module)."""
    kind, _, atol, offset, digest, _ = token.split("|")
    if kind == "x":
        try:
            return _digest(salt, exact_text(answer)) == digest
        except TypeError:
            return False
    x = _real(answer)
    if x is None:
        return False
    if kind == "e" or not math.isfinite(x):
        return kind == "e" and _digest(salt, exact_text(x)) == digest
    rtol = float(token.split("|")[1])
    if kind == "r":
        if x == 0:
            return False
        t, sign = (math.log(abs(x)) - float(offset)) / _log_width(rtol), ("+" if x > 0 else "-")
    else:
        t, sign = (x - float(offset)) / (2 * float(atol)), ""
    k = math.floor(t)
    # a bucket is [lo, hi): the top edge, closed, is the next bucket's first point
    return any(_digest(salt, f"{sign}{b}") == digest for b in ((k, k - 1) if t == k else (k,)))


def decades_off(salt: str, token: str, answer: Any, span: int = 40) -> int | None:
    """How many powers of ten ``answer`` is above the sealed answer (negative: below); None when
    unknown (no decade sealed, another sign, zero, or further than ``span``)."""
    tail = token.split("|")[5]
    x = _real(answer)
    if not tail or x is None or x == 0 or not math.isfinite(x):
        return None
    sign, own = ("+" if x > 0 else "-"), math.floor(math.log10(abs(x)))
    for d in sorted(range(-span, span + 1), key=abs):
        if _digest(salt + "#decade", f"{sign}{own - d}") == tail:
            return d
    return None


def how_far(got: float, expected: Any, rtol: float = 0.0, atol: float = 0.0) -> str:
    """What a wrong number is, in words that name no factor: the same words for a plain expected
    value (the grader's) and a sealed one (the practice check's).

    >>> how_far(32.0, 4.0, 0.02)
    '32.0 is too large: the answer has a smaller power of ten; recheck the units and each factor'
    >>> how_far(5.0, 4.0, 0.02)
    '5.0 is not within ±2 % of the answer; recheck each factor'
    """
    shown = short(got)
    if isinstance(expected, SealedNumber):
        salt, token = expected.salt, expected.token
        if not token.startswith("x"):
            rtol, atol = float(token.split("|")[1]), float(token.split("|")[2])
        d = decades_off(salt, token, got)
        if d is None and decades_off(salt, token, -got) is not None:
            return tr("{shown} has the wrong sign").format(shown=shown)
    else:
        e = float(expected)
        if got and e and (got > 0) != (e > 0):
            return tr("{shown} has the wrong sign").format(shown=shown)
        d = (math.floor(math.log10(abs(got))) - math.floor(math.log10(abs(e)))) if got and e else None
    if not d:
        words = tolerance_text(rtol, atol)
        if words.startswith("exactly"):
            return tr("{shown} is not the expected answer ({words}); recheck each factor").format(shown=shown, words=words)
        return tr("{shown} is not {words}; recheck each factor").format(shown=shown, words=words)
    if d > 0:
        return tr("{shown} is too large: the answer has a smaller power of ten; recheck the units and each factor").format(shown=shown)
    return tr("{shown} is too small: the answer has a larger power of ten; recheck the units and each factor").format(shown=shown)


def short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return tr("a tensor of shape {shape} and dtype {dtype}").format(shape=tuple(value.shape), dtype=value.dtype)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------------------ exercise seals


@functools.lru_cache(maxsize=1)
def stored_data() -> dict:
    """``seals.json``: ``values`` (id → token), ``slips`` (id → name → token), ``cases`` (id → the
    sealed results of the public cases) and ``practice`` (id → public practice cases)."""
    if not SEALS_FILE.is_file():
        return {"values": {}, "slips": {}, "cases": {}, "practice": {}}
    return json.loads(SEALS_FILE.read_text(encoding="utf-8"))


class _Tolerance:
    """The (rtol, atol) fields of a seal's token (``kind|rtol|atol|...``)."""

    token: str

    @property
    def rtol(self) -> float:
        return float(self.token.split("|")[1])

    @property
    def atol(self) -> float:
        return float(self.token.split("|")[2])


@dataclasses.dataclass(frozen=True)
class Sealed(_Tolerance):
    """An exercise's expected answer, known by its seal (a token; see the module).

    >>> s = Sealed.of("doc-seal", 12, rtol=1e-6)
    >>> s.matches("doc-seal", 12.000001), s.matches("doc-seal", 9)
    (True, False)
    """

    token: str

    @staticmethod
    def of(exercise_id: str, value: Any, *, rtol: float = 0.0, atol: float = 0.0) -> "Sealed":
        is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if is_real and not math.isfinite(float(value)):
            raise ValueError(f"cannot seal a non-finite value ({value}) for {exercise_id!r}")
        exact = not (is_real and (rtol or atol or not isinstance(value, numbers.Integral)))
        return Sealed(number_token(exercise_id, value, rtol=rtol, atol=atol, exact=exact))

    @staticmethod
    def stored(exercise_id: str) -> "Sealed":
        """The seal of ``exercise_id`` kept in ``seals.json`` (a seal that accepts nothing when the
        instructor has not sealed it yet)."""
        return Sealed(stored_data()["values"].get(exercise_id, "x|0|0||missing|"))

    @property
    def numeric(self) -> bool:
        return self.token[0] in "rae"

    def matches(self, exercise_id: str, answer: Any) -> bool:
        """True when ``answer`` is within the sealed interval (exactly: see the module)."""
        if not self.numeric:
            x = _real(answer)  # an int checked exactly: 19.0 is the int 19 (no exact answer is a float)
            if x is not None and not isinstance(answer, numbers.Integral) and x.is_integer():
                answer = int(x)
        return token_matches(exercise_id, self.token, answer)

    def bound(self, exercise_id: str):
        """This seal with its salt (a ``SealedNumber``): what a case's comparison takes."""
        return SealedNumber(exercise_id, self.token)


# ------------------------------------------------------------------------------ sealed structures


def seal(salt: str, value: Any, *, rtol: float = 0.0, atol: float = 0.0) -> Any:
    """Plain data (JSON-able) that stands for ``value`` without revealing it: ints, bools, strings
    and dtypes sealed exactly, floats and tensors within (rtol, atol)."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().reshape(-1)
        exact = not (value.is_floating_point() or value.is_complex())
        tokens = [number_token(f"{salt}#{i}", int(v) if exact else float(v), rtol=rtol, atol=atol, exact=exact,
                               decade=False) for i, v in enumerate(flat.tolist())]
        return {_KIND: "tensor", "shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                "rtol": rtol, "atol": atol, "items": tokens}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_KIND: "record", "fields": {f.name: seal(f"{salt}.{f.name}", getattr(value, f.name), rtol=rtol, atol=atol)
                                           for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {_KIND: "dict", "items": {k: seal(f"{salt}.{k}", v, rtol=rtol, atol=atol) for k, v in value.items()}}
    if isinstance(value, (tuple, list, torch.Size)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        return {_KIND: "number", "token": number_token(salt, value, exact=True)}  # e.g. strides, as a whole
    if isinstance(value, (tuple, list)):
        items = [seal(f"{salt}[{i}]", v, rtol=rtol, atol=atol) for i, v in enumerate(value)]
        return {_KIND: "tuple" if isinstance(value, tuple) else "list", "items": items}
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return {_KIND: "number", "token": number_token(salt, value, exact=True)
                + _digest(salt + "#decade", _decade(float(value)))}
    return {_KIND: "number", "token": number_token(salt, value, rtol=rtol, atol=atol)}


@dataclasses.dataclass(frozen=True)
class SealedNumber(_Tolerance):
    """An expected number or exact value (int, bool, string, tuple of ints) known by its seal."""

    salt: str
    token: str

    def matches(self, got: Any) -> bool:
        return token_matches(self.salt, self.token, got)


@dataclasses.dataclass(frozen=True)
class SealedTensor:
    """An expected tensor known by its shape, its dtype and the seal of each element."""

    salt: str
    shape: torch.Size
    dtype: torch.dtype
    rtol: float
    atol: float
    tokens: tuple[str, ...]

    def mismatch(self, got: torch.Tensor) -> torch.Tensor:
        """A bool tensor of ``got``'s shape: True where an element disagrees with the seal."""
        flat = got.detach().cpu().reshape(-1).tolist()
        out = []
        for i, (v, token) in enumerate(zip(flat, self.tokens)):
            if token.startswith("x") and isinstance(v, float) and v.is_integer():
                v = int(v)
            out.append(not token_matches(f"{self.salt}#{i}", token, v))
        return torch.tensor(out, dtype=torch.bool).reshape(got.shape)


@dataclasses.dataclass(frozen=True)
class SealedRecord:
    """An expected dataclass (e.g. a result with the numbers of known slips): its fields, sealed."""

    fields: dict

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None


#: an expected result whose seal is missing (the instructor has not run the seal writer)
MISSING = SealedNumber("missing", "x|0|0||missing|")


def view(data: Any, salt: str) -> Any:
    """The checkable stand-in of sealed ``data`` (as :func:`seal` wrote it under ``salt``)."""
    kind = data.get(_KIND) if isinstance(data, dict) else None
    if kind == "tensor":
        return SealedTensor(salt, torch.Size(data["shape"]), getattr(torch, data["dtype"]), data["rtol"], data["atol"],
                            tuple(data["items"]))
    if kind == "record":
        return SealedRecord({k: view(v, f"{salt}.{k}") for k, v in data["fields"].items()})
    if kind == "dict":
        return {k: view(v, f"{salt}.{k}") for k, v in data["items"].items()}
    if kind in ("tuple", "list"):
        items = [view(v, f"{salt}[{i}]") for i, v in enumerate(data["items"])]
        return tuple(items) if kind == "tuple" else items
    if kind == "number":
        return SealedNumber(salt, data["token"])
    raise ValueError(f"not a sealed case result: {data!r:.60}")


def public_cases(exercise_id: str, cases: tuple) -> tuple:
    """``cases`` (inputs only) with their sealed expected results from ``seals.json``."""
    stored = stored_data()["cases"].get(exercise_id, [])
    out = []
    for i, case in enumerate(cases):
        if case.raises is not None:  # a case that must raise has no result
            out.append(case)
            continue
        expected = view(stored[i], f"{exercise_id}#{i}") if i < len(stored) and stored[i] is not None else MISSING
        if isinstance(case.expected, dict):  # facts of the inputs, in clear, beside the sealed results
            expected = {**case.expected, **(expected if isinstance(expected, dict) else {"result": expected})}
        out.append(dataclasses.replace(case, expected=expected))
    return tuple(out)


def _input(value: Any) -> Any:
    """A practice input from JSON: lists are tuples, ``{"dtype": name}`` a torch dtype."""
    if isinstance(value, list):
        return tuple(_input(v) for v in value)
    if isinstance(value, dict) and set(value) == {"dtype"}:
        return getattr(torch, value["dtype"])
    return value


def practice_cases(exercise_id: str) -> tuple:
    """The public practice cases of a value or prediction exercise asked as a function: settings
    other than the page's, so that a rule that is right only at the page's numbers fails the
    practice check too. Their inputs are in clear, their answers sealed."""
    from lectorch.exercises import Case

    out = []
    for i, item in enumerate(stored_data()["practice"].get(exercise_id, [])):
        out.append(Case(args=_input(item["args"]), kwargs={k: _input(v) for k, v in item.get("kwargs", {}).items()},
                        expected=SealedNumber(f"{exercise_id}#practice{i}", item["expected"]),
                        description=item["description"]))
    return tuple(out)


def holds_seal(value: Any) -> bool:
    """True when ``value`` is, or contains, a sealed result."""
    if is_sealed(value):
        return True
    if isinstance(value, dict):
        return any(holds_seal(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(holds_seal(v) for v in value)
    return False


def plain_part(value: Any) -> dict:
    """The entries of a public case's expected dict that are in clear (facts of its inputs)."""
    return {k: v for k, v in value.items() if not holds_seal(v)} if isinstance(value, dict) else {}


def is_sealed(expected: Any) -> bool:
    return isinstance(expected, (Sealed, SealedNumber, SealedTensor, SealedRecord))


# ------------------------------------------------------------------------------ comparisons


def mismatch(got: torch.Tensor, expected: Any, *, rtol: float = 0.0, atol: float = 0.0) -> torch.Tensor:
    """Elementwise: True where ``got`` disagrees with ``expected`` (a tensor or its seal) beyond
    ``max(atol, rtol·|expected|)``; ``got`` must have ``expected``'s shape."""
    if isinstance(expected, SealedTensor):
        return expected.mismatch(got)
    e = expected.detach().cpu()
    g = got.detach().cpu().to(e.dtype)
    if not (e.is_floating_point() or e.is_complex()) or (rtol == 0 and atol == 0):
        return ~((g == e) | (torch.isnan(g) & torch.isnan(e)))
    ok = (g - e).abs() <= torch.clamp(rtol * e.abs(), min=atol)
    return ~(ok | (g == e) | (torch.isnan(g) & torch.isnan(e)))


def close(got: Any, expected: Any, *, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """True when ``got`` agrees with ``expected`` (plain or sealed) within the tolerance; exactly
    for ints, strings and tuples of them. A seal compares within its own tolerance."""
    if isinstance(expected, SealedNumber):
        return expected.matches(got)
    if isinstance(expected, (SealedTensor, torch.Tensor)):
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
            return False
        return not bool(mismatch(got, expected, rtol=rtol, atol=atol).any())
    if isinstance(expected, (tuple, list)):
        return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                and all(close(g, e, rtol=rtol, atol=atol) for g, e in zip(got, expected)))
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(expected, numbers.Real) and not isinstance(expected, (bool, numbers.Integral)):
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return False
        return within(float(got), float(expected), rtol, atol)
    return got == expected


# ------------------------------------------------------------------------------ the command


def main(argv: list[str] | None = None) -> str:
    """Print the seal token of one value.

    >>> main(["doc-x", "16", "--rtol", "0.05"]).startswith("r|0.05|")
    True
    """
    parser = argparse.ArgumentParser(prog="python -m lectorch.exercises.seal", description="Seal one expected answer.")
    parser.add_argument("exercise_id")
    parser.add_argument("value", help="a Python literal")
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--atol", type=float, default=0.0)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        value = ast.literal_eval(args.value)
    except (ValueError, SyntaxError):
        parser.error(f"VALUE must be a Python literal (a number, tuple, set or string), got {args.value!r}")
    return Sealed.of(args.exercise_id, value, rtol=args.rtol, atol=args.atol).token


if __name__ == "__main__":
    print(main(sys.argv[1:]))
