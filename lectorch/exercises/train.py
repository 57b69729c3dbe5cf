"""Exercises of chapter 09, the training loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lectorch.exercises import Case, Exercise, register
from lectorch.train import cosine_lr, predicted_saved_bytes

# ------------------------------------------------------------------------------------ get_batch

_OFFSET = 1000  # data[i] = 1000 + i: every token is unique, so a row's first token tells its start


def _stream(n: int) -> np.ndarray:
    return (_OFFSET + np.arange(n)).astype(np.uint16)


def _check_batch(got: Any, spec: dict) -> str | None:
    """None if ``got`` is a valid (inputs, targets) batch for ``spec``; else a message (no answers given away)."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return a pair (inputs, targets)."
    x, y = got
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        return "inputs and targets must both be torch tensors."
    b, t, n = spec["batch_size"], spec["context_length"], spec["n"]
    if tuple(x.shape) != (b, t) or tuple(y.shape) != (b, t):
        return (f"inputs and targets must have shape (batch_size, context_length); yours have "
                f"{tuple(x.shape)} and {tuple(y.shape)}.")
    if x.dtype != torch.int64 or y.dtype != torch.int64:
        return f"token ids must be int64 (what nn.Embedding and cross_entropy expect); yours are {x.dtype} and {y.dtype}."
    if x.device.type != spec["device"] or y.device.type != spec["device"]:
        return f"the batch must be on the requested device; yours is on {x.device}."
    x, y = x.cpu(), y.cpu()
    if not torch.equal(x[:, 1:], y[:, :-1]):
        return "the targets must be the inputs shifted by one position (the next tokens)."
    starts = x[:, 0] - _OFFSET
    if int(starts.min()) < 0 or int(starts.max()) > n - t - 1:
        return "a window starts outside the data (or so late that its last target would not exist)."
    windows = starts[:, None] + torch.arange(t + 1) + _OFFSET
    if not torch.equal(x, windows[:, :-1]) or not torch.equal(y, windows[:, 1:]):
        return "each row must be a contiguous window of the data, and each target the token after its input."
    if spec.get("cover"):
        drawn = set(starts.tolist())
        if len(drawn) < n - t:
            missing = "the last valid start" if (n - t - 1) not in drawn else "some valid starts"
            return f"over many draws {missing} never came up: starts must be uniform over all of them."
    return None


def _batch_case(n: int, b: int, t: int, description: str, *, cover: bool = False, seed: int = 0) -> Case:
    return Case(args=(_stream(n), b, t, "cpu"), kwargs={"generator": torch.Generator().manual_seed(seed)},
                expected={"n": n, "batch_size": b, "context_length": t, "device": "cpu", "cover": cover},
                description=description)


register(
    Exercise(
        id="train-get-batch",
        title="get_batch(data, batch_size, context_length, device, generator=None)",
        kind="function",
        hint=("a window holds context_length + 1 tokens, so the valid starts are 0 … len(data) - context_length - 1, "
              "all equally likely (draw them with the generator); inputs are a window without its last token, "
              "targets without its first; int64, on device; raise ValueError if context_length >= len(data)."),
        compare=_check_batch,
        cases=(
            _batch_case(100, 4, 8, "4 windows of 8 tokens from 100 tokens"),
            _batch_case(12, 400, 8, "many draws from short data: every valid start must come up", cover=True, seed=1),
            _batch_case(50, 1, 49, "one window as long as the data allows"),
            Case(args=(_stream(8), 2, 8, "cpu"), raises=ValueError,
                 description="context_length equal to the data length must raise ValueError"),
        ),
    )
)

# ------------------------------------------------------------------------------------ the LR


def _lr(step, max_lr, min_lr, warmup_steps, total_steps):
    return cosine_lr(step, max_lr=max_lr, min_lr=min_lr, warmup_steps=warmup_steps, total_steps=total_steps)


_LR_CASES = [
    ((0, 1e-3, 1e-4, 100, 1000), "the very first step"),
    ((50, 1e-3, 1e-4, 100, 1000), "half-way through the warm-up"),
    ((100, 1e-3, 1e-4, 100, 1000), "the end of the warm-up"),
    ((550, 1e-3, 1e-4, 100, 1000), "half-way through the decay"),
    ((325, 6e-4, 6e-5, 100, 1000), "a quarter of the way through the decay"),
    ((1000, 1e-3, 1e-4, 100, 1000), "the last step"),
    ((1500, 1e-3, 1e-4, 100, 1000), "past the end of the schedule"),
    ((7, 3e-4, 0.0, 0, 10), "no warm-up at all"),
]

register(
    Exercise(
        id="train-lr-at-step",
        title="lr_at(step, max_lr, min_lr, warmup_steps, total_steps): cosine with linear warm-up",
        kind="function",
        rtol=1e-9,
        atol=1e-15,
        hint=("warm-up: max_lr·step/warmup_steps; then min_lr + (max_lr - min_lr)·(1 + cos(π·p))/2 with "
              "p = (step - warmup_steps)/(total_steps - warmup_steps); min_lr from total_steps on."),
        cases=tuple(Case(args=args, expected=_lr(*args), description=desc) for args, desc in _LR_CASES),
    )
)

# ----------------------------------------------------------------------- saved activation bytes

_SAVED_CASES = [
    ((4, 8, 16, 2, 32, False), "the small model measured in the chapter"),
    ((4, 8, 16, 2, 32, True), "the same with activation checkpointing"),
    ((16, 32, 64, 4, 64, False), "the panel's model at batch 16"),
    ((16, 32, 64, 4, 64, True), "the panel's model at batch 16, checkpointed"),
    ((1, 1, 8, 1, 8, False), "one token"),
    ((8, 128, 256, 12, 1000, True), "a deeper model, checkpointed"),
]

register(
    Exercise(
        id="train-saved-bytes",
        title="saved_bytes(batch_size, context_length, dim, num_layers, vocab_size, checkpointing) for an fp32 TinyLM",
        kind="function",
        rtol=0.0,
        hint=("per block 9·B·T·D floats without checkpointing (inputs of both matmuls and of the GELU), B·T·D with; "
              "plus the head's input B·T·D and the log-probabilities B·T·V (4 bytes each), the int64 ids and "
              "targets (8·B·T bytes each), and the loss's 4-byte total_weight."),
        cases=tuple(Case(args=args[:5], kwargs={"checkpointing": args[5]},
                         expected=predicted_saved_bytes(*args[:5], checkpointing=args[5]), description=desc)
                    for args, desc in _SAVED_CASES),
    )
)
