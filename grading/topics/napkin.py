"""Instructor's grading data for chapter 00 (napkin math): plain expected values, hidden cases.

Never shipped to students (see lectorch.exercises: the package holds only seals).
"""

from __future__ import annotations

import math
import random

from lectorch import hardware, napkin
from lectorch.exercises import Case
from grading.topics import Topic

_H100 = hardware.get_gpu("H100 SXM")

# mixed precision with 8-bit AdamW: bf16 weights and gradients, fp32 master copy, two 8-bit
# moments, each quantised in blocks of 256 values with one float32 scale per block
_BLOCK = 256
_EIGHT_BIT_ADAM = 2 + 2 + 4 + 2 * (1 + 4 / _BLOCK)

# ZeRO stage 2 over 64 GPUs: bf16 weights whole; gradients, master weights, moments sharded
_ZERO2_PER_GPU = 2 + (2 + 4 + 8) / 64

#: the public cases (the page's numbers) of the value exercises; hidden cases: ``HIDDEN``
EXPECTED = {
    "napkin-two-weeks": 8 * 14 * napkin.SECONDS_PER_DAY * _H100.peak_flops("bf16"),
    "napkin-8bit-adam-bytes": _EIGHT_BIT_ADAM,
    "napkin-zero2-params": _H100.napkin_memory_bytes / _ZERO2_PER_GPU,
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
    # a whole-number quotient, exact in floating point whatever the order of the arithmetic
    # (6·P·T = 4.32e19 · q · days, a mantissa below 2**53): exactly q GPUs, not one more
    q, days = rng.randint(2, 6), rng.choice([1, 2, 4])
    runs.append((1.44e9, 5e9 * q * days, days, 1e15, 0.5))
    return [Case(args=r, expected=gpus_needed(*r), description="a hidden run") for r in runs]


def node_flops(num_gpus, days):
    """FLOPs of ``num_gpus`` H100s running ``days`` days at their dense bf16 peak (MFU 1)."""
    return num_gpus * days * napkin.SECONDS_PER_DAY * _H100.peak_flops("bf16")


def bytes_8bit_adam(block):
    """Bytes per parameter of mixed-precision AdamW whose two moments take 1 byte per value in
    blocks of ``block`` values, each block with one float32 scale."""
    return 2 + 2 + 4 + 2 * (1 + 4 / block)


def zero2_params(num_gpus, memory_bytes):
    """The most parameters ZeRO stage 2 fits on ``num_gpus`` GPUs of ``memory_bytes`` each."""
    return memory_bytes / (2 + (2 + 4 + 8) / num_gpus)


def _node_flops_cases(rng: random.Random) -> list[Case]:
    settings = [(1, 1), (rng.randint(2, 7), rng.randint(15, 60)), (rng.randint(16, 2048), round(rng.uniform(0.5, 90), 2))]
    settings += [(rng.choice([8, 64, 256, 1024]) * rng.randint(1, 4), rng.randint(1, 30))]
    return [Case(args=s, expected=node_flops(*s), description="a hidden cluster") for s in settings]


def _eight_bit_cases(rng: random.Random) -> list[Case]:
    # blocks of at most 512 values: larger ones make the scales cost less than the ±0.1 % tolerance
    blocks = rng.sample([8, 16, 32, 48, 64, 100, 128, 192, 384, 512], 4)
    return [Case(args=(b,), expected=bytes_8bit_adam(b), description="a hidden block size") for b in blocks]


def _zero2_cases(rng: random.Random) -> list[Case]:
    gpus = [rng.randint(2, 7), rng.randint(8, 63), rng.randint(65, 1024), rng.choice([16, 128, 512])]
    memories = rng.sample([16e9, 24e9, 40e9, 48e9, 94e9, 141e9, 192e9], 4)
    return [Case(args=(g, m), expected=zero2_params(g, m), description="a hidden data-parallel group")
            for g, m in zip(gpus, memories)]


HIDDEN = {
    "napkin-gpus-needed": _gpus_cases,
    "napkin-two-weeks": _node_flops_cases,
    "napkin-8bit-adam-bytes": _eight_bit_cases,
    "napkin-zero2-params": _zero2_cases,
}

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


def _practice(make, settings) -> list[Case]:
    return [Case(args=s, expected=make(*s), description=d) for s, d in settings]


#: public practice settings of the value exercises (their answers sealed in the package): other
#: clusters, blocks and groups than the page's, so that a rule right only at the page's numbers fails
PRACTICE = {
    "napkin-two-weeks": lambda: _practice(node_flops, [((1, 1), "one GPU for a day"), ((64, 30), "64 GPUs for 30 days")]),
    "napkin-8bit-adam-bytes": lambda: _practice(bytes_8bit_adam, [((64,), "blocks of 64 values"),
                                                                  ((2048,), "blocks of 2048 values")]),
    "napkin-zero2-params": lambda: _practice(zero2_params, [((8, 24e9), "8 GPUs of 24 GB"),
                                                            ((1, 80e9), "one GPU: nothing to shard")]),
}


TOPIC = Topic(expected=EXPECTED, hidden=HIDDEN, slips=SLIPS, practice=PRACTICE)
