"""Figures of chapter 07: the scale of a layer's outputs against width, depth and the init scheme."""

from __future__ import annotations

from matplotlib.figure import Figure

from lectorch import init
from lectorch.plots import new_figure, styled, tr

#: A colour per initialisation scheme.
SCHEME_COLORS = {"standard": "#e31a1c", "lecun": "#1f78b4", "xavier": "#33a02c", "kaiming": "#ff7f00"}
_MARKERS = {"standard": "o", "lecun": "s", "xavier": "^", "kaiming": "D"}


@styled
def output_std_figure(widths=(16, 64, 256, 1024, 4096), schemes=tuple(init.SCHEMES), *, depth_width: int = 256,
                      num_layers: int = 8, seed: int = 0) -> Figure:
    """Top: measured (markers) and predicted (lines) output std of one layer against width, per scheme.
    Bottom: the std after each of ``num_layers`` (depth_width, depth_width) layers (log scale).

    >>> len(output_std_figure(widths=(16, 64), num_layers=2, depth_width=16).axes)
    2
    """
    fig, (ax, ax2) = new_figure(2, 1, height=7.6)
    for scheme in schemes:
        color = SCHEME_COLORS.get(scheme)
        measured = [init.output_std(w, scheme, seed=seed) for w in widths]
        predicted = [init.predicted_output_std(w, scheme) for w in widths]
        ax.plot(widths, predicted, color=color, lw=1, alpha=0.7)
        ax.plot(widths, measured, ls="none", marker=_MARKERS.get(scheme, "o"), color=color,
                label=f"{tr(scheme)}: std {init.SCHEMES[scheme]}")
        stds = init.depth_stds(depth_width, num_layers, scheme, seed=seed)
        ax2.plot(range(1, num_layers + 1), stds, marker=_MARKERS.get(scheme, "o"), color=color, label=tr(scheme))
    ax.set(xscale="log", yscale="log", xlabel=tr("input width (fan_in)"), ylabel=tr("std of the layer's outputs"),
           title=tr("one layer: measured (markers),\nsqrt(width)·std (lines)"))
    ax.set_xscale("log", base=2)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    ax2.set(yscale="log", xlabel=tr("layer"), ylabel=tr("std of the activations"),
            title=tr("{num_layers} layers of width {width}", num_layers=num_layers, width=depth_width))
    ax2.legend(ncols=2)
    return fig


@styled
def output_histogram_figure(width: int, scheme: str, *, seed: int = 0) -> Figure:
    """Histogram of one layer's outputs for ``width`` and ``scheme``, with the standard normal dashed.

    >>> len(output_histogram_figure(64, "lecun").axes)
    1
    """
    import numpy as np

    out = init.layer_outputs(width, scheme, seed=seed).flatten().numpy()
    std = float(out.std())
    fig, ax = new_figure(width=6.0, height=3.0)
    ax.hist(out, bins=60, density=True, color=SCHEME_COLORS.get(scheme, "#1f78b4"), alpha=0.7,
            label=tr("outputs, std {std}", std=format(std, ".3g")))
    half = max(4.0, 4 * std)
    xs = np.linspace(-half, half, 400)
    ax.plot(xs, np.exp(-xs**2 / 2) / np.sqrt(2 * np.pi), color="black", ls="--", lw=1, label="N(0, 1)")
    ax.set(xlim=(-half, half), xlabel=tr("output value"), ylabel=tr("density"),
           title=tr("width {width}, {scheme} init (std {std})", width=width, scheme=scheme, std=init.SCHEMES[scheme]))
    ax.legend()
    return fig
