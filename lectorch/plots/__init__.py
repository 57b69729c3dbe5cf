"""Figures of the course. Each function returns a ``matplotlib.figure.Figure`` built without pyplot,
so nothing is displayed twice and no pyplot state is left behind: end a cell with the figure.

Importing this module in a notebook registers a PNG formatter for figures with IPython (pyplot's
inline backend would otherwise be the only thing that renders a bare ``Figure`` as an image).

>>> fig, ax = new_figure()
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lectorch.dtypes import FORMATS

#: Colours used for the same concept across chapters.
#: The float formats' colours come from the registry :data:`lectorch.dtypes.FORMATS` (a peak-table
#: key such as "fp8" takes the colour of its first format); tf32 and int8 are not float formats.
COLORS = {
    **{fmt.name: fmt.color for fmt in reversed(FORMATS)},
    **{fmt.flops_key: fmt.color for fmt in reversed(FORMATS)},
    "tf32": "#a6cee3", "int8": "#ff7f00",
    "forward": "#1f78b4", "backward": "#e31a1c", "weights": "#1f78b4", "gradients": "#33a02c",
    "optimizer": "#ff7f00", "activations": "#6a3d9a", "measured": "#000000",
}


def _register_png_formatter() -> None:
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.formatters["image/png"].for_type(
        Figure, lambda fig: print_figure(fig, fmt="png", bbox_inches="tight", dpi=96)
    )


_register_png_formatter()


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 6.4, height: float = 3.6) -> tuple[Figure, Axes | list]:
    """A figure with a grid of axes, in the course's style.

    >>> fig, axes = new_figure(1, 2); len(axes)
    2
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True)
    for ax in fig.axes:
        ax.grid(True, alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, (list(axes.flat) if hasattr(axes, "flat") else axes)
