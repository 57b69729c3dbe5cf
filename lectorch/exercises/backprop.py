"""Exercises of chapter 06, gradients and the 6× rule.

- ``backprop-mlp-backward`` (implement, the warm-up): the backward FLOPs of a stack of linear layers.
- ``backprop-time-ratio`` (predict, then measure): backward time over forward time.
- ``backprop-tied-flops`` (derive): the training FLOPs of an autoencoder whose decoder is the
  transpose of its encoder (tied weights).
- ``backprop-skip-grads`` (implement): the weight gradients of a ReLU layer with a skip connection,
  by hand.

Expected values are sealed; the plain values and the hidden cases live in ``grading/topics/backprop.py``.
Every function case's expected value comes from torch itself (FlopCounterMode, autograd), computed
there (``REFERENCE``); the package holds the public cases' results only as seals.
"""

from __future__ import annotations

from lectorch.i18n import tr

from dataclasses import dataclass

import torch

from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, how_far, public_cases

# the predict-then-measure ratio and the tied-weight FLOPs are functions of their setting: the
# page's numbers are the public case (sealed); the grader tries hidden ones (grading/topics/backprop.py)
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
    forward_and_backward: int = 0


def _compare_backward(got, expected: _Backward) -> str | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return tr("expected a number of FLOPs, got {type}.").format(type=type(got).__name__)
    if close(got, expected.value):
        return None
    if close(got, expected.forward):
        return (tr("your count equals the forward pass: that counts one matmul per layer, but the backward pass of "
               "a layer may need two."))
    if close(got, expected.all_inputs):
        return tr("your count is too large when x does not require grad: which gradient is nobody's?")
    if close(got, expected.forward_and_backward):
        return tr("your count is too large: it seems to include the forward pass; count the backward pass only.")
    return tr("{how_far}.").format(how_far=how_far(got, expected.value))


def backward_case(batch, widths, input_requires_grad, description) -> Case:
    """A case; its expected counts (FlopCounterMode's) are the grader's, sealed in the package."""
    return Case(args=(batch, list(widths)), kwargs={"input_requires_grad": input_requires_grad},
                description=description)


register(
    Exercise(
        id="backprop-mlp-backward",
        title="backward_flops(batch, widths, input_requires_grad=False) of a stack of linear layers",
        kind="function",
        refuse_what="the backward FLOP count",
        no_tensors=True,
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
        rtol=0.0,
        cases=public_cases("backprop-mlp-backward", (
            backward_case(32, [256, 256, 256, 10], False, "a 3-layer net, x is data"),
            backward_case(32, [256, 256, 256, 10], True, "the same net, x requires grad"),
            backward_case(1, [5, 1], False, "one layer"),
        )),
        summary=("runs backward_flops on 3 example nets (hidden ones when graded), exactly, against "
                 "FlopCounterMode's count"),
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
        refuse=(*_FLOP_COUNTERS, "lectorch.step_memory.step_flops"),
        hint=("Time follows work when every matmul runs at the same speed: how many matmuls of the "
              "forward's size does the backward pass of one layer do?",),
        slips={
            "backward-pass-does": ("as long as the forward pass: count the matmuls each layer's backward does, and "
                                   "which of them the first layer, whose input is data, skips."),
            "counts-forward-pass": ("that includes the forward pass: count the backward pass's matmuls alone, layer "
                                    "by layer, against the forward's; the first layer's input is data."),
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
            "x-data-encoder": "that counts a gradient no one needs: which inputs of the two matmuls require one?",
            "forward-pass-alone": "that is the forward pass alone.",
            "decoder-needs-gradient": "that leaves out a gradient the backward pass does need: which inputs of the two matmuls require one?",
        },
    )
)

# --- gradients through a ReLU and a skip connection (implement) -----------------------------------


def _int_tensor(gen: torch.Generator, *shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randint(-3, 4, shape, generator=gen).to(dtype)


def skip_case(seed: int, b: int, d: int, k: int, description: str, dtype: torch.dtype = torch.float64) -> Case:
    """Integers in [-3, 3]: every sum of the gradients is exact in float64, and in float32 up to
    2²⁴ (a 64×512×256 case stays far below), so the check can ask for autograd's values exactly."""
    gen = torch.Generator().manual_seed(seed)
    x, w1, w2 = (_int_tensor(gen, *shape, dtype=dtype) for shape in ((b, d), (d, d), (d, k)))
    return Case(args=(x, w1, w2), description=description)


def _compare_grads(got, expected) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return tr("return the pair (grad_w1, grad_w2).")
    for name, g, e in zip(("grad_w1", "grad_w2"), got, expected):
        if not isinstance(g, torch.Tensor):
            return tr("{name} should be a tensor, got {type}.").format(name=name, type=type(g).__name__)
        if tuple(g.shape) != tuple(e.shape):
            if tuple(g.shape) == tuple(e.shape)[::-1]:
                return tr("{name} has the transposed shape {shape}: a weight's gradient has the weight's shape.").format(name=name, shape=tuple(g.shape))
            return tr("{name} has shape {shape}: a weight's gradient has the weight's shape.").format(name=name, shape=tuple(g.shape))
        if not close(g, e):
            return tr("{name} has the right shape but different values.").format(name=name)
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
        rtol=0.0,
        cases=public_cases("backprop-skip-grads", (
            skip_case(6, 2, 3, 2, "B=2, D=3, K=2"),
            skip_case(7, 1, 2, 1, "a single example"),
            skip_case(8, 4, 5, 3, "B=4, D=5, K=3"),
        )),
        summary=("runs skip_grads on 3 small integer cases (hidden ones when graded, up to a 512-wide "
                 "layer) and compares with autograd, exactly (integers: any order of the sums is exact)"),
    )
)
