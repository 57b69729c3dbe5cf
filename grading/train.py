"""Instructor's grading data for chapter 09 (train): plain expected values and hidden cases.

Never shipped to students. The checkpoint's bytes are the model's weights and AdamW's two moments
(4 + 8 bytes per parameter of the chapter's TinyLM); hidden cases reuse the package's case makers,
whose expected results come from torch (the generator's own draw, CosineAnnealingLR, SGD on the
concatenated batch) or from the snippet's uninterrupted run.
"""

from __future__ import annotations

import random

from lectorch.exercises import GeneratorSeed
from lectorch.exercises import train as ex
from lectorch.models import TinyLM

_CKPT_PARAMS = sum(p.numel() for p in TinyLM(**ex.CKPT_MODEL).parameters())

EXPECTED = {
    "train-ckpt-size": (4 + 4 + 4) * _CKPT_PARAMS,  # fp32 weights + AdamW's exp_avg, exp_avg_sq
}


def ckpt_bytes(vocab_size: int, dim: int, num_layers: int) -> int:
    """Tensor bytes of a TinyLM's checkpoint with AdamW in fp32: weights and two moments, 12 bytes
    per parameter (counted by torch, on the meta device)."""
    import torch

    with torch.device("meta"):
        model = TinyLM(vocab_size, dim, num_layers)
    return 12 * sum(p.numel() for p in model.parameters())


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "train-ckpt-size":
        from lectorch.exercises import Case

        models = [(256, 32, 1), (rng.choice([1000, 8192, 50257]), rng.choice([64, 256, 768]), rng.randint(2, 12)),
                  (rng.randint(10, 500), 16 * rng.randint(1, 16), rng.randint(1, 6))]
        return [Case(args=m, expected=ckpt_bytes(*m), description="a hidden TinyLM") for m in models]
    if exercise_id == "train-get-batch":
        seed = lambda: GeneratorSeed(rng.randrange(10**6))  # noqa: E731
        return [ex.batch_case(seed(), n=9, batch_size=300, context_length=6,
                              description="300 draws from 9 tokens"),
                ex.batch_case(seed(), n=2, batch_size=5, context_length=1,
                              description="the shortest data there is"),
                ex.batch_case(seed(), n=1000, batch_size=64, context_length=100),
                *ex._random_batch_cases(rng, 3)]
    if exercise_id == "train-lr-at-step":
        return [ex.lr_case((99, 1e-3, 1e-4, 100, 1000), "the last warm-up step"),
                ex.lr_case((101, 1e-3, 1e-4, 100, 1000), "the first decay step after the peak"),
                ex.lr_case((999, 2e-4, 2e-5, 10, 1000), "one step before the end"),
                ex.lr_case((5000, 1e-3, 1e-4, 100, 1000), "far past the end"),
                *ex._random_lr_cases(rng, 4)]
    if exercise_id == "train-accumulate":
        return [ex.accumulation_case(rng.randrange(10**6), features=6, classes=5, micro=3,
                                     accumulation=8, steps=2, description="8 micro-batches a step"),
                ex.accumulation_case(rng.randrange(10**6), features=2, classes=2, micro=1,
                                     accumulation=3, steps=4, description="micro-batches of one")]
    if exercise_id == "train-resume":
        return [ex.resume_case(rng.randrange(10**6), 12, 1),
                ex.resume_case(rng.randrange(10**6), 12, 11),
                ex.resume_case(rng.randrange(10**6), 10, rng.randint(2, 8))]
    return []
