"""Figures of chapter 05: the scale of training runs, achieved FLOP/s against size, and the roofline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from lectorch.plots import COLORS, new_figure, styled, tr
from lectorch.roofline import MatmulPoint, Roofline

_EXTRA = ("#444444", "#b15928", "#cab2d6", "#ffff99")


def _color(key: str, i: int = 0) -> str:
    return COLORS.get(key, _EXTRA[i % len(_EXTRA)])


@styled
def compute_scale_figure(runs: Mapping[str, float], thresholds: Mapping[str, float]) -> Figure:
    """Horizontal bars of training compute (log scale) with regulatory thresholds as vertical lines.

    >>> fig = compute_scale_figure({"GPT-3": 3.15e23}, {"EU AI Act": 1e25})
    >>> len(fig.axes[0].patches)
    1
    """
    if not runs:
        raise ValueError("runs must hold at least one (name, FLOPs) pair")
    fig, ax = new_figure(height=0.75 * len(runs) + 2.2)
    names = list(runs)
    values = [float(runs[n]) for n in names] + [float(v) for v in thresholds.values()]
    left = 10.0 ** math.floor(math.log10(min(values)) - 0.5)
    right = 10.0 ** math.ceil(math.log10(max(values)) + 0.5)
    ax.barh(range(len(names)), [runs[n] - left for n in names], left=left, color=COLORS["measured"], alpha=0.75,
            height=0.5)
    ax.set_yticks([])  # each run's name above its bar: beside it, long names would squeeze the bars on a phone
    ax.set_ylim(len(names) - 0.4, -0.9)
    for y, name in enumerate(names):
        ax.text(left * 1.2, y - 0.3, tr(name), va="bottom")
        ax.text(runs[name] * 1.3, y, f"{runs[name]:.3g}", va="center", zorder=3,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    for i, (label, value) in enumerate(thresholds.items()):
        color = ("#e31a1c", "#ff7f00", "#6a3d9a")[i % 3]
        ax.axvline(value, color=color, ls="--", lw=1.5, label=tr("{label}: {value} FLOPs", label=tr(label),
                                                                 value=f"{value:.0e}"))
    ax.set(xscale="log", xlabel=tr("training compute (FLOPs, not FLOP/s)"), xlim=(left, right))
    ax.grid(False, axis="y")
    fig.legend(loc="outside lower center", ncols=1)
    return fig


@styled
def flops_per_s_figure(
    points: Sequence[MatmulPoint],
    peaks: Mapping[str, float] | None = None,
    *,
    peak_label: str = "dense peak",
    title: str = "",
) -> Figure:
    """Achieved FLOP/s of square matmuls against their size, one line per precision, with error bars
    (the inter-quartile range of the timings) and a horizontal line per peak.

    >>> from lectorch.roofline import measure_matmul
    >>> pts = [measure_matmul(n, n, n, "fp32", "cpu", trials=3) for n in (8, 16)]
    >>> len(flops_per_s_figure(pts, {"fp32": 1e12}).axes[0].lines) >= 2
    True
    """
    if not points:
        raise ValueError("points must hold at least one measured MatmulPoint")
    fig, ax = new_figure(height=4.2)
    precisions = list(dict.fromkeys(p.precision for p in points))
    for i, key in enumerate(precisions):
        pts = sorted((p for p in points if p.precision == key), key=lambda p: p.n)
        sizes = [p.n for p in pts]
        rates = [p.flops_per_s for p in pts]
        # FLOP/s at the quartile times: a slow trial means fewer FLOP/s, so the bar is asymmetric.
        lo = [p.flops / (p.timing.median_s + p.timing.iqr_s / 2) for p in pts]
        hi = [p.flops / max(p.timing.median_s - p.timing.iqr_s / 2, p.timing.min_s) for p in pts]
        err = [[r - a for r, a in zip(rates, lo)], [b - r for r, b in zip(rates, hi)]]
        ax.errorbar(sizes, rates, yerr=err, marker="o", capsize=3, color=_color(key, i), label=tr("{key} measured", key=key))
        if peaks and key in peaks:
            ax.axhline(peaks[key], color=_color(key, i), ls="--", lw=1.2, label=f"{key} {tr(peak_label)}")
    if peaks:
        for j, (key, value) in enumerate(peaks.items()):
            if key not in precisions:
                ax.axhline(value, color=_color(key, j + 1), ls="--", lw=1.2, label=f"{key} {tr(peak_label)}")
    ax.set(xscale="log", yscale="log", xlabel=tr("n (square n×n @ n×n matmul)"), ylabel=tr("achieved FLOP/s"),
           title=tr(title))
    ax.set_xticks(sorted({p.n for p in points}), [str(n) for n in sorted({p.n for p in points})])
    ax.minorticks_off()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    return fig


@styled
def roofline_figure(
    rooflines: Sequence[Roofline],
    points: Sequence[MatmulPoint] = (),
    *,
    title: str = "",
    intensity_range: tuple[float, float] | None = None,
    styles: Sequence[str] | None = None,
) -> Figure:
    """Rooflines (log-log: attainable FLOP/s against FLOPs per byte) with measured points on them.

    ``styles`` gives a line style per roofline (e.g. ":" for one drawn only for scale).

    >>> fig = roofline_figure([Roofline.from_gpu("H100", "bf16")])
    >>> fig.axes[0].get_xscale()
    'log'
    """
    if not rooflines:
        raise ValueError("rooflines must hold at least one Roofline")
    fig, ax = new_figure(height=4.6)
    ridges = [r.ridge_point for r in rooflines]
    intensities = [p.intensity for p in points]
    lo, hi = intensity_range or (
        min(ridges + intensities) / 30,
        max(ridges + intensities) * 10,
    )
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    styles = list(styles) if styles is not None else ["-"] * len(rooflines)
    if len(styles) != len(rooflines):
        raise ValueError(f"styles has {len(styles)} entries but there are {len(rooflines)} rooflines")
    for i, (roof, style) in enumerate(zip(rooflines, styles)):
        color = _EXTRA[i % len(_EXTRA)] if len(rooflines) > 1 else "#444444"
        for key in ("tf32", "bf16", "fp16", "fp32", "fp64"):
            if key in roof.label.split():
                color = _color(key)
        ax.plot(xs, [roof.attainable(x) for x in xs], ls=style, color=color, lw=2, label=tr(roof.label) if roof.label else tr("roofline {i}", i=i + 1))
        ax.plot([roof.ridge_point], [roof.peak_flops_per_s], marker="^", color=color, ms=7)
    precisions = list(dict.fromkeys(p.precision for p in points))
    for i, key in enumerate(precisions):
        pts = [p for p in points if p.precision == key]
        ax.scatter([p.intensity for p in pts], [p.flops_per_s for p in pts], color=_color(key, i),
                   edgecolor="black", zorder=3, label=tr("{key} measured ({device})", key=key, device=pts[0].device))
    ax.set(xscale="log", yscale="log", xlabel=tr("arithmetic intensity (FLOPs per byte moved)"),
           ylabel="FLOP/s", title=tr(title), xlim=(lo, hi))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    return fig
