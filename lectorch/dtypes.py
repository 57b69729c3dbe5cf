"""Float formats: names, parsing and sizes of the dtypes the course uses.

>>> as_dtype("bf16")
torch.bfloat16
>>> bytes_per_element("fp8_e4m3")
1
"""

from __future__ import annotations

import difflib

import torch

#: Short names accepted wherever a dtype is expected (besides torch.dtype objects).
DTYPE_ALIASES: dict[str, torch.dtype] = {
    "float64": torch.float64,
    "fp64": torch.float64,
    "double": torch.float64,
    "float32": torch.float32,
    "fp32": torch.float32,
    "float": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "fp8_e4m3": torch.float8_e4m3fn,
    "e4m3": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "fp8_e5m2": torch.float8_e5m2,
    "e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


def as_dtype(value: torch.dtype | str, *, name: str = "dtype") -> torch.dtype:
    """Turn a torch dtype or one of :data:`DTYPE_ALIASES` into a ``torch.dtype``.

    >>> as_dtype(torch.float16)
    torch.float16
    >>> as_dtype("float32")
    torch.float32
    """
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, str):
        key = value.strip().lower().removeprefix("torch.")
        if key in DTYPE_ALIASES:
            return DTYPE_ALIASES[key]
        close = difflib.get_close_matches(key, DTYPE_ALIASES, n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"{name}={value!r} is not a dtype lectorch knows.{hint} "
            f"Known names: {', '.join(sorted(DTYPE_ALIASES))}."
        )
    raise TypeError(f"{name} must be a torch.dtype or a string such as 'bf16', got {type(value).__name__}")


def bytes_per_element(dtype: torch.dtype | str) -> int:
    """Bytes one element of ``dtype`` occupies.

    >>> bytes_per_element(torch.float32)
    4
    """
    return as_dtype(dtype).itemsize
