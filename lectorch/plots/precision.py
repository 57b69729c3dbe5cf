"""Figures of the precision chapter: the bit layout of each float format, and its range and resolution.

>>> fig = bit_layout_figure()
>>> len(fig.axes)
1
"""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from lectorch.dtypes import FLOAT_DTYPES, float_bits, float_format
from lectorch.plots import COLORS, new_figure, styled, tr

#: Colours of the three fields of a float (shared with the precision widget).
FIELD_COLORS = {"sign": "#f4a6a6", "exponent": "#9ecae1", "mantissa": "#c7e9c0"}

#: Formats drawn by :func:`range_figure` by default: float64's range (1e-324 … 1e308) would squash the rest.
RANGE_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float8_e5m2, torch.float8_e4m3fn)


def _dtypes(dtypes) -> list:
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = [dtypes]
    fmts = [float_format(d) for d in dtypes]
    if not fmts:
        raise ValueError("dtypes must name at least one float dtype")
    return fmts


@styled
def bit_layout_figure(dtypes=FLOAT_DTYPES, *, value: float | None = None) -> Figure:
    """One row of coloured boxes per format: sign, exponent and mantissa bits, one box per bit.

    With ``value``, each box shows the bit that format stores for it and the row ends with the stored value.

    >>> fig = bit_layout_figure(["fp16", "bf16"], value=0.1)
    >>> len(fig.axes[0].patches)
    32
    """
    fmts = _dtypes(dtypes)
    # a row holds at most 32 bits (float64 takes two), so that a digit in each box stays readable
    # on a phone; above each row, a line naming the format
    per_row = min(32, max(f.bits for f in fmts))
    lines = [-(-f.bits // per_row) for f in fmts]
    height = sum(1.5 + 1.1 * n for n in lines)
    fig, ax = new_figure(height=0.15 * height + 0.9)
    ax.grid(False)
    top = height
    for fmt, n_lines in zip(fmts, lines):
        bits = float_bits(value, fmt.dtype) if value is not None else None
        digits = "".join(bits.fields) if bits is not None else None
        spans = [("sign", 1), ("exponent", fmt.exponent_bits), ("mantissa", fmt.mantissa_bits)]
        label = f"{fmt.name}  {fmt.layout()}"
        if bits is not None:  # the whole line marked, so that a kernel and the book translate it
            label = tr("{format}   stores {value}", format=label, value=format(bits.stored, ".8g"))
        ax.text(0, top - 1.4, label, ha="left", va="bottom", family="monospace")
        first = top - 2.5  # the bottom of the format's first line of boxes
        x = 0
        for field, n in spans:
            for i in range(n):
                line, col = divmod(x + i, per_row)
                ax.add_patch(Rectangle((col, first - 1.1 * line), 1, 1, facecolor=FIELD_COLORS[field],
                                       edgecolor="white", lw=0.6))
                if digits is not None:
                    ax.text(col + 0.5, first - 1.1 * line + 0.5, digits[x + i], ha="center", va="center",
                            in_layout=False, family="monospace")
            if digits is None and n >= 2:
                line, col = divmod(x, per_row)
                span = min(n, per_row - col)
                text = tr("{field} ({n})", field=tr(field), n=n) if span >= 10 else str(n)
                ax.text(col + span / 2, first - 1.1 * line + 0.5, text, ha="center", va="center", in_layout=False)
            x += n
        top -= 1.5 + 1.1 * n_lines
    handles = [Rectangle((0, 0), 1, 1, facecolor=c) for c in FIELD_COLORS.values()]
    ax.legend(handles, [tr(f) for f in FIELD_COLORS], loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=3,
              frameon=False)
    ax.set_xlim(-0.2, per_row + 0.2)
    ax.set_aspect("equal")
    ax.set_ylim(-0.1, height + 0.1)
    ax.set_axis_off()
    title = (tr("The bits each format stores for {value}", value=repr(value)) if value is not None
             else tr("Bit layout of the float formats"))
    ax.set_title(title, loc="left")
    return fig


def relative_spacing(x: np.ndarray, dtype: torch.dtype | str) -> np.ndarray:
    """Spacing of ``dtype`` around each positive ``x``, divided by ``x`` (computed from the layout).

    In the normal range it lies between ``eps/2`` and ``eps``; among subnormals it grows to 1.

    >>> relative_spacing(np.array([1.0, 2**-24]), "fp16").tolist()
    [0.0009765625, 1.0]
    """
    fmt = float_format(dtype)
    x = np.asarray(x, dtype=np.float64)
    if np.any(~np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("x must hold finite positive values")
    _, exp2 = np.frexp(x)  # x = f · 2**exp2 with f in [0.5, 1): the power of two below x is exp2 - 1
    power = np.maximum(exp2 - 1, 1 - fmt.bias)
    return np.ldexp(1.0, power - fmt.mantissa_bits) / x


@styled
def range_figure(dtypes=RANGE_DTYPES, *, marks: dict[str, float] | None = None) -> Figure:
    """Left: the positive range of each format on a log axis (subnormals pale, normal numbers solid).
    Right: the relative spacing of neighbouring values, i.e. the resolution, across that range.

    ``marks`` draws labelled vertical lines (default: 1e-8 and fp16's max, 65504).

    >>> len(range_figure().axes)
    2
    """
    fmts = _dtypes(dtypes)
    marks = {"1e-8": 1e-8, "65504": 65504.0} if marks is None else marks
    fig, (ax_range, ax_res) = new_figure(2, 1, height=0.45 * len(fmts) + 5.4)
    ax_res.set_xscale("log")
    ax_res.set_yscale("log")
    ax_res.margins(x=0)  # no margins: float64 reaches 1.8e308, a log margin beyond it overflows
    for row, fmt in enumerate(fmts):
        y = len(fmts) - 1 - row
        color = COLORS.get(fmt.name, "#555555")
        lo, mid, hi = (math.log10(v) for v in (fmt.smallest_subnormal, fmt.smallest_normal, fmt.max))
        ax_range.barh(y, mid - lo, left=lo, height=0.6, color=color, alpha=0.35)
        ax_range.barh(y, hi - mid, left=mid, height=0.6, color=color, label=fmt.name)
        ax_range.text(hi + 1, y, f"±{fmt.max:.6g}" if fmt.max < 1e6 else f"±{fmt.max:.3g}", va="center")
        # resolution: the relative spacing is largest at powers of two (eps there), half that just below
        # the next one; the line follows its upper envelope, the band shows the range within each octave
        powers = np.arange(1 - fmt.bias - fmt.mantissa_bits, math.frexp(fmt.max)[1])  # exact, no log2 rounding
        x = np.ldexp(1.0, powers)
        rel = relative_spacing(x, fmt.dtype)
        ax_res.fill_between(x, rel / 2, rel, where=x >= fmt.smallest_normal, color=color, alpha=0.25, lw=0)
        ax_res.plot(x, rel, color=color, label=fmt.name, lw=1.5)
    ax_range.set_yticks(range(len(fmts)), [f.name for f in reversed(fmts)])
    ax_range.set_xlabel(tr("log10 of |value|  (pale: subnormal)"))
    ax_range.set_title(tr("Range: smallest subnormal … largest finite"), loc="left")
    # few labelled decades and no minor ticks: a log axis over 90 decades otherwise measures hundreds of labels
    lo = math.floor(math.log10(min(f.smallest_subnormal for f in fmts)))
    hi = math.ceil(math.log10(max(f.max for f in fmts)))
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200) if s >= (hi - lo) / 8 or s == 200)
    ax_res.xaxis.set_major_locator(FixedLocator([10.0**k for k in range(lo - lo % step, hi + 1, step)]))
    ax_res.xaxis.set_minor_locator(NullLocator())
    ax_res.yaxis.set_minor_locator(NullLocator())
    for axis in (ax_res.xaxis, ax_res.yaxis):  # plain "1e-8" labels: no mathtext to parse
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"1e{round(math.log10(v))}" if v > 0 else ""))
    ax_res.set_xlabel("|value|")
    ax_res.set_ylabel(tr("spacing / value\n(eps for normal numbers)"))
    ax_res.set_title(tr("Resolution: relative gap to the next value"), loc="left")
    ax_res.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=3, frameon=False)
    for label, v in marks.items():
        ax_range.axvline(math.log10(v), color="k", ls="--", lw=0.8)
        # the first mark's label left of its line, the others right of theirs: they stay apart
        first = label == next(iter(marks))
        ax_range.text(math.log10(v), len(fmts) - 0.45, f" {label} ", ha="right" if first else "left")
        ax_res.axvline(v, color="k", ls="--", lw=0.8)
    ax_range.set_ylim(-0.6, len(fmts) - 0.2)
    ax_range.set_xlim(right=max(math.log10(f.max) for f in fmts) + 12)  # room for the ±max labels
    return fig
