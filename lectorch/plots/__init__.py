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

#: Colours used for the same concept across chapters.
COLORS = {
    "fp64": "#6a3d9a", "fp32": "#1f78b4", "tf32": "#a6cee3", "bf16": "#33a02c", "fp16": "#b2df8a",
    "fp8": "#e31a1c", "fp8_e4m3": "#e31a1c", "fp8_e5m2": "#fb9a99", "int8": "#ff7f00",
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
