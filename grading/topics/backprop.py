"""Grading bundle of chapter 06 (backprop): plain expected values and hidden cases.

Not part of the student package. Values are computed here from torch's own counters.
"""

from __future__ import annotations

import dataclasses
import random

import torch
from torch import nn

from lectorch.exercises import backprop as ex
from grading.topics import Topic

B, D, H = 64, 512, 128


class TiedAutoencoder(nn.Module):
    """h = x @ W, y = h @ Wᵀ: one D×H matrix used twice (the exercise's model)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, hidden))

    def forward(self, x):
        return (x @ self.weight) @ self.weight.T


def tied_flops(batch: int = B, dim: int = D, hidden: int = H) -> int:
    from lectorch.backprop import measured_flops

    with torch.device("meta"):
        model, x = TiedAutoencoder(dim, hidden), torch.empty(batch, dim)
    return measured_flops(model, x).total


def backward_ratio(dim: int, num_layers: int) -> float:
    """Backward over forward FLOPs of a Cruncher: the time ratio when every matmul runs as fast."""
    from lectorch.backprop import cruncher_flops

    return cruncher_flops(1, dim, num_layers).ratio


EXPECTED = {
    # the physics, as the page derives it: each linear layer's backward does two matmuls of its
    # forward's size, the first layer one (its input is data): the time ratio follows the FLOP
    # ratio, (2·(L·D² + D) - D²) / (L·D² + D) = 1.875 for D = 4096, L = 8 (the page's case)
    "backprop-time-ratio": backward_ratio(4096, 8),
    "backprop-tied-flops": tied_flops(),
}


# --- references: the expected results of the function exercises, from torch itself --------------


def counted_backward(batch: int, widths, input_requires_grad: bool) -> ex._Backward:
    """Backward FLOPs counted by FlopCounterMode on the meta device (torch's own count), with the
    counts of the slips: the forward pass, every input's gradient, forward plus backward."""
    from lectorch.backprop import make_mlp, measured_flops

    with torch.device("meta"):
        model = make_mlp(list(widths))
        x = torch.empty(batch, widths[0])
    x.requires_grad_(input_requires_grad)
    m = measured_flops(model, x)
    x_grad = measured_flops(model, x.detach().requires_grad_(True))
    return ex._Backward(m.backward, m.forward, x_grad.backward, m.forward + m.backward)


def skip_grads_autograd(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor):
    """(∂w1, ∂w2) of ((relu(x @ w1) + x) @ w2).sum(), by autograd."""
    w1, w2 = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
    ((torch.relu(x @ w1) + x) @ w2).sum().backward()
    return w1.grad, w2.grad


REFERENCE = {
    "backprop-mlp-backward": lambda case: counted_backward(*case.args, **case.kwargs),
    "backprop-skip-grads": lambda case: skip_grads_autograd(*case.args),
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return [dataclasses.replace(c, expected=REFERENCE[exercise_id](c)) for c in cases]


def random_mlp_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        depth = rng.randint(1, 5)
        widths = [rng.randint(1, 300) for _ in range(depth + 1)]
        batch = rng.randint(1, 64)
        grad = rng.random() < 0.5
        cases.append(ex.backward_case(batch, widths, grad, f"random widths {widths}, batch {batch}, "
                                      f"input_requires_grad={grad}"))
    return cases


def random_skip_cases(rng: random.Random, n: int = 3) -> list:
    out = []
    for _ in range(n):
        b, d, k = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        out.append(ex.skip_case(rng.randrange(2**31), b, d, k, f"random integers, B={b}, D={d}, K={k}"))
    return out


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    from lectorch.exercises import Case

    if exercise_id == "backprop-time-ratio":  # shallow stacks: the first layer's missing input gradient shows
        settings = [(128, 1), (rng.choice([256, 1024]), 2), (rng.choice([64, 512]), 3), (2048, rng.randint(10, 40))]
        return [Case(args=s, expected=backward_ratio(*s), description="a hidden Cruncher") for s in settings]
    if exercise_id == "backprop-tied-flops":
        settings = [(1, 1, 1), (rng.randint(2, 300), rng.randint(2, 300), rng.randint(2, 300)),
                    (rng.choice([8, 32, 128]), rng.choice([768, 1024, 4096]), rng.choice([16, 64, 256]))]
        return [Case(args=s, expected=tied_flops(*s), description="a hidden autoencoder") for s in settings]
    if exercise_id == "backprop-mlp-backward":
        return _with_expected(exercise_id, [
            ex.backward_case(3, [17, 1, 40, 9], False, "a bottleneck of width 1"),
            ex.backward_case(128, [1024, 4096, 1024], True, "a wide MLP block, x requires grad"),
            ex.backward_case(5, [2, 3, 4, 5, 6, 7, 8], False, "six layers of growing width"),
            *random_mlp_cases(rng, 4)])
    if exercise_id == "backprop-skip-grads":
        return _with_expected(exercise_id, [
            ex.skip_case(100, 1, 1, 1, "1×1 matrices"),
            ex.skip_case(101, 8, 4, 1, "one output"),
            # 393 216 weights: estimating each gradient entry from two runs of the loss (finite
            # differences) takes hours, the chain rule a few matmuls (float32 keeps the bundle small)
            ex.skip_case(102, 64, 512, 256, "a wide layer, B=64, D=512, K=256", dtype=torch.float32),
            *random_skip_cases(rng, 5)])
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "backprop-time-ratio": {
        "backward-pass-does": 1.0,
        "counts-forward-pass": 3.0,
    },
    "backprop-tied-flops": {
        "6-tokens-parameters": 25165824.0,
        "x-data-encoder": 50331648.0,
        "forward-pass-alone": 16777216.0,
        "decoder-needs-gradient": 33554432.0,
    },
}


def _practice() -> dict:
    from lectorch.exercises import Case

    return {
        # shallow stacks, where the first layer's missing input gradient shows: a constant fails
        "backprop-time-ratio": [Case(args=s, expected=backward_ratio(*s), description=d) for s, d in [
            ((4096, 1), "D = 4096, one layer"), ((4096, 2), "D = 4096, 2 layers"), ((1024, 4), "D = 1024, 4 layers")]],
        "backprop-tied-flops": [Case(args=s, expected=tied_flops(*s), description=d) for s, d in [
            ((8, 16, 4), "B = 8, D = 16, H = 4"), ((1, 100, 300), "B = 1, D = 100, H = 300")]],
    }


#: public practice settings (answers sealed in the package)
PRACTICE = {"backprop-time-ratio": lambda: _practice()["backprop-time-ratio"],
            "backprop-tied-flops": lambda: _practice()["backprop-tied-flops"]}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
