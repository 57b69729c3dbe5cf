"""Figures of chapter 09: the loss curve with its floor and the LR schedule; the memory/compute trade-offs.

>>> fig = training_curves([4.0, 3.0, 2.5], [0.0, 1e-3, 5e-4], floor=2.0)
>>> len(fig.axes)
2
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lectorch.plots import COLORS, new_figure, styled, tr


def _smooth(values: np.ndarray, window: int) -> np.ndarray:
    if window <= 1 or len(values) < window:
        return values
    kernel = np.ones(window) / window
    head = [values[: i + 1].mean() for i in range(window - 1)]
    return np.concatenate([head, np.convolve(values, kernel, mode="valid")])


@styled
def training_curves(
    losses: Sequence[float],
    lrs: Sequence[float],
    *,
    floor: float | None = None,
    initial: float | None = None,
    smooth: int = 10,
) -> Figure:
    """Left: the loss per step (raw and a running mean) with the best reachable loss; right: the LR.

    >>> training_curves([1.0] * 20, [0.1] * 20, initial=4.0).axes[0].get_ylabel()
    'loss (nats)'
    """
    losses = np.asarray(losses, dtype=float)
    lrs = np.asarray(lrs, dtype=float)
    if losses.ndim != 1 or len(losses) == 0 or len(lrs) != len(losses):
        raise ValueError(f"losses and lrs must be 1-D and of the same non-zero length, got {len(losses)} and {len(lrs)}")
    steps = np.arange(1, len(losses) + 1)
    # one above the other: side by side, a phone would shrink both to half its width
    fig, (ax, ax_lr) = new_figure(2, 1, height=6.4)
    ax.plot(steps, losses, color=COLORS["fp32"], alpha=0.3, lw=1, label=tr("loss per step"))
    ax.plot(steps, _smooth(losses, smooth), color=COLORS["fp32"], lw=2,
            label=tr("running mean ({smooth} steps)", smooth=smooth))
    if initial is not None:
        ax.axhline(initial, color="grey", ls=":", lw=1.2, label=tr("uniform guess ln V = {initial}", initial=f"{initial:.2f}"))
    if floor is not None:
        ax.axhline(floor, color=COLORS["measured"], ls="--", lw=1.2, label=tr("best possible H = {floor}", floor=f"{floor:.2f}"))
    ax.set_xlabel(tr("step"))
    ax.set_ylabel(tr("loss (nats)"))
    ax.set_title(tr("training loss"))
    ax.legend(frameon=False)
    ax_lr.plot(steps, lrs, color=COLORS["optimizer"], lw=2)
    ax_lr.set_xlabel(tr("step"))
    ax_lr.set_ylabel(tr("learning rate"))
    ax_lr.set_title(tr("cosine schedule with linear warm-up"))
    ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    return fig


@styled
def tradeoff_bars(labels: Sequence[str], saved_bytes: Sequence[int], flops: Sequence[int]) -> Figure:
    """Two bar charts side by side: bytes saved for backward, and FLOPs of forward + backward, per setting.

    >>> tradeoff_bars(["fp32", "bf16"], [100, 60], [10, 10]).axes[1].get_title()
    'compute of a step (forward + backward)'
    """
    if not (len(labels) == len(saved_bytes) == len(flops)) or not labels:
        raise ValueError("labels, saved_bytes and flops must have the same non-zero length")
    fig, (ax_m, ax_f) = new_figure(2, 1, height=5.6)
    x = np.arange(len(labels))
    colors = [COLORS["bf16"] if "bf16" in lab else COLORS["fp32"] for lab in labels]
    hatches = ["//" if "ckpt" in lab else "" for lab in labels]
    for ax, values, scale, unit, title in (
        (ax_m, saved_bytes, 2**10, "KiB", tr("activations saved for backward")),
        (ax_f, flops, 1e6, "MFLOP", tr("compute of a step (forward + backward)")),
    ):
        bars = ax.bar(x, np.asarray(values, dtype=float) / scale, color=colors)
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
            bar.set_edgecolor("white")
        for bar, value in zip(bars, values):
            ax.annotate(f"{value / scale:.0f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom")
        ax.set_xticks(x, [tr(label) for label in labels])
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.margins(y=0.15)
    return fig


@styled
def start_histogram(starts: Sequence[int], num_valid: int) -> Figure:
    """How often each start position was drawn by the batch sampler, against the uniform expectation.

    >>> start_histogram([0, 1, 1, 2], 3).axes[0].get_xlabel()
    'start position'
    """
    starts = np.asarray(starts, dtype=int)
    if num_valid < 1 or starts.size == 0:
        raise ValueError("need at least one start and one valid position")
    counts = np.bincount(starts, minlength=num_valid + 2)[: num_valid + 2]
    fig, ax = new_figure(1, 1, height=3.2)
    positions = np.arange(len(counts))
    ax.bar(positions, counts, color=[COLORS["fp32"] if p < num_valid else COLORS["fp8"] for p in positions])
    ax.axhline(starts.size / num_valid, color=COLORS["measured"], ls="--", lw=1.2, label=tr("uniform expectation"))
    ax.axvline(num_valid - 0.5, color="grey", ls=":", lw=1.2, label=tr("last valid start | invalid"))
    ax.set_xlabel(tr("start position"))
    ax.set_ylabel(tr("times drawn"))
    ax.set_ylim(0, 1.35 * max(int(counts.max()), 1))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=1)
    return fig


@styled
def schedule_figure(*, max_lr: float, warmup_steps: int, total_steps: int, min_ratio: float = 0.1,
                    extra_steps: int | None = None) -> Figure:
    """The learning rate of a cosine schedule with linear warm-up, step by step, with its phases marked.

    >>> schedule_figure(max_lr=1e-3, warmup_steps=10, total_steps=100).axes[0].get_xlabel()
    'step'
    """
    from lectorch.train import cosine_lr

    if extra_steps is None:
        extra_steps = max(total_steps // 10, 1)
    steps = np.arange(total_steps + extra_steps + 1)
    lrs = [cosine_lr(int(s), max_lr=max_lr, min_lr=max_lr * min_ratio, warmup_steps=warmup_steps,
                     total_steps=total_steps) for s in steps]
    fig, ax = new_figure(1, 1, height=3.2)
    ax.plot(steps, lrs, color=COLORS["optimizer"], lw=2)
    ax.axvline(warmup_steps, color="grey", ls=":", lw=1.2, label=tr("end of warm-up (step {step})", step=warmup_steps))
    ax.axvline(total_steps, color=COLORS["measured"], ls="--", lw=1.2, label=f"total_steps = {total_steps}")
    ax.axhline(max_lr * min_ratio, color="grey", ls="-", lw=0.8, alpha=0.6, label=tr("floor min_lr"))
    ax.set_xlabel(tr("step"))
    ax.set_ylabel(tr("learning rate"))
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    ax.set_ylim(0, 1.3 * max_lr)
    ax.legend(frameon=False, loc="upper right")
    return fig


__all__ = ["training_curves", "tradeoff_bars", "start_histogram", "schedule_figure"]
