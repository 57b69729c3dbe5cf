"""Reference GPU runs: measurements of a real GPU that the book shows beside the reader's own.

``make gpu-check`` on a GPU box writes one JSON file per run; committed as
``benchmarks/reference/<device-slug>.json`` it lets a book built on a CPU still carry real GPU
figures. :func:`show` prints what the datasheet and the roofline predict for some measurement keys on
a common GPU (labelled as a prediction), then the runs' values, labelled with device, torch version
and date; with no committed run it says so and never prints a measurement it does not have.

>>> import json, tempfile
>>> run = {"device": "NVIDIA H200", "torch": "2.11.0+cu130", "date": "2026-12-01",
...        "measurements": {"h2d_pinned_1GiB_GBps": 52.31,
...                         "matmul_bf16_8192": {"seconds": 0.00141, "tflops": 780.2, "mfu": 0.789}}}
>>> with tempfile.TemporaryDirectory() as d:
...     _ = pathlib.Path(d, "nvidia-h200.json").write_text(json.dumps(run))
...     show("h2d_pinned_1GiB_GBps", "matmul_bf16_8192", directory=d)
prediction for an H100 SXM from its datasheet and the roofline (not a measurement)
h2d_pinned_1GiB_GBps  at most 63 GB/s: the peak of its PCIe 5.0 ×16 host link
matmul_bf16_8192      at most 989.5 TFLOP/s (MFU ≤ 1), at least 1.11 ms: compute-bound
<BLANKLINE>
reference GPU runs (measured by `make gpu-check`)
device       torch         date        h2d_pinned_1GiB_GBps  matmul_bf16_8192
NVIDIA H200  2.11.0+cu130  2026-12-01  52.3 GB/s             780 TFLOP/s, MFU 0.79, 1.41 ms
>>> with tempfile.TemporaryDirectory() as d:
...     show("matmul_bf16_8192", directory=d)
prediction for an H100 SXM from its datasheet and the roofline (not a measurement)
matmul_bf16_8192  at most 989.5 TFLOP/s (MFU ≤ 1), at least 1.11 ms: compute-bound
no GPU run is recorded in this book: compare the prediction with what your own GPU measured above

Without a committed run the table is only the prediction: a reader compares it with their own
measurement (the chapter's cell above it). How a maintainer records a run: tools/gpu/README.md.
"""

from __future__ import annotations

import difflib
import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

#: Environment variable naming another folder of reference runs (default: the repository's).
REFERENCE_DIR_ENV = "LECTORCH_REFERENCE_DIR"

#: The sizes ``make gpu-check`` measures at on a GPU (tools/gpu/gpu_check.py reads them from here), which
#: the keys name and the predictions assume.
MATMUL_BF16_SIZES = (1024, 2048, 4096, 8192)  # matmul_bf16_<n>
MATMUL_FP32_SIZE = 8192                        # matmul_fp32_<n>, matmul_tf32_<n>
H2D_COPY_BYTES = 2**30                         # h2d_*_1GiB_GBps (the keys name it)
MLP_SETTING = {"dim": 4096, "num_layers": 8, "batch": 4096}  # backward_over_forward_time, step_peak_bytes
#: The TinyLM whose steps bf16_over_fp32_step_time and checkpointing_time_overhead time on a GPU
#: (the chapter's D=64 model is launch-bound there).
STEP_SETTING = {"dim": 1024, "num_layers": 4, "vocab_size": 8192, "context_length": 256, "batch_size": 32}
OVERLAP_COPY_BYTES = 2**28        # 256 MiB of pinned host memory ...
OVERLAP_MATMULS = (4, 8192)       # ... beside four 8192² bf16 matmuls

#: Every measurement key a reference run may carry, with what it means. ``make gpu-check`` measures
#: all of them; chapters show them by these names.
KEYS: dict[str, str] = {
    "h2d_pinned_1GiB_GBps": "host-to-device copy of 1 GiB from pinned memory, GB/s",
    "h2d_pageable_1GiB_GBps": "host-to-device copy of 1 GiB from pageable memory, GB/s",
    **{f"matmul_bf16_{n}": f"{n}³ bf16 matmul: seconds, TFLOP/s, MFU (dense bf16 peak)" for n in MATMUL_BF16_SIZES},
    f"matmul_fp32_{MATMUL_FP32_SIZE}": f"{MATMUL_FP32_SIZE}³ fp32 matmul, TF32 off: seconds, TFLOP/s, MFU (fp32 peak)",
    f"matmul_tf32_{MATMUL_FP32_SIZE}": f"{MATMUL_FP32_SIZE}³ fp32 matmul, TF32 on: seconds, TFLOP/s, MFU (tf32 peak)",
    "backward_over_forward_time": "time of a backward pass over its forward pass (MLP)",
    "step_peak_bytes": "peak bytes of one training step: predicted and measured",
    "bf16_over_fp32_step_time": "training-step time in bf16 autocast over fp32",
    "checkpointing_time_overhead": "extra step time of activation checkpointing (fraction)",
    "h2d_overlap_speedup": "time of copy-then-compute over copy overlapped with compute",
}

#: For the environment page (a maintainer's page): what to do when no run is committed.
_NO_RUN = (
    "No reference GPU run is committed yet: run `make gpu-check` on a GPU box and commit its "
    "reference.json as benchmarks/reference/<device>.json."
)

#: The common GPU whose datasheet the chapters' predictions use.
PREDICTION_GPU = "H100 SXM"


def _matmul_prediction(spec, n: int, precision: str) -> str:
    from lectorch.roofline import Roofline, matmul_bytes

    roof = Roofline.from_gpu(spec, precision)
    flops = 2 * n**3
    nbytes = matmul_bytes(n, n, n, "fp32" if precision == "tf32" else precision)
    seconds = max(flops / roof.peak_flops_per_s, nbytes / roof.bandwidth_bytes_per_s)
    bound = roof.bound(flops / nbytes)
    return (f"at most {flops / seconds / 1e12:.4g} TFLOP/s (MFU ≤ 1), at least {_seconds(seconds)}: "
            f"{bound}-bound")


def predict(key: str, gpu: str = PREDICTION_GPU) -> str:
    """What the datasheet and the roofline predict for one measurement key on ``gpu``.

    A prediction is a bound or a ratio of datasheet figures, never a measurement: real runs land
    below the peaks (launch overheads, clocks, non-matmul work).

    >>> predict("h2d_pinned_1GiB_GBps")
    'at most 63 GB/s: the peak of its PCIe 5.0 ×16 host link'
    >>> predict("h2d_pinned_1GiB_GBps", gpu="GH200 96GB HBM3")
    'at most 450 GB/s: the peak of its NVLink-C2C host link'
    >>> predict("backward_over_forward_time").endswith("MLP timed, whose input needs no gradient")
    True
    """
    from lectorch.hardware import get_gpu

    key, spec = _check_key(key), get_gpu(gpu)
    link = spec.host_link_bytes_per_s
    if key == "h2d_pinned_1GiB_GBps":
        return f"at most {link / 1e9:.3g} GB/s: the peak of its {spec.host_link.replace(' x16', ' ×16')} host link"
    if key == "h2d_pageable_1GiB_GBps":
        return "below the pinned figure: a pageable copy is staged through a pinned buffer first"
    if key.startswith("matmul_"):
        _, precision, n = key.split("_")
        return _matmul_prediction(spec, int(n), precision)
    if key == "backward_over_forward_time":
        from lectorch.backprop import mlp_flops

        s = MLP_SETTING
        ratio = mlp_flops(s["batch"], (s["dim"],) * (s["num_layers"] + 1)).ratio
        # the ratio at the timed size only: the rule in dim and depth is chapter 06's exercise
        return f"{ratio:.4g}× in FLOPs for the D={s['dim']}, {s['num_layers']}-layer MLP timed, whose input needs no gradient"
    if key == "step_peak_bytes":
        from lectorch.step_memory import step_timeline

        s = MLP_SETTING
        timeline = step_timeline(s["dim"], s["num_layers"], s["batch"], optimizer="adam")
        return (f"{_bytes(timeline.peak - timeline.resting)} above resting memory for a D={s['dim']}, "
                f"{s['num_layers']}-layer MLP, batch {s['batch']}, Adam (the step-memory model)")
    if key == "bf16_over_fp32_step_time":
        ratio = spec.dense["fp32"] / spec.dense["bf16"]
        return (f"{ratio:.2g}× if the step were all matmuls (fp32 {spec.dense['fp32'] / 1e12:.4g} against "
                f"bf16 {spec.dense['bf16'] / 1e12:.4g} TFLOP/s); small steps are launch-bound, nearer 1×")
    if key == "checkpointing_time_overhead":
        extra = checkpointing_flop_overhead(**STEP_SETTING)
        s = STEP_SETTING
        return (f"{extra:+.1%} in FLOPs for the TinyLM timed (D={s['dim']}, {s['num_layers']} blocks, "
                f"V={s['vocab_size']}, {s['batch_size']} × {s['context_length']} tokens; one W1 matmul recomputed "
                "per block); not a bound on time, which launches and memory traffic raise in small steps")
    # h2d_overlap_speedup
    count, n = OVERLAP_MATMULS
    copy = OVERLAP_COPY_BYTES / link
    compute = count * 2 * n**3 / spec.dense["bf16"]
    return (f"at most {(copy + compute) / max(copy, compute):.3g}×: a {_bytes(OVERLAP_COPY_BYTES)} copy "
            f"({_seconds(copy)}) hidden behind {count} {n}² bf16 matmuls ({_seconds(compute)})")


def checkpointing_flop_overhead(*, batch_size: int, context_length: int, dim: int, num_layers: int,
                                vocab_size: int) -> float:
    """The extra FLOPs of a TinyLM training step with activation checkpointing (chapter 10): each block
    recomputes its first matmul (D → 4D); forward + backward is 3 forward passes.

    >>> round(checkpointing_flop_overhead(**STEP_SETTING), 4)
    0.1333
    """
    from lectorch.flops import linear_flops

    tokens = batch_size * context_length
    w1 = linear_flops(tokens, dim, 4 * dim)
    forward = num_layers * 2 * w1 + linear_flops(tokens, dim, vocab_size)
    return num_layers * w1 / (3 * forward)


def default_directory() -> pathlib.Path:
    """The folder of reference runs: ``$LECTORCH_REFERENCE_DIR`` or the repository's benchmarks/reference.

    >>> default_directory().name
    'reference'
    """
    env = os.environ.get(REFERENCE_DIR_ENV)
    if env:
        return pathlib.Path(env)
    return pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "reference"


@dataclass(frozen=True)
class ReferenceRun:
    """One reference run as ``make gpu-check`` wrote it (see ``benchmarks/reference/``)."""

    file: str
    device: str
    torch: str
    date: str
    measurements: dict[str, Any]
    cuda: str | None = None
    driver: str | None = None
    python: str | None = None
    lectorch_commit: str | None = None
    nbval: dict[str, str] = field(default_factory=dict)

    @property
    def nbval_passed(self) -> tuple[int, int]:
        """(chapters passed, chapters run) under nbval on this GPU."""
        return sum(v == "passed" for v in self.nbval.values()), len(self.nbval)


def _parse(path: pathlib.Path) -> ReferenceRun:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"reference run {path.name!r} is not readable JSON ({err}); rewrite it with make gpu-check") from None
    if not isinstance(data, dict):
        raise ValueError(f"reference run {path.name!r} must hold a JSON object, got {type(data).__name__}")
    if data.get("dry_run"):
        raise ValueError(f"{path.name!r} is from `make gpu-check DRY_RUN=1` (a CPU walk-through, tiny sizes): "
                         "it is not a reference run; remove it and commit the reference.json of a real GPU run")
    missing = [k for k in ("device", "torch", "date", "measurements") if k not in data]
    if missing:
        raise ValueError(f"reference run {path.name!r} lacks {', '.join(missing)}; rewrite it with make gpu-check")
    if not isinstance(data["measurements"], dict):
        raise ValueError(f"reference run {path.name!r}: 'measurements' must be an object of key: value")
    return ReferenceRun(
        file=path.name, device=str(data["device"]), torch=str(data["torch"]), date=str(data["date"]),
        measurements=dict(data["measurements"]), cuda=data.get("cuda"), driver=data.get("driver"),
        python=data.get("python"), lectorch_commit=data.get("lectorch_commit"), nbval=dict(data.get("nbval") or {}),
    )


def load_runs(directory: str | os.PathLike[str] | None = None) -> list[ReferenceRun]:
    """Every reference run in ``directory`` (default :func:`default_directory`), sorted by device and
    date; an empty list when the folder is missing or holds no ``*.json``.

    >>> load_runs("/nonexistent-folder")
    []
    """
    folder = default_directory() if directory is None else pathlib.Path(directory)
    if not folder.is_dir():
        return []
    runs = [_parse(p) for p in sorted(folder.glob("*.json"))]
    return sorted(runs, key=lambda r: (r.device, r.date, r.file))


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"keys must be measurement names (str), got {type(key).__name__}")
    if key not in KEYS:
        close = difflib.get_close_matches(key, list(KEYS), n=2)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"{key!r} is not a reference measurement key.{hint} Known: {', '.join(KEYS)}")
    return key


def _num(x: float) -> str:
    return f"{x:.3g}"


def _seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def format_value(key: str, value: Any) -> str:
    """A measurement, readable: bandwidths in GB/s, matmuls as TFLOP/s + MFU + time, ratios as ×.

    >>> format_value("step_peak_bytes", {"predicted": 2**30, "measured": 1.01 * 2**30})
    'predicted 1 GiB, measured 1.01 GiB (×1.01)'
    >>> format_value("bf16_over_fp32_step_time", 0.512), format_value("checkpointing_time_overhead", 0.31)
    ('0.512×', '+31%')
    """
    if value is None:
        return "not measured"
    if isinstance(value, dict):
        if {"tflops", "mfu"} <= value.keys():
            parts = [f"{value['tflops']:.3g} TFLOP/s"]
            parts.append("MFU n/a" if value["mfu"] is None else f"MFU {value['mfu']:.2f}")
            if value.get("seconds") is not None:
                parts.append(_seconds(value["seconds"]))
            return ", ".join(parts)
        if {"predicted", "measured"} <= value.keys():
            p, m = value["predicted"], value["measured"]
            if p is None or m is None:
                return f"predicted {'?' if p is None else _bytes(p)}, measured {'?' if m is None else _bytes(m)}"
            ratio = f" (×{m / p:.3g})" if p else ""
            return f"predicted {_bytes(p)}, measured {_bytes(m)}{ratio}"
        return ", ".join(f"{k} {_num(v) if isinstance(v, (int, float)) else v}" for k, v in value.items())
    if isinstance(value, (int, float)):
        if key.endswith("_GBps"):
            return f"{value:.3g} GB/s"
        if key.endswith("_overhead"):
            return f"{value:+.0%}"
        return f"{value:.3g}×"
    return str(value)


def table(*keys: str, directory: str | os.PathLike[str] | None = None) -> str:
    """The text :func:`show` prints: the datasheet prediction of each key for a common GPU, then one
    row per committed reference run ("not measured" where a run lacks a key)."""
    keys = tuple(_check_key(k) for k in keys)
    if not keys:
        raise ValueError("table() needs at least one measurement key, e.g. table('matmul_bf16_8192')")
    width = max(map(len, keys))
    lines = [f"prediction for an {PREDICTION_GPU} from its datasheet and the roofline (not a measurement)"]
    lines += [f"{k.ljust(width)}  {predict(k)}" for k in keys]
    runs = load_runs(directory)
    if not runs:
        lines.append("no GPU run is recorded in this book: compare the prediction with what your own GPU "
                     "measured above")
        return "\n".join(lines)
    header = ["device", "torch", "date", *keys]
    rows = [[r.device, r.torch, r.date, *(format_value(k, r.measurements.get(k)) for k in keys)] for r in runs]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([*lines, "", "reference GPU runs (measured by `make gpu-check`)", line(header), *map(line, rows)])


def show(*keys: str, directory: str | os.PathLike[str] | None = None) -> None:
    """Print the prediction of every key in ``keys``, then each reference run's device, torch version,
    date and values."""
    print(table(*keys, directory=directory))


def describe_runs(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """One line per reference run, for the environment page (or one line saying there is none).

    >>> describe_runs("/nonexistent-folder")[0].startswith("No reference GPU run")
    True
    """
    runs = load_runs(directory)
    if not runs:
        return [_NO_RUN]
    lines = []
    for r in runs:
        passed, total = r.nbval_passed
        extra = [f"CUDA {r.cuda}" if r.cuda else None, f"driver {r.driver}" if r.driver else None,
                 f"Python {r.python}" if r.python else None,
                 f"commit {r.lectorch_commit[:10]}" if r.lectorch_commit else None,
                 f"nbval {passed}/{total} chapters passed" if total else None]
        lines.append(f"{r.device}, torch {r.torch}, {r.date}: " + ", ".join(e for e in extra if e)
                     + f" ({r.file}, {len(r.measurements)} measurements)")
    return lines


__all__ = ["KEYS", "PREDICTION_GPU", "REFERENCE_DIR_ENV", "ReferenceRun", "checkpointing_flop_overhead", "default_directory",
           "describe_runs", "format_value",
           "load_runs", "predict", "show", "table"]
