"""Chapter 05's function exercises (flops-mfu-from-time, flops-compute-bound-n, flops-honest-timer)
answered as a student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import math
import statistics


def matmul_mfu(B, D, K, seconds, peak):
    return 2 * B * D * K / seconds / peak


def smallest_compute_bound_n(peak, bandwidth, bytes_per_element):
    return math.ceil(1.5 * bytes_per_element * peak / bandwidth)


def time_call(fn, sync, clock, warmup=3, trials=7):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(trials):
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return statistics.median(times)


def time_call_stub(fn, sync, clock, trials=5):  # the notebook's stub: no warm-up, no sync, a mean
    start = clock()
    for _ in range(trials):
        fn()
    return (clock() - start) / trials


def synced_mean(fn, sync, clock, warmup=3, trials=5):  # warm and synchronised, but a mean
    for _ in range(warmup):
        fn()
    sync()
    start = clock()
    for _ in range(trials):
        fn()
    sync()
    return (clock() - start) / trials


def cold_median(fn, sync, clock, trials=5):  # synchronised median, but no warm-up
    times = []
    for _ in range(trials):
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return statistics.median(times)

