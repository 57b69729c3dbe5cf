"""Grading bundle of chapter 05 (flops): plain expected values and hidden cases.

Not part of the student package.
"""

from __future__ import annotations

import random

from grading.case_seals import with_results

from lectorch.exercises import Case
from lectorch.exercises import flops as ex
from lectorch.flops import linear_flops
from lectorch.hardware import GPUS, get_gpu
from lectorch.roofline import matmul_intensity
from grading.topics import Topic


def time_ratio() -> float:
    """Both matmuls are compute-bound on every GPU of the table in fp32 (and on CPUs): the time
    ratio is the FLOP ratio."""
    small, large = ex.RATIO_SMALL, ex.RATIO_LARGE
    ridge = max(g.peak_flops("fp32") / g.bandwidth_bytes_per_s for g in GPUS.values())
    assert min(matmul_intensity(*small, "fp32"), matmul_intensity(*large, "fp32")) > ridge
    return linear_flops(*large) / linear_flops(*small)


EXPECTED = {"flops-time-ratio": time_ratio()}


# --- references: the expected results of the function exercises --------------------------------


def smallest_n(peak, bandwidth, bytes_per_element) -> int:
    """The smallest n whose intensity 2n³ / (3n² · bytes) reaches peak / bandwidth, found by
    bisection on the intensity itself (not by the closed form)."""
    ridge = peak / bandwidth

    def bound(n: int) -> bool:
        return 2 * n**3 / (3 * n * n * bytes_per_element) >= ridge

    lo, hi = 1, 1
    while not bound(hi):
        lo, hi = hi + 1, hi * 2
    while lo < hi:  # bisect for the first n that is compute-bound
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) else (mid + 1, hi)
    return lo


REFERENCE = {
    "flops-mfu-from-time": lambda case: (lambda B, D, K, s, peak: 2 * B * D * K / s / peak)(*case.args),
    "flops-compute-bound-n": lambda case: {"n": smallest_n(*case.args)},
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return with_results(REFERENCE[exercise_id], cases)


def random_mfu_cases(rng: random.Random, n: int = 3) -> list[Case]:
    cases = []
    for _ in range(n):
        gpu = get_gpu(rng.choice(["H100 SXM", "A100", "L4", "B200"]))
        B, D, K = (2 ** rng.randint(6, 14) for _ in range(3))
        peak = gpu.peak_flops("bf16")
        seconds = 2 * B * D * K / (peak * rng.uniform(0.05, 0.9))
        cases.append(ex.mfu_case(B, D, K, seconds, peak, f"({B}, {D}) @ ({D}, {K}) in bf16 on {gpu.name}"))
    return cases


def random_smallest_n_cases(rng: random.Random, n: int = 3) -> list[Case]:
    cases = []
    for _ in range(n):
        peak, bandwidth = 10 ** rng.uniform(11, 15), 10 ** rng.uniform(10, 12.5)
        b = rng.choice([1, 2, 4])
        cases.append(ex.smallest_n_case(peak, bandwidth, b, f"a made-up processor, {b}-byte elements"))
    return cases


def _compute_bound(mkn) -> bool:
    ridge = max(g.peak_flops("fp32") / g.bandwidth_bytes_per_s for g in GPUS.values())
    return matmul_intensity(*mkn, "fp32") > ridge


def _bytes(m, k, n) -> int:
    return 4 * (m * k + k * n + m * n)


def _ratio_cases(rng: random.Random) -> list:
    """Pairs of fp32 matmuls, both compute-bound, whose FLOP ratio is far from their bytes' ratio
    (so the "bytes moved" slip fails) and from 1 (so "upside down" fails)."""
    cases = []
    while len(cases) < 4:
        a = tuple(128 * rng.randint(4, 16) for _ in range(3))
        b = tuple(d * rng.choice([1, 2, 3, 4]) for d in a)
        flops = linear_flops(*b) / linear_flops(*a)
        if not (_compute_bound(a) and _compute_bound(b)) or flops < 3:
            continue
        if 0.7 < flops / (_bytes(*b) / _bytes(*a)) < 1.4:
            continue
        a, b = (a, b) if rng.random() < 0.7 else (b, a)  # now and then the smaller one second
        cases.append(Case(args=(a, b), expected=linear_flops(*b) / linear_flops(*a), description="a hidden pair"))
    return cases


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "flops-time-ratio":
        return _ratio_cases(rng)
    if exercise_id == "flops-mfu-from-time":
        a100 = get_gpu("A100")
        return _with_expected(exercise_id, [
            ex.mfu_case(4096, 1024, 4096, 2.5e-4, a100.peak_flops("bf16"), "a rectangular bf16 matmul on an A100"),
            ex.mfu_case(16384, 32768, 8192, 0.21, get_gpu("H100 SXM").peak_flops("fp32"), "a large fp32 matmul"),
            *random_mfu_cases(rng, 3)])
    if exercise_id == "flops-compute-bound-n":
        l4, h200 = get_gpu("L4"), get_gpu("H200")
        return _with_expected(exercise_id, [
            ex.smallest_n_case(l4.peak_flops("bf16"), l4.bandwidth_bytes_per_s, 2, "L4, bf16"),
            ex.smallest_n_case(h200.peak_flops("fp8"), h200.bandwidth_bytes_per_s, 1, "H200, fp8"),
            ex.smallest_n_case(3e12, 1e12, 4, "a ridge point that is a whole number"),
            *random_smallest_n_cases(rng, 3)])
    if exercise_id == "flops-honest-timer":
        return [ex.timer_case(0.005, "two cold calls, hiccup at call 4", cold=2, hiccup=4),
                *ex.random_timer_cases(rng, 1)]
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "flops-time-ratio": {
        "ratio-bytes-moved": 4.0,
        "upside-down-larger": 0.125,
    },
}


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "flops-time-ratio": lambda: [Case(args=s, expected=linear_flops(*s[1]) / linear_flops(*s[0]), description=d)
                                 for s, d in [(((1024, 1024, 1024), (2048, 1024, 1024)), "twice the rows"),
                                              (((2048, 2048, 2048), (1024, 1024, 1024)), "the larger one first")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
