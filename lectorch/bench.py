"""Honest timing: warm up, synchronise the device, repeat, and report the median and spread.

>>> t = benchmark(lambda: sum(range(1000)), device="cpu", trials=5)
>>> t.trials
5
>>> mfu(flops=1e12, seconds=0.002, peak_flops_per_s=989.5e12)   # doctest: +ELLIPSIS
0.505...
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from lectorch import _validate
from lectorch.device import check_device, synchronize


@dataclass(frozen=True)
class Timing:
    """Seconds per call over ``trials`` trials (each the mean of ``number`` back-to-back calls)."""

    times_s: tuple[float, ...]
    number: int
    label: str = ""

    @property
    def trials(self) -> int:
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def max_s(self) -> float:
        return max(self.times_s)

    @property
    def iqr_s(self) -> float:
        """Inter-quartile range: the spread that ignores one-off outliers."""
        if len(self.times_s) < 2:
            return 0.0
        q = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q[2] - q[0]

    def __str__(self) -> str:
        label = f"{self.label}: " if self.label else ""
        return (
            f"{label}median {format_seconds(self.median_s)} per call "
            f"(IQR {format_seconds(self.iqr_s)}, min {format_seconds(self.min_s)}, "
            f"{self.trials} trials × {self.number} calls)"
        )


def format_seconds(seconds: float) -> str:
    """Seconds with a readable unit.

    >>> format_seconds(0.00123)
    '1.23 ms'
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"seconds must be a number, got {type(seconds).__name__} {seconds!r}")
    if not seconds >= 0:
        raise ValueError(f"seconds must be a duration >= 0, got {seconds}")
    if math.isinf(seconds):
        return "inf s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def benchmark(
    fn: Callable[[], Any],
    *,
    device: str | torch.device,
    warmup: int = 3,
    trials: int = 10,
    min_trial_s: float = 0.01,
    max_total_s: float = 10.0,
    label: str = "",
) -> Timing:
    """Time ``fn()`` on ``device``.

    ``warmup`` untimed calls first (allocator, caches, kernel selection, compilation), then
    ``trials`` timed trials, each framed by device synchronisations. A trial runs ``fn`` as many
    times back to back as needed to last at least ``min_trial_s`` (so timer resolution and the
    synchronisation itself do not dominate fast kernels). ``max_total_s`` bounds the calibration and
    the trials together: a trial is shortened to fit it, and the trials stop once it is used, with
    at least one trial (three when they fit).

    >>> benchmark(lambda: None, device="cpu", trials=3).number > 1
    True
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    dev = check_device(device)
    warmup = _validate.non_negative_int("warmup", warmup)
    trials = _validate.positive_int("trials", trials)
    min_trial_s = _validate.positive_number("min_trial_s", min_trial_s)
    max_total_s = _validate.positive_number("max_total_s", max_total_s)
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")

    start = time.perf_counter()
    for _ in range(warmup):
        fn()
    synchronize(dev)

    # Calibrate how many calls make one trial (like timeit's autorange) within the time budget: the
    # calibration may use half of max_total_s, and a trial aims at min_trial_s or a quarter of it.
    target = min(min_trial_s, max_total_s / 4)
    number = 1
    while True:
        elapsed = _run(fn, dev, number)
        left = max_total_s / 2 - (time.perf_counter() - start)
        if elapsed >= target or number >= 1 << 20 or left <= 0:
            break
        grow = 2 if elapsed <= 0 else max(2, min(10, int(target / elapsed) + 1))
        affordable = int(left / (elapsed / number)) if elapsed > 0 else grow * number
        if affordable <= number:
            break
        number = min(number * grow, affordable)

    times: list[float] = []
    for _ in range(trials):
        times.append(_run(fn, dev, number) / number)
        spent = time.perf_counter() - start
        if spent >= max_total_s or (len(times) >= 3 and spent + times[-1] * number > max_total_s):
            break
    return Timing(times_s=tuple(times), number=number, label=label)


@contextlib.contextmanager
def cpu_threads(num_threads: int | None) -> Iterator[None]:
    """Run torch's CPU operators on ``num_threads`` threads inside a ``with`` block (``None``: leave
    the setting alone); the previous ``torch.get_num_threads()`` is restored afterwards.

    One thread gives stable, per-core figures on a shared machine, where a multi-threaded operator can
    spend most of its time waiting for a descheduled worker thread; tiny tensors (16×16 matmuls) also
    run faster without thread hand-offs.

    >>> before = torch.get_num_threads()
    >>> with cpu_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if num_threads is None:
        yield
        return
    num_threads = _validate.positive_int("num_threads", num_threads)
    saved = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _run(fn: Callable[[], Any], dev: torch.device, number: int) -> float:
    synchronize(dev)
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    synchronize(dev)
    return time.perf_counter() - t0


def achieved_flops_per_s(flops: float, seconds: float) -> float:
    """FLOP/s actually reached: work divided by measured time.

    >>> achieved_flops_per_s(2e12, 0.5)
    4000000000000.0
    """
    return _validate.positive_number("flops", flops) / _validate.positive_number("seconds", seconds)


def mfu(flops: float, seconds: float, peak_flops_per_s: float) -> float:
    """Model FLOP utilisation: (the model's necessary FLOPs / measured time) / the dense peak.

    Count only the FLOPs the model needs (not recomputation); use the dense peak of the dtype you
    ran in. 0.5 is good, 0.8 excellent, 1.0 unreachable: a value above 1 means a wrong peak.

    >>> mfu(989.5e12, 2.0, 989.5e12)
    0.5
    """
    peak = _validate.positive_number("peak_flops_per_s", peak_flops_per_s)
    return achieved_flops_per_s(flops, seconds) / peak
