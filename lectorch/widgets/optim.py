"""The panels of chapter 08: loss curves per optimizer and learning rate, and a training step's memory."""

from __future__ import annotations

import functools
import math

import ipywidgets as w
from matplotlib.figure import Figure

from lectorch import optim, step_memory
from lectorch.memory import format_bytes
from lectorch.plots import tr as figure_tr
from lectorch.plots.optim import loss_curves_figure, memory_bars_figure
from lectorch.widgets import Panel, Recording

#: Steps of the loss-curve panel's training run (full batch, Cruncher(16, 2), 64 examples).
CURVE_STEPS = 100
#: The memory panel measures a step (on the CPU) only when everything at once stays below this.
MEASURE_LIMIT_BYTES = 16 * 2**20


def render_loss_curves(optimizer: str, lr: float, *, steps: int = CURVE_STEPS) -> tuple[str, Figure]:
    """Train the small problem with ``optimizer`` at ``lr`` (and plain SGD at the same lr, dashed).

    >>> text, fig = render_loss_curves("adam", 0.01, steps=5); "adam" in text
    True
    """
    name = optim.check_optimizer_name(optimizer)
    lr = float(lr)
    if not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr}")
    curves = {name: optim.train_cruncher(name, steps=steps, lr=lr)[0]}
    if name != "sgd":
        curves["sgd (same lr)"] = optim.train_cruncher("sgd", steps=steps, lr=lr)[0]
    parts = []
    for label, losses in curves.items():
        last = losses[-1]
        outcome = f"{last:.3g}" if math.isfinite(last) and last < 10 * losses[0] else "diverged"
        parts.append(f"{label}: loss {losses[0]:.3g} → <b>{outcome}</b>")
    text = f"<p>{steps} full-batch steps at lr = {lr:.3g}. " + "; ".join(parts) + "</p>"
    return text, loss_curves_figure(curves, title=figure_tr("Cruncher(16, 2) on a linear regression, lr = {lr}", lr=format(lr, ".3g")))


#: The learning rates the static book records for every optimizer: every half decade from 1e-4 to 1.
RECORDED_LRS = tuple(float(f"{10 ** (k / 2):.2g}") for k in range(-8, 1))


def _rounded(losses: list[float]) -> list[float | None]:
    """Losses to 4 significant digits, JSON-ready (a diverged run's inf or NaN becomes None)."""
    return [float(f"{x:.4g}") if math.isfinite(x) else None for x in losses]


@functools.lru_cache(maxsize=None)
def _curve(name: str, lr: float, steps: int) -> tuple[float | None, ...]:
    return tuple(_rounded(optim.train_cruncher(name, steps=steps, lr=lr)[0]))


def loss_curve_numbers(optimizer: str, lr: float, *, steps: int = CURVE_STEPS) -> dict:
    """One recorded setting of the loss-curve panel: both curves (this optimizer and plain SGD).

    >>> n = loss_curve_numbers("adam", 0.01, steps=3); len(n["curves"]["adam"]), sorted(n["curves"])
    (3, ['adam', 'sgd (same lr)'])
    """
    name = optim.check_optimizer_name(optimizer)
    curves = {name: list(_curve(name, float(lr), steps))}
    if name != "sgd":
        curves["sgd (same lr)"] = list(_curve("sgd", float(lr), steps))
    return {"steps": steps, "lr": float(lr), "curves": curves}


def loss_curves_panel(optimizer: str = "adam", lr: float = 1e-2) -> Panel:
    """Choose an optimizer and a learning rate; see its loss curve next to plain SGD's.

    >>> p = loss_curves_panel(); p.controls["optimizer"].value = "rmsprop"; "rmsprop" in p.result.value
    True
    """
    name = optim.check_optimizer_name(optimizer)
    controls = {
        "optimizer": w.Dropdown(options=list(optim.OPTIMIZERS), value=name, description="optimizer"),
        "lr": w.FloatLogSlider(value=lr, base=10, min=-4, max=0, step=0.25, description="lr", readout_format=".2g"),
    }
    recording = Recording("loss_curves", {"optimizer": list(optim.OPTIMIZERS), "lr": list(RECORDED_LRS)},
                          loss_curve_numbers)
    return Panel(controls, render_loss_curves, title="Optimizers on one small problem", record=recording)


def render_step_memory(batch: int, width: int, depth: int, dtype: str, optimizer: str) -> tuple[str, Figure]:
    """Predicted memory of a training step of ``Cruncher(width, depth)``, measured too when small.

    >>> text, fig = render_step_memory(32, 64, 2, "fp32", "adam"); "measured" in text
    True
    """
    predicted = step_memory.predict_step_memory(width, depth, batch, dtype=dtype, optimizer=optimizer)
    timeline = step_memory.step_timeline(width, depth, batch, dtype=dtype, optimizer=optimizer)
    measured_peak = None
    if predicted.total <= MEASURE_LIMIT_BYTES:
        _, trace = step_memory.measure_step_memory(width, depth, batch, dtype=dtype, optimizer=optimizer)
        measured_peak = timeline.resting + trace.peak_bytes
        note = f"measured peak of live tensors (CPU): <b>{format_bytes(measured_peak)}</b>"
    else:
        note = f"too big to measure here (over {format_bytes(MEASURE_LIMIT_BYTES)}): predicted only"
    rows = "".join(f"<tr><td>{k.replace('_', ' ')}</td><td>{format_bytes(v)}</td></tr>"
                   for k, v in predicted.as_dict().items())
    text = (f"<table>{rows}<tr><td><b>all at once</b></td><td><b>{format_bytes(predicted.total)}</b></td></tr>"
            f"<tr><td>predicted peak ({timeline.peak_label})</td><td>{format_bytes(timeline.peak)}</td></tr></table>"
            f"<p>{note}</p>")
    title = figure_tr("Cruncher({width}, {depth}), batch {batch}, {dtype}, {optimizer}", width=width, depth=depth,
                      batch=batch, dtype=dtype, optimizer=optimizer)
    return text, memory_bars_figure(predicted, timeline, measured_peak, title=title)


def step_memory_panel(batch: int = 128, width: int = 256, depth: int = 4, dtype: str = "fp32",
                      optimizer: str = "adam") -> Panel:
    """Batch, width, depth, dtype and optimizer → the memory of a training step, stacked by part.

    >>> p = step_memory_panel(); p.controls["optimizer"].value = "sgd"; "optimizer state</td><td>0 B" in p.result.value
    True
    """
    optimizer = optim.check_optimizer_name(optimizer)
    if dtype not in step_memory.STEP_DTYPES:
        raise ValueError(f"dtype must be one of {step_memory.STEP_DTYPES}, got {dtype!r}")
    style = {"description_width": "70px"}
    controls = {
        "batch": w.SelectionSlider(options=[2**k for k in range(4, 15)], value=batch, description="batch", style=style),
        "width": w.SelectionSlider(options=[2**k for k in range(4, 15)], value=width, description="width D", style=style),
        "depth": w.IntSlider(value=depth, min=1, max=64, description="layers", style=style),
        "dtype": w.Dropdown(options=list(step_memory.STEP_DTYPES), value=dtype, description="dtype", style=style),
        "optimizer": w.Dropdown(options=list(optim.OPTIMIZERS), value=optimizer, description="optimizer", style=style),
    }
    return Panel(controls, render_step_memory, title="The memory of one training step", live="step_memory")
