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
from lectorch.plots import new_figure, styled, tr

#: One colour per role of a dimension in a contraction.
ROLE_COLORS = {"batch": "#1f78b4", "free": "#33a02c", "contracted": "#e31a1c"}
ROLE_LABELS = {
    "batch": "batch: kept, in every operand",
    "free": "free: kept, missing from an operand",
    "contracted": "contracted: summed away",
}  # drawn through lectorch.plots.tr


@styled
def contraction_diagram(c: Contraction, *, width: float = 4.5) -> Figure:
    """Each operand and the output as a row of boxes, one per dimension, coloured by its role.

    >>> contraction_diagram(analyze("i, i ->", {"i": 3})).axes[0].get_title().splitlines()
    ['i, i ->', '6 FLOPs']
    """
    if not isinstance(c, Contraction):
        raise TypeError(f"c must be a Contraction (from lectorch.contractions.analyze), got {type(c).__name__}")
    rows = [(tr("operand {i}", i=i), g) for i, g in enumerate(c.pattern.inputs, start=1)] + [(tr("output"), c.pattern.output)]
    shapes = [*c.input_shapes, c.output_shape]
    fig, ax = new_figure(width=width, height=0.75 * len(rows) + 1.9)
    ax.grid(False)
    ax.axis("off")
    box_w, gap = 1.4, 0.15  # wide enough for a 6-letter name
    for r, ((label, group), shape) in enumerate(zip(rows, shapes)):
        y = len(rows) - 1 - r - (0.35 if r == len(rows) - 1 else 0)
        ax.text(-0.2, y + 0.4, tr("{label}\n{shape}", label=label, shape=str(tuple(shape))), ha="right", va="center")
        for j, dim in enumerate(group):
            x = j * (box_w + gap)
            role = c.role(dim)
            ax.add_patch(Rectangle((x, y), box_w, 0.8, facecolor=ROLE_COLORS[role], alpha=0.85, edgecolor="black"))
            size = "×".join(map(str, c.ellipsis_shape)) if dim == ELLIPSIS else str(c.sizes[dim])
            ax.text(x + box_w / 2, y + 0.4, f"{dim}\n{size}", ha="center", va="center", color="white")
        if not group:
            ax.text(0, y + 0.4, tr("a scalar"), ha="left", va="center", style="italic")
    ncols = max(max((len(g) for _, g in rows), default=1), 1)
    ax.axhline(0.85, xmin=0, xmax=1, color="gray", lw=0.8)
    ax.set_xlim(-2.2, max(ncols * (box_w + gap), 4.5))
    ax.set_ylim(-0.5, len(rows))
    ax.set_title(tr("{pattern}\n{flops} FLOPs", pattern=c.pattern, flops=f"{c.flops:,}"))
    roles = [r for r in ROLE_COLORS if getattr(c, r)]
    ax.legend(
        handles=[Patch(facecolor=ROLE_COLORS[r], label=tr(ROLE_LABELS[r])) for r in roles],
        loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, frameon=False,
    )
    return fig


@styled
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
        ax.plot(values, ys, marker="o", ms=3, color=colors[i % len(colors)], label=f"{tr(label)}: {pattern}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(tr(xlabel) if xlabel else " = ".join(vary))
    ax.set_ylabel("FLOPs")
    ax.legend()
    return fig


@styled
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
        ax.plot(values, ys, marker="o", ms=3, color=colors[i % len(colors)], label=tr(label))
    if mark is not None:
        ax.axvline(mark, color="gray", linestyle="--", linewidth=1, label=tr(mark_label) if mark_label else None)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(tr(xlabel))
    ax.set_ylabel("FLOPs")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    return fig
