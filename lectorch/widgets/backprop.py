"""The panel of chapter 06: forward and backward FLOPs of an MLP, predicted and counted.

>>> panel = backprop_panel()
>>> "forward" in panel.result.value
True
"""

from __future__ import annotations

import html

import ipywidgets as w

from lectorch.backprop import BackpropFlops, MeasuredFlops, predicted_and_measured
from lectorch.plots.backprop import flops_bars_figure
from lectorch.widgets import Panel


def backprop_table(predicted: BackpropFlops, measured: MeasuredFlops) -> str:
    """An HTML table of predicted (``mlp_flops``) and counted (``measured_flops``) FLOPs.

    >>> "2.00" in backprop_table(*predicted_and_measured(8, [64, 64, 16], input_requires_grad=True))
    True
    """
    six_n = 6 * predicted.batch * predicted.num_parameters
    depth, first, last = len(predicted.layers), predicted.layers[0].in_features, predicted.layers[-1].out_features
    rows = [
        ("forward", predicted.forward, measured.forward),
        ("backward: weight grads", predicted.backward_weight, None),
        ("backward: input grads", predicted.backward_input, None),
        ("backward", predicted.backward, measured.backward),
        ("total", predicted.total, measured.total),
    ]
    body = "".join(
        f"<tr><td>{html.escape(name)}</td><td style='text-align:right'>{p:,}</td>"
        f"<td style='text-align:right'>{'' if m is None else f'{m:,}'}</td>"
        f"<td>{'' if m is None else ('✓' if m == p else '✗')}</td></tr>"
        for name, p, m in rows
    )
    return (
        f"<p>{depth} layer{'s' if depth > 1 else ''}, widths {first} → … → {last}, "
        f"{predicted.num_parameters:,} parameters, batch {predicted.batch}</p>"
        "<table><tr><th></th><th>predicted</th><th>counted</th><th></th></tr>"
        f"{body}</table>"
        f"<p>backward / forward = <b>{predicted.ratio:.2f}</b>; "
        f"total / (6 × batch × parameters) = <b>{predicted.total / six_n:.3f}</b></p>"
    )


def backprop_panel(batch: int = 8, dim: int = 64, depth: int = 2, out_dim: int = 16) -> Panel:
    """Sliders for batch, width, depth and output width, a checkbox for x.requires_grad; shows the
    predicted and counted FLOPs as a table and as bars (counted on the meta device: any size is instant).

    >>> p = backprop_panel(); p.controls["input_requires_grad"].value = True
    >>> "backward / forward = <b>2.00</b>" in p.result.value
    True
    """
    controls = {
        "batch": w.IntSlider(value=batch, min=1, max=1024, description="batch B"),
        "dim": w.IntSlider(value=dim, min=1, max=1024, description="width D"),
        "depth": w.IntSlider(value=depth, min=1, max=16, description="layers"),
        "out_dim": w.IntSlider(value=out_dim, min=1, max=1024, description="output K"),
        "input_requires_grad": w.Checkbox(value=False, description="x requires grad"),
    }

    def render(batch: int, dim: int, depth: int, out_dim: int, input_requires_grad: bool):
        widths = [dim] * depth + [out_dim]
        predicted, measured = predicted_and_measured(batch, widths, input_requires_grad=input_requires_grad)
        return backprop_table(predicted, measured), flops_bars_figure(predicted, measured)

    return Panel(controls, render, title="Forward and backward FLOPs: predicted vs FlopCounterMode", live="backprop")
