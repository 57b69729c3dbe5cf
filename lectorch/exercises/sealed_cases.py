"""Sealed expected results of the public cases of function exercises.

The practice check runs a student's function on a few public cases. Their expected results are
computed on the instructor's side (``grading/<topic>.py``'s ``REFERENCE``, by torch or a
reference solution) and stored here only as seals (``_case_seals.py``, written by
``python -m grading.case_seals``): containers keep their structure, tensors their shape and dtype,
and every number is a salted hash of its tolerance bin. The package can tell whether an answer
agrees with the expected result, never what the result is.

The comparisons of a function exercise use :func:`close` and :func:`mismatch`, which accept
either a plain expected value (the grader's) or its seal (the practice check's), with the same
tolerance: ``|got - expected| <= max(rtol·|expected|, atol)`` elementwise (as ``within``). The
practice check agrees with the grader except within one bin of an edge (1/128 of the tolerance for
a number, 1/8 for a tensor's element).

>>> import torch
>>> e = torch.tensor([1.0, -2.0, 0.0])
>>> s = view(seal("doc#0", e, rtol=1e-5, atol=1e-6), "doc#0")
>>> s.shape, s.dtype
(torch.Size([3]), torch.float32)
>>> close(e + 1e-7, s, rtol=1e-5, atol=1e-6), close(e + 1e-3, s, rtol=1e-5, atol=1e-6)
(True, False)
>>> mismatch(torch.tensor([1.0, -2.0, 5.0]), s, rtol=1e-5, atol=1e-6).tolist()
[False, False, True]
>>> close(7, view(seal("doc#1", 7), "doc#1")), close(8, view(seal("doc#1", 7), "doc#1"))
(True, False)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
from typing import Any

import torch

#: bins per tolerance: a sealed number is accepted within its tolerance, give or take one bin;
#: a tensor element's bins are coarser (every element costs a hash per bin when checked)
NUMBER_BINS, ELEMENT_BINS = 128, 8
_KIND = "§"


def _digest(salt: str, text: str) -> str:
    return hashlib.sha256(f"lectorch-case|{salt}|{text}".encode()).hexdigest()[:10]


def _exact_text(value: Any) -> str:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, (tuple, list, torch.Size)):
        return "[" + ",".join(_exact_text(v) for v in value) + "]"
    raise TypeError(f"cannot seal a {type(value).__name__} exactly")


def _regime(value: float, rtol: float, atol: float) -> str:
    if not math.isfinite(value) or (rtol == 0 and atol == 0):
        return "x"
    if rtol > 0 and value != 0 and rtol * abs(value) >= atol:
        return "r"
    return "a" if atol > 0 else "x"


def _bin(value: float, regime: str, rtol: float, atol: float, bins: int) -> int:
    if regime == "r":
        return math.floor(math.log(abs(value)) / (math.log1p(rtol) / bins))
    return math.floor(value / (atol / bins))


def _seal_number(salt: str, value: float, rtol: float, atol: float, bins: int = ELEMENT_BINS) -> str:
    regime = _regime(value, rtol, atol)
    if regime == "x":
        return "x" + _digest(salt, _exact_text(value))
    sign = "-" if value < 0 else "+"
    text = f"{regime}{sign if regime == 'r' else ''}{_bin(value, regime, rtol, atol, bins)}"
    return regime + _digest(salt, text)


def _octave(value: float) -> str:
    """The quarter octave of ``value`` (for "how far off" feedback: factors of 2**0.25)."""
    if value == 0 or not math.isfinite(value):
        return repr(value)
    return ("+" if value > 0 else "-") + str(math.floor(4 * math.log2(abs(value))))


def _number_matches(salt: str, token: str, x: float, rtol: float, atol: float, bins: int = ELEMENT_BINS) -> bool:
    regime, digest = token[0], token[1:]
    if regime == "x" or not math.isfinite(x):
        return regime == "x" and _digest(salt, _exact_text(x)) == digest
    if regime == "r":
        if x == 0:
            return False
        sign, b = ("-" if x < 0 else "+"), _bin(x, "r", rtol, atol, bins)
        return any(_digest(salt, f"r{sign}{k}") == digest for k in range(b - bins, b + bins + 1))
    b = _bin(x, "a", rtol, atol, bins)
    return any(_digest(salt, f"a{k}") == digest for k in range(b - bins, b + bins + 1))


# ------------------------------------------------------------------------------ sealing (writer)


def seal(salt: str, value: Any, *, rtol: float = 0.0, atol: float = 0.0) -> Any:
    """Plain data (JSON-like) that stands for ``value`` without revealing it: the instructor's
    seal writer stores it in ``_case_seals.py``. Ints, bools, strings and dtypes are sealed exactly,
    floats and tensors within (rtol, atol)."""
    if isinstance(value, torch.Tensor):
        flat = value.detach().cpu().reshape(-1)
        exact = not (value.is_floating_point() or value.is_complex())
        tokens = [(("x" + _digest(f"{salt}#{i}", _exact_text(int(v)))) if exact else
                   _seal_number(f"{salt}#{i}", float(v), rtol, atol)) for i, v in enumerate(flat.tolist())]
        return {_KIND: "tensor", "shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                "rtol": rtol, "atol": atol, "items": ",".join(tokens)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_KIND: "record", "fields": {f.name: seal(f"{salt}.{f.name}", getattr(value, f.name), rtol=rtol, atol=atol)
                                           for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        return {_KIND: "dict", "items": {k: seal(f"{salt}.{k}", v, rtol=rtol, atol=atol) for k, v in value.items()}}
    if isinstance(value, (tuple, list, torch.Size)) and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        return {_KIND: "exact", "token": "x" + _digest(salt, _exact_text(value))}  # e.g. strides, as a whole
    if isinstance(value, (tuple, list)):
        items = [seal(f"{salt}[{i}]", v, rtol=rtol, atol=atol) for i, v in enumerate(value)]
        return {_KIND: "tuple" if isinstance(value, tuple) else "list", "items": items}
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        return {_KIND: "number", "rtol": rtol, "atol": atol, "token": _seal_number(salt, float(value), rtol, atol, NUMBER_BINS),
                "octave": _digest(salt + "#octave", _octave(float(value)))}
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return {_KIND: "exact", "token": "x" + _digest(salt, _exact_text(value)),
                "octave": _digest(salt + "#octave", _octave(float(value)))}
    return {_KIND: "exact", "token": "x" + _digest(salt, _exact_text(value))}


# ------------------------------------------------------------------------------ sealed views


@dataclasses.dataclass(frozen=True)
class SealedNumber:
    """An expected number or exact value (int, bool, string, tuple of ints) known by its seal."""

    salt: str
    token: str
    rtol: float = 0.0
    atol: float = 0.0
    octave: str = ""

    def octaves_off(self, got: float, span: int = 256) -> int | None:
        """``d`` such that ``got / expected`` lies between ``2**((d-1)/4)`` and ``2**((d+1)/4)``
        (None when unknown, of another sign, or further than ``span`` quarter octaves)."""
        if not self.octave or not math.isfinite(got) or got == 0:
            return None
        sign, own = ("+" if got > 0 else "-"), math.floor(4 * math.log2(abs(got)))
        for d in sorted(range(-span, span + 1), key=abs):
            if _digest(self.salt + "#octave", f"{sign}{own - d}") == self.octave:
                return d
        return None

    def matches(self, got: Any) -> bool:
        if self.token.startswith("x"):
            try:
                return _digest(self.salt, _exact_text(got)) == self.token[1:]
            except TypeError:
                return False
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return False
        return _number_matches(self.salt, self.token, float(got), self.rtol, self.atol, NUMBER_BINS)


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
        flat = got.detach().cpu().reshape(-1)
        exact = not (self.dtype.is_floating_point or self.dtype.is_complex)
        out = []
        for i, (v, token) in enumerate(zip(flat.tolist(), self.tokens)):
            salt = f"{self.salt}#{i}"
            if exact or token.startswith("x"):
                try:
                    ok = _digest(salt, _exact_text(int(v) if exact and float(v).is_integer() else v)) == token[1:]
                except (TypeError, ValueError, OverflowError):
                    ok = False
            else:
                ok = _number_matches(salt, token, float(v), self.rtol, self.atol)
            out.append(not ok)
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
MISSING = SealedNumber("missing", "x-missing")


def view(data: Any, salt: str) -> Any:
    """The checkable stand-in of sealed ``data`` (as :func:`seal` wrote it under ``salt``)."""
    kind = data.get(_KIND) if isinstance(data, dict) else None
    if kind == "tensor":
        return SealedTensor(salt, torch.Size(data["shape"]), getattr(torch, data["dtype"]), data["rtol"], data["atol"],
                            tuple(data["items"].split(",")) if data["items"] else ())
    if kind == "record":
        return SealedRecord({k: view(v, f"{salt}.{k}") for k, v in data["fields"].items()})
    if kind == "dict":
        return {k: view(v, f"{salt}.{k}") for k, v in data["items"].items()}
    if kind in ("tuple", "list"):
        items = [view(v, f"{salt}[{i}]") for i, v in enumerate(data["items"])]
        return tuple(items) if kind == "tuple" else items
    if kind == "number":
        return SealedNumber(salt, data["token"], data["rtol"], data["atol"], data.get("octave", ""))
    if kind == "exact":
        return SealedNumber(salt, data["token"], octave=data.get("octave", ""))
    raise ValueError(f"not a sealed case result: {data!r:.60}")


def public_cases(exercise_id: str, cases: tuple) -> tuple:
    """``cases`` (inputs only) with their sealed expected results from ``_case_seals.py``."""
    from lectorch.exercises._case_seals import CASES

    stored = CASES.get(exercise_id, [])
    out = []
    for i, case in enumerate(cases):
        if case.raises is not None:  # a case that must raise has no result
            out.append(case)
            continue
        expected = view(stored[i], f"{exercise_id}#{i}") if i < len(stored) else MISSING
        if isinstance(case.expected, dict):  # facts of the inputs, in clear, beside the sealed results
            expected = {**case.expected, **(expected if isinstance(expected, dict) else {"result": expected})}
        out.append(dataclasses.replace(case, expected=expected))
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


# ------------------------------------------------------------------------------ comparisons


def is_sealed(expected: Any) -> bool:
    return isinstance(expected, (SealedNumber, SealedTensor, SealedRecord))


def how_far(got: float, expected: Any) -> str:
    """The words "too large by a factor of about 2 …" for a number ``got`` against ``expected`` (plain or
    sealed), or "" when that is unknown or less than a quarter octave."""
    from lectorch.exercises import _octave_text

    if isinstance(expected, SealedNumber):
        d = expected.octaves_off(float(got))
    elif isinstance(expected, numbers.Real) and expected and got and (got > 0) == (expected > 0):
        d = math.floor(4 * math.log2(abs(got))) - math.floor(4 * math.log2(abs(expected)))
    else:
        d = None
    return _octave_text(d) if d else ""


def mismatch(got: torch.Tensor, expected: Any, *, rtol: float = 0.0, atol: float = 0.0) -> torch.Tensor:
    """Elementwise: True where ``got`` disagrees with ``expected`` (a tensor or its seal) beyond
    ``atol + rtol·|expected|``; ``got`` must have ``expected``'s shape."""
    if isinstance(expected, SealedTensor):
        return expected.mismatch(got)
    e = expected.detach().cpu()
    g = got.detach().cpu().to(e.dtype)
    if not (e.is_floating_point() or e.is_complex()) or (rtol == 0 and atol == 0):
        return ~((g == e) | (torch.isnan(g) & torch.isnan(e)))
    # as the seal (and ``within``): |got - expected| <= max(atol, rtol·|expected|)
    ok = (g - e).abs() <= torch.clamp(rtol * e.abs(), min=atol)
    return ~(ok | (g == e) | (torch.isnan(g) & torch.isnan(e)))


def close(got: Any, expected: Any, *, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """True when ``got`` agrees with ``expected`` (plain or sealed) within the tolerance; exactly
    for ints, strings and tuples of them."""
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
        # as ``lectorch.exercises.within`` and the seal: |got - expected| <= max(rtol·|expected|, atol)
        return abs(float(got) - float(expected)) <= max(atol, rtol * abs(float(expected))) or float(got) == float(expected)
    return got == expected
