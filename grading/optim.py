"""Grading bundle of chapter 08 (optim): plain expected values and hidden cases.

Not part of the student package. The peak is lectorch's step timeline (the chapter's model of
what is alive when), which the chapter checks against the live-tensor measurement.
"""

from __future__ import annotations

import random

from lectorch import step_memory
from lectorch.exercises import optim as ex

PEAK_CONFIG = dict(dim=64, num_layers=2, batch=2048, optimizer="sgd", dtype="fp32")

EXPECTED = {
    "optim-step-peak": step_memory.step_timeline(**PEAK_CONFIG).peak,
}


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "optim-rmsprop":
        return [ex.rmsprop_case(0.02, 0.95, 1e-3), *ex.random_rmsprop_cases(rng, 1)]
    if exercise_id == "optim-adamw-step":
        return [ex.adamw_case(10, (7,), 2, "the second step", weight_decay=0.05),
                ex.adamw_case(11, (2, 2), 1000, "step 1000, betas (0.8, 0.99)", betas=(0.8, 0.99)),
                ex.adamw_case(12, (1,), 1, "strong decay, lr 0.1", lr=0.1, weight_decay=0.5),
                *ex.random_adamw_cases(rng, 4)]
    if exercise_id == "optim-clip-grad-norm":
        return [ex.clip_case(10, [(2,), (3,)], 0.0, 1.0, "all gradients zero"),
                ex.clip_case(11, [(10, 10)] * 4, 3.0, 0.5, "four large gradients"),
                ex.clip_case(12, [(1,)], 1.0, 1e3, "max_norm far above the norm"),
                *ex.random_clip_cases(rng, 4)]
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "optim-step-peak": {
        "elements-not-bytes": EXPECTED["optim-step-peak"] / 4,
        "every-part-added": 1655261.6448000001,
        "resting-memory-parameters": 565474.0992,
    },
}
