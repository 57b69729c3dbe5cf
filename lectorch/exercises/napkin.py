"""Exercises of chapter 00, napkin math.

The expected values are sealed; the plain values and the hidden cases live in ``grading/topics/napkin.py``.
The three value exercises are functions of their setting: the page's numbers are their public case.
"""

from __future__ import annotations

from lectorch.i18n import tr

import math
import numbers
import random

from lectorch import napkin
from lectorch.exercises import Case, Exercise, Sealed, register

# value exercises asked as functions of their setting: the page's numbers are the public case
# (sealed); the grader runs the student's function on hidden settings (grading/topics/napkin.py)
_TWO_WEEKS = Sealed.stored("napkin-two-weeks")
_EIGHT_BIT = Sealed.stored("napkin-8bit-adam-bytes")
_ZERO2 = Sealed.stored("napkin-zero2-params")

register(
    Exercise(
        id="napkin-two-weeks",
        title="node_flops(num_gpus, days): FLOPs of H100s at their dense bf16 peak",
        kind="value",
        expected=_TWO_WEEKS,
        cases=(Case(args=(8, 14), expected=_TWO_WEEKS, description="8 H100s for two weeks"),),
        rtol=_TWO_WEEKS.rtol,
        refuse_what="the FLOP count of a cluster",
        refuse=("lectorch.napkin.cluster_flops_per_s", "lectorch.napkin.training_days", "lectorch.napkin.summarize"),
        allow=("lectorch.hardware.get_gpu", "lectorch.napkin.SECONDS_PER_DAY"),
        hint=("GPUs × days × seconds per day × dense peak FLOP/s.",
              "the dense bf16 peak of an H100 SXM is half of the datasheet's 2:4-sparse figure."),
        slips={
            "two-weeks-14": ("that looks like one week instead of two (14 days), or an MFU below 1 where the "
                             "question asks for the peak."),
            "use-dense-peak": "use the dense peak: the datasheet's bf16 figure assumes 2:4 sparsity.",
            "there-8-gpus": "there are 8 GPUs.",
            "day-86-400": "a day has 86 400 seconds.",
        },
    )
)

register(
    Exercise(
        id="napkin-8bit-adam-bytes",
        title="bytes_8bit_adam(block): bytes per parameter of mixed-precision AdamW with block-wise 8-bit moments",
        kind="value",
        expected=_EIGHT_BIT,
        cases=(Case(args=(256,), expected=_EIGHT_BIT, description="blocks of 256 values"),),
        rtol=_EIGHT_BIT.rtol,
        hint=("list every tensor kept per parameter (weights, gradients, master copy, two moments) with "
              "its bytes, then add what the quantisation itself stores.",
              "a scale is one float32 (4 bytes) shared by a whole block: per parameter it costs "
              "4 / block size, once for each quantised tensor."),
        slips={
            "close-per-block": "close: the per-block scales are missing.",
            "fp32-master-copy": "the fp32 master copy of the weights is missing.",
            "adamw-with-fp32": "that is AdamW with fp32 moments; here the moments take 8 bits each.",
            "each-two-moments": "each of the two moments has its own blocks and its own scales.",
            "scale-float32-4": "a scale is a float32: 4 bytes, not 1.",
        },
    )
)

register(
    Exercise(
        id="napkin-zero2-params",
        title="zero2_params(num_gpus, memory_bytes): the largest model that ZeRO stage 2 fits",
        kind="value",
        expected=_ZERO2,
        cases=(Case(args=(64, 80e9), expected=_ZERO2, description="64 H100s of 80 GB"),),
        rtol=_ZERO2.rtol,
        refuse_what="the ZeRO arithmetic",
        refuse=("lectorch.napkin.max_trainable_params", "lectorch.napkin.summarize"),
        hint=("write the bytes ONE GPU holds per parameter: what it keeps whole, plus its share of what "
              "is split 64 ways; then divide one GPU's memory by it.",
              "only the bf16 weights stay whole on every GPU; gradients, master weights and moments "
              "are split."),
        slips={
            "one-gpu-with": "that is one GPU with nothing sharded: each GPU keeps only 1/64 of the sharded parts.",
            "shards-everything-zero": ("that shards everything (ZeRO stage 3): in stage 2 every GPU keeps all the bf16 "
                                       "weights."),
            "stage-2-shards": "stage 2 shards the gradients too, not only the optimizer state.",
            "gradients-share-missing": "the gradients' share is missing.",
        },
    )
)


def _days(params, tokens, num_gpus, peak_flops_per_s, mfu):
    return napkin.training_days(params, tokens, num_gpus=num_gpus, mfu=mfu, peak_flops_per_s=peak_flops_per_s)


def compare_gpus(got, expected) -> str | None:
    """Compare a GPU count with an int (the grader's), or check it against ``expected`` = the case's
    arguments by a property: the run fits in the days, and one GPU fewer does not."""
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return tr("return a whole number of GPUs (an int), got {type} {got!r}.").format(type=type(got).__name__, got=got)
    if isinstance(expected, numbers.Integral):
        if got == expected:
            return None
        return tr("that many GPUs finish too late.") if got < expected else tr("fewer GPUs would also finish in time.")
    params, tokens, days, peak, mfu = expected
    if got < 1:
        return tr("{got} GPUs cannot train anything.").format(got=got)
    if _days(params, tokens, got, peak, mfu) > days * (1 + 1e-9):
        return tr("{got} GPUs finish too late.").format(got=got)
    if got > 1 and _days(params, tokens, got - 1, peak, mfu) <= days * (1 + 1e-9):
        return tr("{got} GPUs finish in time, but fewer would too: the smallest number is asked.").format(got=got)
    return None


def _random_cases(rng: random.Random) -> list[Case]:
    cases = []
    for _ in range(6):
        args = (rng.choice([1e9, 7e9, 13e9, 70e9, 405e9]) * rng.uniform(0.5, 1.5),
                10 ** rng.uniform(10, 13.3), rng.choice([1, 7, 14, 30, 90]) * rng.uniform(0.8, 1.2),
                rng.choice([312e12, 989.5e12, 165.2e12, 2250e12]), rng.uniform(0.2, 0.7))
        if math.isclose(_days(*args[:2], 1, *args[3:]) / args[2] % 1, 0, abs_tol=1e-6):
            continue  # an exact whole number of GPUs: rounding noise would decide
        cases.append(Case(args=args, expected=args, description="a random run"))
    return cases


register(
    Exercise(
        id="napkin-gpus-needed",
        title="gpus_needed(params, tokens, days, peak_flops_per_s, mfu)",
        kind="function",
        refuse_what="the napkin arithmetic",
        refuse=(
            "lectorch.napkin.training_flops",
            "lectorch.napkin.training_days",
            "lectorch.napkin.cluster_flops_per_s",
            "lectorch.napkin.summarize",
        ),
        allow=("lectorch.hardware.get_gpu", "lectorch.napkin.SECONDS_PER_DAY"),
        hint=("a cluster has a whole number of GPUs: which way must the count be rounded so the run "
              "finishes in time?",
              "compare how many FLOPs the run needs with how many one GPU delivers in the time allowed."),
        compare=compare_gpus,
        cases=(
            Case(args=(7e9, 2e12, 14, 312e12, 0.4), expected=(7e9, 2e12, 14, 312e12, 0.4),
                 description="a 7B model on A100s within two weeks"),
            Case(args=(1.5e9, 3e10, 1, 165.2e12, 0.6), expected=(1.5e9, 3e10, 1, 165.2e12, 0.6),
                 description="a small model on RTX 4090s within a day"),
            Case(args=(1e8, 1e9, 30, 989.5e12, 0.5), expected=(1e8, 1e9, 30, 989.5e12, 0.5),
                 description="a tiny run: one GPU is plenty"),
            # 6·P·T over one GPU-day's FLOPs is a whole number, exactly (no rounding noise)
            Case(args=(1.44e9, 2e10, 1, 1e15, 0.5), expected=(1.44e9, 2e10, 1, 1e15, 0.5),
                 description="a run whose GPU count comes out whole"),
        ),
        generate=_random_cases,
        summary="runs your function on 4 example runs (one whose count comes out whole) and 6 random ones: a "
                "whole number of GPUs, the run finishes in time, and one GPU fewer would not",
    )
)
