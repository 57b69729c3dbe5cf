"""Exercises of chapter 06, gradients and the 6× rule."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lectorch.backprop import mlp_flops
from lectorch.exercises import Case, Exercise, register


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
        return (f"{got!r} is too small: that counts the weight gradients only; every layer after the first also "
                "needs its input gradient.")
    if got == expected.all_inputs:
        return f"{got!r} is too large: the first layer needs no input gradient when x does not require grad."
    if got == expected.value + expected.forward:
        return f"{got!r} is too large: that includes the forward pass; count the backward pass only."
    return f"{got!r} is {'too large' if got > expected.value else 'too small'}."


def _backward_case(batch, widths, input_requires_grad, description):
    flops = mlp_flops(batch, widths, input_requires_grad=input_requires_grad)
    everything = mlp_flops(batch, widths, input_requires_grad=True)
    expected = _Backward(flops.backward, flops.forward, everything.backward)
    return Case(args=(batch, widths), kwargs={"input_requires_grad": input_requires_grad}, expected=expected,
                description=description)


register(
    Exercise(
        id="backprop-mlp-backward",
        title="backward_flops(batch, widths, input_requires_grad=False) of a stack of linear layers",
        kind="function",
        hint="layer i (D_i → D_{i+1}) costs 2·B·D_i·D_{i+1} for its weight gradient, and as much again for "
             "its input gradient, which the first layer needs only if x requires grad.",
        compare=_compare_backward,
        cases=(
            _backward_case(32, [256, 256, 256, 10], False, "a 3-layer net, x is data"),
            _backward_case(32, [256, 256, 256, 10], True, "the same net, x requires grad"),
            _backward_case(7, [100, 3, 50, 2], False, "uneven widths"),
            _backward_case(1, [5, 1], False, "one layer"),
            _backward_case(1, [5, 1], True, "one layer, x requires grad"),
        ),
    )
)

register(
    Exercise(
        id="backprop-training-flops",
        title="training FLOPs of 1.3e9 parameters on 26e9 tokens by the 6 × tokens × parameters rule",
        kind="value",
        expected=6 * 1.3e9 * 26e9,
        rtol=1e-3,
        hint="2 FLOPs per parameter and token forward, 4 backward.",
        slips={
            1 / 3: "that is the forward pass alone (2 × tokens × parameters).",
            2 / 3: "that is the backward pass alone (4 × tokens × parameters); add the forward.",
            1 / 2: "a multiply-add is 2 FLOPs, not 1.",
            1 / 6: "that is tokens × parameters: each costs 6 FLOPs in training.",
        },
    )
)


def _grads(x, w1, w2):
    w1, w2 = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
    (x @ w1 @ w2).sum().backward()
    return w1.grad, w2.grad


def _int_tensor(gen, *shape):
    return torch.randint(-3, 4, shape, generator=gen).to(torch.float64)


def _grad_cases():
    gen = torch.Generator().manual_seed(6)
    cases = []
    for (b, d, k), description in [((2, 3, 2), "B=2, D=3, K=2"), ((1, 2, 1), "a single example"),
                                   ((4, 5, 3), "B=4, D=5, K=3"), ((3, 1, 4), "D=1")]:
        x, w1, w2 = _int_tensor(gen, b, d), _int_tensor(gen, d, d), _int_tensor(gen, d, k)
        cases.append(Case(args=(x, w1, w2), expected=_grads(x, w1, w2), description=description))
    return tuple(cases)


register(
    Exercise(
        id="backprop-exact-gradient",
        title="two_layer_grads(x, w1, w2): the gradients of (x @ w1 @ w2).sum() by hand",
        kind="function",
        rtol=0.0,
        atol=0.0,
        hint="∂loss/∂h2 is all ones (B×K); then ∂w2 = h1ᵀ @ ∂h2, ∂h1 = ∂h2 @ w2ᵀ, ∂w1 = xᵀ @ ∂h1. "
             "Return the pair (grad_w1, grad_w2).",
        cases=_grad_cases(),
    )
)
