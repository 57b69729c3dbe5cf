"""The course's models: the Cruncher, a deep stack of D×D linear layers with a D×1 head, and
:class:`TinyLM`, the next-token model that :mod:`lectorch.train` trains.

>>> model = Cruncher(dim=16, num_layers=3)
>>> num_parameters(model) == 16 * 16 * 3 + 16 == cruncher_num_parameters(16, 3)
True
>>> model(torch.ones(4, 16)).shape
torch.Size([4])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint as _checkpoint

from lectorch import _validate
from lectorch.memory import ensure_fits, format_bytes


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
        ensure_fits(4 * in_dim * out_dim, "cpu", what=f"a ({in_dim}, {out_dim}) float32 weight (in_dim × out_dim)")
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
        nbytes = 4 * cruncher_num_parameters(dim, num_layers)
        ensure_fits(nbytes, "cpu", what=f"Cruncher(dim={dim}, num_layers={num_layers}) ({format_bytes(nbytes)} of fp32 weights)")
        self.layers = nn.ModuleList(Linear(dim, dim, generator=generator) for _ in range(num_layers))
        self.final = Linear(dim, 1, generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"x has last dimension {x.shape[-1]}, but this Cruncher expects dim={self.dim}")
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)


class MLPBlock(nn.Module):
    """``x + W2·gelu(W1·x)`` with W1 (dim, 4·dim) and W2 (4·dim, dim), bias-free: 8·dim² parameters.

    >>> MLPBlock(8)(torch.ones(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, dim: int, expansion: int = 4, *, dropout: float = 0.0) -> None:
        super().__init__()
        dim = _validate.positive_int("dim", dim)
        expansion = _validate.positive_int("expansion", expansion)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.up = Linear(dim, expansion * dim)
        self.down = Linear(expansion * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.up(x))
        if self.dropout > 0:  # draws from torch's global RNG: a checkpoint must restore it
            h = F.dropout(h, self.dropout, self.training)
        return x + self.down(h)


class TinyLM(nn.Module):
    """A tiny next-token model: Embedding(V, D) → num_layers × :class:`MLPBlock` → Linear(D, V).

    Each position sees only its own token (no attention), so it is a bigram model: the best loss it
    can reach is the data's conditional entropy H(next | current). Parameters: 2·V·D + 8·D²·L.
    The head starts at zero, so the model first predicts the uniform distribution (loss ln V).
    With ``checkpointing=True`` each block's activations are recomputed in the backward pass
    instead of kept (``torch.utils.checkpoint``, non-reentrant).

    >>> model = TinyLM(vocab_size=32, dim=8, num_layers=2)
    >>> model(torch.zeros(4, 5, dtype=torch.long)).shape
    torch.Size([4, 5, 32])
    >>> sum(p.numel() for p in model.parameters()) == 2 * 32 * 8 + 8 * 8 * 8 * 2
    True
    """

    def __init__(self, vocab_size: int, dim: int, num_layers: int, *, checkpointing: bool = False,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.vocab_size = _validate.positive_int("vocab_size", vocab_size)
        self.dim = _validate.positive_int("dim", dim)
        self.num_layers = _validate.positive_int("num_layers", num_layers)
        if not isinstance(checkpointing, bool):
            raise TypeError(f"checkpointing must be True or False, got {checkpointing!r}")
        self.checkpointing = checkpointing
        nbytes = 4 * (2 * vocab_size * dim + 8 * dim * dim * num_layers)
        ensure_fits(nbytes, "cpu", what=f"TinyLM(vocab_size={vocab_size}, dim={dim}, num_layers={num_layers}) "
                                        f"({format_bytes(nbytes)} of fp32 weights)")
        self.embed = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList(MLPBlock(dim, dropout=dropout) for _ in range(num_layers))
        self.head = Linear(dim, vocab_size)
        nn.init.zeros_(self.head.weight)  # uniform predictions at init: the first loss is exactly ln V

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"ids must be integer token ids (int64), got {getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.device.type == "cpu" and ids.numel():  # on a GPU this check would wait for the device
            low, high = int(ids.min()), int(ids.max())
            if low < 0 or high >= self.vocab_size:
                raise ValueError(f"ids must lie in [0, vocab_size={self.vocab_size}), got ids in [{low}, {high}]: "
                                 "the data was made for a larger vocabulary (raise vocab_size)")
        x = self.embed(ids)
        for block in self.blocks:
            if self.checkpointing and torch.is_grad_enabled():
                x = _checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x)


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


__all__ = ["Linear", "Cruncher", "MLPBlock", "TinyLM", "cruncher_num_parameters", "num_parameters"]
