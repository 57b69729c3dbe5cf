"""The panels of chapter 05: measure a matmul on this device (FLOPs, time, FLOP/s, MFU), and place any
matmul on a GPU's roofline."""

from __future__ import annotations

import html
import os

import ipywidgets as w
import torch

from lectorch import _validate
from lectorch.bench import format_seconds
from lectorch.device import check_device, get_device
from lectorch.flops import format_flops, matmul_flops
from lectorch.hardware import PANEL_GPUS, get_gpu, gpu_for_device
from lectorch.memory import format_bytes
from lectorch.plots import tr as figure_tr
from lectorch.plots.flops import roofline_figure
from lectorch.roofline import (
    Roofline,
    as_precision,
    check_matmul_fits,
    datasheet_peak,
    matmul_bytes,
    matmul_intensity,
    measure_matmul,
)
from lectorch.widgets import Panel, Recording

#: Rough FLOP/s used only to refuse matmuls that would take too long (not a peak).
_CPU_RATE = {"fp32": 2e10, "fp64": 1e10}
_CPU_OTHER_RATE = 1e9  # bf16/fp16 on CPUs without native units are emulated and slow
_UNKNOWN_GPU_RATE = 5e12


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def estimated_seconds(flops: float, dtype: str | torch.dtype, device: str | torch.device) -> float:
    """A rough guess of one matmul's time, to refuse sizes that would freeze the panel.

    >>> round(estimated_seconds(2e10, "fp32", "cpu"), 3)
    1.0
    """
    key = as_precision(dtype)
    dev = check_device(device)
    peak = datasheet_peak(dev, key) if dev.type == "cuda" else None
    if peak is not None:
        rate = 0.5 * peak
    elif dev.type == "cpu":
        rate = _CPU_RATE.get(key, _CPU_OTHER_RATE)
    else:
        rate = _UNKNOWN_GPU_RATE
    return _validate.positive_number("flops", flops) / rate


def render_matmul(
    B: int, D: int, K: int, dtype: str, *, device: str | torch.device = "cpu",
    reference_peak: float | None = None, reference_label: str = "", max_seconds: float = 1.0,
    max_memory_fraction: float = 0.5, trials: int = 5, num_threads: int | None = None,
) -> str:
    """Measure a (B, D) @ (D, K) matmul in ``dtype`` on ``device`` and report it as an HTML table.

    On a GPU of lectorch's spec table the MFU is against its dense datasheet peak. Elsewhere there is
    no datasheet peak; pass ``reference_peak`` (e.g. the best FLOP/s measured on this CPU) to compare
    against it, clearly labelled with ``reference_label``. Sizes that do not fit in free memory or
    would take more than ``max_seconds`` per matmul raise ``ValueError`` (the panel shows it).
    On a CPU, ``num_threads`` sets torch's thread count for the measurement.

    >>> html = render_matmul(64, 64, 64, "fp32", trials=3)
    >>> "524,288" in html
    True
    """
    key = as_precision(dtype)
    dev = check_device(device)
    flops = matmul_flops(B, D, K)
    check_matmul_fits(B, D, K, key, dev, max_memory_fraction=max_memory_fraction)
    guess = estimated_seconds(flops, key, dev)
    if guess > _validate.positive_number("max_seconds", max_seconds):
        raise ValueError(
            f"{flops:.3g} FLOPs in {key} would take ≈ {format_seconds(guess)} per matmul on {dev}; "
            f"this panel stops at {format_seconds(max_seconds)}: choose smaller sizes"
        )
    point = measure_matmul(B, D, K, key, dev, warmup=1, trials=trials, min_trial_s=0.005, max_total_s=2.0,
                           num_threads=num_threads)
    t = point.timing
    where = f"{dev}" + (f", {num_threads} thread{'s' if num_threads != 1 else ''}" if dev.type == "cpu" and num_threads else "")
    rows = [
        ("matmul", f"({B:,}, {D:,}) @ ({D:,}, {K:,}) in {key} on {where}"),
        ("FLOPs = 2·B·D·K", f"{flops:,}"),
        ("bytes moved (at least)", f"{format_bytes(point.bytes_moved, binary=False)} → intensity {point.intensity:,.1f} FLOPs/byte"),
        ("measured time", f"{format_seconds(t.median_s)} median (IQR {format_seconds(t.iqr_s)}, {t.trials} trials × {t.number})"),
        ("achieved", f"<b>{format_flops(point.flops_per_s, per_s=True)}</b>"),
    ]
    peak = datasheet_peak(dev, key) if dev.type == "cuda" else None
    if peak is not None:
        spec = gpu_for_device(dev)
        roof = Roofline(peak, spec.bandwidth_bytes_per_s)
        rows.append(("MFU", f"<b>{point.mfu(peak):.3f}</b> of the {spec.name} dense {key} peak "
                            f"({peak / 1e12:g} TFLOP/s)"))
        rows.append(("roofline", f"{roof.bound(point.intensity)}-bound: at most "
                                 f"{roof.attainable(point.intensity) / peak:.3f} of the peak at this intensity"))
    else:
        what = "a CPU" if dev.type == "cpu" else f"this {dev.type} device (not in lectorch's spec table)"
        rows.append(("MFU", f"no datasheet peak for {what}, so no MFU"))
        if reference_peak is not None:
            label = html.escape(reference_label or "a reference peak")
            rows.append((f"vs {label}", f"{point.flops_per_s / reference_peak:.3f} (not an MFU)"))
    return _table(rows)


def matmul_numbers(
    B: int, D: int, K: int, dtype: str, threads: int | None = None, *, device: str | torch.device = "cpu",
    reference_peak: float | None = None, max_seconds: float = 1.0, trials: int = 5,
) -> dict:
    """One recorded setting of the matmul panel as plain numbers (the static book renders them).

    A refused size (too slow or too big, as :func:`render_matmul` refuses it) records its message.

    >>> n = matmul_numbers(32, 32, 32, "fp32", trials=3); n["flops"], n["median_s"] > 0
    (65536, True)
    """
    key = as_precision(dtype)
    dev = check_device(device)
    flops = matmul_flops(B, D, K)
    try:
        check_matmul_fits(B, D, K, key, dev, max_memory_fraction=0.5)
        guess = estimated_seconds(flops, key, dev)
        if guess > max_seconds:
            raise ValueError(f"{flops:.3g} FLOPs in {key} would take ≈ {format_seconds(guess)} per matmul on "
                             f"{dev}; this panel stops at {format_seconds(max_seconds)}: choose smaller sizes")
    except ValueError as err:
        return {"error": str(err)}
    point = measure_matmul(B, D, K, key, dev, warmup=1, trials=trials, min_trial_s=0.005, max_total_s=2.0,
                           num_threads=threads)
    out = {"flops": flops, "bytes": point.bytes_moved, "intensity": point.intensity,
           "median_s": point.timing.median_s, "iqr_s": point.timing.iqr_s, "trials": point.timing.trials,
           "number": point.timing.number, "flops_per_s": point.flops_per_s, "device": str(dev)}
    peak = datasheet_peak(dev, key) if dev.type == "cuda" else None
    if peak is not None:
        spec = gpu_for_device(dev)
        roof = Roofline(peak, spec.bandwidth_bytes_per_s)
        out.update(peak=peak, gpu=spec.name, mfu=point.mfu(peak), bound=roof.bound(point.intensity),
                   attainable_fraction=roof.attainable(point.intensity) / peak)
    elif reference_peak is not None:
        out["versus_reference"] = point.flops_per_s / reference_peak
    return out


#: The matmul sizes the static book records, relative to the panel's starting size.
RECORDED_SIZES = (0.25, 1)


def matmul_panel(
    device: str | torch.device | None = None, *, size: int | None = None, dtype: str = "fp32",
    reference_peak: float | None = None, reference_label: str = "", max_seconds: float = 1.0, trials: int = 5,
    num_threads: int = 1,
) -> Panel:
    """B, D, K and dtype → FLOPs, measured time, FLOP/s and MFU of a matmul on ``device``.

    On a CPU a ``threads`` control (starting at ``num_threads``) sets torch's thread count.

    >>> p = matmul_panel("cpu", size=32, trials=3)
    >>> p.controls["K"].value = 64; "131,072" in p.result.value
    True
    """
    dev = get_device() if device is None else check_device(device)
    size = _validate.positive_int("size", size if size is not None else (4096 if dev.type == "cuda" else 256))
    options = ["fp32", "tf32", "bf16", "fp16"] if dev.type == "cuda" else ["fp32", "bf16"]
    if as_precision(dtype) not in options:
        raise ValueError(f"dtype={dtype!r} is not offered on {dev}; choose one of {', '.join(options)}")
    style = {"description_width": "40px"}
    controls = {
        "B": w.BoundedIntText(value=size, min=1, max=2**20, description="B", style=style, layout=w.Layout(width="140px")),
        "D": w.BoundedIntText(value=size, min=1, max=2**20, description="D", style=style, layout=w.Layout(width="140px")),
        "K": w.BoundedIntText(value=size, min=1, max=2**20, description="K", style=style, layout=w.Layout(width="140px")),
        "dtype": w.Dropdown(options=options, value=as_precision(dtype), description="dtype", style=style,
                            layout=w.Layout(width="140px")),
    }

    if dev.type == "cpu":
        most = max(os.cpu_count() or 1, _validate.positive_int("num_threads", num_threads))
        controls["threads"] = w.BoundedIntText(value=num_threads, min=1, max=most, description="threads",
                                               style={"description_width": "55px"}, layout=w.Layout(width="140px"))

    def render(B: int, D: int, K: int, dtype: str, threads: int | None = None) -> str:
        return render_matmul(B, D, K, dtype, device=dev, reference_peak=reference_peak, num_threads=threads,
                             reference_label=reference_label, max_seconds=max_seconds, trials=trials)

    sizes = [max(1, int(size * f)) for f in RECORDED_SIZES]

    def record(B: int, D: int, K: int, dtype: str, threads: int | None = None) -> dict:
        numbers = matmul_numbers(B, D, K, dtype, threads, device=dev, reference_peak=reference_peak,
                                 max_seconds=max_seconds, trials=trials)
        return {**numbers, "reference_label": reference_label} if reference_peak is not None else numbers

    recording = Recording("matmul", {"B": sizes, "D": sizes, "K": sizes, "dtype": options}, record)
    return Panel(controls, render, title=f"Measure (B, D) @ (D, K) on {dev}", device=dev, record=recording)


def render_roofline(gpu: str, dtype: str, m: int, k: int, n: int) -> tuple[str, object]:
    """Where an (m, k) @ (k, n) matmul sits on a GPU's datasheet roofline: an HTML table and a figure.

    >>> text, fig = render_roofline("H100 SXM", "bf16", 8192, 8192, 8192)
    >>> "compute-bound" in text
    True
    """
    spec = get_gpu(gpu)
    roof = Roofline.from_gpu(spec, dtype)
    intensity = matmul_intensity(m, k, n, dtype)
    attainable = roof.attainable(intensity)
    rows = [
        ("matmul", f"({m:,}, {k:,}) @ ({k:,}, {n:,}) in {dtype}: {matmul_flops(m, k, n):.3g} FLOPs, "
                   f"{format_bytes(matmul_bytes(m, k, n, dtype), binary=False)} moved"),
        ("arithmetic intensity", f"{intensity:,.1f} FLOPs/byte"),
        ("ridge point", f"{roof.ridge_point:,.1f} FLOPs/byte = {roof.peak_flops_per_s / 1e12:g} TFLOP/s ÷ "
                        f"{spec.bandwidth_bytes_per_s / 1e12:g} TB/s"),
        ("verdict", f"<b>{roof.bound(intensity)}-bound</b>: at most {format_flops(attainable, per_s=True)}, "
                    f"i.e. an MFU of at most {attainable / roof.peak_flops_per_s:.3f}"),
    ]
    # A point for the figure: a MatmulPoint needs a timing, so draw the roof's value at this intensity.
    fig = roofline_figure([roof], title=figure_tr("{gpu}, {dtype} (datasheet)", gpu=spec.name, dtype=dtype),
                          intensity_range=(min(intensity, roof.ridge_point) / 30, max(intensity, roof.ridge_point) * 30))
    ax = fig.axes[0]
    ax.plot([intensity], [attainable], marker="o", ms=9, color="black", zorder=4, ls="none",
            label=f"({m}, {k}) @ ({k}, {n})")
    ax.legend(fontsize="small", loc="lower right")
    return _table(rows), fig


def roofline_panel(gpu: str = "H100 SXM", dtype: str = "bf16", m: int = 1024, k: int = 1024, n: int = 1024) -> Panel:
    """GPU, dtype and matmul sizes → intensity, ridge point, memory- or compute-bound, and the figure.

    >>> p = roofline_panel(); p.controls["m"].value = 1; "memory-bound" in p.result.value
    True
    """
    sizes = [2**i for i in range(17)]
    style = {"description_width": "50px"}
    controls = {
        "gpu": w.Dropdown(options=list(PANEL_GPUS), value=get_gpu(gpu).name, description="GPU", style=style),
        "dtype": w.Dropdown(options=["fp32", "tf32", "bf16", "fp16", "fp8"], value=dtype, description="dtype", style=style),
        "m": w.SelectionSlider(options=sizes, value=m, description="m", style=style),
        "k": w.SelectionSlider(options=sizes, value=k, description="k", style=style),
        "n": w.SelectionSlider(options=sizes, value=n, description="n", style=style),
    }

    return Panel(controls, render_roofline, title="Where does a matmul sit on the roofline?", live="roofline")
