"""Exercises of chapter 06, gradients and the 6× rule.

- ``backprop-mlp-backward`` (implement, the warm-up): the backward FLOPs of a stack of linear layers.
- ``backprop-time-ratio`` (predict, then measure): backward time over forward time.
- ``backprop-tied-flops`` (derive): the training FLOPs of an autoencoder whose decoder is the
  transpose of its encoder (tied weights).
- ``backprop-skip-grads`` (implement): the weight gradients of a ReLU layer with a skip connection,
  by hand.

Expected values are sealed; the plain values and the hidden cases live in ``grading/backprop.py``.
Every function case's expected value comes from torch itself (FlopCounterMode, autograd).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from lectorch.backprop import make_mlp, measured_flops, mlp_flops
from lectorch.exercises import Case, Exercise, Sealed, register

# the predict-then-measure ratio and the tied-weight FLOPs are functions of their setting: the
# page's numbers are the public case (sealed); the grader tries hidden ones (grading/backprop.py)
_TIME_RATIO = Sealed.stored("backprop-time-ratio")
_TIED = Sealed.stored("backprop-tied-flops")
_FLOP_COUNTERS = ("lectorch.backprop.mlp_flops", "lectorch.backprop.cruncher_flops", "lectorch.backprop.measured_flops",
                  "torch.utils.flop_counter.FlopCounterMode")

# --- backward FLOPs of an MLP (warm-up) ------------------------------------------------------------


@dataclass(frozen=True)
class _Backward:
    """What a backward-FLOPs case expects, and the answers that reveal a known slip."""

    value: int
    forward: int
    all_inputs: int  # the backward if the first layer's input gradient were computed too


def _compare_backward(got, expected: _Backward) -> str | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return f"expected a number of FLOPs, got {type(got).__name__}."
    if got == expected.value:
        return None
    if got == expected.forward:
        return ("your count equals the forward pass: that counts one matmul per layer, but the "
                "backward pass of a layer may need two.")
    if got == expected.all_inputs:
        return "your count is too large when x does not require grad: which gradient is nobody's?"
    if got == expected.value + expected.forward:
        return "your count is too large: it seems to include the forward pass; count the backward pass only."
    return f"{got!r} is {'too large' if got > expected.value else 'too small'}."


def counted_backward(batch: int, widths, input_requires_grad: bool) -> _Backward:
    """Backward FLOPs counted by FlopCounterMode on the meta device (torch's own count)."""
    with torch.device("meta"):
        model = make_mlp(list(widths))
        x = torch.empty(batch, widths[0])
    x.requires_grad_(input_requires_grad)
    m = measured_flops(model, x)
    x_grad = measured_flops(model, x.detach().requires_grad_(True))
    return _Backward(m.backward, m.forward, x_grad.backward)


def predicted_backward(batch: int, widths, input_requires_grad: bool) -> _Backward:
    """The same numbers from lectorch's predictor (tests/test_backprop.py checks it against the counter)."""
    f, everything = mlp_flops(batch, widths, input_requires_grad=input_requires_grad), mlp_flops(
        batch, widths, input_requires_grad=True)
    return _Backward(f.backward, f.forward, everything.backward)


def backward_case(batch, widths, input_requires_grad, description, *, count: bool = True) -> Case:
    """A case whose expected value FlopCounterMode counts (``count=False``: lectorch predicts it,
    which is cheap enough to do at import time for the public cases)."""
    expected = (counted_backward if count else predicted_backward)(batch, widths, input_requires_grad)
    return Case(args=(batch, list(widths)), kwargs={"input_requires_grad": input_requires_grad},
                expected=expected, description=description)


def random_mlp_cases(rng: random.Random, n: int = 3) -> list[Case]:
    cases = []
    for _ in range(n):
        depth = rng.randint(1, 5)
        widths = [rng.randint(1, 300) for _ in range(depth + 1)]
        batch = rng.randint(1, 64)
        grad = rng.random() < 0.5
        cases.append(backward_case(batch, widths, grad, f"random widths {widths}, batch {batch}, "
                                   f"input_requires_grad={grad}"))
    return cases


register(
    Exercise(
        id="backprop-mlp-backward",
        title="backward_flops(batch, widths, input_requires_grad=False) of a stack of linear layers",
        kind="function",
        refuse_what="the backward FLOP count",
        refuse=(
            "lectorch.backprop.mlp_flops",
            "lectorch.backprop.cruncher_flops",
            "lectorch.backprop.measured_flops",
            "lectorch.backprop.predicted_and_measured",
            "lectorch.flops.count_flops",
            "lectorch.step_memory.step_flops",
            "torch.utils.flop_counter.FlopCounterMode",
        ),
        hint=("Go layer by layer from the loss backwards: which matmuls does each layer's backward do, "
              "and what does each cost next to its forward matmul?",
              "The first layer's input is x: does anyone need ∂x when x does not require grad?"),
        compare=_compare_backward,
        cases=(
            backward_case(32, [256, 256, 256, 10], False, "a 3-layer net, x is data", count=False),
            backward_case(32, [256, 256, 256, 10], True, "the same net, x requires grad", count=False),
            backward_case(1, [5, 1], False, "one layer", count=False),
        ),
        generate=random_mlp_cases,
        summary="runs backward_flops on 3 example nets and 3 random ones, against FlopCounterMode's count",
    )
)

# --- backward / forward time (predict, then measure) ----------------------------------------------

register(
    Exercise(
        id="backprop-time-ratio",
        title="backward_ratio(dim, num_layers): backward time / forward time of a Cruncher",
        kind="prediction",
        expected=_TIME_RATIO,
        cases=(Case(args=(4096, 8), expected=_TIME_RATIO, description="D = 4096, 8 layers (the GPU's run)"),),
        rtol=_TIME_RATIO.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        refuse=_FLOP_COUNTERS,
        hint=("Time follows work when every matmul runs at the same speed: how many matmuls of the "
              "forward's size does the backward pass of one layer do?",),
        slips={
            "backward-pass-does": "as long as the forward pass: the backward pass of a layer does more matmuls than its forward.",
            "counts-forward-pass": "that counts the forward pass too; the question is backward over forward.",
        },
    )
)

# --- training FLOPs with tied weights (derive) ----------------------------------------------------

register(
    Exercise(
        id="backprop-tied-flops",
        title="tied_flops(batch, dim, hidden): training FLOPs of a tied-weight autoencoder",
        kind="value",
        expected=_TIED,
        cases=(Case(args=(64, 512, 128), expected=_TIED, description="B = 64, D = 512, H = 128"),),
        rtol=_TIED.rtol,
        refuse_what="the FLOP count",
        no_tensors=True,
        refuse=_FLOP_COUNTERS,
        hint=("Count uses, not parameters: W takes part in two matmuls forward; each of them has its "
              "own backward matmuls.",
              "The decoder's input h is an activation (its gradient is needed); the encoder's input x "
              "is data."),
        slips={
            "6-tokens-parameters": "that is the 6 × tokens × parameters rule; the rule assumes one use per parameter.",
            "x-data-encoder": "x is data: the encoder's input gradient is never computed.",
            "forward-pass-alone": "that is the forward pass alone.",
            "decoder-needs-gradient": "the decoder needs the gradient of its input h too, not only of W.",
        },
    )
)

# --- gradients through a ReLU and a skip connection (implement) -----------------------------------


def skip_grads_autograd(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor):
    """(∂w1, ∂w2) of ((relu(x @ w1) + x) @ w2).sum(), by autograd."""
    w1, w2 = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
    ((torch.relu(x @ w1) + x) @ w2).sum().backward()
    return w1.grad, w2.grad


def _int_tensor(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(-3, 4, shape, generator=gen).to(torch.float64)


def skip_case(seed: int, b: int, d: int, k: int, description: str) -> Case:
    gen = torch.Generator().manual_seed(seed)
    x, w1, w2 = _int_tensor(gen, b, d), _int_tensor(gen, d, d), _int_tensor(gen, d, k)
    return Case(args=(x, w1, w2), expected=skip_grads_autograd(x, w1, w2), description=description)


def random_skip_cases(rng: random.Random, n: int = 3) -> list[Case]:
    out = []
    for _ in range(n):
        b, d, k = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 4)
        out.append(skip_case(rng.randrange(2**31), b, d, k, f"random integers, B={b}, D={d}, K={k}"))
    return out


def _compare_grads(got, expected) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (grad_w1, grad_w2)."
    for name, g, e in zip(("grad_w1", "grad_w2"), got, expected):
        if not isinstance(g, torch.Tensor):
            return f"{name} should be a tensor, got {type(g).__name__}."
        if tuple(g.shape) != tuple(e.shape):
            if tuple(g.shape) == tuple(e.shape)[::-1]:
                return f"{name} has the transposed shape {tuple(g.shape)}: a weight's gradient has the weight's shape."
            return f"{name} has shape {tuple(g.shape)}: a weight's gradient has the weight's shape."
        if not torch.equal(g.detach().to(e.dtype), e):
            return f"{name} has the right shape but different values."
    return None


register(
    Exercise(
        id="backprop-skip-grads",
        title="skip_grads(x, w1, w2): the gradients of ((relu(x @ w1) + x) @ w2).sum() by hand",
        kind="function",
        refuse_what="the gradients by hand",
        refuse=(
            "torch.Tensor.backward",
            "torch.autograd.backward",
            "torch.autograd.grad",
            "torch.func.grad",
            "torch.func.vjp",
            "torch.func.jacrev",
            "torch.func.grad_and_value",
        ),
        hint=("Write the forward pass in named steps (z = x @ w1, a = relu(z), s = a + x, out = s @ w2) "
              "and go back one step at a time: which tensor does each weight gradient multiply?",
              "A sum passes its gradient unchanged to both inputs; a ReLU passes it only where its input "
              "was positive (torch takes the derivative at 0 to be 0)."),
        compare=_compare_grads,
        cases=(
            skip_case(6, 2, 3, 2, "B=2, D=3, K=2"),
            skip_case(7, 1, 2, 1, "a single example"),
            skip_case(8, 4, 5, 3, "B=4, D=5, K=3"),
        ),
        generate=random_skip_cases,
        summary="runs skip_grads on 6 small integer cases (3 random) and compares with autograd, exactly",
    )
)
