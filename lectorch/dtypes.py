"""Float formats: names, sizes, bit layouts, ranges and rounding of the dtypes the course uses.

A float is ``(-1)**sign × 2**(exponent - bias) × 1.mantissa``. Everything here reads the bits torch
actually stores (the tensor viewed as an integer), so it is exact:

>>> as_dtype("bf16")
torch.bfloat16
>>> bytes_per_element("fp8_e4m3")
1
>>> float_bits(1e-8, "fp16").stored, float_bits(1e-8, "bf16").stored != 0
(0.0, True)
>>> float_bits(-1.5, "fp16").bitstring
'1 01111 1000000000'
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass
from typing import Any

import torch

@dataclass(frozen=True)
class FloatFormat:
    """One float format of the registry :data:`FORMATS`: its dtype, names, bit layout, the key of
    its peak FLOP/s on datasheets and its colour in figures. The numbers (bias, max, eps, ...)
    follow from the layout alone.

    >>> fmt = float_format("fp16")
    >>> fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.max
    (5, 10, 15, 65504.0)
    """

    dtype: torch.dtype
    exponent_bits: int
    mantissa_bits: int
    has_inf: bool
    name: str = ""  #: the course's short name, e.g. "bf16"
    aliases: tuple[str, ...] = ()  #: other names accepted for it (torch's own name always is)
    flops_key: str = ""  #: key of :data:`lectorch.hardware.PRECISIONS` for its peak FLOP/s
    color: str = "#555555"  #: its colour in every figure (:data:`lectorch.plots.COLORS`)
    trainable: bool = False  #: a CPU can run a training step in it (:data:`lectorch.step_memory.STEP_DTYPES`)

    @property
    def bits(self) -> int:
        """Total bits: 1 sign + exponent + mantissa."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bytes(self) -> int:
        return self.bits // 8

    @property
    def bias(self) -> int:
        """Stored exponent minus true exponent: ``2**(exponent_bits - 1) - 1``."""
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max(self) -> float:
        """Largest finite value. IEEE-style formats reserve the all-ones exponent for inf/NaN;
        E4M3FN uses it for numbers and reserves only mantissa 111 (NaN), so its max is 1.75 × 2**8."""
        m, top = self.mantissa_bits, 2**self.exponent_bits - 1
        if self.has_inf:
            return math.ldexp(2 - 2.0**-m, top - 1 - self.bias)
        return math.ldexp(2 - 2.0 ** (1 - m), top - self.bias)

    @property
    def smallest_normal(self) -> float:
        """``2**(1 - bias)``: exponent field 1, mantissa 0."""
        return math.ldexp(1.0, 1 - self.bias)

    @property
    def smallest_subnormal(self) -> float:
        """``2**(1 - bias - mantissa_bits)``: the bit pattern 0…01, the smallest positive value."""
        return math.ldexp(1.0, 1 - self.bias - self.mantissa_bits)

    @property
    def eps(self) -> float:
        """Gap between 1 and the next value up: ``2**-mantissa_bits`` (relative resolution)."""
        return math.ldexp(1.0, -self.mantissa_bits)

    def layout(self) -> str:
        """``"1/5/10"``: sign/exponent/mantissa bits."""
        return f"1/{self.exponent_bits}/{self.mantissa_bits}"


#: The float formats lectorch knows, widest first: the one table every dtype list derives from
#: (:data:`DTYPE_ALIASES`, :data:`FLOAT_DTYPES`, ``hardware.flops_key``, ``plots.COLORS``,
#: ``step_memory.STEP_DTYPES``, the widgets' menus). A new format is one more row here.
FORMATS: tuple[FloatFormat, ...] = (
    FloatFormat(torch.float64, 11, 52, True, "fp64", ("double",), "fp64", "#6a3d9a", trainable=True),
    FloatFormat(torch.float32, 8, 23, True, "fp32", ("float",), "fp32", "#1f78b4", trainable=True),
    FloatFormat(torch.float16, 5, 10, True, "fp16", ("half",), "fp16", "#b2df8a", trainable=True),
    FloatFormat(torch.bfloat16, 8, 7, True, "bf16", (), "bf16", "#33a02c", trainable=True),
    # "fn": finite only; exponent 1111 holds normal numbers, S.1111.111 is NaN
    FloatFormat(torch.float8_e4m3fn, 4, 3, False, "fp8_e4m3", ("e4m3",), "fp8", "#e31a1c"),
    FloatFormat(torch.float8_e5m2, 5, 2, True, "fp8_e5m2", ("e5m2",), "fp8", "#fb9a99"),
)

#: Names of the integer dtypes (they have no float layout) and the peak-table key of int8.
_INTEGER_DTYPES: dict[str, torch.dtype] = {
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}
_INTEGER_FLOPS_KEYS = {torch.int8: "int8"}
#: Matmul modes that are not storage formats: the name and the dtype their tensors are stored in.
#: "tf32" is float32 storage multiplied on tensor cores with a 10-bit mantissa (CUDA only).
MATMUL_MODES: dict[str, torch.dtype] = {"tf32": torch.float32, "tensorfloat32": torch.float32}

_BY_DTYPE: dict[torch.dtype, FloatFormat] = {f.dtype: f for f in FORMATS}

#: The float dtypes whose bit layout lectorch knows, widest first.
FLOAT_DTYPES: tuple[torch.dtype, ...] = tuple(f.dtype for f in FORMATS)

#: Short names accepted wherever a dtype is expected (besides torch.dtype objects).
DTYPE_ALIASES: dict[str, torch.dtype] = {
    **{alias: f.dtype for f in FORMATS for alias in (str(f.dtype).removeprefix("torch."), f.name, *f.aliases)},
    **_INTEGER_DTYPES,
}

#: The key of the datasheet peak tables of each dtype that has one.
FLOPS_KEYS: dict[torch.dtype, str] = {**{f.dtype: f.flops_key for f in FORMATS}, **_INTEGER_FLOPS_KEYS}


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


# --------------------------------------------------------------------------------------------------
# Bit layouts of the float formats
# --------------------------------------------------------------------------------------------------

# Integer dtypes of the same width: a float tensor viewed as one of these shows its raw bits.
_INT_VIEWS = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
_KINDS = ("zero", "subnormal", "normal", "inf", "nan")


def short_name(dtype: torch.dtype | str) -> str:
    """The course's short name of a float dtype (the keys of ``lectorch.plots.COLORS``).

    >>> short_name(torch.float8_e4m3fn)
    'fp8_e4m3'
    """
    return float_format(dtype).name


def storage_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """The dtype tensors are stored in for a dtype, a name, or a peak-table key ("fp8", "tf32").

    >>> storage_dtype("tf32"), storage_dtype("fp8"), storage_dtype("bf16")
    (torch.float32, torch.float8_e4m3fn, torch.bfloat16)
    """
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        if key in MATMUL_MODES:
            return MATMUL_MODES[key]
        by_key = [f.dtype for f in FORMATS if f.flops_key == key and f.name != key]
        if by_key and key not in DTYPE_ALIASES:
            return by_key[0]
    return as_dtype(dtype)


def float_format(dtype: torch.dtype | str) -> FloatFormat:
    """The bit layout of a float dtype; a clear error for integer or unknown dtypes.

    >>> float_format("bf16").layout(), float_format(torch.float8_e5m2).max
    ('1/8/7', 57344.0)
    """
    dt = as_dtype(dtype, name="dtype")
    if dt not in _BY_DTYPE:
        if not dt.is_floating_point:
            raise TypeError(
                f"dtype must be a floating-point dtype such as 'bf16', got {dt}: "
                "integers and bools have no sign/exponent/mantissa layout"
            )
        known = ", ".join(f.name for f in FORMATS)
        raise ValueError(f"dtype={dt}: lectorch knows the bit layout of {known} only")
    return _BY_DTYPE[dt]


# --------------------------------------------------------------------------------------------------
# The bits of one value
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloatBits:
    """The bits a dtype stores for one value, read from the tensor's actual bit pattern.

    ``value`` is the number asked for (as a Python float), ``stored`` what the dtype holds (exact),
    ``pattern`` the raw bits as an unsigned int, split into ``sign``, ``exponent`` (the biased field)
    and ``mantissa`` (the fraction field). ``kind`` is one of zero, subnormal, normal, inf, nan.

    >>> b = float_bits(0.1, "bf16")
    >>> b.sign, b.exponent, b.mantissa, b.unbiased_exponent, b.stored
    (0, 123, 77, -4, 0.10009765625)
    >>> b.reassemble() == b.stored
    True
    """

    dtype: torch.dtype
    value: float
    stored: float
    pattern: int
    sign: int
    exponent: int
    mantissa: int
    kind: str

    @property
    def format(self) -> FloatFormat:
        return float_format(self.dtype)

    @property
    def unbiased_exponent(self) -> int | None:
        """The power of two: ``exponent - bias`` (``1 - bias`` for subnormals); None for 0, inf, NaN."""
        if self.kind == "normal":
            return self.exponent - self.format.bias
        if self.kind == "subnormal":
            return 1 - self.format.bias
        return None

    @property
    def is_subnormal(self) -> bool:
        return self.kind == "subnormal"

    @property
    def is_zero(self) -> bool:
        return self.kind == "zero"

    @property
    def is_nan(self) -> bool:
        return self.kind == "nan"

    @property
    def is_inf(self) -> bool:
        return self.kind == "inf"

    @property
    def is_finite(self) -> bool:
        return self.kind in ("zero", "subnormal", "normal")

    @property
    def fields(self) -> tuple[str, str, str]:
        """The sign, exponent and mantissa bits as strings of 0 and 1."""
        fmt = self.format
        return (
            str(self.sign),
            format(self.exponent, f"0{fmt.exponent_bits}b"),
            format(self.mantissa, f"0{fmt.mantissa_bits}b"),
        )

    @property
    def bitstring(self) -> str:
        """``"sign exponent mantissa"`` as 0s and 1s, e.g. ``'0 01111 0000000000'`` for 1.0 in fp16."""
        return " ".join(self.fields)

    @property
    def abs_error(self) -> float:
        """``|stored - value|`` (inf when the value overflowed; NaN when either is NaN)."""
        return abs(self.stored - self.value)

    def reassemble(self) -> float:
        """Rebuild the value from the fields with arithmetic alone (no torch):
        ``(-1)**sign × 1.mantissa × 2**(exponent - bias)``, or ``0.mantissa × 2**(1 - bias)`` if subnormal.

        >>> float_bits(-6.5, "fp8_e4m3").reassemble()
        -6.5
        """
        fmt = self.format
        if self.kind == "nan":
            return math.nan
        if self.kind == "inf":
            return -math.inf if self.sign else math.inf
        if self.exponent == 0:
            magnitude = math.ldexp(self.mantissa, 1 - fmt.bias - fmt.mantissa_bits)
        else:
            significand = (1 << fmt.mantissa_bits) | self.mantissa  # the implicit leading 1
            magnitude = math.ldexp(significand, self.exponent - fmt.bias - fmt.mantissa_bits)
        return -magnitude if self.sign else magnitude

    def __str__(self) -> str:
        return f"{self.format.name}: {self.value!r} is stored as {self.stored!r}  bits {self.bitstring}  ({self.kind})"


def _as_number(value: Any, name: str = "value") -> float | torch.Tensor:
    """A real number as a float, or a one-element real tensor as a 0-d CPU tensor."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a single number, got a tensor of shape {tuple(value.shape)}")
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real number, got a tensor of dtype {value.dtype}")
        return value.detach().reshape(()).cpu()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number such as 0.1, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name}={value!r} is too large even for float64") from None


def _store(value: float | torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The 0-d CPU tensor of ``dtype`` that torch makes from ``value`` (its own rounding)."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype)
    return torch.tensor(value, dtype=torch.float64).to(dtype)


def _decode(pattern: int, fmt: FloatFormat, *, value: float, stored: float) -> FloatBits:
    m, e = fmt.mantissa_bits, fmt.exponent_bits
    sign = pattern >> (e + m)
    exponent = (pattern >> m) & ((1 << e) - 1)
    mantissa = pattern & ((1 << m) - 1)
    top = (1 << e) - 1
    if exponent == top and fmt.has_inf:
        kind = "inf" if mantissa == 0 else "nan"
    elif exponent == top and mantissa == (1 << m) - 1:
        kind = "nan"
    elif exponent == 0:
        kind = "zero" if mantissa == 0 else "subnormal"
    else:
        kind = "normal"
    return FloatBits(fmt.dtype, value, stored, pattern, sign, exponent, mantissa, kind)


def _pattern_of(tensor: torch.Tensor) -> int:
    bits = tensor.element_size() * 8
    return int(tensor.view(_INT_VIEWS[bits]).item()) & ((1 << bits) - 1)


def _from_pattern(pattern: int, fmt: FloatFormat) -> torch.Tensor:
    signed = pattern - (1 << fmt.bits) if (fmt.bits > 8 and pattern >= 1 << (fmt.bits - 1)) else pattern
    return torch.tensor(signed, dtype=_INT_VIEWS[fmt.bits]).view(fmt.dtype)


def float_bits(value: float | torch.Tensor, dtype: torch.dtype | str) -> FloatBits:
    """Store ``value`` in ``dtype`` the way torch does and split the stored bits into fields.

    The value is converted with torch's own cast (``torch.tensor(value, dtype=torch.float64).to(dtype)``,
    on the CPU) and the result is viewed as an integer of the same width, so every field is exact.
    ``value`` may also be a one-element tensor (then it is cast from its own dtype).

    NaN is accepted: the result has kind ``"nan"`` and holds whatever sign and payload bits torch
    stores. E4M3FN has no infinity: what an out-of-range value becomes is up to the cast (this torch's
    CPU cast saturates to ±448; other implementations give NaN).

    >>> float_bits(1.0, "fp32").bitstring
    '0 01111111 00000000000000000000000'
    >>> float_bits(70000, "fp16").kind, float_bits(2**-24, "fp16").kind
    ('inf', 'subnormal')
    """
    fmt = float_format(dtype)
    number = _as_number(value)
    stored_tensor = _store(number, fmt.dtype)
    asked = float(number.to(torch.float64).item()) if isinstance(number, torch.Tensor) else number
    stored = float(stored_tensor.to(torch.float64).item())
    return _decode(_pattern_of(stored_tensor), fmt, value=asked, stored=stored)


def from_fields(sign: int, exponent: int, mantissa: int, dtype: torch.dtype | str) -> float:
    """The value whose bits are ``sign``, ``exponent`` (biased field) and ``mantissa`` (fraction field).

    The bits are written into an integer tensor and viewed as ``dtype``, so this is what the hardware
    reads from those bits.

    >>> from_fields(0, 15, 0, "fp16"), from_fields(0, 0, 1, "fp16") == 2**-24
    (1.0, True)
    """
    fmt = float_format(dtype)
    for name, field, width in (("sign", sign, 1), ("exponent", exponent, fmt.exponent_bits),
                               ("mantissa", mantissa, fmt.mantissa_bits)):
        if isinstance(field, bool) or not isinstance(field, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(field).__name__} {field!r}")
        if not 0 <= field < 2**width:
            raise ValueError(
                f"{name}={field} does not fit in the {width} {name} bit(s) of {fmt.name} (0 … {2**width - 1})"
            )
    pattern = (int(sign) << (fmt.bits - 1)) | (int(exponent) << fmt.mantissa_bits) | int(mantissa)
    return float(_from_pattern(pattern, fmt).to(torch.float64).item())


# --------------------------------------------------------------------------------------------------
# Neighbours, spacing and rounding error
# --------------------------------------------------------------------------------------------------


def _bits_not_nan(value: Any, dtype: torch.dtype | str, what: str) -> FloatBits:
    bits = float_bits(value, dtype)
    if math.isnan(bits.value) or bits.is_nan:
        raise ValueError(f"value is NaN: NaN has no {what}")
    return bits


def next_up(value: float | torch.Tensor, dtype: torch.dtype | str) -> float:
    """The next representable value above the stored ``value`` (bit pattern ± 1).

    >>> next_up(1.0, "fp16") - 1.0 == 2**-10
    True
    >>> next_up(0.0, "bf16") == float_format("bf16").smallest_subnormal
    True
    """
    bits = _bits_not_nan(value, dtype, "neighbours")
    fmt = bits.format
    if bits.is_inf and not bits.sign:
        return math.inf
    if bits.is_zero:
        pattern = 1
    elif bits.sign == 0:
        pattern = bits.pattern + 1
    else:  # negative: a smaller magnitude is a step up
        pattern = bits.pattern - 1
    up = _decode(pattern, fmt, value=math.nan, stored=math.nan)
    if up.is_nan:
        raise ValueError(
            f"{bits.stored!r} is the largest finite {fmt.name} value and {fmt.name} has no infinity: "
            "nothing lies above it"
        )
    return up.reassemble()


def next_down(value: float | torch.Tensor, dtype: torch.dtype | str) -> float:
    """The next representable value below the stored ``value``.

    >>> 1.0 - next_down(1.0, "bf16") == 2**-8   # below a power of two the spacing halves
    True
    """
    bits = _bits_not_nan(value, dtype, "neighbours")
    try:
        return -next_up(-bits.stored, dtype)
    except ValueError:
        fmt = bits.format
        raise ValueError(
            f"{bits.stored!r} is the most negative finite {fmt.name} value and {fmt.name} has no infinity: "
            "nothing lies below it"
        ) from None


def spacing(value: float | torch.Tensor, dtype: torch.dtype | str) -> float:
    """The gap between the stored ``value`` and the next value away from zero (one unit in the last place).

    >>> spacing(1000.0, "bf16"), spacing(1000.0, "fp16")
    (4.0, 0.5)
    """
    bits = _bits_not_nan(value, dtype, "spacing")
    if bits.is_inf:
        raise ValueError("value is infinite: infinity has no spacing")
    fmt = bits.format
    return math.ldexp(1.0, max(bits.exponent, 1) - fmt.bias - fmt.mantissa_bits)


def bracket(value: float | torch.Tensor, dtype: torch.dtype | str) -> tuple[float, float]:
    """The two adjacent representable values ``lo <= value <= hi`` (equal if ``value`` is representable).

    >>> bracket(0.1, "fp8_e4m3")
    (0.09375, 0.1015625)
    >>> bracket(257, "bf16")
    (256.0, 258.0)
    """
    bits = _bits_not_nan(value, dtype, "neighbours")
    fmt = bits.format
    if not math.isfinite(bits.value):
        raise ValueError(f"value={bits.value!r} is infinite: it has no finite neighbours in {fmt.name}")
    if abs(bits.value) > fmt.max:
        raise ValueError(
            f"value={bits.value!r} is beyond the largest finite {fmt.name} value ±{fmt.max:g}: it overflows"
        )
    if bits.stored == bits.value:
        return bits.stored, bits.stored
    if bits.stored < bits.value:
        return bits.stored, next_up(bits.stored, dtype)
    return next_down(bits.stored, dtype), bits.stored


def relative_error(value: float | torch.Tensor, dtype: torch.dtype | str) -> float:
    """``|stored - value| / |value|``: the relative error of storing ``value`` in ``dtype``.

    0 for 0; 1 when the value underflows to 0; inf when it overflows to infinity. NaN or infinite
    input raises a ``ValueError`` (the error of storing them is undefined).

    >>> relative_error(1e-8, "fp16")
    1.0
    >>> relative_error(0.1, "fp32") < float_format("fp32").eps / 2
    True
    """
    bits = float_bits(value, dtype)
    if not math.isfinite(bits.value):
        raise ValueError(f"value={bits.value!r} is not finite: the relative error of storing it is undefined")
    if bits.value == 0:
        return 0.0
    if not math.isfinite(bits.stored):
        return math.inf
    return abs(bits.stored - bits.value) / abs(bits.value)


def round_to(value: float | torch.Tensor, dtype: torch.dtype | str) -> float:
    """What ``dtype`` stores for ``value``, as a Python float (exact).

    >>> round_to(1e-8, "fp16"), round_to(65519, "fp16"), round_to(65520, "fp16")
    (0.0, 65504.0, inf)
    """
    return float_bits(value, dtype).stored


# --------------------------------------------------------------------------------------------------
# The summary table (torch.finfo, checked against the bit layout)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DtypeSummary:
    """One row of :func:`summary_table`: the layout and the numbers ``torch.finfo`` reports."""

    dtype: torch.dtype
    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    max: float
    smallest_normal: float
    smallest_subnormal: float
    eps: float
    bytes: int


def dtype_summary(dtype: torch.dtype | str) -> DtypeSummary:
    """Layout and range of ``dtype`` from ``torch.finfo``, checked against the bit layout.

    ``torch.finfo`` has no smallest subnormal: it is ``smallest_normal × eps``, and checked against the
    value of the bit pattern 0…01. A disagreement (a torch that changed a format) raises RuntimeError.

    >>> row = dtype_summary("fp8_e4m3")
    >>> row.max, row.smallest_normal, row.smallest_subnormal, row.eps, row.bytes
    (448.0, 0.015625, 0.001953125, 0.125, 1)
    """
    fmt = float_format(dtype)
    info = torch.finfo(fmt.dtype)
    row = DtypeSummary(
        dtype=fmt.dtype, name=fmt.name, bits=info.bits, exponent_bits=fmt.exponent_bits,
        mantissa_bits=fmt.mantissa_bits, max=float(info.max), smallest_normal=float(info.smallest_normal),
        smallest_subnormal=float(info.smallest_normal) * float(info.eps), eps=float(info.eps),
        bytes=fmt.dtype.itemsize,
    )
    top = (1 << fmt.exponent_bits) - 1
    max_fields = (top - 1, (1 << fmt.mantissa_bits) - 1) if fmt.has_inf else (top, (1 << fmt.mantissa_bits) - 2)
    checks = {
        "bits": (row.bits, fmt.bits),
        "bytes": (row.bytes * 8, fmt.bits),
        "max": (row.max, fmt.max),
        "max (from bits)": (row.max, from_fields(0, *max_fields, fmt.dtype)),
        "smallest_normal": (row.smallest_normal, fmt.smallest_normal),
        "smallest_normal (from bits)": (row.smallest_normal, from_fields(0, 1, 0, fmt.dtype)),
        "smallest_subnormal (from bits)": (row.smallest_subnormal, from_fields(0, 0, 1, fmt.dtype)),
        "eps": (row.eps, fmt.eps),
        "eps (from bits)": (row.eps, next_up(1.0, fmt.dtype) - 1.0),
    }
    for what, (reported, from_layout) in checks.items():
        if reported != from_layout:
            raise RuntimeError(f"torch.finfo({fmt.dtype}) gives {what} = {reported!r}, the bit layout {from_layout!r}")
    return row


def summary_table(dtypes: tuple | list = FLOAT_DTYPES) -> list[DtypeSummary]:
    """:func:`dtype_summary` of each dtype.

    >>> [row.name for row in summary_table(["fp32", "bf16"])]
    ['fp32', 'bf16']
    """
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = [dtypes]
    return [dtype_summary(d) for d in dtypes]


def format_summary_table(rows: list[DtypeSummary] | None = None) -> str:
    """The summary table as fixed-width text (6 significant digits), one row per dtype.

    >>> print(format_summary_table(summary_table(["fp16"])))
    dtype    bits  s/e/m             max    min normal  min subnormal          eps  bytes
    fp16       16  1/5/10          65504   6.10352e-05    5.96046e-08  0.000976562      2
    """
    rows = summary_table() if rows is None else rows
    lines = [
        f"{'dtype':<8} {'bits':>4}  {'s/e/m':<7}  {'max':>12}  {'min normal':>12}  {'min subnormal':>13}  "
        f"{'eps':>11}  {'bytes':>5}"
    ]
    for r in rows:
        lines.append(
            f"{r.name:<8} {r.bits:>4}  {f'1/{r.exponent_bits}/{r.mantissa_bits}':<7}  {r.max:>12.6g}  "
            f"{r.smallest_normal:>12.6g}  {r.smallest_subnormal:>13.6g}  {r.eps:>11.6g}  {r.bytes:>5}"
        )
    return "\n".join(lines)
