"""Instructor's grading data for chapter 00 (napkin math): plain expected values, hidden cases.

Never shipped to students (see lectorch.exercises: the package holds only seals).
"""

from __future__ import annotations

import math
import random

from lectorch import hardware, napkin
from lectorch.exercises import Case

_H100 = hardware.get_gpu("H100 SXM")

# mixed precision with 8-bit AdamW: bf16 weights and gradients, fp32 master copy, two 8-bit
# moments, each quantised in blocks of 256 values with one float32 scale per block
_BLOCK = 256
_EIGHT_BIT_ADAM = 2 + 2 + 4 + 2 * (1 + 4 / _BLOCK)

# ZeRO stage 2 over 64 GPUs: bf16 weights whole; gradients, master weights, moments sharded
_ZERO2_PER_GPU = 2 + (2 + 4 + 8) / 64

EXPECTED = {
    "napkin-two-weeks": 8 * 14 * napkin.SECONDS_PER_DAY * _H100.peak_flops("bf16"),
    "napkin-8bit-adam-bytes": _EIGHT_BIT_ADAM,
    "napkin-zero2-params": _H100.memory_bytes / _ZERO2_PER_GPU,
}


def gpus_needed(params, tokens, days, peak_flops_per_s, mfu):
    """The reference solution: the smallest whole number of GPUs that finishes in ``days``."""
    one_gpu_days = 6 * params * tokens / (peak_flops_per_s * mfu) / napkin.SECONDS_PER_DAY
    return max(1, math.ceil(one_gpu_days / days - 1e-9))


def _gpus_cases(rng: random.Random) -> list[Case]:
    runs = [
        (70e9, 15e12, 30, 989.5e12, 0.5),     # the chapter's run, within a month
        (405e9, 15.6e12, 60, 989.5e12, 0.4),  # a 405B model within two months
        (7e9, 1e12, 3, 2250e12, 0.35),        # B200s
        (2e9, 5e10, 0.5, 121e12, 0.3),        # L4s, half a day
        (1e8, 1e10, 365, 8.1e12, 0.5),        # one T4 in fp32 is enough
    ]
    for _ in range(5):
        runs.append((rng.uniform(1e9, 1e11), rng.uniform(1e11, 2e13), rng.uniform(1, 120),
                     rng.choice([312e12, 989.5e12, 756.5e12]), rng.uniform(0.25, 0.6)))
    return [Case(args=r, expected=gpus_needed(*r), description="a hidden run") for r in runs]


HIDDEN = {"napkin-gpus-needed": _gpus_cases}

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "napkin-two-weeks": {
        "two-weeks-14": 4.7875968e+21,
        "use-dense-peak": 1.91503872e+22,
        "there-8-gpus": 1.1968992e+21,
        "day-86-400": 1.10824e+17,
    },
    "napkin-8bit-adam-bytes": {
        "close-per-block": 10.0,
        "fp32-master-copy": 6.03125,
        "adamw-with-fp32": 16.0,
        "each-two-moments": 10.015625,
        "scale-float32-4": 10.0078125,
    },
    "napkin-zero2-params": {
        "one-gpu-with": 5000000000.0,
        "shards-everything-zero": 320000000000.0,
        "stage-2-shards": 19104477611.940296,
        "gradients-share-missing": 36571428571.42858,
    },
}
