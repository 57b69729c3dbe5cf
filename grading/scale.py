"""Instructor's grading data for chapter 10 (scale): plain expected values and hidden cases.

Never shipped to students. The checkpointing ratio is counted by FlopCounterMode on the model of
the exercise; HFU uses the dense bf16 peak of lectorch's spec table.
"""

from __future__ import annotations

import random

from lectorch import hardware
from lectorch.exercises import scale as ex
from lectorch.flops import count_flops
from lectorch.models import TinyLM
from lectorch.train import lm_loss


def _step_flops(checkpointing: bool) -> int:
    m = ex.CKPT_TIME_MODEL
    import torch

    model = TinyLM(m["vocab_size"], m["dim"], m["num_layers"], checkpointing=checkpointing)
    ids = torch.zeros(m["batch_size"], m["context_length"], dtype=torch.long)
    return count_flops(lambda: lm_loss(model(ids), ids).backward()).total


_H100 = hardware.get_gpu("H100 SXM")
_PARAMS, _TOKENS_PER_S, _GPUS = 7e9, 1.0e6, 64
_INT4_BITS = 4 + (16 + 16) / 64  # the weight, plus its share of an fp16 scale and an fp16 zero

EXPECTED = {
    "scale-ckpt-time": _step_flops(True) / _step_flops(False),
    # full recomputation: forward + recomputed forward + backward = 8 FLOPs per token and parameter
    "scale-hfu": 8 * _PARAMS * _TOKENS_PER_S / (_GPUS * _H100.peak_flops("bf16")),
    "scale-int4-bytes": 70e9 * _INT4_BITS / 8,
}


def hfu(params, tokens_per_s, num_gpus):
    """HFU with every layer recomputed: 8 FLOPs per token and parameter over the dense bf16 peak."""
    return 8 * params * tokens_per_s / (num_gpus * _H100.peak_flops("bf16"))


def int4_bytes(params, group):
    """Bytes of int4 weights in groups of ``group``, each with an fp16 scale and an fp16 zero."""
    return params * (4 + 32 / group) / 8


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    from lectorch.exercises import Case

    if exercise_id == "scale-hfu":
        runs = []
        for params, gpus in [(1.3e9, 8), (rng.choice([8e9, 13e9, 34e9]), rng.choice([32, 128, 256])), (70e9, 512)]:
            # the tokens per second of a plausible run: an HFU between 0.25 and 0.85
            tokens_per_s = round(rng.uniform(0.25, 0.85) * gpus * _H100.peak_flops("bf16") / (8 * params), -3)
            runs.append((params, tokens_per_s, gpus))
        return [Case(args=r, expected=hfu(*r), description="a hidden run") for r in runs]
    if exercise_id == "scale-int4-bytes":
        settings = [(7e9, 128), (rng.choice([1.5e9, 13e9, 405e9]), 32), (rng.uniform(1e9, 1e11), rng.choice([16, 256]))]
        return [Case(args=s, expected=int4_bytes(*s), description="a hidden model") for s in settings]
    if exercise_id == "scale-saved-bytes":
        return [ex.saved_case(3, 5, 8, 2, 7, True, measure=True),
                ex.saved_case(2, 4, 4, 3, 50, False, measure=True),
                ex.saved_case(4, 2048, 4096, 32, 128_256, True, "a Llama-sized stack, checkpointed"),
                *ex.random_saved_cases(rng, 3)]
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "scale-hfu": {
        "counts-only-model": 0.6632137443153108,
        "1979-tflop-s": 0.4421424962102072,
    },
    "scale-int4-bytes": {
        "each-group-stores": 37187500000.0,
        "groups-scales-zero": 35000000000.0,
        "bits-or-bytes": 315000000000.0,
    },
}
