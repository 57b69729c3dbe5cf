"""Exercises of chapter 05, FLOPs, FLOP/s and MFU."""

import math
import numbers

from lectorch.exercises import Case, Exercise, register
from lectorch.hardware import get_gpu


def _mfu(B, D, K, seconds, peak_flops_per_s):
    return 2 * B * D * K / seconds / peak_flops_per_s


_H100 = get_gpu("H100 SXM")
_A100 = get_gpu("A100")

register(
    Exercise(
        id="flops-mfu-from-time",
        title="matmul_mfu(B, D, K, seconds, peak_flops_per_s)",
        kind="function",
        hint="FLOPs of a (B, D) @ (D, K) matmul are 2·B·D·K; divide by the seconds, then by the peak.",
        slips={
            0.5: "a multiply-add is 2 FLOPs: the matmul costs 2·B·D·K, not B·D·K.",
            1e-12: "keep everything in FLOP and FLOP/s (not TFLOP or TFLOP/s).",
        },
        cases=tuple(
            Case(args=args, expected=_mfu(*args), description=desc)
            for args, desc in [
                ((8192, 8192, 8192, 1.6e-3, _H100.peak_flops("bf16")), "a square bf16 matmul on an H100"),
                ((16384, 32768, 8192, 0.16, _H100.peak_flops("fp32")), "a large fp32 matmul on an H100"),
                ((4096, 1024, 4096, 2.5e-4, _A100.peak_flops("bf16")), "a rectangular bf16 matmul on an A100"),
                ((256, 256, 256, 1e-3, 1e12), "a small matmul on a 1 TFLOP/s device"),
            ]
        ),
    )
)


def _intensity(m, k, n, bytes_per_element):
    return 2 * m * k * n / ((m * k + k * n + m * n) * bytes_per_element)


register(
    Exercise(
        id="flops-matmul-intensity",
        title="matmul_intensity(m, k, n, bytes_per_element)",
        kind="function",
        hint="FLOPs are 2·m·k·n; the bytes are both inputs read once and the output written once, "
        "each element taking bytes_per_element.",
        slips={
            0.5: "a multiply-add is 2 FLOPs: the matmul costs 2·m·k·n.",
            1.5: "the result must be written back to memory too: count A, B and C.",
        },
        cases=tuple(
            Case(args=args, expected=_intensity(*args), description=desc)
            for args, desc in [
                ((1024, 1024, 1024, 4), "a square fp32 matmul"),
                ((8192, 8192, 8192, 2), "a large square bf16 matmul"),
                ((1, 8192, 8192, 2), "a matrix-vector product in bf16"),
                ((4096, 512, 128, 1), "a rectangular fp8 matmul"),
            ]
        ),
    )
)


def _smallest_n(peak_flops_per_s, bandwidth_bytes_per_s, bytes_per_element):
    ridge = peak_flops_per_s / bandwidth_bytes_per_s
    n = math.ceil(1.5 * bytes_per_element * ridge)
    while 2 * n / (3 * bytes_per_element) < ridge:  # guard against rounding in the ceil
        n += 1
    return n


def _same_int(got, expected):
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return f"expected an int (a matrix size), got {type(got).__name__}; round up with math.ceil."
    if got == expected:
        return None
    return f"{got} is {'too large' if got > expected else 'too small'}."


register(
    Exercise(
        id="flops-compute-bound-n",
        title="smallest_compute_bound_n(peak_flops_per_s, bandwidth_bytes_per_s, bytes_per_element)",
        kind="function",
        hint="a square n×n matmul has intensity 2n / (3·bytes_per_element); it is compute-bound once that "
        "reaches the ridge point peak / bandwidth. Return the smallest such int n.",
        compare=_same_int,
        cases=tuple(
            Case(args=args, expected=_smallest_n(*args), description=desc)
            for args, desc in [
                ((_H100.peak_flops("bf16"), _H100.bandwidth_bytes_per_s, 2), "H100 SXM, bf16"),
                ((_A100.peak_flops("fp32"), _A100.bandwidth_bytes_per_s, 4), "A100, fp32"),
                ((get_gpu("L4").peak_flops("bf16"), get_gpu("L4").bandwidth_bytes_per_s, 2), "L4, bf16"),
                ((get_gpu("H200").peak_flops("fp8"), get_gpu("H200").bandwidth_bytes_per_s, 1), "H200, fp8"),
            ]
        ),
    )
)
