"""The panels of chapters 09 and 10: the LR schedule (09); what batch size, autocast dtype and activation checkpointing cost per step.

>>> panel = step_cost_panel("cpu")
>>> panel
Panel('One training step of a TinyLM: memory and time', controls: batch_size, dtype, checkpointing)
>>> "saved for backward" in panel.result.value
True
"""

from __future__ import annotations

import html

import ipywidgets as w
import torch

from lectorch.bench import format_seconds
from lectorch.device import check_device, get_device
from lectorch.memory import format_bytes
from lectorch.train import measure_step, predicted_saved_bytes
from lectorch.widgets import Panel, Recording

#: The peak learning rate the schedule panel draws.
SCHEDULE_MAX_LR = 1e-3

#: The model the panel measures: small enough for a laptop CPU.
PANEL_MODEL = {"vocab_size": 64, "dim": 64, "num_layers": 4, "context_length": 32}


def step_cost_html(batch_size: int, dtype: str, checkpointing: bool, device: str | torch.device = "cpu") -> str:
    """Measure one step with these settings and show it next to the fp32, no-checkpointing baseline.

    >>> "TinyLM" in step_cost_html(2, "fp32", False)
    True
    """
    dev = check_device(device)
    report = measure_step(batch_size=batch_size, dtype=dtype, checkpointing=checkpointing, device=dev, trials=3,
                          **PANEL_MODEL)
    base = predicted_saved_bytes(batch_size, PANEL_MODEL["context_length"], PANEL_MODEL["dim"],
                                 PANEL_MODEL["num_layers"], PANEL_MODEL["vocab_size"])
    tokens = batch_size * PANEL_MODEL["context_length"]
    if report.peak_memory_bytes is None:
        peak = f"not tracked on {html.escape(dev.type)} (run on a GPU to see it)"
    else:
        peak = format_bytes(report.peak_memory_bytes)
    rows = [
        ("activations saved for backward", f"{format_bytes(report.saved_activation_bytes)} "
                                           f"({report.saved_activation_bytes / base:.2f}× fp32 without checkpointing)"),
        ("FLOPs of forward + backward", f"{report.flops / 1e6:.1f} MFLOP ({report.flops / tokens:,.0f} per token)"),
        ("measured step time", f"{format_seconds(report.step_seconds)} on {html.escape(str(dev))}"),
        ("peak device memory", peak),
    ]
    m = PANEL_MODEL
    caption = (f"TinyLM V={m['vocab_size']}, D={m['dim']}, L={m['num_layers']}, T={m['context_length']}, "
               f"B={batch_size}: {tokens} tokens per step")
    body = "".join(f"<tr><td>{name}</td><td><b>{value}</b></td></tr>" for name, value in rows)
    return f"<p>{caption}</p><table>{body}</table>"


#: The batch sizes the static book records (with every dtype, checkpointing on and off).
RECORDED_BATCHES = (2, 8, 16)


def step_cost_numbers(batch_size: int, dtype: str, checkpointing: bool, device: str | torch.device = "cpu") -> dict:
    """One recorded setting of the step-cost panel as plain numbers (the static book renders them).

    >>> n = step_cost_numbers(2, "fp32", False); n["tokens"], n["saved_ratio"]
    (64, 1.0)
    """
    dev = check_device(device)
    report = measure_step(batch_size=batch_size, dtype=dtype, checkpointing=checkpointing, device=dev, trials=3,
                          **PANEL_MODEL)
    base = predicted_saved_bytes(batch_size, PANEL_MODEL["context_length"], PANEL_MODEL["dim"],
                                 PANEL_MODEL["num_layers"], PANEL_MODEL["vocab_size"])
    return {"saved_bytes": report.saved_activation_bytes, "saved_ratio": report.saved_activation_bytes / base,
            "flops": report.flops, "tokens": batch_size * PANEL_MODEL["context_length"],
            "step_seconds": report.step_seconds, "peak_bytes": report.peak_memory_bytes, "device": str(dev),
            **{key: PANEL_MODEL[key] for key in PANEL_MODEL}}


def step_cost_panel(device: str | torch.device | None = None) -> Panel:
    """Batch size, autocast dtype and activation checkpointing → saved activations, FLOPs, time, peak memory.

    fp16 (with a GradScaler) is offered only on CUDA: a CPU runs it too, but emulated and slowly,
    so the panel's timings would teach nothing; on other devices bf16 is the option.
    """
    dev = check_device(device) if device is not None else get_device()
    dtypes = ["fp32", "bf16"] + (["fp16"] if dev.type == "cuda" else [])
    controls = {
        "batch_size": w.Dropdown(options=[1, 2, 4, 8, 16, 32, 64], value=8, description="batch"),
        "dtype": w.Dropdown(options=dtypes, value="fp32", description="autocast"),
        "checkpointing": w.Checkbox(value=False, description="activation checkpointing"),
    }
    recording = Recording("step_cost", {"batch_size": list(RECORDED_BATCHES), "dtype": dtypes,
                                        "checkpointing": [False, True]},
                          lambda **v: step_cost_numbers(device=dev, **v))
    return Panel(controls, lambda **v: step_cost_html(device=dev, **v),
                 title="One training step of a TinyLM: memory and time", device=dev, record=recording)


def schedule_panel() -> Panel:
    """Warm-up length, schedule length and floor → the learning rate of every step (chapter 09).

    >>> schedule_panel()
    Panel('A cosine schedule with linear warm-up', controls: warmup_steps, total_steps, min_ratio)
    """
    from lectorch.plots.train import schedule_figure

    controls = {
        "warmup_steps": w.Dropdown(options=[0, 10, 20, 50, 100, 200], value=20, description="warm-up"),
        "total_steps": w.Dropdown(options=[200, 500, 1000, 2000], value=200, description="total"),
        "min_ratio": w.Dropdown(options=[0.0, 0.05, 0.1, 0.2, 0.5], value=0.1, description="floor"),
    }

    def render(warmup_steps: int, total_steps: int, min_ratio: float):
        if warmup_steps > total_steps:
            raise ValueError(f"warm-up ({warmup_steps}) must not be longer than the schedule ({total_steps})")
        return schedule_figure(max_lr=SCHEDULE_MAX_LR, warmup_steps=warmup_steps, total_steps=total_steps,
                               min_ratio=min_ratio)

    return Panel(controls, render, title="A cosine schedule with linear warm-up", live="schedule")


__all__ = ["PANEL_MODEL", "RECORDED_BATCHES", "step_cost_html", "step_cost_numbers", "step_cost_panel",
           "schedule_panel"]
