"""Panels of chapter 02 (device placement): what moving a tensor costs, napkin and measured.

>>> p = transfer_panel("cpu", max_bytes=2**20, measure=False)
>>> p.controls["elements"].value = 2**18; p.controls["dtype"].value = "fp32"
>>> "1.05 MB (1.00 MiB)" in p.result.value
True
"""

from __future__ import annotations

import html
import math

import ipywidgets as w
import torch

from lectorch import _validate
from lectorch.bench import format_seconds
from lectorch.device import check_device, free_memory_bytes, get_device
from lectorch.memory import format_bytes
from lectorch.transfer import summarize_transfer
from lectorch.widgets import Panel

#: dtypes offered by the panel (name → what the dropdown shows).
PANEL_DTYPES = {"fp64": "float64 (8 B)", "fp32": "float32 (4 B)", "bf16": "bfloat16 (2 B)", "fp16": "float16 (2 B)", "int8": "int8 (1 B)"}


def panel_budget_bytes(device: str | torch.device, *, max_bytes: int | None = None, fraction: float = 0.9) -> int:
    """The most bytes one panel copy may use: ``max_bytes`` (default 64 MiB on a CPU, 1 GiB on a GPU),
    never more than ``fraction`` of free memory (host memory twice over for a host-to-host copy).

    >>> panel_budget_bytes("cpu", max_bytes=2**20)
    1048576
    """
    dev = check_device(device)
    fraction = _validate.fraction("fraction", fraction)
    cap = (2**30 if dev.type == "cuda" else 2**26) if max_bytes is None else _validate.positive_int("max_bytes", max_bytes)
    host_free = free_memory_bytes("cpu") // (2 if dev.type == "cpu" else 1)
    limit = int(fraction * host_free)
    if dev.type != "cpu":
        limit = min(limit, int(fraction * free_memory_bytes(dev)))
    return max(1, min(cap, limit))


def _row(label: str, value: str) -> str:
    return f"<tr><td style='padding:2px 12px 2px 0'>{html.escape(label)}</td><td><b>{html.escape(value)}</b></td></tr>"


def transfer_panel(
    device: str | torch.device | None = None, *, max_bytes: int | None = None, measure: bool = True
) -> Panel:
    """Choose a number of elements and a dtype; see the bytes moved, napkin times over PCIe and,
    with ``measure=True``, the measured copy time and GB/s on ``device`` (host → host on a CPU,
    host → GPU from pageable and from pinned memory on a CUDA GPU).

    The slider never offers more elements than fit in the budget at 1 byte each; a bigger dtype
    that would exceed it is refused with a message, not allocated.
    """
    dev = get_device() if device is None else check_device(device)
    budget = panel_budget_bytes(dev, max_bytes=max_bytes)
    top = int(math.floor(math.log2(budget)))
    options = [(f"2^{k} = {2**k:,}", 2**k) for k in range(min(10, top), top + 1)]
    fp32_top = max(options[0][1], 2 ** int(math.floor(math.log2(max(1, budget // 4)))))
    default = min(2**20, fp32_top)   # a default that fits in fp32
    controls = {
        "elements": w.SelectionSlider(options=options, value=default, description="elements",
                                      style={"description_width": "initial"}, layout=w.Layout(width="420px")),
        "dtype": w.Dropdown(options=[(label, name) for name, label in PANEL_DTYPES.items()], value="fp32",
                            description="dtype"),
    }

    def render(elements: int, dtype: str) -> str:
        s = summarize_transfer(elements, dtype, dev, measure=measure, max_bytes=budget)
        rows = [_row("device", str(dev)), _row("bytes moved", f"{s.nbytes:,} B = {format_bytes(s.nbytes)}")]
        for link, seconds in s.napkin_seconds.items():
            rows.append(_row(f"napkin: {link} at its peak", format_seconds(seconds)))
        for r in s.measured:
            rows.append(_row(f"measured on this machine: {r.kind}", f"{format_seconds(r.seconds)} = {r.bytes_per_s / 1e9:.2f} GB/s"))
        note = "" if measure else "<p><i>measurement off</i></p>"
        return f"<table>{''.join(rows)}</table>{note}"

    return Panel(controls, render, title="Moving a tensor: bytes and seconds", live="transfer", device=dev)
