"""Figures of chapter 00: training time against cluster size, and bytes per parameter."""

from __future__ import annotations

from matplotlib.figure import Figure

from lectorch import napkin
from lectorch.plots import COLORS, new_figure, styled, tr


@styled
def training_days_figure(
    model_sizes=(7e9, 70e9, 405e9), tokens: float = 15e12, gpu: str = "H100 SXM", mfu: float = 0.5,
    gpu_counts=(64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
) -> Figure:
    """Days to train each model size on ``tokens`` tokens, against the number of GPUs (log-log).

    >>> len(training_days_figure().axes)
    1
    """
    fig, ax = new_figure()
    for size in model_sizes:
        days = [napkin.training_days(size, tokens, num_gpus=n, mfu=mfu, gpu=gpu) for n in gpu_counts]
        ax.plot(gpu_counts, days, marker="o", label=tr("{size}B parameters", size=f"{size / 1e9:g}"))
    ax.set(xscale="log", yscale="log", xlabel=tr("number of {gpu} GPUs", gpu=gpu), ylabel=tr("days"),
           title=tr("{tokens}T tokens at MFU {mfu}", tokens=f"{tokens / 1e12:g}", mfu=mfu))
    ax.axhline(365, color="grey", ls=":", lw=1)
    ax.annotate(tr("one year"), (gpu_counts[0], 365), va="bottom", color="grey")
    ax.legend()
    return fig


#: SGD with momentum in fp32: one momentum buffer per parameter, 4 + 4 + 4 = 12 bytes.
SGD_MOMENTUM_FP32 = napkin.BytesPerParam(weights=4, gradients=4, optimizer_state=4)


@styled
def bytes_per_param_figure() -> Figure:
    """Stacked bars: weights, gradients, optimizer state and master weights per parameter.

    >>> len(bytes_per_param_figure().axes[0].patches) > 0
    True
    """
    setups = {tr("AdamW, fp32"): napkin.ADAMW_FP32, tr("AdamW, bf16\n+ fp32 master"): napkin.ADAMW_BF16_MIXED,
              tr("SGD + momentum,\nfp32"): SGD_MOMENTUM_FP32, tr("SGD, fp32"): napkin.SGD_FP32}
    fig, ax = new_figure(height=3.4)
    names = list(setups)
    left = [0.0] * len(names)
    parts = [("weights", "weights"), ("gradients", "gradients"), ("optimizer_state", "optimizer"),
             ("master_weights", "activations")]
    for field, colour in parts:
        widths = [getattr(setups[n], field) for n in names]
        ax.barh(names, widths, left=left, color=COLORS[colour], label=tr(field.replace("_", " ")))
        left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        ax.text(total + 0.2, y, f"{total:g} B", va="center")
    ax.set(xlabel=tr("bytes per parameter"), xlim=(0, 25))
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2, frameon=False)
    return fig
