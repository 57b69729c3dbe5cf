"""Exercises of chapter 05, FLOPs, FLOP/s and MFU.

- ``flops-mfu-from-time`` (implement, the warm-up): MFU from a matmul's shape, time and peak.
- ``flops-compute-bound-n`` (implement): the smallest square matmul that reaches the ridge point.
- ``flops-time-ratio`` (predict, then measure): how much longer a larger matmul takes.
- ``flops-honest-timer`` (debug): a timing function without warm-up, synchronisation or a robust
  statistic, run against a simulated asynchronous device.

Expected values are sealed; the plain values and the hidden cases live in ``grading/flops.py``.
"""

from __future__ import annotations

import math
import numbers
import random
from typing import Any

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.hardware import get_gpu


# --- 1. MFU from a measured time (warm-up) ----------------------------------------------------------
def mfu_case(B, D, K, seconds, peak, description: str) -> Case:
    return Case(args=(B, D, K, seconds, peak), expected=2 * B * D * K / seconds / peak,
                description=description)


def random_mfu_cases(rng: random.Random, n: int = 3) -> list[Case]:
    gpus = ["H100 SXM", "A100", "L4", "B200"]
    cases = []
    for _ in range(n):
        gpu = get_gpu(rng.choice(gpus))
        B, D, K = (2 ** rng.randint(6, 14) for _ in range(3))
        peak = gpu.peak_flops("bf16")
        seconds = 2 * B * D * K / (peak * rng.uniform(0.05, 0.9))
        cases.append(mfu_case(B, D, K, seconds, peak, f"({B}, {D}) @ ({D}, {K}) in bf16 on {gpu.name}"))
    return cases


_H100 = get_gpu("H100 SXM")

register(
    Exercise(
        id="flops-mfu-from-time",
        title="matmul_mfu(B, D, K, seconds, peak_flops_per_s)",
        kind="function",
        refuse_what="the FLOP count and MFU",
        refuse=(
            "lectorch.bench.mfu",
            "lectorch.bench.achieved_flops_per_s",
            "lectorch.flops.matmul_flops",
            "lectorch.flops.linear_flops",
            "lectorch.flops.count_flops",
            "torch.utils.flop_counter.FlopCounterMode",
        ),
        hint="FLOPs of a (B, D) @ (D, K) matmul are 2·B·D·K; divide by the seconds, then by the peak.",
        rtol=8 * 2.0**-23,  # fp32 arithmetic of the formula passes: a few roundings of float32
        slips={
            0.5: "a multiply-add is 2 FLOPs: the matmul costs 2·B·D·K, not B·D·K.",
            1e-12: "keep everything in FLOP and FLOP/s (not TFLOP or TFLOP/s).",
        },
        cases=(mfu_case(8192, 8192, 8192, 1.6e-3, _H100.peak_flops("bf16"), "a square bf16 matmul on an H100"),
               mfu_case(256, 256, 256, 1e-3, 1e12, "a small matmul on a 1 TFLOP/s device")),
        generate=random_mfu_cases,
    )
)


# --- 2. the smallest compute-bound square matmul ---------------------------------------------------
def smallest_n_case(peak, bandwidth, bytes_per_element, description: str) -> Case:
    """Expected: the smallest n whose intensity 2n³ / (3n² · bytes) reaches peak / bandwidth,
    found by bisection on the intensity itself (not by the closed form)."""
    ridge = peak / bandwidth

    def bound(n: int) -> bool:
        return 2 * n**3 / (3 * n * n * bytes_per_element) >= ridge

    lo, hi = 1, 1
    while not bound(hi):
        lo, hi = hi + 1, hi * 2
    while lo < hi:  # bisect for the first n that is compute-bound
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) else (mid + 1, hi)
    n = lo
    return Case(args=(peak, bandwidth, bytes_per_element), expected=n, description=description)


def _same_int(got, expected):
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return f"expected an int (a matrix size), got {type(got).__name__}; a size is a whole number."
    if got == expected:
        return None
    return f"{got} is {'too large' if got > expected else 'too small'}."


def random_smallest_n_cases(rng: random.Random, n: int = 3) -> list[Case]:
    cases = []
    for _ in range(n):
        peak, bandwidth = 10 ** rng.uniform(11, 15), 10 ** rng.uniform(10, 12.5)
        b = rng.choice([1, 2, 4])
        cases.append(smallest_n_case(peak, bandwidth, b, f"a made-up processor, {b}-byte elements"))
    return cases


register(
    Exercise(
        id="flops-compute-bound-n",
        title="smallest_compute_bound_n(peak_flops_per_s, bandwidth_bytes_per_s, bytes_per_element)",
        kind="function",
        refuse_what="the intensity and the ridge point",
        refuse=(
            "lectorch.roofline.matmul_intensity",
            "lectorch.roofline.arithmetic_intensity",
            "lectorch.roofline.matmul_bytes",
            "lectorch.roofline.Roofline",
        ),
        hint=(("write the intensity of a square n×n @ n×n matmul as a function of n, and the ridge point "
              "as peak / bandwidth."),
              "solve intensity(n) >= ridge for n, and round in the direction that keeps it true."),
        compare=_same_int,
        cases=(smallest_n_case(_H100.peak_flops("bf16"), _H100.bandwidth_bytes_per_s, 2, "H100 SXM, bf16"),
               smallest_n_case(get_gpu("A100").peak_flops("fp32"), get_gpu("A100").bandwidth_bytes_per_s, 4,
                               "A100, fp32")),
        generate=random_smallest_n_cases,
    )
)


# --- 3. predict, then measure: the time ratio of two matmuls ---------------------------------------
#: the two fp32 matmuls of the exercise, as (m, k, n)
RATIO_SMALL = (512, 1024, 512)
RATIO_LARGE = (1024, 2048, 1024)
_TIME_RATIO = Sealed.stored("flops-time-ratio")

register(
    Exercise(
        id="flops-time-ratio",
        title="time_ratio(a, b): the time of fp32 matmul b over that of matmul a, each given as (m, k, n)",
        kind="prediction",
        expected=_TIME_RATIO,
        # the page's matmuls are the public case (sealed); the grader tries hidden pairs, both
        # compute-bound in fp32 on every GPU of the table (grading/flops.py)
        cases=(Case(args=(RATIO_SMALL, RATIO_LARGE), expected=_TIME_RATIO,
                    description="A = (512, 1024) @ (1024, 512), B = (1024, 2048) @ (2048, 1024)"),),
        rtol=_TIME_RATIO.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        refuse=("lectorch.roofline.measure_matmul",),
        hint=(("count both matmuls' FLOPs and their arithmetic intensity: are both above the ridge "
              "point? Then which resource sets the time?"),
              "a compute-bound kernel's time is FLOPs / FLOP/s: the same FLOP/s for both."),
        slips={
            "ratio-bytes-moved": ("that is the ratio of the bytes moved; both matmuls sit above the ridge point, where "
                                  "the arithmetic, not the memory, sets the time."),
            "upside-down-larger": "upside down: the larger matmul over the smaller one.",
        },
    )
)


# --- 4. debug: an honest timer ----------------------------------------------------------------------
class SimulatedDevice:
    """An asynchronous device with its own clock, simulated (so a check is instant and exact).

    ``run()`` queues work and returns at once; ``sync()`` waits until the queued work is done (the
    clock jumps ahead by it); ``clock()`` reads the time in seconds (each read costs 1 µs). The
    first ``cold`` calls are slow (allocation, kernel selection); the ``hiccup``-th call after the
    clock was first read is slow too (another job on the machine). ``log`` records every call.

    >>> dev = SimulatedDevice(0.004)
    >>> dev.run(); dev.sync(); [event for event, _ in dev.log]
    ['run', 'sync']
    """

    def __init__(self, steady_s: float, *, cold: int = 2, slow_s: float = 0.2, hiccup: int = 2):
        self.steady_s, self.cold, self.slow_s, self.hiccup = steady_s, cold, slow_s, hiccup
        self.calls, self.pending, self.now = 0, 0.0, 1000.0
        self.timed_calls: int | None = None  # calls since the clock was first read
        self.log: list[tuple[str, float]] = []

    def run(self) -> None:
        self.calls += 1
        if self.timed_calls is not None:
            self.timed_calls += 1
        slow = self.calls <= self.cold or self.timed_calls == self.hiccup
        self.pending += self.slow_s if slow else self.steady_s
        self.now += 2e-6  # queueing a kernel is quick, not free
        self.log.append(("run", self.pending))

    def sync(self) -> None:
        self.now += self.pending
        self.pending = 0.0
        self.log.append(("sync", 0.0))

    def clock(self) -> float:
        if self.timed_calls is None:
            self.timed_calls = 0
        self.now += 1e-6
        self.log.append(("clock", self.now))
        return self.now


def timer_case(steady_s: float, description: str, **kwargs) -> Case:
    dev = SimulatedDevice(steady_s, **kwargs)
    return Case(args=(dev.run, dev.sync, dev.clock), expected=steady_s, description=description)


def random_timer_cases(rng: random.Random, n: int = 2) -> list[Case]:
    return [timer_case(rng.uniform(0.001, 0.01), "a simulated device with other timings",
                       cold=rng.randint(1, 2), hiccup=rng.randint(1, 3)) for _ in range(n)]


def measured_per_call(log: list[tuple[str, float]]) -> list[float]:
    """The seconds per call of every timed stretch in ``log``: between two clock reads, with at
    least one call and a sync after the last one (what an honest timer can have measured)."""
    times, start, runs, synced = [], None, 0, False
    for event, value in log:
        if event == "run":
            runs, synced = runs + 1, False
        elif event == "sync":
            synced = True
        elif event == "clock":
            if start is not None and runs and synced:
                times.append((value - start) / runs)
            start, runs, synced = value, 0, False
    return times


def traced_call(answer, args, kwargs) -> dict:
    """Run ``answer`` on a simulated device and return what it returned with the device's log (the
    checker judges the calls made, not only the number)."""
    device = args[0].__self__
    got = answer(lambda: device.run(), lambda: device.sync(), lambda: device.clock(), *args[3:], **kwargs)
    return {"returned": got, "log": list(device.log)}


def _compare_time(got: Any, expected: float) -> str | None:
    log = None
    if isinstance(got, dict) and set(got) == {"returned", "log"}:
        got, log = got["returned"], got["log"]
    if isinstance(got, bool) or not isinstance(got, numbers.Real) or not math.isfinite(got):
        return f"expected a number of seconds, got {type(got).__name__} {got!r}."
    if log is not None:
        if not any(event == "clock" for event, _ in log):
            return "your function never read the clock it was given: a time must be measured."
        measured = measured_per_call(log)
        if not measured:
            return ("no stretch between two clock reads ran fn() and then sync(): the clock stopped "
                    "before the device had finished (or measured nothing).")
        if not min(measured) * (1 - 1e-9) <= got <= max(measured) * (1 + 1e-9):
            return "the number you return is none of the times your own clock readings measured."
    ratio = got / expected
    if 0.8 <= ratio <= 1.25:
        return None
    if ratio < 0.8:
        return ("your time is far shorter than the work takes: the clock stopped before the device "
                "had finished (and did you read the clock you were given?).")
    return ("your time is far longer than one warm call takes: cold calls, or a one-off slow call, "
            "are in it.")


register(
    Exercise(
        id="flops-honest-timer",
        title="time_call(fn, sync, clock): seconds per warm call, honestly measured",
        kind="function",
        hint=(("the device runs asynchronously: fn() only queues work. When must sync() be called "
              "for the clock to see the work?"),
              ("warm up with a few untimed calls, time several trials one by one, and return a "
               "statistic that one slow trial cannot move.")),
        compare=_compare_time,
        runner=traced_call,
        cases=(timer_case(0.004, "a simulated asynchronous device"),
               timer_case(0.003, "one cold call, a later hiccup", cold=1, hiccup=3)),
        generate=random_timer_cases,
        summary="runs your timer on simulated asynchronous devices with cold calls and a hiccup",
    )
)
