"""Exercises of chapter 02, device placement.

Expected values are sealed; the plain values and the hidden cases live in ``grading/topics/device.py``.
The timing exercise runs the student's function against :class:`SimulatedStream`, a deterministic
stand-in for an asynchronous GPU stream (its clock only moves when the host works or waits).
"""

from __future__ import annotations

from lectorch.i18n import tr

import numbers
import random

import torch

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, public_cases

# asked as functions of their setting: the page's numbers are the public case (sealed); the
# grader tries hidden tensors and links (grading/topics/device.py)
_GPU_BYTES = Sealed.stored("device-gpu-bytes")
_H2D = Sealed.stored("device-h2d-seconds")

register(
    Exercise(
        id="device-gpu-bytes",
        title="gpu_bytes(shape, dtype): the bytes of a tensor created on the GPU",
        kind="value",
        expected=_GPU_BYTES,
        cases=(Case(args=((256, 4096), torch.float16), expected=_GPU_BYTES,
                    description="torch.randn(256, 4096, dtype=torch.float16, device='cuda')"),),
        rtol=_GPU_BYTES.rtol,
        refuse_what="the byte count",
        no_tensors=True,
        refuse=("lectorch.memory.tensor_bytes", "lectorch.memory.bytes_of", "lectorch.dtypes.bytes_per_element"),
        hint="elements × bytes per element; where the tensor lives does not change its size.",
        slips={
            "float16-2-bytes": "float16 has 2 bytes per element, not 4.",
            "count-bytes-bits": "count bytes, not bits.",
            "answer-bytes-mib": "the answer is in bytes, not MiB.",
        },
    )
)


# ------------------------------------------------------------------ allocator readings, with a peak


def compare_readings(got, expected) -> str | None:
    """(final growth, peak growth) of memory_allocated, both exact."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return tr("return a pair: (growth at the end, growth at the peak).")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in got):
        return tr("return whole numbers of bytes, got {got!r}.").format(got=got)
    final, peak = got
    if peak < final:
        return tr("the peak can never be below the final reading.")
    if not close(final, expected["final"]):
        return tr("the growth at the end ({final}) is not right: {direction}").format(final=final, direction=_direction(final, expected['final']))
    if not close(peak, expected["peak"]):
        return tr("the peak ({peak}) is not right: {direction}").format(peak=peak, direction=_direction(peak, expected['peak']))
    return None


def _direction(got: int, expected) -> str:
    from lectorch.exercises.seal import how_far

    if not got:
        return tr("yours is 0, but these events do allocate memory; count each tensor's whole allocator blocks.")
    return tr("{how_far}; count each tensor's whole allocator blocks.").format(how_far=how_far(got, expected))


register(
    Exercise(
        id="device-allocated-peak",
        title="predict_readings(events): memory_allocated's growth at the end and at the peak",
        kind="function",
        refuse_what="the allocator's rounding",
        # and the readings themselves, on a GPU grader: replaying the events as real tensors and
        # reading the allocator measures what the exercise asks to predict
        refuse=("lectorch.device.allocator_bytes", "lectorch.device.track_allocated",
                *(f"torch.cuda.{name}" for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                                                    "max_memory_reserved", "memory_stats", "memory_stats_as_nested_dict",
                                                    "memory_snapshot", "memory_summary", "mem_get_info"))),
        allow=("lectorch.dtypes.bytes_per_element",),
        hint=("the allocator hands out whole blocks: how big is the block of each tensor?",
              "walk through the events in order, keeping the bytes currently allocated; the peak is "
              "the largest that running total ever gets."),
        compare=compare_readings,
        rtol=0.0,
        cases=public_cases("device-allocated-peak", (
            Case(args=([("alloc", "a", (32, 32), "fp32"), ("alloc", "b", (32, 32), "fp32")],),
                 description="the lecture's two 32×32 float32 matrices"),
            Case(args=([("alloc", "t", (3,), "fp32")],), description="three floats"),
            Case(args=([("alloc", "a", (3,), "fp32"), ("alloc", "b", (5,), "fp16")],),
                 description="two tiny tensors of different dtypes"),
            Case(args=([("alloc", "tmp", (1024, 1024), "fp32"), ("free", "tmp"), ("alloc", "k", (256,), "fp32")],),
                 description="a temporary freed before a small tensor"),
            Case(args=([("alloc", "x", (100,), "fp16"), ("alloc", "y", (0,), "fp32"), ("free", "x")],),
                 description="an empty tensor, and everything freed"),
        )),
        summary="runs your function on 5 example event lists (hidden ones when graded): the final "
                "growth and the peak, both exact",
    )
)


# ------------------------------------------------------------------ predict, then measure: a copy

register(
    Exercise(
        id="device-h2d-seconds",
        title="h2d_seconds(shape, dtype, pcie_generation): the seconds of a host-to-GPU copy at the link's peak",
        kind="prediction",
        expected=_H2D,
        cases=(Case(args=((8192, 16384), torch.bfloat16, 5), expected=_H2D,
                    description="an (8192, 16384) bf16 tensor over PCIe 5.0 x16"),),
        rtol=_H2D.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        refuse=("lectorch.transfer.transfer_seconds", "lectorch.transfer.measure_copy",
                "lectorch.memory.tensor_bytes", "lectorch.memory.bytes_of", "lectorch.dtypes.bytes_per_element"),
        allow=("lectorch.transfer.pcie_bytes_per_s",),
        hint=("seconds = bytes / bytes per second: count the tensor's bytes first.",
              "PCIe 5.0 x16 carries 16 lanes × 32 GT/s × 128/130 / 8 bits per byte in each direction."),
        slips={
            "twice-physics-bf16": "recheck the bytes of a bf16 element and the rate of a PCIe 5.0 x16 link in one direction.",
            "gb-s-counts": "GB/s counts bytes, not bits.",
            "answer-seconds-milliseconds": "the answer is in seconds, not milliseconds.",
            "half-physics-count": ("recheck the bytes of a bf16 element, and whether the link's rate you used "
                                   "counts one direction or both."),
        },
    )
)


# ------------------------------------------------------------------ debug: timing an asynchronous copy


class SimulatedStream:
    """A deterministic stand-in for a GPU stream, with its own clock.

    ``copy()`` costs the host ``launch_s`` and queues ``work_s`` of device work (the first call also
    pays ``cold_s`` once, like a first CUDA call); ``synchronize()`` waits until the queue is empty;
    ``clock()`` reads the host's time. A timing that forgets to wait, or includes the first call,
    reads a different time than the copies take.

    >>> s = SimulatedStream(work_s=1e-3, launch_s=5e-6, cold_s=0.05)
    >>> s.copy(); s.clock() < 1e-3
    True
    >>> s.synchronize(); round(s.clock(), 6)
    0.051005
    """

    def __init__(self, work_s: float, launch_s: float, cold_s: float) -> None:
        self.work_s, self.launch_s, self.cold_s = work_s, launch_s, cold_s
        self.now = 0.0
        self.busy_until = 0.0
        self.calls = 0
        self.log: list[tuple[str, float]] = []  # every call, for the checker to judge

    def clock(self) -> float:
        self.log.append(("clock", self.now, 1.0 if self.busy_until > self.now else 0.0))
        return self.now

    def copy(self) -> None:
        self.now += self.launch_s
        cost = self.work_s + (self.cold_s if self.calls == 0 else 0.0)
        self.busy_until = max(self.now, self.busy_until) + cost
        self.log.append(("run", 1.0 if self.calls == 0 and self.cold_s else 0.0))
        self.calls += 1

    def synchronize(self) -> None:
        self.now = max(self.now, self.busy_until)
        self.log.append(("sync", self.now))


def traced_copy_timing(answer, args, kwargs) -> dict:
    """Run ``answer`` on a simulated stream; return its result with the stream's log of calls."""
    stream = args[0].__self__
    got = answer(lambda: stream.copy(), lambda: stream.synchronize(), lambda: stream.clock(), *args[3:], **kwargs)
    return {"returned": got, "log": list(stream.log)}


def stream_case(work_s: float, launch_s: float, cold_s: float, repeats: int, description: str) -> Case:
    """A case: time ``repeats`` copies on a fresh simulated stream. The timing is judged by the
    calls it makes (the stream's log), so the case has no expected value."""
    s = SimulatedStream(work_s, launch_s, cold_s)
    return Case(args=(s.copy, s.synchronize, s.clock), kwargs={"repeats": repeats}, description=description)


def compare_timing(got, expected) -> str | None:
    """Seconds per copy, judged from the stream's log (``traced_copy_timing``): the number must be
    what a clean stretch of the function's own clock readings measured (``judge_timing``)."""
    from lectorch.exercises.flops import judge_timing

    log = None
    if isinstance(got, dict) and set(got) == {"returned", "log"}:
        got, log = got["returned"], got["log"]
    return judge_timing(got, log, call="copy()", sync="synchronize()")


def _random_streams(rng: random.Random) -> list[Case]:
    return [stream_case(work_s=10 ** rng.uniform(-5, -2), launch_s=10 ** rng.uniform(-6, -5),
                        cold_s=10 ** rng.uniform(-2, -1), repeats=rng.choice([5, 10, 20]),
                        description="a random simulated stream") for _ in range(4)]


register(
    Exercise(
        id="device-timing-debug",
        title="time_copy(copy, synchronize, clock, repeats): an honest timing of queued copies",
        kind="function",
        hint=("on a GPU, copy() returns as soon as the copy is queued; the first call also pays "
              "one-off costs.",
              "ask: when the clock starts, is the device idle? When it stops, has every timed copy "
              "finished?"),
        compare=compare_timing,
        runner=traced_copy_timing,
        cases=(
            stream_case(1e-3, 5e-6, 0.05, 10, "1 ms copies, a 50 ms first call"),
            stream_case(2e-5, 8e-6, 0.2, 10, "short copies that take little more than their launch"),
        ),
        generate=_random_streams,
        summary=("times 2 example and 4 random simulated GPU streams (hidden ones when graded), and "
                 "judges the calls made: the number must be what its own clock measured over warm "
                 "copies, started idle and waited for"),
    )
)
