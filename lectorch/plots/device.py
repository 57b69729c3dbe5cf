"""Figures of chapter 02 (device placement): copy bandwidth against copy size.

>>> from lectorch.transfer import bandwidth_sweep
>>> fig = bandwidth_figure(bandwidth_sweep("cpu", [2**12, 2**14], trials=3))
>>> len(fig.axes)
1
"""

from __future__ import annotations

from matplotlib.figure import Figure

from lectorch.plots import COLORS, new_figure, styled, tr
from lectorch.transfer import NAPKIN_LINKS, TransferResult

_STYLE = {"pinned": ("#1f78b4", "o"), "pageable": ("#e31a1c", "s"), "host → host": (COLORS["measured"], "o")}


def _style(kind: str) -> tuple[str, str]:
    for key, style in _STYLE.items():
        if key in kind:
            return style
    return ("#6a3d9a", "^")


@styled
def bandwidth_figure(results: list[TransferResult] | tuple[TransferResult, ...], *, title: str | None = None) -> Figure:
    """Achieved GB/s against bytes per copy, one line per kind of copy (log-scaled size axis).

    Small copies are dominated by a fixed per-copy overhead (launch, synchronisation), so their
    bandwidth is low; large copies approach the link's limit. Host → GPU results also show the
    one-direction PCIe peaks as dashed lines.
    """
    results = list(results)
    if not results or not all(isinstance(r, TransferResult) for r in results):
        raise ValueError("results must be a non-empty list of TransferResult (from lectorch.transfer.bandwidth_sweep)")
    fig, ax = new_figure(height=3.4)
    kinds = list(dict.fromkeys(r.kind for r in results))
    for kind in kinds:
        rows = sorted((r for r in results if r.kind == kind), key=lambda r: r.nbytes)
        color, marker = _style(kind)
        ax.plot([r.nbytes for r in rows], [r.bytes_per_s / 1e9 for r in rows], marker=marker, color=color, label=tr(kind))
    if any(kind != "host → host" for kind in kinds):
        for (name, bw), ls in zip(NAPKIN_LINKS.items(), ("--", ":")):
            ax.axhline(bw / 1e9, color="grey", ls=ls, lw=1, label=tr("{name} peak ({bw} GB/s)", name=name, bw=f"{bw / 1e9:.1f}"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel(tr("bytes per copy"))
    ax.set_ylabel(tr("achieved bandwidth (GB/s)"))
    ax.set_ylim(bottom=0)
    ticks = sorted({r.nbytes for r in results})
    every = max(1, -(-len(ticks) // 4))  # at most four labels: they stay apart on a phone
    ax.set_xticks(ticks, [_size_label(t) if i % every == 0 else "" for i, t in enumerate(ticks)])
    ax.set_title(tr(title) if title else tr("Copy bandwidth vs copy size\n(median of trials)"))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    return fig


def _size_label(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{nbytes} B"
