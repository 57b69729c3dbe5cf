"""Matmul benchmark: achieved FLOP/s and MFU of square matmuls per dtype on this machine.

    python benchmarks/bench_matmul.py                       # sizes and dtypes chosen for the device
    python benchmarks/bench_matmul.py --sizes 4096 8192 --dtypes bf16 fp32 tf32 --json results.json

Each size is timed twice on the same work: with lectorch's harness (warm-up, synchronise, repeated
trials, median and IQR) and with ``torch.utils.benchmark.Timer``; the table reports how far apart the
two medians are. On a GPU of lectorch's spec table the MFU is against the dense datasheet peak of the
dtype (tf32 for fp32 with TF32 allowed). A CPU has no datasheet peak: the MFU column stays empty.

On an H100/H200 a bf16 8192³ matmul should reach an MFU above 0.6.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import torch
import torch.utils.benchmark as torch_benchmark

from lectorch.bench import format_seconds
from lectorch.device import check_device, describe_device, get_device
from lectorch.flops import format_flops
from lectorch.hardware import gpu_for_device
from lectorch.roofline import as_precision, datasheet_peak, matmul_fn, precision_mode, measure_matmul

GPU_SIZES = (1024, 2048, 4096, 8192)
CPU_SIZES = (64, 128, 256)


def default_dtypes(device: torch.device) -> list[str]:
    """bf16, fp32 and tf32 on a CUDA GPU; fp32 and bf16 elsewhere."""
    return ["bf16", "fp32", "tf32"] if device.type == "cuda" else ["fp32", "bf16"]


def default_sizes(device: torch.device, dtype: str) -> list[int]:
    """Large sizes on a GPU (the regime where tensor cores can be kept busy); small on a CPU, and
    smaller still for bf16 there (emulated on CPUs without bf16 units)."""
    if device.type == "cuda":
        return list(GPU_SIZES)
    return list(CPU_SIZES) if dtype in ("fp32", "fp64") else [n for n in CPU_SIZES if n <= 128]


def timer_median(fn: Any, *, min_run_time: float, num_threads: int | None = None) -> float:
    """Median seconds per call of ``fn()`` from ``torch.utils.benchmark.Timer`` (it synchronises CUDA).

    Timer runs on one CPU thread unless told otherwise: give it the thread count the harness used."""
    threads = num_threads or torch.get_num_threads()
    timer = torch_benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median


def run(
    device: torch.device, dtypes: list[str], sizes: list[int] | None, *, trials: int = 10,
    timer_min_s: float = 0.5, compare: bool = True, num_threads: int | None = None,
) -> list[dict[str, Any]]:
    """Measure every (dtype, size); return one row (a dict) per measurement."""
    rows = []
    for dtype in dtypes:
        key = as_precision(dtype)
        peak = datasheet_peak(device, key)
        for n in sizes or default_sizes(device, key):
            try:
                point = measure_matmul(n, n, n, key, device, trials=trials, num_threads=num_threads)
            except ValueError as err:  # too large for this device's free memory
                print(f"skipping {key} n={n}: {err}", file=sys.stderr)
                continue
            row: dict[str, Any] = {
                "dtype": key, "n": n, "flops": point.flops, "median_s": point.seconds,
                "iqr_s": point.timing.iqr_s, "trials": point.timing.trials, "flops_per_s": point.flops_per_s,
                "peak_flops_per_s": peak, "mfu": None if peak is None else point.mfu(peak),
            }
            if compare:
                fn = matmul_fn(n, n, n, key, device)
                with precision_mode(key, device):
                    fn()  # warm-up, as for the harness
                    other = timer_median(fn, min_run_time=timer_min_s,
                                         num_threads=num_threads if device.type == "cpu" else None)
                row["timer_median_s"] = other
                row["diff_pct"] = 100 * (point.seconds - other) / other
            rows.append(row)
            del point
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a fixed-width text table."""
    header = f"{'dtype':>5} {'n':>6} {'median':>10} {'IQR':>10} {'achieved':>16} {'MFU':>6} {'Timer':>10} {'diff':>7}"
    lines = [header, "-" * len(header)]
    for r in rows:
        mfu = "" if r["mfu"] is None else f"{r['mfu']:.3f}"
        timer = format_seconds(r["timer_median_s"]) if "timer_median_s" in r else ""
        diff = f"{r['diff_pct']:+.1f}%" if "diff_pct" in r else ""
        lines.append(
            f"{r['dtype']:>5} {r['n']:>6} {format_seconds(r['median_s']):>10} {format_seconds(r['iqr_s']):>10} "
            f"{format_flops(r['flops_per_s'], per_s=True):>16} {mfu:>6} {timer:>10} {diff:>7}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: lectorch.get_device())")
    parser.add_argument("--dtypes", nargs="+", default=None, help="fp32 tf32 bf16 fp16 (default: by device)")
    parser.add_argument("--sizes", nargs="+", type=int, default=None, help="square sizes n (default: by device)")
    parser.add_argument("--trials", type=int, default=10, help="timed trials per measurement (default 10)")
    parser.add_argument("--timer-min-s", type=float, default=0.5, help="min_run_time of torch's Timer (default 0.5)")
    parser.add_argument("--no-compare", action="store_true", help="skip the torch.utils.benchmark comparison")
    parser.add_argument("--threads", type=int, default=None, help="CPU only: torch threads (default: torch's setting)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--min-mfu", type=float, default=None,
                        help="exit with an error unless the best MFU (of bf16, if measured) reaches this, e.g. 0.6 on an H100")
    args = parser.parse_args(argv)

    device = get_device() if args.device is None else check_device(args.device, name="--device")
    dtypes = [as_precision(d, name="--dtypes") for d in (args.dtypes or default_dtypes(device))]
    spec = gpu_for_device(device)
    print(describe_device(device))
    if device.type == "cuda":
        print(f"spec table entry: {spec.name if spec else 'none (no MFU: add this GPU to lectorch.hardware)'}")
    else:
        print("no datasheet peak for this device: MFU is left empty")
        if device.type == "cpu":
            print(f"measuring on {args.threads or torch.get_num_threads()} CPU thread(s)")
    rows = run(device, dtypes, args.sizes, trials=args.trials, timer_min_s=args.timer_min_s,
               compare=not args.no_compare, num_threads=args.threads)
    print(format_table(rows))
    if args.json:
        payload = {"device": str(describe_device(device)), "gpu_spec": spec.name if spec else None, "rows": rows}
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2)
    if args.min_mfu is not None:
        judged = [r for r in rows if r["dtype"] == "bf16"] or rows  # the tensor-core dtype if it was measured
        best = max((r["mfu"] for r in judged if r["mfu"] is not None), default=None)
        if best is None or best < args.min_mfu:
            raise SystemExit(f"best {judged[0]['dtype'] if judged else ''} MFU {best} is below --min-mfu {args.min_mfu}")
        print(f"best {judged[0]['dtype']} MFU {best:.3f} >= {args.min_mfu}")
    return rows


if __name__ == "__main__":
    main()
