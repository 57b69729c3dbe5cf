"""Figures of chapter 06: the data flow of forward and backward matmuls, and their FLOPs.

>>> fig = dataflow_figure(batch=4, dim=8, out_dim=2)
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from lectorch import _validate
from lectorch.backprop import BackpropFlops, MeasuredFlops, mlp_flops
from lectorch.plots import COLORS, new_figure, styled, tr


def _box(ax, x: float, y: float, text: str, color: str, *, faded: bool = False, w: float = 1.3, h: float = 0.7) -> None:
    ax.add_patch(FancyBboxPatch(
        (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05", facecolor=color, alpha=0.12 if faded else 0.25,
        edgecolor=color, linestyle="--" if faded else "-", linewidth=1.5,
    ))
    ax.text(x, y, text, ha="center", va="center", color="#999999" if faded else "black")


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], color: str, *, dashed: bool = False) -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(
        arrowstyle="-|>", color=color, lw=1.8, linestyle="--" if dashed else "-", shrinkA=2, shrinkB=2,
    ))


def _label(ax, x: float, y: float, text: str, color: str, *, faded: bool = False) -> None:
    ax.text(x, y, text, ha="center", va="center", color="#999999" if faded else color,
            bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.9))


@styled
def dataflow_figure(batch: int, dim: int, out_dim: int, *, input_requires_grad: bool = False) -> Figure:
    """The two-layer net x (B×D) → w1 (D×D) → h1 → w2 (D×K) → h2 → loss, forward (top, blue) and
    backward (bottom, red), every matmul labelled with its FLOPs for the given sizes.

    >>> len(dataflow_figure(2, 3, 1, input_requires_grad=True).axes)
    1
    """
    flops = mlp_flops(batch, [dim, dim, out_dim], input_requires_grad=input_requires_grad)
    first, second = flops.layers
    fwd, bwd, wts, grads = COLORS["forward"], COLORS["backward"], COLORS["weights"], COLORS["gradients"]
    fig, ax = new_figure(height=6.0)
    ax.set_xlim(0, 10.6)
    ax.set_ylim(-0.6, 5.6)
    ax.axis("off")
    ax.grid(False)
    top, bottom, wy, gy = 3.9, 1.3, 5.0, -0.1
    xs = {"x": 1.0, "h1": 4.0, "h2": 7.0, "loss": 9.6}
    # forward row
    _box(ax, xs["x"], top, "x\n(B×D)", fwd)
    _box(ax, xs["h1"], top, "h1\n(B×D)", fwd)
    _box(ax, xs["h2"], top, "h2\n(B×K)", fwd)
    _box(ax, xs["loss"], top, tr("loss\n(scalar)"), fwd, w=1.1)
    _box(ax, 2.5, wy, "w1 (D×D)", wts, h=0.5)
    _box(ax, 5.5, wy, "w2 (D×K)", wts, h=0.5)
    for a, b in [("x", "h1"), ("h1", "h2"), ("h2", "loss")]:
        _arrow(ax, (xs[a] + 0.7, top), (xs[b] - 0.7, top), fwd)
    for wx in (2.5, 5.5):
        _arrow(ax, (wx, wy - 0.3), (wx, top + 0.08), wts)
    _label(ax, 2.5, top - 0.85, f"x @ w1\n2BD² = {first.forward:,}", fwd)
    _label(ax, 5.5, top - 0.85, f"h1 @ w2\n2BDK = {second.forward:,}", fwd)
    _label(ax, 8.3, top - 0.85, tr("sum\n0"), fwd)
    # backward row
    skip = first.backward_input == 0
    _box(ax, xs["x"], bottom, "∂x\n(B×D)", bwd, faded=skip)
    _box(ax, xs["h1"], bottom, "∂h1\n(B×D)", bwd)
    _box(ax, xs["h2"], bottom, "∂h2\n(B×K)", bwd)
    _box(ax, xs["loss"], bottom, "∂loss\n= 1", bwd, w=1.1)
    for a, b in [("loss", "h2"), ("h2", "h1"), ("h1", "x")]:
        faded = skip and b == "x"
        _arrow(ax, (xs[a] - 0.7, bottom), (xs[b] + 0.7, bottom), "#bbbbbb" if faded else bwd, dashed=faded)
    _label(ax, 8.3, bottom + 0.85, tr("broadcast\n0"), bwd)
    _label(ax, 5.5, bottom + 0.85, f"∂h2 @ w2ᵀ\n2BDK = {second.backward_input:,}", bwd)
    text = tr("not needed:\nx is data") if skip else f"∂h1 @ w1ᵀ\n2BD² = {first.backward_input:,}"
    _label(ax, 2.5, bottom + 0.85, text, bwd, faded=skip)
    # weight gradients
    _box(ax, 2.5, gy, "∂w1 (D×D)", grads, h=0.5)
    _box(ax, 5.5, gy, "∂w2 (D×K)", grads, h=0.5)
    _arrow(ax, (xs["h1"] - 0.3, bottom - 0.38), (2.5 + 0.3, gy + 0.3), grads)
    _arrow(ax, (xs["h2"] - 0.3, bottom - 0.38), (5.5 + 0.3, gy + 0.3), grads)
    _label(ax, 1.3, gy + 0.6, f"xᵀ @ ∂h1\n2BD² = {first.backward_weight:,}", grads)
    _label(ax, 4.2, gy + 0.6, f"h1ᵀ @ ∂h2\n2BDK = {second.backward_weight:,}", grads)
    ax.set_title(tr("B={batch}, D={dim}, K={out_dim}: forward {forward} FLOPs,\n"
                    "backward {backward} (= {ratio} × forward)", batch=batch, dim=dim, out_dim=out_dim,
                    forward=f"{flops.forward:,}", backward=f"{flops.backward:,}", ratio=f"{flops.ratio:.2f}"))
    return fig


@styled
def flops_bars_figure(predicted: BackpropFlops, measured: MeasuredFlops | None = None) -> Figure:
    """Left: forward and backward FLOPs, predicted vs counted. Right: per layer, the predicted
    forward, weight-gradient and input-gradient FLOPs stacked, with the counted totals as markers.

    >>> flops_bars_figure(mlp_flops(4, [8, 8, 2])).axes[0].get_title()
    'total FLOPs'
    """
    if not isinstance(predicted, BackpropFlops):
        raise TypeError(f"predicted must be a BackpropFlops (from mlp_flops), got {type(predicted).__name__}")
    fig, (left, right) = new_figure(1, 2, width=6.8, height=3.6)
    names = [tr("forward"), tr("backward")]
    pred = [predicted.forward, predicted.backward]
    xs = range(len(names))
    left.bar([x - 0.2 for x in xs], pred, width=0.4, color=[COLORS["forward"], COLORS["backward"]], label=tr("predicted"))
    if measured is not None:
        left.bar([x + 0.2 for x in xs], [measured.forward, measured.backward], width=0.4, color="white",
                 edgecolor=COLORS["measured"], hatch="//", label=tr("counted (FlopCounterMode)"))
    tallest = max(pred + ([measured.forward, measured.backward] if measured is not None else []))
    left.set_ylim(0, 1.35 * tallest)  # room for the legend above the bars
    left.set_xticks(list(xs), names)
    left.set_ylabel("FLOPs")
    left.set_title(tr("total FLOPs"))
    left.legend(loc="upper left")
    layers = range(1, len(predicted.layers) + 1)
    fwd = [layer.forward for layer in predicted.layers]
    bw = [layer.backward_weight for layer in predicted.layers]
    bi = [layer.backward_input for layer in predicted.layers]
    right.bar(layers, fwd, color=COLORS["forward"], label=tr("forward"))
    right.bar(layers, bw, bottom=fwd, color=COLORS["gradients"], label=tr("backward: weight grad"))
    right.bar(layers, bi, bottom=[f + w for f, w in zip(fwd, bw)], color=COLORS["backward"], label=tr("backward: input grad"))
    if measured is not None:
        by_layer = _layer_totals(measured, len(predicted.layers))
        if by_layer is not None:
            right.scatter(list(layers), by_layer, marker="x", color=COLORS["measured"], zorder=3, label=tr("counted total"))
    right.set_ylim(0, 1.7 * max(layer.total for layer in predicted.layers))  # room for the legend
    right.set_xticks(list(layers))
    right.set_xlabel(tr("layer"))
    right.set_title(tr("per layer"))
    right.legend(loc="upper left")
    return fig


def _layer_totals(measured: MeasuredFlops, num_layers: int) -> list[int] | None:
    """Counted forward + backward of each leaf layer, in order (None if the names do not match)."""
    fwd = measured.forward_by_module
    names = [n for n in fwd if n.count(".") == 1 and fwd[n] > 0]  # e.g. "Sequential.0"
    if len(names) != num_layers:
        return None
    return [fwd[n] + measured.backward_by_module.get(n, 0) for n in names]


@styled
def ratio_figure(depths: Sequence[int], predicted: Sequence[float], measured: Sequence[float], *, dim: int) -> Figure:
    """backward/forward FLOPs of the Cruncher against depth: predicted (line) and counted (dots).

    >>> ratio_figure([1, 2], [1.5, 1.7], [1.5, 1.7], dim=8).axes[0].get_xlabel()
    'num_layers (depth)'
    """
    dim = _validate.positive_int("dim", dim)
    if not (len(depths) == len(predicted) == len(measured)) or not depths:
        raise ValueError("depths, predicted and measured must be non-empty and of the same length")
    fig, ax = new_figure(height=3.4)
    ax.plot(depths, predicted, color=COLORS["backward"], label=tr("predicted: 2 − D/(L·D + 1)"))
    ax.scatter(depths, measured, color=COLORS["measured"], marker="x", zorder=3, label=tr("counted (FlopCounterMode)"))
    ax.axhline(2, color="#888888", linestyle=":", label=tr("2 (every layer needs its input gradient)"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(depths), [str(d) for d in depths])
    ax.minorticks_off()
    ax.set_xlabel(tr("num_layers (depth)"))
    ax.set_ylabel(tr("backward / forward FLOPs"))
    ax.set_ylim(1.0, 2.1)
    ax.set_title(tr("Cruncher (D = {dim}):\nbackward / forward → 2 with depth", dim=dim))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    return fig
