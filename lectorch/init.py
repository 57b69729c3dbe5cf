"""Initialisation: how the scale of random weights sets the scale of a layer's outputs.

With inputs of variance 1, the output of ``x @ w`` for a (fan_in, fan_out) weight of standard
deviation ``s`` has standard deviation ``sqrt(fan_in) · s``: standard-normal weights (s = 1) make it
grow like sqrt(fan_in); ``s = 1/sqrt(fan_in)`` keeps it ≈ 1 at every width.

>>> init_std("standard", 1024), init_std("lecun", 1024)
(1.0, 0.03125)
>>> trunc_normal_bounds(0.02)          # ±3 standard deviations, in absolute units
(-0.06, 0.06)
"""

from __future__ import annotations

import difflib
import functools
import math

import torch
from torch import nn

from lectorch import _validate
from lectorch.dtypes import as_dtype
from lectorch.memory import ensure_fits

#: Initialisation schemes: the standard deviation of a (fan_in, fan_out) weight, as a formula.
SCHEMES: dict[str, str] = {
    "standard": "1",
    "lecun": "1/sqrt(fan_in)",
    "xavier": "sqrt(2/(fan_in + fan_out))",
    "kaiming": "sqrt(2/fan_in)",
}


def check_scheme(scheme: str) -> str:
    """Return ``scheme`` if it is one of :data:`SCHEMES`, else raise a ``ValueError`` with suggestions.

    >>> check_scheme("xavier")
    'xavier'
    """
    if not isinstance(scheme, str):
        raise TypeError(f"scheme must be a str such as 'lecun', got {type(scheme).__name__}")
    if scheme not in SCHEMES:
        close = difflib.get_close_matches(scheme, SCHEMES, n=2)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"scheme={scheme!r} is not an initialisation scheme lectorch knows.{hint} "
                         f"Known: {', '.join(SCHEMES)}.")
    return scheme


def init_std(scheme: str, fan_in: int, fan_out: int | None = None) -> float:
    """Standard deviation of a (fan_in, fan_out) weight under ``scheme`` (fan_out defaults to fan_in).

    Xavier (Glorot) and Kaiming (He) are ``1/sqrt(fan_in)`` up to a constant: for a square weight
    Xavier equals it, Kaiming is sqrt(2) larger (it makes up for a ReLU that zeroes half the inputs).

    >>> init_std("xavier", 256) == init_std("lecun", 256)
    True
    >>> round(init_std("kaiming", 2), 6)
    1.0
    """
    check_scheme(scheme)
    fan_in = _validate.positive_int("fan_in", fan_in)
    fan_out = fan_in if fan_out is None else _validate.positive_int("fan_out", fan_out)
    if scheme == "standard":
        return 1.0
    if scheme == "lecun":
        return 1 / math.sqrt(fan_in)
    if scheme == "xavier":
        return math.sqrt(2 / (fan_in + fan_out))
    return math.sqrt(2 / fan_in)


def init_weight(fan_in: int, fan_out: int, scheme: str = "lecun", *, generator: torch.Generator | None = None,
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A (fan_in, fan_out) weight drawn from N(0, init_std(scheme)²), for ``x @ weight``.

    >>> w = init_weight(64, 8, "lecun", generator=torch.Generator().manual_seed(0)); tuple(w.shape)
    (64, 8)
    """
    std = init_std(scheme, fan_in, fan_out)
    dtype = as_dtype(dtype)
    ensure_fits(2 * fan_in * fan_out * dtype.itemsize, "cpu", what=f"a ({fan_in}, {fan_out}) {dtype} weight (fan_in × fan_out)")
    return torch.randn(fan_in, fan_out, generator=generator, dtype=dtype) * std


def trunc_normal_bounds(std: float, num_std: float = 3.0) -> tuple[float, float]:
    """The bounds ``(a, b)`` to pass to ``nn.init.trunc_normal_`` to cut at ±``num_std`` deviations.

    ``trunc_normal_``'s ``a`` and ``b`` are absolute values, not multiples of ``std``: cutting at
    three standard deviations means ``a = -3·std, b = 3·std``.

    >>> trunc_normal_bounds(0.5, num_std=2)
    (-1.0, 1.0)
    """
    std = _validate.positive_number("std", std)
    num_std = _validate.positive_number("num_std", num_std)
    return -num_std * std, num_std * std


def truncated_normal_(tensor: torch.Tensor, std: float, num_std: float = 3.0, *,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    """Fill ``tensor`` in place from N(0, std²) truncated at ±``num_std`` standard deviations.

    >>> w = truncated_normal_(torch.empty(1000), std=0.02, generator=torch.Generator().manual_seed(0))
    >>> bool(w.abs().max() <= 0.06)
    True
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    a, b = trunc_normal_bounds(std, num_std)
    return nn.init.trunc_normal_(tensor, mean=0.0, std=std, a=a, b=b, generator=generator)


def truncated_std_factor(num_std: float = 3.0) -> float:
    """Standard deviation of N(0, 1) truncated at ±``num_std``: cutting the tails shrinks the spread.

    ``1 - 2kφ(k) / (2Φ(k) - 1)`` is the variance, with φ, Φ the standard normal density and CDF.

    >>> round(truncated_std_factor(3.0), 4), round(truncated_std_factor(2.0), 4)
    (0.9866, 0.8796)
    """
    k = _validate.positive_number("num_std", num_std)
    pdf = math.exp(-k * k / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(k / math.sqrt(2))  # 2Φ(k) - 1
    return math.sqrt(1 - 2 * k * pdf / mass)


def truncation_in_std(bound: float, std: float) -> float:
    """How many standard deviations an absolute truncation ``bound`` is: ``|bound| / std``.

    The slip ``trunc_normal_(w, std=0.02, a=-3, b=3)`` truncates at 150 standard deviations,
    which is no truncation at all:

    >>> truncation_in_std(3, 0.02)
    150.0
    """
    if isinstance(bound, bool) or not isinstance(bound, (int, float)):
        raise TypeError(f"bound must be a number, got {type(bound).__name__}")
    std = _validate.positive_number("std", std)
    return abs(float(bound)) / std


def layer_outputs(width: int, scheme: str, *, batch: int = 256, num_outputs: int = 64, seed: int = 0) -> torch.Tensor:
    """Outputs of a (width, width) layer initialised by ``scheme`` on inputs x ~ N(0, 1) of shape (batch, width).

    Only ``num_outputs`` of the layer's ``width`` output units are computed (a (width, num_outputs)
    slice of the weight, drawn with the square layer's std): every unit has the same distribution,
    so a sample of them measures the scale at a fraction of the cost. Inputs and weights come from
    their own generators (seeds ``seed`` and ``seed + 1``): torch's global random state is untouched.
    The weight is ``std · z`` with z ~ N(0, 1) drawn the same way for every scheme, so schemes are
    compared on the same draws.

    >>> layer_outputs(16, "lecun", batch=4, num_outputs=2).shape
    torch.Size([4, 2])
    """
    std = init_std(scheme, _validate.positive_int("width", width))
    return _unit_layer_outputs(width, batch, num_outputs, seed) * std


def _unit_layer_outputs(width: int, batch: int, num_outputs: int, seed: int) -> torch.Tensor:
    batch = _validate.positive_int("batch", batch)
    num_outputs = _validate.positive_int("num_outputs", num_outputs)
    seed = _validate.non_negative_int("seed", seed)
    ensure_fits(4 * (batch * width + width * num_outputs + batch * num_outputs), "cpu",
                what=f"layer outputs of width={width} on batch={batch} inputs")
    x = torch.randn(batch, width, generator=torch.Generator().manual_seed(seed))
    z = torch.randn(width, num_outputs, generator=torch.Generator().manual_seed(seed + 1))
    return x @ z


@functools.lru_cache(maxsize=256)
def _unit_output_std(width: int, batch: int, num_outputs: int, seed: int) -> float:
    return float(_unit_layer_outputs(width, batch, num_outputs, seed).std())


def output_std(width: int, scheme: str, *, batch: int = 256, num_outputs: int = 64, seed: int = 0) -> float:
    """Measured standard deviation of :func:`layer_outputs` (predicted: ``sqrt(width) · init_std``).

    >>> round(output_std(1024, "standard") / 32, 1), round(output_std(1024, "lecun"), 1)
    (1.0, 1.0)
    """
    std = init_std(scheme, _validate.positive_int("width", width))
    return std * _unit_output_std(width, _validate.positive_int("batch", batch),
                                  _validate.positive_int("num_outputs", num_outputs),
                                  _validate.non_negative_int("seed", seed))


def predicted_output_std(width: int, scheme: str) -> float:
    """``sqrt(width) · init_std(scheme, width)``: the output scale of a square layer on unit-variance inputs.

    >>> predicted_output_std(4096, "standard")
    64.0
    """
    return math.sqrt(_validate.positive_int("width", width)) * init_std(scheme, width)


def depth_stds(width: int, num_layers: int, scheme: str, *, batch: int = 256, seed: int = 0) -> list[float]:
    """Standard deviation of the activations after each of ``num_layers`` (width, width) layers.

    Under ``scheme="standard"`` each layer multiplies the scale by sqrt(width): depth compounds it.
    Weights are ``std · z`` with the same z for every scheme, so the k-th std is ``std^k`` times
    that of the standard-normal stack (computed once and cached).

    >>> [round(s, -1) for s in depth_stds(100, 2, "standard", batch=512)]
    [10.0, 100.0]
    """
    std = init_std(scheme, _validate.positive_int("width", width))
    unit = _unit_depth_stds(width, _validate.positive_int("num_layers", num_layers),
                            _validate.positive_int("batch", batch), _validate.non_negative_int("seed", seed))
    return [u * std**k for k, u in enumerate(unit, start=1)]


@functools.lru_cache(maxsize=64)
def _unit_depth_stds(width: int, num_layers: int, batch: int, seed: int) -> tuple[float, ...]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, width, generator=gen, dtype=torch.float64)  # 64-bit: sqrt(width)^depth grows fast
    stds = []
    for _ in range(num_layers):
        x = x @ torch.randn(width, width, generator=gen, dtype=torch.float64)
        stds.append(float(x.std()))
    return tuple(stds)
