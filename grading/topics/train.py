"""Instructor's grading data for chapter 09 (train): plain expected values and hidden cases.

Never shipped to students. The checkpoint's bytes are the model's weights and AdamW's two moments
(4 + 8 bytes per parameter of the chapter's TinyLM); hidden cases reuse the package's case makers,
whose expected results come from torch (the generator's own draw, CosineAnnealingLR, SGD on the
concatenated batch) or from the snippet's uninterrupted run.
"""

from __future__ import annotations

import random

from grading.case_seals import with_results

import torch
import torch.nn.functional as F

from lectorch.exercises import GeneratorSeed
from lectorch.exercises import train as ex
from lectorch.models import TinyLM
from grading.topics import Topic

_CKPT_PARAMS = sum(p.numel() for p in TinyLM(**ex.CKPT_MODEL).parameters())

EXPECTED = {
    "train-ckpt-size": (4 + 4 + 4) * _CKPT_PARAMS,  # fp32 weights + AdamW's exp_avg, exp_avg_sq
}


# --- references: the expected results of the function exercises, from torch itself --------------


def reference_starts(seed: int, n: int, batch_size: int, context_length: int) -> torch.Tensor:
    """The starts a fresh generator seeded with ``seed`` draws: one ``torch.randint`` call over
    every valid start (what the exercise asks the student's function to draw)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(n - context_length, (batch_size,), generator=g)


def batch_results(case) -> dict:
    """The generator's own draw, and the draw of the slip that leaves out the last valid start."""
    spec = case.expected
    if "seed" not in spec:
        return {}
    n, b, t = spec["n"], spec["batch_size"], spec["context_length"]
    short = reference_starts(spec["seed"], n - 1, b, t) if n - t > 1 else None
    return {"starts": reference_starts(spec["seed"], n, b, t), "short_starts": short}


def torch_cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    """The schedule's learning rate at ``step``, from torch's own schedulers: linear warm-up, then
    ``torch.optim.lr_scheduler.CosineAnnealingLR`` from ``warmup_steps`` to ``total_steps``.

    >>> torch_cosine_lr(100, 1e-3, 1e-4, 100, 1000)
    0.001
    """
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=max_lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total_steps - warmup_steps,
                                                       eta_min=min_lr)
    for _ in range(step - warmup_steps):
        opt.step()
        sched.step()
    return opt.param_groups[0]["lr"]


def accumulated_weight(case) -> torch.Tensor:
    """torch's SGD steps, each on the concatenation of ``accumulation`` micro-batches."""
    weight, batches, accumulation, lr = case.args
    w = weight.clone().requires_grad_(True)
    opt = torch.optim.SGD([w], lr=lr)
    for k in range(len(batches) // accumulation):
        group = batches[k * accumulation:(k + 1) * accumulation]
        x = torch.cat([b[0] for b in group])
        y = torch.cat([b[1] for b in group])
        opt.zero_grad()
        F.cross_entropy(x @ w.T, y).backward()
        opt.step()
    return w.detach().clone()


REFERENCE = {
    "train-get-batch": batch_results,
    "train-lr-at-step": lambda case: {"lr_over_max": torch_cosine_lr(*case.args) / case.args[1]},
    "train-accumulate": accumulated_weight,
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return with_results(REFERENCE[exercise_id], cases)


def random_batch_cases(rng: random.Random, count: int) -> list:
    cases = []
    for _ in range(count):
        n = rng.randint(12, 400)
        t = rng.randint(1, n - 1)
        b = rng.choice([1, 3, 16, 64])
        dtype = rng.choice([torch.int64, torch.int32])
        cases.append(ex.batch_case(GeneratorSeed(rng.randrange(10**6)), n=n, batch_size=b,
                                   context_length=t, dtype=dtype,
                                   description=f"{b} windows of {t} tokens from {n} ({dtype})"))
    return cases


def random_lr_cases(rng: random.Random, count: int) -> list:
    cases = []
    for _ in range(count):
        total = rng.randint(20, 600)
        warmup = rng.randint(0, total // 2)
        max_lr = 10 ** rng.uniform(-4, -2)
        min_lr = max_lr * rng.choice([0.0, 0.1, 0.3])
        step = rng.choice([warmup - 1 if warmup else 0, warmup, warmup + 1, rng.randint(0, total),
                           total, total + rng.randint(1, 50)])
        cases.append(ex.lr_case((step, max_lr, min_lr, warmup, total), f"step {step} of {total}, "
                                f"{warmup} warm-up steps"))
    return cases


def ckpt_bytes(vocab_size: int, dim: int, num_layers: int) -> int:
    """Tensor bytes of a TinyLM's checkpoint with AdamW in fp32: weights and two moments, 12 bytes
    per parameter (counted by torch, on the meta device)."""
    import torch

    with torch.device("meta"):
        model = TinyLM(vocab_size, dim, num_layers)
    return 12 * sum(p.numel() for p in model.parameters())


def _ckpt_practice() -> list:
    from lectorch.exercises import Case

    # a large vocabulary, where embedding and head outweigh the blocks; a model so small that the
    # file's overhead (random states, format: some 30 kB) is far more than ±5 % of its tensors
    return [Case(args=m, expected=ckpt_bytes(*m), description=d) for m, d in [
        ((1000, 32, 1), "V = 1000, D = 32, one block"), ((128, 16, 2), "V = 128, D = 16, 2 blocks")]]


#: public practice settings (answers sealed in the package)
PRACTICE = {"train-ckpt-size": _ckpt_practice}


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "train-ckpt-size":
        from lectorch.exercises import Case

        models = [(256, 32, 1), (rng.choice([1000, 8192, 50257]), rng.choice([64, 256, 768]), rng.randint(2, 12)),
                  (rng.randint(10, 500), 16 * rng.randint(1, 16), rng.randint(1, 6))]
        return [Case(args=m, expected=ckpt_bytes(*m), description="a hidden TinyLM") for m in models]
    if exercise_id == "train-get-batch":
        seed = lambda: GeneratorSeed(rng.randrange(10**6))  # noqa: E731
        return _with_expected(exercise_id, [
            ex.batch_case(seed(), n=9, batch_size=300, context_length=6, description="300 draws from 9 tokens"),
            ex.batch_case(seed(), n=2, batch_size=5, context_length=1, description="the shortest data there is"),
            ex.batch_case(seed(), n=30, batch_size=1, context_length=5, description="a batch of one"),
            ex.batch_case(seed(), n=1000, batch_size=64, context_length=100),
            *random_batch_cases(rng, 3)])
    if exercise_id == "train-lr-at-step":
        return _with_expected(exercise_id, [
            ex.lr_case((99, 1e-3, 1e-4, 100, 1000), "the last warm-up step"),
            ex.lr_case((101, 1e-3, 1e-4, 100, 1000), "the first decay step after the peak"),
            ex.lr_case((999, 2e-4, 2e-5, 10, 1000), "one step before the end"),
            ex.lr_case((5000, 1e-3, 1e-4, 100, 1000), "far past the end"),
            ex.lr_case((0, 1e-3, 1e-4, 0, 50), "no warm-up: the first step"),
            ex.lr_case((30, 5e-4, 0.0, 0, 30), "no warm-up, the schedule's last step"),
            *random_lr_cases(rng, 4)])
    if exercise_id == "train-accumulate":
        return _with_expected(exercise_id, [
            ex.accumulation_case(rng.randrange(10**6), features=6, classes=5, micro=3,
                                 accumulation=8, steps=2, description="8 micro-batches a step"),
            ex.accumulation_case(rng.randrange(10**6), features=2, classes=2, micro=1,
                                 accumulation=3, steps=4, description="micro-batches of one"),
            ex.accumulation_case(rng.randrange(10**6), features=rng.randint(2, 8), classes=rng.randint(2, 6),
                                 micro=rng.randint(1, 8), accumulation=rng.randint(2, 5), steps=rng.randint(2, 4))])
    if exercise_id == "train-resume":
        return [ex.resume_case(rng.randrange(10**6), 12, 1),
                ex.resume_case(rng.randrange(10**6), 12, 11),
                ex.resume_case(rng.randrange(10**6), 10, rng.randint(2, 8))]
    return []


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, practice=PRACTICE)
