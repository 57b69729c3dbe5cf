"""The napkin-math panel of chapter 00: parameters, tokens and a cluster → days and memory."""

from __future__ import annotations

import ipywidgets as w

from lectorch import napkin
from lectorch.hardware import PANEL_GPUS
from lectorch.memory import format_bytes
from lectorch.widgets import Panel, amount, round_values, si_count

#: Bytes per parameter choices offered by the panel.
MEMORY_SETUPS = {
    "AdamW fp32 (16 B)": napkin.ADAMW_FP32,
    "AdamW bf16 + fp32 master (16 B)": napkin.ADAMW_BF16_MIXED,
    "AdamW fp32 + bf16 autocast (16 B)": napkin.ADAMW_AUTOCAST,
    "SGD fp32 (8 B)": napkin.SGD_FP32,
}


def render_napkin(params: float, tokens: float, gpu: str, num_gpus: int, mfu: float, setup: str, dtype: str) -> str:
    """The panel's result as an HTML table. A GPU's memory is its datasheet "GB" read as 10⁹ bytes
    (``napkin_memory_bytes``); the memory rows assume full sharding, then a copy on every GPU.

    >>> "144" in render_napkin(70e9, 15e12, "H100 SXM", 1024, 0.5, "AdamW fp32 (16 B)", "bf16")
    True
    >>> "<b>0.0137 days</b> (337 GPU-hours)" in render_napkin(1e9, 1e11, "H100 SXM", 1024, 0.5, "SGD fp32 (8 B)", "bf16")
    True
    """
    s = napkin.summarize(params, tokens, gpu=gpu, num_gpus=num_gpus, mfu=mfu,
                         bytes_per_param=MEMORY_SETUPS[setup], dtype=dtype)
    def fit(ok: bool) -> str:
        return "fits" if ok else "does <b>not</b> fit"

    rows = [
        ("training FLOPs (6·N·T)", f"{s.training_flops:.3g}"),
        ("useful cluster FLOP/s", f"{s.cluster_flops_per_s:.3g}"),
        ("training time", f"<b>{amount(s.days)} days</b> ({amount(s.gpu_hours)} GPU-hours)"),
        ("weights + gradients + optimizer state, fully sharded (ZeRO-3/FSDP)",
         f"{format_bytes(s.memory_needed_bytes, binary=False)} — {fit(s.fits)} in "
         f"{format_bytes(s.memory_available_bytes, binary=False)}"),
        ("the same, a full copy on every GPU (plain data parallelism)",
         f"{format_bytes(s.memory_needed_bytes, binary=False)} — {fit(s.fits_replicated)} in "
         f"{format_bytes(s.memory_per_gpu_bytes, binary=False)}"),
        ("largest model, fully sharded", f"{si_count(s.max_params)} parameters (activations not counted)"),
        ("largest model, a full copy on every GPU",
         f"{si_count(s.max_params_replicated)} parameters (activations not counted)"),
    ]
    body = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def napkin_panel(params: float = 70e9, tokens: float = 15e12, gpu: str = "H100 SXM", num_gpus: int = 1024,
                 mfu: float = 0.5) -> Panel:
    """Sliders for the napkin questions.

    >>> p = napkin_panel(); p.controls["num_gpus"].value = 2048; "72 days" in p.result.value
    True
    """
    style = {"description_width": "110px"}

    def stops(low: float, high: float, value: float) -> dict:
        values = round_values(low, high)
        nearest = min(values, key=lambda v: abs(v - value) / value)
        return {"options": [(si_count(v), v) for v in values], "value": nearest}

    controls = {
        "params": w.SelectionSlider(**stops(1e8, 3e12, params), description="parameters", style=style),
        "tokens": w.SelectionSlider(**stops(1e9, 1e14, tokens), description="tokens", style=style),
        "gpu": w.Dropdown(options=list(PANEL_GPUS), value=gpu, description="GPU", style=style),
        "num_gpus": w.SelectionSlider(options=[2**k for k in range(15)], value=num_gpus, description="GPUs",
                                      style=style),
        "mfu": w.SelectionSlider(options=[round(0.05 * i, 2) for i in range(1, 19)], value=round(mfu, 2),
                                 description="MFU", style=style),
        "setup": w.Dropdown(options=list(MEMORY_SETUPS), description="memory", style=style),
        "dtype": w.Dropdown(options=["bf16", "fp8", "fp32"], value="bf16", description="compute dtype", style=style),
    }
    return Panel(controls, render_napkin, title="Napkin math: how long, and does it fit?", live="napkin")
