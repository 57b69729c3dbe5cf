"""Instructor's grading data for chapter 10 (scale): plain expected values and hidden cases.

Never shipped to students. The checkpointing ratio is counted by FlopCounterMode on the model of
the exercise; HFU uses the dense bf16 peak of lectorch's spec table.
"""

from __future__ import annotations

import dataclasses
import functools
import random

from lectorch import hardware
from lectorch.exercises import Case
from lectorch.exercises import scale as ex
from lectorch.flops import count_flops
from lectorch.models import TinyLM
from lectorch.step_memory import saved_tensors
from lectorch.train import lm_loss, predicted_saved_bytes
from grading.topics import Topic


def _step_flops(checkpointing: bool, m: dict = ex.CKPT_TIME_MODEL) -> int:
    import torch

    # on the meta device: FlopCounterMode counts from the shapes alone, so the count is the one a
    # real step gives, without the arithmetic
    with torch.device("meta"):
        model = TinyLM(m["vocab_size"], m["dim"], m["num_layers"], checkpointing=checkpointing)
        ids = torch.zeros(m["batch_size"], m["context_length"], dtype=torch.long)
    return count_flops(lambda: lm_loss(model(ids), ids).backward()).total


@functools.lru_cache(maxsize=None)  # the hidden cases are drawn again for every seed
def ckpt_time_ratio(batch_size, context_length, dim, num_layers, vocab_size):
    """The reference prediction of scale-ckpt-time: the counted FLOPs of a step with activation
    checkpointing over those of a step without, for that TinyLM."""
    m = dict(batch_size=batch_size, context_length=context_length, dim=dim, num_layers=num_layers,
             vocab_size=vocab_size)
    return _step_flops(True, m) / _step_flops(False, m)


def _ckpt_time_cases(rng: random.Random) -> list:
    # small models, so counting their FLOPs stays cheap: from a head that dominates to none to speak of
    settings = [(2, 8, 128, 6, 64), (4, 16, 32, 1, 256)]
    for _ in range(3):
        settings.append((rng.choice([1, 2, 4]), rng.choice([8, 16, 32]), rng.choice([16, 32, 48, 96, 128]),
                         rng.randint(1, 8), rng.choice([100, 512, 1000, 4096])))
    return [Case(args=s, expected=ckpt_time_ratio(*s), description="a hidden TinyLM") for s in settings]


_H100 = hardware.get_gpu("H100 SXM")
_PARAMS, _TOKENS_PER_S, _GPUS = 7e9, 0.6e6, 64
_INT4_BITS = 4 + (16 + 16) / 64  # the weight, plus its share of an fp16 scale and an fp16 zero

EXPECTED = {
    "scale-ckpt-time": _step_flops(True) / _step_flops(False),
    # full recomputation: forward + recomputed forward + backward = 8 FLOPs per token and parameter
    "scale-hfu": 8 * _PARAMS * _TOKENS_PER_S / (_GPUS * _H100.peak_flops("bf16")),
    "scale-int4-bytes": 70e9 * _INT4_BITS / 8,
}


# --- the reference of scale-saved-bytes: what autograd really saves ------------------------------


def measured_saved_bytes(batch_size: int, context_length: int, dim: int, num_layers: int,
                         vocab_size: int, checkpointing: bool = False) -> int:
    """What autograd really saves for one fp32 forward pass of a TinyLM and its loss, counted by
    ``saved_tensors_hooks`` (parameters left out).

    >>> measured_saved_bytes(1, 2, 8, 1, 8) == predicted_saved_bytes(1, 2, 8, 1, 8)
    True
    """
    import torch

    g = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = TinyLM(vocab_size, dim, num_layers, checkpointing=checkpointing)
    ids = torch.randint(vocab_size, (batch_size, context_length), generator=g)
    targets = torch.randint(vocab_size, (batch_size, context_length), generator=g)
    saved = saved_tensors(lambda: lm_loss(model(ids), targets), parameters=list(model.parameters()))
    return int(saved.activation_bytes)


def saved_case(b, t, d, n, v, checkpointing, description="", *, measure: bool = True):
    """A case with its expected bytes: measured on a real model, or (``measure=False``, for a
    model too large to run) lectorch's formula, which the tests check against the measurement."""
    case = ex.saved_case(b, t, d, n, v, checkpointing, description)
    count = measured_saved_bytes if measure else predicted_saved_bytes
    return dataclasses.replace(case, expected=count(b, t, d, n, v, checkpointing=checkpointing))


def random_saved_cases(rng: random.Random, count: int) -> list:
    """``count`` random shapes, each measured with saved_tensors_hooks (torch is the reference)."""
    return [saved_case(rng.randint(1, 4), rng.randint(1, 8), rng.choice([4, 8, 12]),
                       rng.randint(1, 3), rng.choice([5, 16, 33]), rng.random() < 0.5)
            for _ in range(count)]


REFERENCE = {"scale-saved-bytes": lambda case: measured_saved_bytes(*case.args, **case.kwargs)}


def hfu(params, tokens_per_s, num_gpus):
    """HFU with every layer recomputed: 8 FLOPs per token and parameter over the dense bf16 peak."""
    return 8 * params * tokens_per_s / (num_gpus * _H100.peak_flops("bf16"))


def int4_bytes(params, group):
    """Bytes of int4 weights in groups of ``group``, each with an fp16 scale and an fp16 zero."""
    return params * (4 + 32 / group) / 8


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    from lectorch.exercises import Case

    if exercise_id == "scale-ckpt-time":
        return _ckpt_time_cases(rng)
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
        return [saved_case(3, 5, 8, 2, 7, True),
                saved_case(2, 4, 4, 3, 50, False),
                saved_case(4, 2048, 4096, 32, 128_256, True, "a Llama-sized stack, checkpointed", measure=False),
                *random_saved_cases(rng, 3)]
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "scale-hfu": {
        # 6 FLOPs per token and parameter (no recomputation counted), and the sparse peak
        "counts-only-model": 6 * _PARAMS * _TOKENS_PER_S / (_GPUS * _H100.peak_flops("bf16")),
        "1979-tflop-s": 8 * _PARAMS * _TOKENS_PER_S / (_GPUS * _H100.peak_flops("bf16", sparse=True)),
    },
    "scale-int4-bytes": {
        "each-group-stores": 37187500000.0,
        "groups-scales-zero": 35000000000.0,
        "bits-or-bytes": 315000000000.0,
    },
}


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "scale-ckpt-time": lambda: [Case(args=s, expected=ckpt_time_ratio(*s), description=d) for s, d in [
        ((2, 16, 32, 4, 1000), "a TinyLM whose head is large"), ((1, 8, 128, 8, 64), "a deep TinyLM, small head")]],
    "scale-hfu": lambda: [Case(args=s, expected=hfu(*s), description=d) for s, d in [
        ((1.3e9, 2.0e5, 8), "1.3B parameters on 8 GPUs"), ((70e9, 1.0e6, 1024), "70B parameters on 1024 GPUs")]],
    "scale-int4-bytes": lambda: [Case(args=s, expected=int4_bytes(*s), description=d) for s, d in [
        ((7e9, 128), "7B parameters, groups of 128"), ((1e9, 32), "1B parameters, groups of 32")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
