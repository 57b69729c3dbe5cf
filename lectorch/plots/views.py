"""Pictures of strides: the flat storage row next to the view's grid, and the walk a view takes
through its storage (one step per element, in the view's row-major order).

Colour coding: every row of the view has a colour; a storage cell takes the colour of the view row
that reads it, and stays grey when the view does not read it.

>>> import torch
>>> fig = storage_view_figure(torch.arange(16).view(4, 4)[:, 1:3])
>>> len(fig.axes)
2
"""

from __future__ import annotations

import math

import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import MaxNLocator

from lectorch.plots import styled, tr
from lectorch.views import Layout

#: at most this many storage cells are drawn (one row of cells must stay readable)
MAX_DRAWN = 64
GREY = "#e6e6e6"
PALETTE = ["#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada",
            "#fccde5", "#d9d9d9", "#80b1d3", "#ccebc5"]


def _layout_and_size(view: torch.Tensor | Layout, storage_size: int | None) -> tuple[Layout, int]:
    if isinstance(view, torch.Tensor):
        layout = Layout.of(view)
        size = view.untyped_storage().nbytes() // view.element_size() if storage_size is None else storage_size
    elif isinstance(view, Layout):
        layout, size = view, (view.span if storage_size is None else storage_size)
    else:
        raise TypeError(f"view must be a torch.Tensor or a lectorch.views.Layout, got {type(view).__name__}")
    if isinstance(size, bool) or not isinstance(size, int) or size < layout.span:
        raise ValueError(f"storage_size must be an int >= {layout.span} (the cells this view reads), got {size!r}")
    if size > MAX_DRAWN:
        raise ValueError(f"the storage has {size} elements; draw at most {MAX_DRAWN} so the cells stay readable")
    return layout, size


def _grid(layout: Layout) -> tuple[int, int]:
    """Rows and columns of the 2-D drawing of a view: leading dims are flattened into rows."""
    cols = layout.shape[-1] if layout.ndim else 1
    rows = math.prod(layout.shape[:-1]) if layout.ndim > 1 else 1
    return rows, cols


def _colour_of_cells(layout: Layout) -> dict[int, str]:
    _, cols = _grid(layout)
    colours: dict[int, str] = {}
    for k, cell in enumerate(layout.cells()):
        colours.setdefault(cell, PALETTE[(k // max(cols, 1)) % len(PALETTE)])
    return colours


#: Figures fit a phone's column (lectorch.plots.STYLE): at most this wide, text at the style's size.
_MAX_WIDTH_IN = 4.5
#: Cells are numbered only up to this many per row (beyond, a label would not fit its box).
MAX_LABELLED = 20


def _box(ax, x: float, y: float, colour: str, label: str) -> None:
    ax.add_patch(Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="#555555", linewidth=0.8))
    ax.text(x + 0.5, y + 0.5, label, ha="center", va="center",
            color="#222222" if colour != GREY else "#999999")


def _draw_storage(ax, layout: Layout, size: int, *, title: str) -> None:
    colours = _colour_of_cells(layout)
    for i in range(size):  # labels only while they fit
        _box(ax, i, 0, colours.get(i, GREY), str(i) if size <= MAX_LABELLED else "")
    ax.set_xlim(-0.2, size + 0.2)
    ax.set_ylim(-0.35, 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, loc="left")


def _draw_view(ax, layout: Layout, *, title: str, width: int = 0) -> None:
    rows, cols = _grid(layout)
    cells = layout.cells()
    for k, cell in enumerate(cells):
        r, c = divmod(k, cols)
        label = str(cell) if max(cols, width) <= MAX_LABELLED else ""
        _box(ax, c, -r, PALETTE[r % len(PALETTE)], label)
    ax.set_xlim(-0.2, max(cols, 1, width) + 0.2)
    ax.set_ylim(-max(rows, 1) + 0.8, 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, loc="left")


@styled
def storage_view_figure(view: torch.Tensor | Layout, *, storage_size: int | None = None, name: str = "view") -> Figure:
    """The flat storage (top) and the view's grid (bottom); each grid cell shows the storage index it reads.

    ``view`` is a tensor (its whole storage is drawn) or a :class:`~lectorch.views.Layout` (drawn up to
    ``storage_size`` cells, by default the cells it reaches). Views of more than two dims are drawn with
    their leading dims flattened into rows.

    >>> fig = storage_view_figure(Layout.contiguous((4, 4)).transpose(0, 1), name="x.T")
    >>> fig.axes[1].get_title(loc="left").splitlines()
    ['x.T: shape (4, 4), strides (1, 4),', 'offset 0 (non-contiguous)']
    """
    layout, size = _layout_and_size(view, storage_size)
    rows, cols = _grid(layout)
    width = _MAX_WIDTH_IN
    height = 1.5 + 0.42 * max(rows, 1) + 0.6
    fig = Figure(figsize=(width, height), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[1.5, 0.42 * max(rows, 1) + 0.6])
    _draw_storage(top, layout, size, title=tr("storage: {size} elements, in memory order", size=size))
    kind = tr("contiguous") if layout.is_contiguous else tr("non-contiguous")
    _draw_view(bottom, layout, width=size, title=tr("{name}: shape {shape}, strides {strides},\noffset {offset} ({kind})",
                                                    name=name, shape=layout.shape, strides=layout.strides,
                                                    offset=layout.offset, kind=kind))
    if layout.ndim > 2:
        bottom.text(0, -max(rows, 1) + 0.6, tr("(leading dims flattened into {rows} rows)", rows=rows), va="top")
    return fig


def _stride_arrows(ax, layout: Layout) -> None:
    """Arrows on a 2-D grid: one step down (dim 0) and one step right (dim 1), labelled with the stride."""
    rows, cols = _grid(layout)
    if layout.ndim != 2:
        return
    if cols > 1:
        ax.add_patch(FancyArrowPatch((0.5, 1.25), (1.5, 1.25), arrowstyle="-|>", mutation_scale=10, color="k"))
        ax.text(1.65, 1.25, tr("+{stride} per column", stride=layout.strides[1]), va="center")
    if rows > 1:
        ax.add_patch(FancyArrowPatch((-0.3, 0.5), (-0.3, -0.5), arrowstyle="-|>", mutation_scale=10, color="k"))
        ax.text(-0.45, 0.0, tr("+{stride}\nper\nrow", stride=layout.strides[0]), ha="right", va="center")
    ax.set_xlim(-1.6, cols + 0.2)
    ax.set_ylim(-rows + 0.8, 1.6)


def _draw_walk(ax, layout: Layout, size: int) -> None:
    """Element k of the view (in row-major order) against the storage index it reads."""
    _, cols = _grid(layout)
    cells = layout.cells()
    ax.plot(range(len(cells)), cells, color="#555555", linewidth=1, zorder=1)
    colours = [_darker(PALETTE[(k // max(cols, 1)) % len(PALETTE)]) for k in range(len(cells))]
    ax.scatter(range(len(cells)), cells, s=28, c=colours, zorder=2)
    ax.set_xlabel(tr("element k of the view (row-major order)"))
    ax.set_ylabel(tr("storage index"))
    ax.set_xlim(-0.5, max(len(cells), size) - 0.5)
    ax.set_ylim(-0.5, size - 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


def _darker(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#{:02x}{:02x}{:02x}".format(*(int(v * 0.7) for v in (r, g, b)))


@styled
def strides_figure(views: dict[str, torch.Tensor | Layout], *, storage_size: int | None = None) -> Figure:
    """One column per view: its grid with stride arrows (top) and its walk through storage (bottom):
    element k of the view (in row-major order) against the storage index it reads.

    A contiguous view walks the storage one cell at a time (a straight line); a transposed one jumps
    by its strides (a saw-tooth).

    >>> x = Layout.contiguous((4, 4))
    >>> fig = strides_figure({"x": x, "x.T": x.transpose(0, 1)})
    >>> [ax.get_title(loc="left") for ax in fig.axes[::2]]
    ['x: strides (4, 1), contiguous', 'x.T: strides (1, 4), non-contiguous']
    """
    if not isinstance(views, dict) or not views:
        raise TypeError("views must be a non-empty dict {name: tensor or Layout}")
    pairs = [(name, *_layout_and_size(v, storage_size)) for name, v in views.items()]
    size = max(s for _, _, s in pairs)
    max_rows = max(_grid(layout)[0] for _, layout, _ in pairs)
    n = len(pairs)
    # one view under the other (its grid, then its walk): side by side, a phone would halve them
    grid_h = 0.45 * max_rows + 1.1
    fig = Figure(figsize=(_MAX_WIDTH_IN, n * (grid_h + 2.8)), layout="constrained")
    axes = fig.subplots(2 * n, 1, squeeze=False, height_ratios=[grid_h, 2.8] * n)[:, 0]
    for col, (name, layout, _) in enumerate(pairs):
        kind = tr("contiguous") if layout.is_contiguous else tr("non-contiguous")
        _draw_view(axes[2 * col], layout, title=tr("{name}: strides {strides}, {kind}", name=name,
                                                   strides=layout.strides, kind=kind))
        _stride_arrows(axes[2 * col], layout)
        _draw_walk(axes[2 * col + 1], layout, size)
        axes[2 * col + 1].set_title(tr("{name}: storage index per element", name=name), loc="left")
    return fig
