"""Panels of the precision chapter: what a dtype stores for a value, and what a tensor costs.

>>> p = float_bits_panel(1e-8, "fp16")
>>> "underflows" in p.result.value
True
>>> p.controls["dtype"].value = "bf16"; "underflows" in p.result.value
False
"""

from __future__ import annotations

import html
import math

import ipywidgets as w
import torch

from lectorch import _validate
from lectorch.dtypes import FLOAT_DTYPES, bracket, float_bits, float_format, relative_error, short_name, spacing
from lectorch.memory import format_bytes, tensor_bytes
from lectorch.plots.precision import FIELD_COLORS
from lectorch.widgets import Panel

_NAMES = [short_name(d) for d in FLOAT_DTYPES]


def _dropdown(dtype) -> w.Dropdown:
    return w.Dropdown(options=_NAMES, value=short_name(dtype), description="dtype")


def bits_html(value: float, dtype: torch.dtype | str) -> str:
    """The stored bits of ``value`` as coloured boxes (sign, exponent, mantissa).

    >>> bits_html(1.0, "fp8_e4m3").count("<span")
    8
    """
    bits = float_bits(value, dtype)
    boxes = []
    for field, digits in zip(FIELD_COLORS, bits.fields):
        for d in digits:
            boxes.append(
                f'<span title="{field}" style="display:inline-block;min-width:1.1em;text-align:center;'
                f'background:{FIELD_COLORS[field]};margin:0 1px;font-family:monospace">{d}</span>'
            )
    return "".join(boxes)


def describe_value(value: float, dtype: torch.dtype | str) -> str:
    """HTML: the stored value, its coloured bits, its fields, neighbours and rounding error.

    >>> "65504" in describe_value(65519, "fp16")
    True
    """
    bits = float_bits(value, dtype)
    fmt = bits.format
    rows = [("stored", f"<b>{bits.stored!r}</b> ({bits.kind})"), ("bits", bits_html(value, dtype))]
    if bits.is_finite and not bits.is_zero:
        mant = ("1." if bits.kind == "normal" else "0.") + bits.fields[2]
        rows.append(("fields", f"sign {bits.sign} · exponent field {bits.exponent} → "
                               f"2<sup>{bits.unbiased_exponent}</sup> · mantissa {mant}<sub>2</sub>"))
    note = ""
    if bits.value != bits.value:
        note = "NaN in, NaN out: there is no rounding error to speak of."
    elif bits.is_nan:
        note = f"{bits.value!r} is beyond ±{fmt.max:g} and {fmt.name} has no infinity: this cast gives NaN."
    elif math.isinf(bits.value):
        note = f"{bits.value!r} is not finite."
    else:
        rel = relative_error(value, dtype)
        rows.append(("error", f"absolute {bits.abs_error:.3g} · relative {rel:.3g}"))
        if bits.is_zero and bits.value != 0:
            note = (f"{bits.value!r} underflows to 0 in {fmt.name}: it is below half the smallest subnormal, "
                    f"{fmt.smallest_subnormal:.3g}.")
        elif not bits.is_finite:
            note = f"{bits.value!r} overflows to {bits.stored!r}: {fmt.name} stops at ±{fmt.max:g}."
        elif abs(bits.value) > fmt.max and fmt.has_inf:
            note = (f"{bits.value!r} is above {fmt.name}'s largest value {fmt.max:g} by less than half a step, "
                    f"so it rounds down to it; from {fmt.max + spacing(fmt.max, dtype) / 2:g} on it overflows to inf.")
        elif abs(bits.value) > fmt.max:
            note = (f"{bits.value!r} is beyond ±{fmt.max:g} and {fmt.name} has no infinity: this cast saturates to "
                    f"±{fmt.max:g} (others give NaN).")
        else:
            lo, hi = bracket(value, dtype)
            if lo != hi:
                rows.append(("neighbours", f"{lo:.8g} ≤ value ≤ {hi:.8g} (it rounds to the nearer)"))
            rows.append(("spacing here", f"{spacing(value, dtype):.3g}"))
            if bits.is_subnormal:
                note = (f"a subnormal: below {fmt.smallest_normal:.3g} {fmt.name} gives up precision to reach "
                        "smaller values.")
    table = "".join(f"<tr><td style='padding-right:1em'>{k}</td><td>{v}</td></tr>" for k, v in rows)
    title = f"{html.escape(repr(bits.value))} in {fmt.name} ({fmt.layout()})"
    out = f"<div><div>{title}</div><table>{table}</table>"
    return out + (f"<div><i>{html.escape(note)}</i></div>" if note else "") + "</div>"


def float_bits_panel(value: float = 0.1, dtype: torch.dtype | str = "bf16") -> Panel:
    """A value and a dtype → the stored value, its coloured bits and the rounding error.

    >>> p = float_bits_panel(0.1, "fp32")
    >>> p.controls["value"].value = 70000.0; p.controls["dtype"].value = "fp16"; "overflows" in p.result.value
    True
    """
    controls = {"value": w.FloatText(value=float(value), description="value"), "dtype": _dropdown(dtype)}
    return Panel(controls, describe_value, title="What does a dtype store?", live="float_bits")


def bytes_table(rows: int, cols: int, dtype: torch.dtype | str = "fp32") -> str:
    """HTML: bytes of a ``rows × cols`` tensor in ``dtype``, next to every other float format.

    >>> "128 B" in bytes_table(4, 8, "fp32")
    True
    """
    shape = (_validate.positive_int("rows", rows), _validate.positive_int("cols", cols))
    chosen = float_format(dtype).dtype
    lines = []
    for d in FLOAT_DTYPES:
        n = tensor_bytes(shape, d)
        cell = f"<td>{short_name(d)}</td><td style='text-align:right'>{n:,}</td><td>{format_bytes(n)}</td>"
        lines.append(f"<tr style='font-weight:{'bold' if d == chosen else 'normal'}'>{cell}</tr>")
    n = tensor_bytes(shape, chosen)
    head = (f"<div>{rows:,} × {cols:,} = {rows * cols:,} elements × {chosen.itemsize} bytes ({short_name(chosen)}) = "
            f"<b>{format_bytes(n)}</b></div>")
    return head + "<table><tr><th>dtype</th><th>bytes</th><th></th></tr>" + "".join(lines) + "</table>"


def tensor_bytes_panel(
    rows: int = 4, cols: int = 8, dtype: torch.dtype | str = "fp32", *, max_size: int = 65536
) -> Panel:
    """Shape sliders × dtype → bytes of the tensor.

    >>> p = tensor_bytes_panel()
    >>> p.controls["rows"].value = 4 * 12288; p.controls["cols"].value = 12288; "2.42 GB" in p.result.value
    True
    """
    controls = {
        "rows": w.IntSlider(value=rows, min=1, max=max_size, description="rows"),
        "cols": w.IntSlider(value=cols, min=1, max=max_size, description="cols"),
        "dtype": _dropdown(dtype),
    }
    return Panel(controls, bytes_table, title="Bytes of a rows × cols tensor", live="tensor_bytes")
