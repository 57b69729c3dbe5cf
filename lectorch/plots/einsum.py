"""Figures of chapter 04: which dimensions an einsum keeps or sums, and how its FLOPs grow.

>>> from lectorch.contractions import analyze
>>> fig = contraction_diagram(analyze("b s1 h, b s2 h -> b s1 s2", {"b": 2, "s1": 3, "s2": 4, "h": 5}))
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from typing import Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from lectorch import _validate
from lectorch.contractions import ELLIPSIS, Contraction, analyze, parse_pattern
from lectorch.plots import new_figure

#: One colour per role of a dimension in a contraction.
ROLE_COLORS = {"batch": "#1f78b4", "free": "#33a02c", "contracted": "#e31a1c"}
ROLE_LABELS = {
    "batch": "batch: kept, in every operand",
    "free": "free: kept, missing from an operand",
    "contracted": "contracted: summed away",
}


def contraction_diagram(c: Contraction, *, width: float = 6.4) -> Figure:
    """Each operand and the output as a row of boxes, one per dimension, coloured by its role.

    >>> contraction_diagram(analyze("i, i ->", {"i": 3})).axes[0].get_title().splitlines()
    ['i, i ->', '6 FLOPs']
    """
    if not isinstance(c, Contraction):
        raise TypeError(f"c must be a Contraction (from lectorch.contractions.analyze), got {type(c).__name__}")
    rows = [(f"operand {i}", g) for i, g in enumerate(c.pattern.inputs, start=1)] + [("output", c.pattern.output)]
    shapes = [*c.input_shapes, c.output_shape]
    fig, ax = new_figure(width=width, height=0.65 * len(rows) + 1.1)
    ax.grid(False)
    ax.axis("off")
    box_w, gap = 1.4, 0.15  # wide enough for a 6-letter name at 9 pt
    for r, ((label, group), shape) in enumerate(zip(rows, shapes)):
        y = len(rows) - 1 - r - (0.35 if label == "output" else 0)
        ax.text(-0.2, y + 0.4, f"{label}\n{tuple(shape)}", ha="right", va="center", fontsize=9)
        for j, dim in enumerate(group):
            x = j * (box_w + gap)
            role = c.role(dim)
            ax.add_patch(Rectangle((x, y), box_w, 0.8, facecolor=ROLE_COLORS[role], alpha=0.85, edgecolor="black"))
            size = "×".join(map(str, c.ellipsis_shape)) if dim == ELLIPSIS else str(c.sizes[dim])
            ax.text(x + box_w / 2, y + 0.4, f"{dim}\n{size}", ha="center", va="center", color="white", fontsize=9)
        if not group:
            ax.text(0, y + 0.4, "a scalar", ha="left", va="center", fontsize=9, style="italic")
    ncols = max(max((len(g) for _, g in rows), default=1), 1)
    ax.axhline(0.85, xmin=0, xmax=1, color="gray", lw=0.8)
    ax.set_xlim(-2.2, max(ncols * (box_w + gap), 4.5))
    ax.set_ylim(-0.5, len(rows))
    ax.set_title(f"{c.pattern}\n{c.flops:,} FLOPs", fontsize=10)
    roles = [r for r in ROLE_COLORS if getattr(c, r)]
    ax.legend(
        handles=[Patch(facecolor=ROLE_COLORS[r], label=ROLE_LABELS[r]) for r in roles],
        loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(roles), 2), fontsize=9, frameon=False,
    )
    return fig


def flops_vs_size(
    patterns: Mapping[str, str],
    sizes: Mapping[str, int],
    vary: Sequence[str],
    values: Sequence[int],
    *,
    xlabel: str | None = None,
) -> Figure:
    """FLOPs of each pattern (label -> pattern) as the dimensions ``vary`` all take each of ``values``.

    ``sizes`` fixes the other dimensions; each pattern uses the sizes of the dimensions it names.

    >>> fig = flops_vs_size({"dot": "i, i ->"}, {}, ["i"], [1, 10, 100])
    >>> fig.axes[0].get_lines()[0].get_ydata().tolist()
    [2, 20, 200]
    """
    if not patterns:
        raise ValueError("patterns must name at least one pattern, e.g. {'scores': 'b s1 h, b s2 h -> b s1 s2'}")
    if isinstance(vary, str):
        vary = [vary]
    values = [_validate.positive_int("values", v) for v in values]
    if not values:
        raise ValueError("values must hold at least one size")
    fig, ax = new_figure()
    colors = ["#1f78b4", "#e31a1c", "#33a02c", "#ff7f00", "#6a3d9a"]
    for i, (label, pattern) in enumerate(patterns.items()):
        dims = set(parse_pattern(pattern).dims)
        ys = []
        for v in values:
            these = {d: n for d, n in sizes.items() if d in dims}
            these.update({d: v for d in vary if d in dims})
            ys.append(analyze(pattern, these).flops)
        ax.plot(values, ys, marker="o", ms=3, color=colors[i % len(colors)], label=f"{label}: {pattern}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel or " = ".join(vary))
    ax.set_ylabel("FLOPs")
    ax.legend(fontsize=9)
    return fig


def flops_curves(
    curves: Mapping[str, Sequence[float]],
    values: Sequence[int],
    *,
    xlabel: str,
    mark: int | None = None,
    mark_label: str = "",
) -> Figure:
    """FLOPs against a size, one log-log line per label, with an optional vertical mark.

    ``curves`` maps a label to one FLOP count per entry of ``values`` (counted by the caller, e.g.
    with FlopCounterMode); ``mark`` draws a dashed line at that size, labelled ``mark_label``.

    >>> fig = flops_curves({"a": [2, 20]}, [1, 10], xlabel="n", mark=5, mark_label="here")
    >>> fig.axes[0].get_lines()[0].get_ydata().tolist()
    [2, 20]
    """
    if not curves:
        raise ValueError("curves must hold at least one labelled list of FLOP counts")
    for label, ys in curves.items():
        if len(ys) != len(values):
            raise ValueError(f"curve {label!r} has {len(ys)} points but values has {len(values)}")
    fig, ax = new_figure()
    colors = ["#1f78b4", "#e31a1c", "#33a02c", "#ff7f00", "#6a3d9a"]
    for i, (label, ys) in enumerate(curves.items()):
        ax.plot(values, ys, marker="o", ms=3, color=colors[i % len(colors)], label=label)
    if mark is not None:
        ax.axvline(mark, color="gray", linestyle="--", linewidth=1, label=mark_label or None)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("FLOPs")
    ax.legend(fontsize=9)
    return fig
