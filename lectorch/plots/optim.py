"""Figures of chapter 08: optimizers' paths, loss curves, and the memory of a training step."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure

from lectorch import optim
from lectorch.memory import format_bytes
from lectorch.plots import COLORS, new_figure, styled, tr
from lectorch.step_memory import MemoryTrace, StepMemory, Timeline

#: A colour per optimizer.
OPTIMIZER_COLORS = {"sgd": "#000000", "momentum": "#1f78b4", "adagrad": "#33a02c", "rmsprop": "#ff7f00",
                    "adam": "#e31a1c", "adamw": "#6a3d9a"}

#: Hyper-parameters of each optimizer on the two 2-D problems of :func:`trajectories_figure`.
TRAJECTORY_SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "quadratic": {"sgd": dict(lr=0.07), "momentum": dict(lr=0.01, momentum=0.9), "adagrad": dict(lr=0.5),
                  "rmsprop": dict(lr=0.05, alpha=0.9), "adam": dict(lr=0.1), "adamw": dict(lr=0.1, weight_decay=0.1)},
    "rosenbrock": {"sgd": dict(lr=2e-3), "momentum": dict(lr=5e-4, momentum=0.9), "adagrad": dict(lr=0.5),
                   "rmsprop": dict(lr=0.01, alpha=0.9), "adam": dict(lr=0.1), "adamw": dict(lr=0.1, weight_decay=0.1)},
}
#: Start points and plotting windows of the two problems.
PROBLEMS = {
    "quadratic": dict(fn=optim.ill_conditioned_quadratic, start=(-4.0, 1.0), window=((-4.5, 1.0), (-1.5, 1.5)),
                      title="(x² + 25y²)/2, condition number 25", minimum=(0.0, 0.0), steps=60),  # through tr
    "rosenbrock": dict(fn=optim.rosenbrock, start=(-1.2, 1.0), window=((-1.6, 1.4), (-0.4, 1.6)),
                       title="Rosenbrock (1-x)² + 100(y-x²)²", minimum=(1.0, 1.0), steps=200),
}


def trajectories(problem: str, *, steps: int | None = None) -> dict[str, torch.Tensor]:
    """Each optimizer's path on ``problem`` ("quadratic" or "rosenbrock") with :data:`TRAJECTORY_SETTINGS`,
    for ``steps`` steps (default: the problem's own number, 60 and 200).

    >>> paths = trajectories("quadratic", steps=3); sorted(paths) == sorted(optim.OPTIMIZERS)
    True
    """
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {', '.join(PROBLEMS)}, got {problem!r}")
    spec = PROBLEMS[problem]
    steps = spec["steps"] if steps is None else steps
    return {name: optim.trajectory(name, spec["fn"], spec["start"], steps=steps, **hyper)
            for name, hyper in TRAJECTORY_SETTINGS[problem].items()}


@styled
def trajectories_figure(*, steps: int | None = None, paths: dict[str, dict[str, torch.Tensor]] | None = None) -> Figure:
    """The six optimizers' paths on an ill-conditioned quadratic and on Rosenbrock's valley.

    >>> len(trajectories_figure(steps=3).axes)
    2
    """
    paths = paths or {problem: trajectories(problem, steps=steps) for problem in PROBLEMS}
    fig, axes = new_figure(2, 1, height=10.5)
    for ax, (problem, spec) in zip(axes, PROBLEMS.items()):
        (x0, x1), (y0, y1) = spec["window"]
        xs, ys = np.meshgrid(np.linspace(x0, x1, 200), np.linspace(y0, y1, 200))
        zs = spec["fn"](torch.from_numpy(np.stack([xs, ys]))).numpy()
        ax.contour(xs, ys, zs, levels=np.geomspace(max(zs.min(), 0.1), zs.max(), 10), colors="grey",
                   linewidths=0.5, alpha=0.6)
        for name, path in paths[problem].items():
            p = path.numpy()
            hyper = ", ".join(f"{k}={v:g}" for k, v in TRAJECTORY_SETTINGS[problem][name].items())
            ax.plot(p[:, 0], p[:, 1], color=OPTIMIZER_COLORS[name], lw=1.2, marker=".", ms=2,
                    label=f"{name} ({hyper})", rasterized=False)
        ax.plot(*spec["start"], "ko", ms=5)
        ax.plot(*spec["minimum"], marker="*", color="gold", mec="black", ms=14, ls="none")
        num_steps = len(next(iter(paths[problem].values()))) - 1
        ax.set(xlim=(x0, x1), ylim=(y0, y1), xlabel="x", ylabel="y", title=tr("{problem}:\n{steps} steps", problem=tr(spec["title"]), steps=num_steps))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    fig.suptitle(tr("each optimizer's path from the black dot;\nthe star is the minimum"))
    return fig


@styled
def loss_curves_figure(curves: dict[str, list[float]], *, title: str = "") -> Figure:
    """Loss against step for each named curve (log scale); curves that blew up end where they did.

    >>> len(loss_curves_figure({"sgd": [1.0, 0.5, 0.25]}).axes)
    1
    """
    fig, ax = new_figure(height=3.4)
    for name, losses in curves.items():
        finite = [v for v in losses if math.isfinite(v)]
        base = name.split(" ")[0]
        ax.plot(range(len(finite)), finite, color=OPTIMIZER_COLORS.get(base), lw=2 if " " not in name else 1,
                ls="-" if " " not in name else "--",
                label=tr("{optimizer} (same lr)", optimizer=base) if name.endswith(" (same lr)") else tr(name))
    ax.set(yscale="log", xlabel=tr("step"), ylabel=tr("training loss (MSE)"), title=tr(title))
    ax.legend()
    return fig


_PARTS = [("parameters", "weights"), ("gradients", "gradients"), ("optimizer_state", "optimizer"),
          ("activations", "activations"), ("batch", "batch")]


@styled
def memory_bars_figure(predicted: StepMemory, timeline: Timeline, measured_peak: int | None = None, *,
                       title: str = "") -> Figure:
    """Stacked bars of a step's memory: every part at once (predicted), then the predicted peak and,
    when given, the measured peak, each split into resting memory (parameters, optimizer state,
    batch) and the extra memory alive at the peak.

    >>> from lectorch.step_memory import predict_step_memory, step_timeline
    >>> len(memory_bars_figure(predict_step_memory(64, 2, 32), step_timeline(64, 2, 32)).axes)
    1
    """
    fig, ax = new_figure(height=3.8)
    scale, unit = (2**20, "MiB") if predicted.total >= 2**20 else (2**10, "KiB")
    rows = [(tr("all at once\n(predicted)"), None), (tr("peak\n(predicted)"), timeline.peak)]
    if measured_peak is not None:
        rows.append((tr("peak\n(measured)"), measured_peak))
    left = 0.0
    labels = {"parameters": tr("parameters"), "gradients": tr("gradients"), "optimizer_state": tr("optimizer state"),
              "activations": tr("activations"), "batch": tr("batch")}
    for name, colour in _PARTS:
        value = getattr(predicted, name) / scale
        ax.barh(rows[0][0], value, left=left, color=COLORS.get(colour, "#b15928"), alpha=0.85, label=labels[name])
        left += value
    rest = timeline.resting / scale
    for i, (label, peak) in enumerate(rows[1:]):
        ax.barh(label, rest, color="#bbbbbb", label=tr("resting: parameters, state, batch") if i == 0 else None)
        ax.barh(label, peak / scale - rest, left=rest, color="#555555",
                label=tr("extra at the peak ({where})", where=timeline.peak_label) if i == 0 else None)
    totals = [predicted.total] + [peak for _, peak in rows[1:]]
    for y, value in enumerate(totals):
        ax.text(value / scale, y, f" {value / scale:,.2f} {unit}", va="center")
    ax.set(xlabel=unit, title=tr(title))
    ax.set_xlim(0, predicted.total / scale * 1.3)
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=1, frameon=False)
    return fig


@styled
def memory_trace_figure(trace: MemoryTrace, timeline: Timeline, *, title: str = "") -> Figure:
    """Live bytes (above resting) after each operator of a step, measured, with the predicted peak.

    >>> from lectorch.step_memory import step_timeline, track_memory
    >>> len(memory_trace_figure(track_memory(lambda: torch.ones(8) * 2), step_timeline(8, 1, 4)).axes)
    1
    """
    fig, ax = new_figure(height=3.4)
    scale, unit = (2**20, "MiB") if timeline.peak - timeline.resting >= 2**20 else (2**10, "KiB")
    values = [b / scale for _, b in trace.events]
    ax.step(range(len(values)), values, where="post", color=COLORS["measured"], lw=1.2, label=tr("measured (live tensors)"))
    pred = (timeline.peak - timeline.resting) / scale
    ax.axhline(pred, color=COLORS["backward"], ls="--", lw=1, label=tr("predicted peak ({where})", where=timeline.peak_label))
    names = [n for n, _ in trace.events]
    marks = [("forward", 0)]
    if "ones_like" in names:
        marks.append(("backward", names.index("ones_like")))
    steps = [i for i, n in enumerate(names) if n in ("lerp_", "addcmul_", "add_", "sqrt")]
    after_backward = [i for i in steps if "ones_like" in names and i > names.index("ones_like")]
    if after_backward:
        marks.append(("optimizer", min(after_backward) - 1))
    for label, i in marks:
        ax.axvline(i, color="grey", lw=0.5)
        ax.text(i + 0.5, pred * 1.02, tr(label), color="grey", va="bottom")
    ax.set(xlabel=tr("operator"), ylabel=tr("extra memory ({unit})", unit=unit), title=tr(title), ylim=(0, pred * 1.2))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    return fig


def format_step_memory(memory: StepMemory) -> str:
    """One line per part, in bytes, as text.

    >>> print(format_step_memory(StepMemory(4, 4, 8, 2, 1)).splitlines()[0])
    parameters       4 B
    """
    return "\n".join(f"{name.replace('_', ' '):16} {format_bytes(value)}" for name, value in memory.as_dict().items())
