"""Instructor's grading data for chapter 02 (device placement): plain expected values, hidden cases.

Never shipped to students (see lectorch.exercises: the package holds only seals).
"""

from __future__ import annotations

import math
import random

import torch

from lectorch.device import allocator_bytes
from lectorch.dtypes import bytes_per_element
from lectorch.exercises import Case
from lectorch.exercises.device import stream_case
from lectorch.transfer import pcie_bytes_per_s
from grading.topics import Topic

EXPECTED = {
    "device-gpu-bytes": 256 * 4096 * bytes_per_element("fp16"),
    # an (8192, 16384) bf16 tensor over PCIe 5.0 x16, at the link's peak
    "device-h2d-seconds": 8192 * 16384 * bytes_per_element("bf16") / pcie_bytes_per_s(5),
}


def predict_readings(events):
    """The reference solution of device-allocated-peak."""
    live, now, peak = {}, 0, 0
    for event in events:
        if event[0] == "alloc":
            _, name, shape, dtype = event
            live[name] = allocator_bytes(math.prod(shape) * bytes_per_element(dtype))
            now += live[name]
            peak = max(peak, now)
        else:
            now -= live.pop(event[1])
    return now, peak


def time_copy(copy, synchronize, clock, repeats=10):
    """The reference solution of device-timing-debug."""
    copy()
    synchronize()
    start = clock()
    for _ in range(repeats):
        copy()
    synchronize()
    return (clock() - start) / repeats


def _events(rng: random.Random) -> list[Case]:
    fixed = [
        [("alloc", "w", (4096, 4096), "bf16"), ("alloc", "g", (4096, 4096), "bf16"), ("free", "g")],
        [("alloc", "a", (1,), "int8"), ("alloc", "b", (129,), "fp32"), ("free", "a"), ("alloc", "c", (2,), "fp64")],
        [("alloc", "x", (7, 7), "fp32"), ("free", "x"), ("alloc", "x", (7, 7), "fp32")],
    ]
    for _ in range(3):
        events, names = [], []
        for i in range(rng.randint(3, 8)):
            if names and rng.random() < 0.35:
                events.append(("free", names.pop(rng.randrange(len(names)))))
            else:
                shape = tuple(rng.randint(0, 300) for _ in range(rng.randint(1, 2)))
                events.append(("alloc", f"t{i}", shape, rng.choice(["fp32", "bf16", "fp16", "int64", "int8"])))
                names.append(f"t{i}")
        fixed.append(events)
    return [Case(args=(e,), expected=readings(e), description="hidden events") for e in fixed]


def readings(events) -> dict:
    final, peak = predict_readings(events)
    return {"final": final, "peak": peak}


def _streams(rng: random.Random) -> list[Case]:
    return [stream_case(5e-4, 1e-5, 0.5, 3, "hidden: few repeats, a slow first call"),
            stream_case(1e-6, 4e-6, 0.01, 50, "hidden: copies shorter than their launch")] + [
        stream_case(rng.uniform(1e-5, 1e-2), rng.uniform(1e-6, 1e-5), rng.uniform(0.01, 0.3), rng.choice([4, 16]),
                    "hidden: a simulated stream") for _ in range(3)]


def gpu_bytes(shape, dtype):
    """Bytes of a dense tensor of ``shape`` and ``dtype``, wherever it lives."""
    return math.prod(shape) * dtype.itemsize


def h2d_seconds(shape, dtype, pcie_generation):
    """Seconds to copy such a tensor over a PCIe x16 link of that generation, at its peak."""
    return gpu_bytes(shape, dtype) / pcie_bytes_per_s(pcie_generation)


_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int8, torch.float64, torch.int64)


def _shape(rng: random.Random) -> tuple:
    return tuple(rng.choice([3, 64, 100, 512, 1000, 4096, 8192]) for _ in range(rng.randint(1, 3)))


def _gpu_bytes_cases(rng: random.Random) -> list[Case]:
    settings = [((4096, 256), torch.float32), ((7,), torch.int8)] + [(_shape(rng), rng.choice(_DTYPES)) for _ in range(3)]
    return [Case(args=s, expected=gpu_bytes(*s), description="a hidden tensor") for s in settings]


def _h2d_cases(rng: random.Random) -> list[Case]:
    settings = [((8192, 16384), torch.float32, 4), ((4096, 4096), torch.bfloat16, 3)]
    settings += [((rng.choice([1024, 4096, 8192]), rng.choice([1000, 4096, 16384])), rng.choice(_DTYPES),
                  rng.choice([3, 4, 5])) for _ in range(3)]
    return [Case(args=s, expected=h2d_seconds(*s), description="a hidden copy") for s in settings]


HIDDEN = {"device-allocated-peak": _events, "device-timing-debug": _streams,
          "device-gpu-bytes": _gpu_bytes_cases, "device-h2d-seconds": _h2d_cases}

REFERENCE = {"device-allocated-peak": lambda case: readings(*case.args)}

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "device-gpu-bytes": {
        "float16-2-bytes": 4194304.0,
        "count-bytes-bits": 16777216.0,
        "answer-bytes-mib": 2.0,
    },
    "device-h2d-seconds": {
        "twice-physics-bf16": 0.00851968,
        "gb-s-counts": 0.03407872,
        "answer-seconds-milliseconds": 4.25984,
        "half-physics-count": 0.00212992,
    },
}


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "device-gpu-bytes": lambda: [Case(args=s, expected=gpu_bytes(*s), description=d) for s, d in [
        (((1000, 3), torch.int8), "int8 (1000, 3)"), (((64, 64, 64), torch.float64), "float64 (64, 64, 64)")]],
    "device-h2d-seconds": lambda: [Case(args=s, expected=h2d_seconds(*s), description=d) for s, d in [
        (((4096, 4096), torch.float32, 4), "float32 (4096, 4096) over PCIe 4"),
        (((1024, 1000), torch.int8, 3), "int8 (1024, 1000) over PCIe 3")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=HIDDEN, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
