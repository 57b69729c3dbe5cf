"""The course's models: the Cruncher, a deep stack of D×D linear layers with a D×1 head.

>>> model = Cruncher(dim=16, num_layers=3)
>>> num_parameters(model) == 16 * 16 * 3 + 16 == cruncher_num_parameters(16, 3)
True
>>> model(torch.ones(4, 16)).shape
torch.Size([4])
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lectorch import _validate


class Linear(nn.Module):
    """A bias-free linear map ``x @ weight`` with weight (in_dim, out_dim), initialised N(0, 1/in_dim).

    The 1/sqrt(in_dim) scale keeps outputs O(1) whatever the width (chapter 07). Pass a
    ``generator`` to draw the weight from a random stream of its own instead of torch's global one.

    >>> Linear(8, 2)(torch.ones(3, 8)).shape
    torch.Size([3, 2])
    """

    def __init__(self, in_dim: int, out_dim: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        in_dim = _validate.positive_int("in_dim", in_dim)
        out_dim = _validate.positive_int("out_dim", out_dim)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        self.weight = nn.Parameter(torch.randn(in_dim, out_dim, generator=generator) / math.sqrt(in_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


class Cruncher(nn.Module):
    """``num_layers`` Linear(dim, dim) layers, then a Linear(dim, 1) head; output shape (batch,).

    Parameters: dim² · num_layers + dim. The weights are drawn from ``generator`` when one is given
    (keep the model's random stream apart from the data's), else from torch's global generator.

    >>> g = torch.Generator().manual_seed(0)
    >>> a, b = Cruncher(4, 2, generator=g), Cruncher(4, 2, generator=torch.Generator().manual_seed(0))
    >>> bool(torch.equal(a.final.weight, b.final.weight))
    True
    """

    def __init__(self, dim: int, num_layers: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.dim = _validate.positive_int("dim", dim)
        self.num_layers = _validate.positive_int("num_layers", num_layers)
        self.layers = nn.ModuleList(Linear(dim, dim, generator=generator) for _ in range(num_layers))
        self.final = Linear(dim, 1, generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"x has last dimension {x.shape[-1]}, but this Cruncher expects dim={self.dim}")
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)


def cruncher_num_parameters(dim: int, num_layers: int) -> int:
    """Parameters of ``Cruncher(dim, num_layers)`` by formula: ``dim² · num_layers + dim`` (the head).

    >>> cruncher_num_parameters(1024, 4)
    4195328
    """
    dim = _validate.positive_int("dim", dim)
    num_layers = _validate.positive_int("num_layers", num_layers)
    return dim * dim * num_layers + dim


def num_parameters(model: nn.Module) -> int:
    """Number of scalars in ``model``'s parameters.

    >>> num_parameters(nn.Linear(3, 2))
    8
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters())
