"""Chapter 09's function exercises (train-get-batch, train-lr-at-step, train-accumulate, train-
resume) answered as a student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import math
import os
import tempfile

import torch
import torch.nn.functional as F


def get_batch(data, batch_size, context_length, device, generator=None):
    if context_length >= len(data):
        raise ValueError(f"context_length={context_length} must be smaller than len(data)={len(data)}")
    starts = torch.randint(len(data) - context_length, (batch_size,), generator=generator)
    windows = data[starts[:, None] + torch.arange(context_length + 1)].long()
    return windows[:, :-1].to(device), windows[:, 1:].to(device)


def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (max_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))


def accumulated_training(weight, micro_batches, accumulation, lr=0.1):
    model = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=weight.dtype)
    with torch.no_grad():
        model.weight.copy_(weight)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        loss = F.cross_entropy(model(x), y) / accumulation
        loss.backward()
        if (i + 1) % accumulation == 0:
            optimizer.step()
            optimizer.zero_grad()
    return model.weight.detach()


def buggy_accumulation(*, zero_inside=False, divide=True, zero_ever=True, zero_before_step=False):
    def run(weight, micro_batches, accumulation, lr=0.1):
        model = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=weight.dtype)
        with torch.no_grad():
            model.weight.copy_(weight)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for i, (x, y) in enumerate(micro_batches):
            if zero_inside:
                optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y) / (accumulation if divide else 1)
            loss.backward()
            if (i + 1) % accumulation == 0:
                if zero_before_step:
                    optimizer.zero_grad()
                optimizer.step()
                if zero_ever and not zero_inside:
                    optimizer.zero_grad()
        return model.weight.detach()

    return run


def resumable(*, optimizer_state=True, order_state=True, torch_rng=True):
    """The snippet of train-resume with its checkpoint fixed (all flags on) or partly fixed."""

    def train_with_restart(tokens, num_steps, crash_at=None):
        def fresh_run():
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Dropout(0.1),
                                        torch.nn.Linear(16, 64))
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
            order = torch.Generator().manual_seed(1)
            return model, optimizer, order

        def save(path, model, optimizer, order, step, losses):
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "order": order.get_state(), "torch_rng": torch.get_rng_state(),
                        "step": step, "losses": losses}, path)

        def load(path, model, optimizer, order):
            state = torch.load(path, weights_only=True)
            model.load_state_dict(state["model"])
            if optimizer_state:
                optimizer.load_state_dict(state["optimizer"])
            if order_state:
                order.set_state(state["order"])
            if torch_rng:
                torch.set_rng_state(state["torch_rng"])
            return state["step"], state["losses"]

        model, optimizer, order = fresh_run()
        step, losses = 0, []
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "ckpt.pt")
            while step < num_steps:
                if step == crash_at:
                    save(path, model, optimizer, order, step, losses)
                    model, optimizer, order = fresh_run()
                    step, losses = load(path, model, optimizer, order)
                    crash_at = None
                starts = torch.randint(len(tokens) - 16, (8,), generator=order)
                x = torch.stack([tokens[s:s + 16] for s in starts])
                y = torch.stack([tokens[s + 1:s + 17] for s in starts])
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                losses.append(loss.item())
                step += 1
        return losses, model[2].weight.detach()

    return train_with_restart

