"""Grading bundle of chapter 08 (optim): plain expected values and hidden cases.

Not part of the student package. The peak is lectorch's step timeline (the chapter's model of
what is alive when), which the chapter checks against the live-tensor measurement.
"""

from __future__ import annotations

import dataclasses
import random

import torch

from lectorch import step_memory
from lectorch.exercises import Case
from lectorch.exercises import optim as ex
from grading.topics import Topic

PEAK_CONFIG = dict(dim=64, num_layers=2, batch=2048, optimizer="sgd", dtype="fp32")

EXPECTED = {
    "optim-step-peak": step_memory.step_timeline(**PEAK_CONFIG).peak,
}


# --- references: every expected result of the function exercises, from torch itself ---------------


def rmsprop_run(case) -> dict:
    """torch.optim.RMSprop's run of the exercise's trainer, at the case's hyper-parameters."""
    return ex.optimizer_trainer(torch.optim.RMSprop)(**case.kwargs)


def torch_adamw_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):
    """torch.optim.AdamW's update, from a state that has done ``step - 1`` steps."""
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=False)
    opt.state[p] = {"step": torch.tensor(float(step - 1)), "exp_avg": exp_avg.clone(),
                    "exp_avg_sq": exp_avg_sq.clone()}
    p.grad = grad.clone()
    opt.step()
    state = opt.state[p]
    return p.detach().clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()


def torch_clip(grads: list, max_norm: float) -> tuple[list, float]:
    """torch.nn.utils.clip_grad_norm_'s clipped gradients and total norm."""
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=False)
    return [p.grad for p in params], float(total)


REFERENCE = {
    "optim-rmsprop": rmsprop_run,
    "optim-adamw-step": lambda case: torch_adamw_step(*case.args, **case.kwargs),
    "optim-clip-grad-norm": lambda case: torch_clip(*case.args),
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return [dataclasses.replace(c, expected=REFERENCE[exercise_id](c)) for c in cases]


def random_rmsprop_cases(rng: random.Random, n: int = 1) -> list:
    return [ex.rmsprop_case(round(10 ** rng.uniform(-3, -1.5), 5), round(rng.uniform(0.5, 0.999), 3),
                            rng.choice([1e-8, 1e-6, 1e-3])) for _ in range(n)]


def random_adamw_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        step = rng.choice([1, 2, 3, rng.randint(4, 5000)])
        hyper = dict(lr=round(10 ** rng.uniform(-4, -1), 6), betas=(rng.choice([0.8, 0.9, 0.95]), rng.choice([0.95, 0.99, 0.999])),
                     eps=rng.choice([1e-8, 1e-6]), weight_decay=rng.choice([0.0, 0.01, 0.1, 0.5]))
        shape = tuple(rng.randint(1, 6) for _ in range(rng.randint(1, 3)))
        text = ", ".join(f"{k}={v}" for k, v in hyper.items())
        cases.append(ex.adamw_case(rng.randrange(2**31), shape, step, f"step {step}, {text}", **hyper))
    return cases


def random_clip_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        shapes = [tuple(rng.randint(1, 8) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(1, 5))]
        scale, max_norm = 10 ** rng.uniform(-7, 1), round(10 ** rng.uniform(-6, 1), 8)
        cases.append(ex.clip_case(rng.randrange(2**31), shapes, scale, max_norm,
                                  f"{len(shapes)} random gradients, max_norm={max_norm}"))
    return cases


def step_peak(dim, num_layers, batch):
    """The reference prediction of optim-step-peak: the step timeline's peak, fp32 SGD."""
    return step_memory.step_timeline(dim, num_layers, batch, optimizer="sgd", dtype="fp32").peak


def _step_peak_cases(rng: random.Random) -> list:
    # each batch at least 4× the width (as the page says): the peak is then in backward of the
    # last layer; depths from 2 (one layer is a different moment, the head's backward)
    settings = [(256, 4, 1024), (16, 8, 64)]
    for _ in range(3):
        dim = rng.choice([8, 32, 100, 128, 512, 1024])
        settings.append((dim, rng.randint(2, 12), dim * rng.randint(4, 64)))
    return [Case(args=s, expected=step_peak(*s), description="a hidden Cruncher and batch") for s in settings]


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "optim-step-peak":
        return _step_peak_cases(rng)
    if exercise_id == "optim-rmsprop":
        cases = [ex.rmsprop_case(0.02, 0.95, 1e-3), *random_rmsprop_cases(rng, 1)]
    elif exercise_id == "optim-adamw-step":
        cases = [ex.adamw_case(10, (7,), 2, "the second step", weight_decay=0.05),
                 ex.adamw_case(11, (2, 2), 1000, "step 1000, betas (0.8, 0.99)", betas=(0.8, 0.99)),
                 ex.adamw_case(12, (1,), 1, "strong decay, lr 0.1", lr=0.1, weight_decay=0.5),
                 *random_adamw_cases(rng, 4)]
    elif exercise_id == "optim-clip-grad-norm":
        cases = [ex.clip_case(10, [(2,), (3,)], 0.0, 1.0, "all gradients zero"),
                 ex.clip_case(11, [(10, 10)] * 4, 3.0, 0.5, "four large gradients"),
                 ex.clip_case(12, [(1,)], 1.0, 1e3, "max_norm far above the norm"),
                 *random_clip_cases(rng, 4)]
    else:
        return []
    return _with_expected(exercise_id, cases)

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "optim-step-peak": {
        "elements-not-bytes": EXPECTED["optim-step-peak"] / 4,
        "every-part-added": 1655261.6448000001,
        "resting-memory-parameters": 565474.0992,
    },
}


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "optim-step-peak": lambda: [Case(args=s, expected=step_peak(*s), description=d) for s, d in [
        ((32, 3, 128), "D = 32, 3 layers, batch 128 (4 × D)"), ((128, 6, 1024), "D = 128, 6 layers, batch 1024")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
