"""Chapter 02's function exercises (device-allocated-peak, device-timing-debug) answered as a
student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import math

from lectorch.device import CUDA_BLOCK_BYTES
from lectorch.dtypes import bytes_per_element


def _nbytes(shape, dtype):
    return math.prod(shape) * bytes_per_element(dtype)


def _blocks(nbytes):
    """The allocator's rounding, written out: lectorch.device.allocator_bytes is refused here."""
    return -(-nbytes // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES


def honest_readings(events):
    live, now, peak = {}, 0, 0
    for e in events:
        if e[0] == "alloc":
            live[e[1]] = _blocks(_nbytes(e[2], e[3]))
            now += live[e[1]]
            peak = max(peak, now)
        else:
            now -= live.pop(e[1])
    return now, peak


def unrounded(events):
    live, now, peak = {}, 0, 0
    for e in events:
        if e[0] == "alloc":
            live[e[1]] = _nbytes(e[2], e[3])
            now += live[e[1]]
            peak = max(peak, now)
        else:
            now -= live.pop(e[1])
    return now, peak


def peak_is_final(events):
    final, _ = honest_readings(events)
    return final, final


def frees_ignored(events):
    total = sum(_blocks(_nbytes(e[2], e[3])) for e in events if e[0] == "alloc")
    return total, total


def rounded_total(events):
    live, now, peak = {}, 0, 0
    for e in events:
        if e[0] == "alloc":
            live[e[1]] = _nbytes(e[2], e[3])
            now += live[e[1]]
            peak = max(peak, now)
        else:
            now -= live.pop(e[1])
    return _blocks(now), _blocks(peak)


def as_given(copy, synchronize, clock, repeats=10):  # the chapter's buggy snippet
    start = clock()
    for _ in range(repeats):
        copy()
    return (clock() - start) / repeats


def no_warm_up(copy, synchronize, clock, repeats=10):
    synchronize()
    start = clock()
    for _ in range(repeats):
        copy()
    synchronize()
    return (clock() - start) / repeats


def no_final_sync(copy, synchronize, clock, repeats=10):
    copy()
    synchronize()
    start = clock()
    for _ in range(repeats):
        copy()
    return (clock() - start) / repeats


def no_sync_before_start(copy, synchronize, clock, repeats=10):
    copy()
    start = clock()
    for _ in range(repeats):
        copy()
    synchronize()
    return (clock() - start) / repeats


def sync_inside_but_cold(copy, synchronize, clock, repeats=10):
    start = clock()
    for _ in range(repeats):
        copy()
        synchronize()
    return (clock() - start) / repeats

