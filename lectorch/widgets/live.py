"""What the static book needs to recompute the arithmetic panels in the browser, without a kernel.

The book's page script (``tools/book/static/lectorch-live.js``) re-expresses a handful of
formulas — products and sums of the numbers below — and takes every *number* (the GPU spec table,
bytes per element, link speeds, optimizer state counts) from :func:`export_data`, which the book
build writes next to the pages: lectorch stays the one source of the data. :func:`numbers` gives
lectorch's own results for a panel's control values; the browser test sets random controls in the
page and compares the page's numbers with these, so the two formula copies cannot drift apart
unnoticed.

>>> numbers("napkin", params=70e9, tokens=15e12, gpu="H100 SXM", num_gpus=1024, mfu=0.5,
...         setup="AdamW fp32 (16 B)", dtype="bf16")["days"] // 1
143.0
>>> len(LIVE), sorted(LIVE)[-2:]
(10, ['transfer', 'views'])
"""

from __future__ import annotations

from typing import Any, Callable

from lectorch import backprop, contractions, napkin, optim, step_memory, transfer
import math

from lectorch.dtypes import FLOAT_DTYPES, bracket, float_bits, float_format, relative_error, short_name, spacing
from lectorch.hardware import PANEL_GPUS
from lectorch.memory import tensor_bytes
from lectorch.roofline import MATMUL_PRECISIONS, Roofline, element_bytes, matmul_bytes, matmul_intensity
from lectorch.flops import matmul_flops


def export_data() -> dict[str, Any]:
    """Every number the in-browser panels use, as JSON-ready data.

    >>> export_data()["gpus"]["H100 SXM"]["dense"]["bf16"] / 1e12
    989.5
    """
    from lectorch.widgets.device import PANEL_DTYPES
    from lectorch.widgets.napkin import MEMORY_SETUPS
    from lectorch.plots.precision import FIELD_COLORS
    from lectorch.widgets.train import SCHEDULE_MAX_LR
    from lectorch.widgets.views import THEN, X_DTYPE
    from lectorch.plots import views as view_plots

    gpus = {}
    for key, spec in PANEL_GPUS.items():
        entry = {"name": spec.name, "napkin_memory_bytes": spec.napkin_memory_bytes,
                 "bandwidth_bytes_per_s": spec.bandwidth_bytes_per_s, "dense": dict(spec.dense)}
        gpus[key] = entry
        gpus.setdefault(spec.name, entry)
    return {
        "gpus": gpus,
        "napkin": {"flops_per_param_token": 6.0, "seconds_per_day": napkin.SECONDS_PER_DAY,
                   "setups": {label: b.total for label, b in MEMORY_SETUPS.items()}},
        "float_bytes": {short_name(d): d.itemsize for d in FLOAT_DTYPES},
        "transfer_bytes": {name: tensor_bytes((1,), name) for name in PANEL_DTYPES},
        "links": dict(transfer.NAPKIN_LINKS),
        "matmul_bytes": {key: element_bytes(key) for key in (*MATMUL_PRECISIONS, "fp8")},
        "step_bytes": {name: tensor_bytes((1,), name) for name in step_memory.STEP_DTYPES},
        "state_tensors": dict(optim.STATE_TENSORS),
        "step_temporaries": dict(optim.STEP_TEMPORARIES),
        "schedule": {"max_lr": SCHEDULE_MAX_LR},
        "float_formats": {short_name(d): _format_data(d) for d in FLOAT_DTYPES},
        "field_colors": dict(FIELD_COLORS),
        "views": {"max_drawn": view_plots.MAX_DRAWN, "max_labelled": view_plots.MAX_LABELLED,
                  "palette": list(view_plots.PALETTE), "grey": view_plots.GREY, "then": list(THEN),
                  "element_bytes": X_DTYPE.itemsize},
    }


def _format_data(dtype) -> dict[str, Any]:
    f = float_format(dtype)
    return {"name": f.name, "exponent_bits": f.exponent_bits, "mantissa_bits": f.mantissa_bits, "has_inf": f.has_inf,
            "bias": f.bias, "max": f.max, "smallest_normal": f.smallest_normal,
            "smallest_subnormal": f.smallest_subnormal, "layout": f.layout()}


def _napkin(params, tokens, gpu, num_gpus, mfu, setup, dtype) -> dict[str, float]:
    from lectorch.widgets.napkin import MEMORY_SETUPS

    s = napkin.summarize(params, tokens, gpu=gpu, num_gpus=num_gpus, mfu=mfu,
                         bytes_per_param=MEMORY_SETUPS[setup], dtype=dtype)
    return {"training_flops": s.training_flops, "cluster_flops_per_s": s.cluster_flops_per_s, "days": s.days,
            "gpu_hours": s.gpu_hours, "memory_needed_bytes": s.memory_needed_bytes,
            "memory_available_bytes": s.memory_available_bytes, "max_params": s.max_params,
            "memory_per_gpu_bytes": s.memory_per_gpu_bytes, "max_params_replicated": s.max_params_replicated}


def _tensor_bytes(rows, cols, dtype) -> dict[str, float]:
    out = {"elements": rows * cols, "bytes": tensor_bytes((rows, cols), dtype)}
    out.update({f"bytes_{short_name(d)}": tensor_bytes((rows, cols), d) for d in FLOAT_DTYPES})
    return out


def _transfer(elements, dtype) -> dict[str, float]:
    s = transfer.summarize_transfer(elements, dtype, measure=False)
    return {"bytes": s.nbytes, **{f"seconds {link}": t for link, t in s.napkin_seconds.items()}}


def _roofline(gpu, dtype, m, k, n) -> dict[str, float]:
    roof = Roofline.from_gpu(gpu, dtype)
    intensity = matmul_intensity(m, k, n, dtype)
    return {"flops": matmul_flops(m, k, n), "bytes": matmul_bytes(m, k, n, dtype), "intensity": intensity,
            "ridge_point": roof.ridge_point, "attainable": roof.attainable(intensity),
            "mfu_max": roof.attainable(intensity) / roof.peak_flops_per_s,
            "compute_bound": float(roof.bound(intensity) == "compute")}


def _backprop(batch, dim, depth, out_dim, input_requires_grad) -> dict[str, float]:
    f = backprop.mlp_flops(batch, [dim] * depth + [out_dim], input_requires_grad=input_requires_grad)
    return {**f.as_dict(), "num_parameters": f.num_parameters, "ratio": f.ratio}


def _step_memory(batch, width, depth, dtype, optimizer) -> dict[str, float]:
    parts = step_memory.predict_step_memory(width, depth, batch, dtype=dtype, optimizer=optimizer)
    timeline = step_memory.step_timeline(width, depth, batch, dtype=dtype, optimizer=optimizer)
    return {**parts.as_dict(), "total": parts.total, "peak": timeline.peak}


def _einsum(pattern, sizes) -> dict[str, float]:
    c = contractions.analyze(pattern, contractions.parse_sizes(sizes))
    out = {"flops": c.flops, "output_rank": len(c.output_shape)}
    out.update({f"out{i}": d for i, d in enumerate(c.output_shape)})
    return out


def _schedule(warmup_steps, total_steps, min_ratio) -> dict[str, float]:
    from lectorch.train import cosine_lr
    from lectorch.widgets.train import SCHEDULE_MAX_LR

    if warmup_steps > total_steps:  # the panel's own refusal, before cosine_lr's
        raise ValueError(f"warm-up ({warmup_steps}) must not be longer than the schedule ({total_steps})")
    steps = range(total_steps + max(total_steps // 10, 1) + 1)  # as schedule_figure draws them
    lrs = [cosine_lr(s, max_lr=SCHEDULE_MAX_LR, min_lr=SCHEDULE_MAX_LR * min_ratio, warmup_steps=warmup_steps,
                     total_steps=total_steps) for s in steps]
    mid = (warmup_steps + total_steps) // 2
    return {"steps": len(lrs), "lr_sum": sum(lrs), "lr_warmup_end": lrs[warmup_steps], "lr_mid": lrs[mid],
            "lr_end": lrs[total_steps], "lr_quarter": lrs[warmup_steps // 4 + 3 * total_steps // 4]}


def _float_bits(value, dtype) -> dict[str, float]:
    """What a dtype stores for ``value`` (lectorch.widgets.precision.describe_value's numbers)."""
    if not math.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}")
    bits = float_bits(value, dtype)
    fmt = bits.format
    out = {"sign": bits.sign, "exponent": bits.exponent, "mantissa": bits.mantissa, f"kind_{bits.kind}": 1}
    if math.isfinite(bits.stored):
        out.update(stored=bits.stored, abs_error=bits.abs_error, relative_error=relative_error(value, dtype))
        if not (bits.is_zero and value != 0) and abs(value) <= fmt.max:
            lo, hi = bracket(value, dtype)
            out.update(lo=lo, hi=hi, spacing=spacing(value, dtype))
    return out


def _views(shape, dims, index, then) -> dict[str, float]:
    """The result's metadata, whether it shares x's storage, and every storage cell it reads (the drawing)."""
    from lectorch.views import Layout, describe_view, shares_storage
    from lectorch.widgets.views import view_result

    _, x, result = view_result(shape, dims, index, then)
    info, cells = describe_view(result), Layout.of(result).cells()
    out = {"ndim": len(info.shape), "offset": info.offset, "contiguous": info.contiguous,
           "shares_storage": shares_storage(x, result), "storage_elements": info.storage_elements,
           "storage_bytes": info.storage_bytes, "cells_read": len(set(cells)), "numel": info.numel}
    out.update({f"shape{d}": n for d, n in enumerate(info.shape)})
    out.update({f"stride{d}": n for d, n in enumerate(info.strides)})
    out.update({f"cell{k}": c for k, c in enumerate(cells)})
    return out


#: The panels computed in the page: name → lectorch's own computation of the page's numbers.
LIVE: dict[str, Callable[..., dict[str, float]]] = {
    "napkin": _napkin, "tensor_bytes": _tensor_bytes, "transfer": _transfer, "roofline": _roofline,
    "backprop": _backprop, "step_memory": _step_memory, "einsum": _einsum, "schedule": _schedule,
    "float_bits": _float_bits, "views": _views,
}


def numbers(kind: str, **values: Any) -> dict[str, float]:
    """lectorch's numbers for live panel ``kind`` at control ``values`` (what the page must show)."""
    if kind not in LIVE:
        raise ValueError(f"kind={kind!r} is not a live panel; choose one of {', '.join(sorted(LIVE))}")
    return {k: float(v) for k, v in LIVE[kind](**values).items()}
