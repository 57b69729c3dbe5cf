"""Exercises of chapter 05, FLOPs, FLOP/s and MFU.

- ``flops-mfu-from-time`` (implement, the warm-up): MFU from a matmul's shape, time and peak.
- ``flops-compute-bound-n`` (implement): the smallest square matmul that reaches the ridge point.
- ``flops-time-ratio`` (predict, then measure): how much longer a larger matmul takes.
- ``flops-honest-timer`` (debug): a timing function without warm-up, synchronisation or a robust
  statistic, run against a simulated asynchronous device.

Expected values are sealed; the plain values, the references of the function cases and the
hidden cases live in ``grading/topics/flops.py``.
"""

from __future__ import annotations

from lectorch.i18n import tr

import math
import numbers
import random
from typing import Any

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, how_far, public_cases
from lectorch.hardware import get_gpu


# --- 1. MFU from a measured time (warm-up) ----------------------------------------------------------
def mfu_case(B, D, K, seconds, peak, description: str) -> Case:
    """A case; its expected MFU is the grader's (sealed in the package)."""
    return Case(args=(B, D, K, seconds, peak), description=description)


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
        rtol=1e-6,  # fp32 arithmetic of the formula passes: a few roundings of float32 (8 ulps ≈ 1e-6)
        slips={
            0.5: "count the FLOPs of the matmul again: how many FLOPs is one multiply-add?",
            1e-12: "keep everything in FLOP and FLOP/s (not TFLOP or TFLOP/s).",
        },
        cases=public_cases("flops-mfu-from-time", (
            mfu_case(8192, 8192, 8192, 1.6e-3, _H100.peak_flops("bf16"), "a square bf16 matmul on an H100"),
            mfu_case(256, 256, 256, 1e-3, 1e12, "a small matmul on a 1 TFLOP/s device"),
            mfu_case(4096, 512, 2048, 2.5e-5, get_gpu("A100").peak_flops("bf16"), "a rectangular matmul on an A100"))),
        summary=("runs your function on 3 matmuls (hidden ones when graded): the MFU within a relative "
                 "±1e-6 (fp32 arithmetic of the formula passes)"),
    )
)


# --- 2. the smallest compute-bound square matmul ---------------------------------------------------
def smallest_n_case(peak, bandwidth, bytes_per_element, description: str) -> Case:
    """A case; its expected n (found by the grader by bisection on the intensity) is sealed."""
    return Case(args=(peak, bandwidth, bytes_per_element), description=description)


def _same_int(got, expected):
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return tr("expected an int (a matrix size), got {type}; a size is a whole number.").format(type=type(got).__name__)
    if close(got, expected["n"]):
        return None
    if close(got + 1, expected["n"]) or close(got - 1, expected["n"]):
        # next to the answer: name the boundary, never the side (the answer would be got ± 1)
        return tr("{got} is at the boundary but on the wrong side of it: the smallest compute-bound n is the first "
                  "size whose intensity reaches the ridge point (is it reached, or passed?).").format(got=got)
    return tr("{how_far}.").format(how_far=how_far(got, expected["n"]))


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
        rtol=0.0,
        cases=public_cases("flops-compute-bound-n", (
            smallest_n_case(_H100.peak_flops("bf16"), _H100.bandwidth_bytes_per_s, 2, "H100 SXM, bf16"),
            smallest_n_case(get_gpu("A100").peak_flops("fp32"), get_gpu("A100").bandwidth_bytes_per_s, 4,
                            "A100, fp32"),
            smallest_n_case(1e12, 1e11, 1, "a ridge point of 10 FLOP/byte, 1-byte elements"))),
        summary="runs your function on 3 processors (hidden ones when graded), exactly",
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
        # compute-bound in fp32 on every GPU of the table (grading/topics/flops.py)
        cases=(Case(args=(RATIO_SMALL, RATIO_LARGE), expected=_TIME_RATIO,
                    description="A = (512, 1024) @ (1024, 512), B = (1024, 2048) @ (2048, 1024)"),),
        rtol=_TIME_RATIO.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        refuse=("lectorch.roofline.measure_matmul",),
        allow=("lectorch.flops.linear_flops",),
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
    clock was first read is slow too (another job on the machine). ``log`` records every call:
    ``("run", slow)``, ``("sync", 0.0)``, ``("clock", time, busy)`` (busy: work was still queued),
    from which the checker and the grader judge a timer (:func:`judge_timing`).

    >>> dev = SimulatedDevice(0.004)
    >>> dev.run(); dev.sync(); [entry[0] for entry in dev.log]
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
        self.log.append(("run", 1.0 if slow else 0.0))

    def sync(self) -> None:
        self.now += self.pending
        self.pending = 0.0
        self.log.append(("sync", 0.0))

    def clock(self) -> float:
        if self.timed_calls is None:
            self.timed_calls = 0
        self.now += 1e-6
        self.log.append(("clock", self.now, 1.0 if self.pending else 0.0))
        return self.now


def timer_case(steady_s: float, description: str, **kwargs) -> Case:
    """A case: a fresh simulated device. The timer is judged by the calls it makes (its log), not
    by a number the device holds, so the case has no expected value."""
    dev = SimulatedDevice(steady_s, **kwargs)
    return Case(args=(dev.run, dev.sync, dev.clock), description=description)


def random_timer_cases(rng: random.Random, n: int = 2) -> list[Case]:
    return [timer_case(rng.uniform(0.001, 0.01), "a simulated device with other timings",
                       cold=rng.randint(1, 2), hiccup=rng.randint(1, 3)) for _ in range(n)]


def timed_stretches(log) -> list[tuple[float, float, int, bool]]:
    """Every timed stretch of ``log`` (between two clock reads, with at least one call and a sync
    after the last one: what a timer can have measured), as (seconds per call, seconds, calls,
    clean). A stretch is clean when none of its calls was slow and no work was queued when its
    clock started: then it measured warm calls only.

    >>> dev = SimulatedDevice(0.004, cold=1)
    >>> dev.run(); dev.sync(); t0 = dev.clock(); dev.run(); dev.sync(); t1 = dev.clock()
    >>> [(round(per, 6), calls, clean) for per, _, calls, clean in timed_stretches(dev.log)]
    [(0.004003, 1, True)]
    """
    out, start, start_busy, runs, synced, dirty = [], None, False, 0, False, False
    for entry in log:
        event, value = entry[0], entry[1]
        if event == "run":
            runs, synced, dirty = runs + 1, False, dirty or bool(value)
        elif event == "sync":
            synced = True
        elif event == "clock":
            if start is not None and runs and synced:
                out.append(((value - start) / runs, value - start, runs, not dirty and not start_busy))
            start, start_busy = value, bool(entry[2]) if len(entry) > 2 else False
            runs, synced, dirty = 0, False, False
    return out


def _inside(x: float, values: list[float]) -> bool:
    return bool(values) and min(values) * (1 - 1e-9) <= x <= max(values) * (1 + 1e-9)


def judge_timing(got: Any, log, *, call: str = "fn()", sync: str = "sync()") -> str | None:
    """The verdict on a timer from the calls it made: its number must be what clean stretches of
    its own clock readings measured (warm calls, the device idle when the clock started, a sync
    before the clock stopped). No number the simulated device holds is compared with."""
    if log is None:
        return tr("the checker runs your timer on its simulated device: pass the function itself.")
    if isinstance(got, bool) or not isinstance(got, numbers.Real) or not math.isfinite(got):
        return tr("expected a number of seconds, got {type} {got!r}.").format(type=type(got).__name__, got=got)
    if not any(entry[0] == "clock" for entry in log):
        return tr("your function never read the clock it was given: a time must be measured.")
    stretches = timed_stretches(log)
    if not stretches:
        return (tr("no stretch between two clock reads ran {call} and then {sync}: the clock stopped while work "
               "was still queued (or measured nothing).").format(call=call, sync=sync))
    clean = [per for per, _, _, ok in stretches if ok]
    if _inside(got, clean):
        return None
    if any(calls > 1 and abs(got - total) <= 1e-9 * total for _, total, calls, _ in stretches):
        return tr("that is the time of a whole timed loop: divide by the number of calls in it.")
    first_clock = next(i for i, entry in enumerate(log) if entry[0] == "clock")
    warmed = any(entry[0] == "run" for entry in log[:first_clock])
    slow = ("cold calls, one-off work (nothing ran before your first clock read): warm up, then "
            f"{sync}, before reading the clock" if not warmed else
            f"a one-off slow call (a hiccup) or work queued before the clock started ({sync} first): "
            "time several trials one by one and return a statistic that one slow trial cannot move")
    if not clean:
        return tr("every stretch you timed includes {slow}.").format(slow=slow)
    if _inside(got, [per for per, *_ in stretches]):
        return tr("your number is pulled by slow trials: {slow}.").format(slow=slow)
    return tr("the number you return is none of the times your own clock readings measured.")


def traced_call(answer, args, kwargs) -> dict:
    """Run ``answer`` on a simulated device and return what it returned with the device's log (the
    checker judges the calls made, not only the number)."""
    device = args[0].__self__
    got = answer(lambda: device.run(), lambda: device.sync(), lambda: device.clock(), *args[3:], **kwargs)
    return {"returned": got, "log": list(device.log)}


def _compare_time(got: Any, expected: Any) -> str | None:
    """Judged from the run's log only (``traced_call``): see :func:`judge_timing`."""
    log = None
    if isinstance(got, dict) and set(got) == {"returned", "log"}:
        got, log = got["returned"], got["log"]
    return judge_timing(got, log)


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
        summary=("runs your timer on simulated asynchronous devices with cold calls and a hiccup "
                 "(hidden ones when graded), and judges the calls it makes: its number must be one "
                 "that warm, synchronised trials of its own clock readings measured"),
    )
)
