"""Argument checks shared by every module: each error names the argument and the fix."""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any


#: The most entries a shape, strides or an index may have (torch's limit on dimensions).
MAX_ITEMS = 64


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_int(name: str, value: Any) -> int:
    """Return ``value`` if it is an int >= 1, else raise a clear error.

    >>> positive_int("batch", 8)
    8
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}; pass a positive size")
    return int(value)


def non_negative_int(name: str, value: Any) -> int:
    """Return ``value`` if it is an int >= 0.

    >>> non_negative_int("warmup", 0)
    0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative int, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _finite(name: str, value: Any, what: str) -> float:
    if not _is_real(value):
        raise TypeError(f"{name} must be a {what}, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite {what}, got {value}")
    return value


def positive_number(name: str, value: Any) -> float:
    """Return ``value`` as a float if it is a finite number > 0.

    >>> positive_number("tokens", 15e12)
    15000000000000.0
    """
    value = _finite(name, value, "number > 0")
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def fraction(name: str, value: Any) -> float:
    """Return ``value`` if it lies in (0, 1], e.g. a model FLOP utilisation.

    >>> fraction("mfu", 0.5)
    0.5
    """
    value = positive_number(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}; pass 0.5 for 50%, not 50")
    return value


def ints(name: str, value: Any, *, allow_negative: bool = False) -> tuple[int, ...]:
    """Return ``value`` (an int or a sequence of ints: an index, strides, dims) as a tuple of ints.

    >>> ints("index", [1, -2], allow_negative=True)
    (1, -2)
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value,)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of ints such as (4, 8), got {value!r}")
    try:
        items = tuple(itertools.islice(value, MAX_ITEMS + 1))  # an endless iterator must not hang
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints such as (4, 8), got {value!r}") from None
    if len(items) > MAX_ITEMS:
        raise ValueError(f"{name} has more than {MAX_ITEMS} entries (torch tensors have at most {MAX_ITEMS} dims); "
                         "pass a finite sequence such as (4, 8)")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            raise TypeError(f"{name} must contain ints only, got {item!r} in {value!r}")
        if item < 0 and not allow_negative:
            raise ValueError(f"{name} must not contain negative numbers, got {item} in {items}")
    return tuple(int(i) for i in items)


def shape(name: str, value: Any) -> tuple[int, ...]:
    """Return ``value`` as a tuple of non-negative ints (a tensor shape).

    >>> shape("shape", [4, 8])
    (4, 8)
    """
    dims = ints(name, value, allow_negative=True)
    for dim in dims:
        if dim < 0:
            raise ValueError(f"{name} has a negative size {dim} in {dims}; sizes must be >= 0")
    return dims


def non_negative_number(name: str, value: Any) -> float:
    """Return ``value`` as a float if it is a finite number >= 0.

    >>> non_negative_number("weight_decay", 0)
    0.0
    """
    value = _finite(name, value, "number >= 0")
    if value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value
