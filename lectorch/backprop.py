"""Backward-pass accounting: the FLOPs of forward and backward matmuls, predicted and counted.

A linear layer ``h = x @ w`` with x (B, D) and w (D, K) costs 2·B·D·K FLOPs forward. Backward it
costs two matmuls of the same size: ``w.grad = x.T @ h.grad`` (2·B·D·K) and, only if something
before the layer needs a gradient, ``x.grad = h.grad @ w.T`` (2·B·D·K). So backward ≈ 2 × forward
and training ≈ 6 × tokens × parameters, except that the first layer needs no input gradient.

>>> flops = mlp_flops(batch=4, widths=[8, 8, 2])     # x (4, 8) -> w1 (8, 8) -> w2 (8, 2)
>>> flops.forward, flops.backward_weight, flops.backward_input
(640, 640, 128)
>>> measured_flops(make_mlp([8, 8, 2]), torch.ones(4, 8)).backward == flops.backward
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from lectorch import _validate
from lectorch.flops import linear_flops
from lectorch.models import Linear


@dataclass(frozen=True)
class LayerFlops:
    """FLOPs of one linear layer (in_features -> out_features) in the forward and backward pass."""

    in_features: int
    out_features: int
    forward: int
    backward_weight: int
    backward_input: int

    @property
    def backward(self) -> int:
        return self.backward_weight + self.backward_input

    @property
    def total(self) -> int:
        return self.forward + self.backward


class _ForwardBackward:
    """``total`` and ``ratio`` of anything with ``forward`` and ``backward`` FLOPs."""

    forward: int
    backward: int

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def ratio(self) -> float:
        """backward / forward: 2 when every layer computes its input gradient, less otherwise."""
        return self.backward / self.forward


@dataclass(frozen=True)
class BackpropFlops(_ForwardBackward):
    """Predicted FLOPs of a stack of linear layers: per layer (``layers``) and in total."""

    batch: int
    layers: tuple[LayerFlops, ...]

    @property
    def forward(self) -> int:
        return sum(layer.forward for layer in self.layers)

    @property
    def backward_weight(self) -> int:
        return sum(layer.backward_weight for layer in self.layers)

    @property
    def backward_input(self) -> int:
        return sum(layer.backward_input for layer in self.layers)

    @property
    def backward(self) -> int:
        return self.backward_weight + self.backward_input

    @property
    def num_parameters(self) -> int:
        return sum(layer.in_features * layer.out_features for layer in self.layers)

    def as_dict(self) -> dict[str, int]:
        """The totals as a plain dict.

        >>> mlp_flops(1, [2, 3]).as_dict()
        {'forward': 12, 'backward_weight': 12, 'backward_input': 0, 'backward': 12, 'total': 24}
        """
        return {
            "forward": self.forward, "backward_weight": self.backward_weight, "backward_input": self.backward_input,
            "backward": self.backward, "total": self.total,
        }


def _widths(widths: Any) -> tuple[int, ...]:
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
        raise TypeError(f"widths must be a sequence of ints such as [512, 512, 10], got {widths!r}")
    if len(widths) < 2:
        raise ValueError(
            f"widths needs at least 2 entries (input width, then each layer's output width), got {list(widths)}"
        )
    return tuple(_validate.positive_int(f"widths[{i}]", d) for i, d in enumerate(widths))


def mlp_flops(batch: int, widths: Sequence[int], *, input_requires_grad: bool = False) -> BackpropFlops:
    """FLOPs of a stack of bias-free linear layers ``widths[0] -> widths[1] -> … -> widths[-1]``.

    ``batch`` is the number of rows the layers see (batch × sequence length for token inputs).
    Each layer costs 2·B·D·K forward and 2·B·D·K for its weight gradient; its input gradient
    (another 2·B·D·K) is needed by every layer but the first, and by the first only when the
    input requires grad. Activations in between (ReLU, …) are not matmuls and add no FLOPs here.

    >>> f = mlp_flops(2, [3, 3, 1])
    >>> [(l.forward, l.backward_weight, l.backward_input) for l in f.layers]
    [(36, 36, 0), (12, 12, 12)]
    >>> mlp_flops(2, [3, 3, 1], input_requires_grad=True).backward_input
    48
    """
    batch = _validate.positive_int("batch", batch)
    widths = _widths(widths)
    if not isinstance(input_requires_grad, bool):
        raise TypeError(f"input_requires_grad must be True or False, got {input_requires_grad!r}")
    layers = []
    for i, (d, k) in enumerate(zip(widths[:-1], widths[1:])):
        flops = linear_flops(batch, d, k)
        needs_input_grad = i > 0 or input_requires_grad
        layers.append(LayerFlops(d, k, forward=flops, backward_weight=flops, backward_input=flops if needs_input_grad else 0))
    return BackpropFlops(batch=batch, layers=tuple(layers))


def cruncher_widths(dim: int, num_layers: int) -> tuple[int, ...]:
    """The widths of :class:`lectorch.models.Cruncher`: ``num_layers`` D×D layers, then a D×1 head.

    >>> cruncher_widths(4, 2)
    (4, 4, 4, 1)
    """
    dim = _validate.positive_int("dim", dim)
    num_layers = _validate.positive_int("num_layers", num_layers)
    return (dim,) * (num_layers + 1) + (1,)


def cruncher_flops(batch: int, dim: int, num_layers: int, *, input_requires_grad: bool = False) -> BackpropFlops:
    """FLOPs of ``lectorch.models.Cruncher(dim, num_layers)`` on a (batch, dim) input.

    Forward 2·B·(L·D² + D); backward twice that, less 2·B·D² for the first layer's input gradient.

    >>> f = cruncher_flops(batch=8, dim=16, num_layers=3)
    >>> f.forward == 2 * 8 * (3 * 16**2 + 16), f.backward == 2 * f.forward - 2 * 8 * 16**2
    (True, True)
    """
    return mlp_flops(batch, cruncher_widths(dim, num_layers), input_requires_grad=input_requires_grad)


def attention_flops(batch: int, seq_len: int, dim: int) -> dict[str, int]:
    """FLOPs of the two attention matmuls ``softmax(q @ k.T) @ v`` for q, k, v of shape (B, T, D).

    Forward: q @ k.T and p @ v cost 2·B·T²·D each. Backward: each needs both of its input
    gradients (q, k, v and p all depend on weights), so 4 matmuls of that size. These FLOPs grow
    with T² and involve no parameter: they are not in 6 × tokens × parameters. (Causal masking
    could halve them; plain matmuls, as counted here, do not.) Heads split D and do not change it.

    >>> attention_flops(batch=1, seq_len=4, dim=8)
    {'forward': 512, 'backward': 1024, 'total': 1536}
    """
    batch = _validate.positive_int("batch", batch)
    seq_len = _validate.positive_int("seq_len", seq_len)
    dim = _validate.positive_int("dim", dim)
    one = 2 * batch * seq_len * seq_len * dim
    return {"forward": 2 * one, "backward": 4 * one, "total": 6 * one}


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain (non-causal, single-head) attention ``softmax(q @ kᵀ / √D) @ v`` with explicit matmuls.

    >>> attention(torch.ones(1, 3, 2), torch.ones(1, 3, 2), torch.ones(1, 3, 2)).shape
    torch.Size([1, 3, 2])
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.ndim < 2 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(
            f"q, k and v must have the same shape (..., T, D), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(dim=-1) @ v


def make_mlp(widths: Sequence[int], *, activation: Callable[[], nn.Module] | None = None) -> nn.Sequential:
    """A stack of bias-free :class:`lectorch.models.Linear` layers with the given widths.

    ``activation`` (e.g. ``nn.ReLU``) is put between layers; it costs no matmul FLOPs.
    Build it under ``torch.device("meta")`` to count FLOPs of huge layers without memory.

    >>> make_mlp([8, 4, 2], activation=nn.ReLU)
    Sequential(
      (0): Linear()
      (1): ReLU()
      (2): Linear()
    )
    """
    widths = _widths(widths)
    if activation is not None and not callable(activation):
        raise TypeError(f"activation must be a module class such as nn.ReLU, got {activation!r}")
    layers: list[nn.Module] = []
    for i, (d, k) in enumerate(zip(widths[:-1], widths[1:])):
        if i > 0 and activation is not None:
            layers.append(activation())
        layers.append(Linear(d, k))
    return nn.Sequential(*layers)


@dataclass(frozen=True)
class MeasuredFlops(_ForwardBackward):
    """FLOPs counted by ``FlopCounterMode`` in a forward and a backward pass, in total and per module.

    ``*_by_module`` maps FlopCounterMode's module names (e.g. ``"Cruncher.layers.0"``) to FLOPs.
    """

    forward: int
    backward: int
    forward_by_module: dict[str, int] = field(default_factory=dict)
    backward_by_module: dict[str, int] = field(default_factory=dict)


def _per_module(counts: dict[str, dict[Any, int]]) -> dict[str, int]:
    return {name: int(sum(ops.values())) for name, ops in counts.items() if name != "Global"}


def _sum_loss(out: torch.Tensor) -> torch.Tensor:
    return out.sum()


def measured_flops(
    model: nn.Module, x: torch.Tensor, *, loss_fn: Callable[[torch.Tensor], torch.Tensor] | None = None
) -> MeasuredFlops:
    """Count the FLOPs of ``loss_fn(model(x))`` forward and of its backward pass, separately.

    Both run under one ``torch.utils.flop_counter.FlopCounterMode``; the counts are read after the
    forward and again after the backward. The backward is ``loss.backward()``: it computes the
    gradient of every parameter that requires grad, and of ``x`` if it requires grad. Afterwards
    the parameters' ``.grad`` are put back as they were (x is used through a detached copy), so
    counting leaves no trace. ``loss_fn`` defaults to ``out.sum()``; element-wise losses add no
    matmul FLOPs. Works on the meta device (shapes only, no data, no memory).

    >>> m = measured_flops(make_mlp([8, 8, 2]), torch.ones(4, 8))
    >>> m.forward, m.backward, m.backward_by_module["Sequential.0"]
    (640, 768, 512)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 1 or x.numel() == 0:
        raise ValueError(f"x must be a non-empty tensor with a batch of rows, got shape {tuple(x.shape)}")
    loss_fn = _sum_loss if loss_fn is None else loss_fn
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    if x.requires_grad:
        x = x.detach().requires_grad_(True)  # a fresh leaf: the backward stops here, the caller's x is untouched
    elif not params:
        raise ValueError("nothing requires grad: neither model's parameters nor x, so there is no backward pass")
    saved_grads = [p.grad for p in params]
    try:
        for p in params:
            p.grad = None
        return _count(model, x, loss_fn)
    finally:
        for p, g in zip(params, saved_grads):
            p.grad = g


def _count(model: nn.Module, x: torch.Tensor, loss_fn: Callable[[torch.Tensor], torch.Tensor]) -> MeasuredFlops:
    with torch.enable_grad(), FlopCounterMode(display=False) as mode:
        loss = loss_fn(model(x))
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
            shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise ValueError(f"loss_fn must return a scalar tensor (the loss), got {shape}; reduce with .sum() or .mean()")
        forward = mode.get_total_flops()
        forward_by_module = _per_module(mode.get_flop_counts())
        loss.backward()
        total = mode.get_total_flops()
        total_by_module = _per_module(mode.get_flop_counts())
    backward_by_module = {name: n - forward_by_module.get(name, 0) for name, n in total_by_module.items()}
    return MeasuredFlops(
        forward=int(forward), backward=int(total - forward),
        forward_by_module=forward_by_module, backward_by_module=backward_by_module,
    )


def predicted_and_measured(
    batch: int, widths: Sequence[int], *, input_requires_grad: bool = False
) -> tuple[BackpropFlops, MeasuredFlops]:
    """:func:`mlp_flops` next to what FlopCounterMode counts for the same MLP, built on the meta
    device: only shapes exist, so any size is instant and uses no memory (and no random numbers).

    >>> predicted, measured = predicted_and_measured(4096, [8192] * 9 + [1])
    >>> predicted.forward == measured.forward and predicted.backward == measured.backward
    True
    """
    predicted = mlp_flops(batch, widths, input_requires_grad=input_requires_grad)
    with torch.device("meta"):
        model = make_mlp(widths)
        x = torch.empty(batch, widths[0], requires_grad=input_requires_grad)
    return predicted, measured_flops(model, x)
