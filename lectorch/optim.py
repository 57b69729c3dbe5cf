"""Optimizers from scratch, as ``torch.optim.Optimizer`` subclasses: SGD → momentum → AdaGrad →
RMSProp → Adam → AdamW. Each matches ``torch.optim``'s own version numerically (see
:func:`compare_with_torch`), keeps its per-parameter state in ``self.state[p]`` and updates the
parameters in place under ``torch.no_grad()``.

The state is what costs memory: SGD keeps none, momentum, AdaGrad and RMSProp one tensor the size
of each parameter, Adam and AdamW two (:data:`STATE_TENSORS`).

>>> w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
>>> opt = SGD([w], lr=0.1)
>>> w.grad = torch.tensor([1.0, 1.0]); _ = opt.step(); [round(v, 6) for v in w.tolist()]
[0.9, -2.1]
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
from typing import Any, Callable, Iterable

import torch
from torch import nn
from torch.optim import Optimizer

from lectorch import _validate
from lectorch.bench import cpu_threads
from lectorch.memory import ensure_fits
from lectorch.models import Cruncher

Params = Iterable[torch.Tensor] | Iterable[dict[str, Any]]


def _in_unit_interval(name: str, value: Any) -> float:
    """``value`` as a float in [0, 1): a decay rate such as momentum, alpha or a beta."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1), got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}; e.g. 0.9")
    return float(value)


def _check_group(group: dict[str, Any]) -> None:
    """Validate the hyper-parameters of one param group; each error names the hyper-parameter."""
    _validate.positive_number("lr", group["lr"])
    for name in ("momentum", "alpha"):
        if name in group:
            _in_unit_interval(name, group[name])
    if "betas" in group:
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta1, beta2) such as (0.9, 0.999), got {betas!r}")
        _in_unit_interval("betas[0]", betas[0])
        _in_unit_interval("betas[1]", betas[1])
    if "eps" in group:
        _validate.positive_number("eps", group["eps"])
    if "weight_decay" in group:
        wd = group["weight_decay"]
        if isinstance(wd, bool) or not isinstance(wd, numbers.Real):
            raise TypeError(f"weight_decay must be a number >= 0, got {type(wd).__name__}")
        if not math.isfinite(wd) or wd < 0:
            raise ValueError(f"weight_decay must be a finite number >= 0, got {wd}")


def _evaluate(closure: Callable[[], torch.Tensor] | None) -> torch.Tensor | None:
    """Run ``closure`` (which recomputes the loss and calls backward) with gradients enabled."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class CheckedOptimizer(Optimizer):
    """The base of the course's optimizers: a ``torch.optim.Optimizer`` whose param groups'
    hyper-parameters (lr, momentum, alpha, betas, eps, weight_decay) are validated when a group is
    added — the constructor adds them too — so a bad value fails at once, naming the hyper-parameter.

    >>> SGD([nn.Parameter(torch.zeros(1))], lr=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a finite number > 0, got -1.0
    """

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        _check_group(self.param_groups[-1])


class SGD(CheckedOptimizer):
    """Plain stochastic gradient descent: ``p ← p - lr · g``. No state.

    >>> SGD([nn.Parameter(torch.zeros(2))], lr=0.1).defaults
    {'lr': 0.1}
    """

    def __init__(self, params: Params, lr: float = 1e-3) -> None:
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.add_(p.grad, alpha=-group["lr"])
        return loss


class Momentum(CheckedOptimizer):
    """SGD with momentum (``torch.optim.SGD(momentum=...)``): a running sum of gradients.

    ``v ← momentum · v + g;  p ← p - lr · v``. State: one tensor ``v`` per parameter.

    >>> Momentum([nn.Parameter(torch.zeros(2))], lr=0.1).defaults
    {'lr': 0.1, 'momentum': 0.9}
    """

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.9) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["velocity"] = torch.zeros_like(p)
                v = state["velocity"]
                v.mul_(group["momentum"]).add_(p.grad)
                p.add_(v, alpha=-group["lr"])
        return loss


class AdaGrad(CheckedOptimizer):
    """AdaGrad: divide by the root of the running *sum* of squared gradients.

    ``s ← s + g²;  p ← p - lr · g / (sqrt(s) + eps)``. State: one tensor ``s`` per parameter.

    >>> AdaGrad([nn.Parameter(torch.zeros(2))]).defaults
    {'lr': 0.01, 'eps': 1e-10}
    """

    def __init__(self, params: Params, lr: float = 1e-2, eps: float = 1e-10) -> None:
        super().__init__(params, dict(lr=lr, eps=eps))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["sum_sq"] = torch.zeros_like(p)
                s, g = state["sum_sq"], p.grad
                s.addcmul_(g, g)
                p.addcdiv_(g, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class RMSProp(CheckedOptimizer):
    """RMSProp: AdaGrad with an exponential moving *average* of squared gradients instead of a sum.

    ``s ← alpha · s + (1 - alpha) · g²;  p ← p - lr · g / (sqrt(s) + eps)``. State: one tensor per parameter.

    >>> RMSProp([nn.Parameter(torch.zeros(2))]).defaults
    {'lr': 0.01, 'alpha': 0.99, 'eps': 1e-08}
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["square_avg"] = torch.zeros_like(p)
                s, g = state["square_avg"], p.grad
                s.mul_(group["alpha"]).addcmul_(g, g, value=1 - group["alpha"])
                p.addcdiv_(g, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class Adam(CheckedOptimizer):
    """Adam: moving averages of the gradient (m) and of its square (v), both bias-corrected.

    ``m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;  p ← p - lr · m̂ / (sqrt(v̂) + eps)`` with
    ``m̂ = m / (1-β1^t)``, ``v̂ = v / (1-β2^t)``. State: two tensors per parameter and a step count.
    (Adam's L2 ``weight_decay`` is left out: use :class:`AdamW`'s decoupled decay.)

    >>> Adam([nn.Parameter(torch.zeros(2))]).defaults
    {'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08}
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    def _decay(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        """Hook for AdamW's decoupled weight decay; Adam has none."""

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)      # m
                    state["exp_avg_sq"] = torch.zeros_like(p)   # v
                state["step"] += 1
                t, m, v, g = state["step"], state["exp_avg"], state["exp_avg_sq"], p.grad
                self._decay(p, group)
                m.lerp_(g, 1 - beta1)                            # m = β1·m + (1-β1)·g
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)    # v = β2·v + (1-β2)·g²
                bias1, bias2 = 1 - beta1**t, 1 - beta2**t
                denom = v.sqrt().div_(bias2**0.5).add_(group["eps"])   # sqrt(v̂) + eps
                p.addcdiv_(m, denom, value=-group["lr"] / bias1)      # p -= lr · m̂ / denom
                del denom  # free the temporary now, not when the next parameter's replaces it
        return loss


class AdamW(Adam):
    """AdamW: Adam with *decoupled* weight decay, ``p ← p · (1 - lr · weight_decay)`` before the update.

    >>> AdamW([nn.Parameter(torch.zeros(2))]).defaults["weight_decay"]
    0.01
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:
        CheckedOptimizer.__init__(self, params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def _decay(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        p.mul_(1 - group["lr"] * group["weight_decay"])


#: The course's optimizers by name.
OPTIMIZERS: dict[str, type[Optimizer]] = {
    "sgd": SGD, "momentum": Momentum, "adagrad": AdaGrad, "rmsprop": RMSProp, "adam": Adam, "adamw": AdamW,
}
#: State tensors each optimizer keeps per parameter tensor, each the parameter's size and dtype.
STATE_TENSORS: dict[str, int] = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}
#: Parameter-sized temporaries each of *these* implementations allocates at once in ``step()``
#: (``s.sqrt()`` for AdaGrad, RMSProp and Adam(W)); torch's foreach/fused versions differ.
STEP_TEMPORARIES: dict[str, int] = {"sgd": 0, "momentum": 0, "adagrad": 1, "rmsprop": 1, "adam": 1, "adamw": 1}


def check_optimizer_name(name: str) -> str:
    """``name`` lower-cased if it names one of :data:`OPTIMIZERS`, else a ``ValueError`` with suggestions.

    >>> check_optimizer_name("AdamW")
    'adamw'
    """
    if not isinstance(name, str):
        raise TypeError(f"optimizer must be a name such as 'adam', got {type(name).__name__}")
    key = name.strip().lower()
    if key not in OPTIMIZERS:
        close = difflib.get_close_matches(key, OPTIMIZERS, n=2)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"optimizer={name!r} is not one lectorch knows.{hint} Known: {', '.join(OPTIMIZERS)}.")
    return key


def make_optimizer(name: str, params: Params, **hyper: Any) -> Optimizer:
    """The lectorch optimizer called ``name``, built on ``params`` with hyper-parameters ``hyper``.

    >>> type(make_optimizer("rmsprop", [nn.Parameter(torch.zeros(1))], lr=0.1, alpha=0.9)).__name__
    'RMSProp'
    """
    return OPTIMIZERS[check_optimizer_name(name)](params, **hyper)


def torch_optimizer(name: str, params: Params, **hyper: Any) -> Optimizer:
    """``torch.optim``'s version of the optimizer called ``name``, with the same defaults as ours.

    >>> type(torch_optimizer("momentum", [nn.Parameter(torch.zeros(1))])).__name__
    'SGD'
    """
    key = check_optimizer_name(name)
    sig = inspect.signature(OPTIMIZERS[key].__init__)
    defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    unknown = set(hyper) - set(defaults)
    if unknown:
        raise TypeError(f"{key} takes {', '.join(defaults)}; got unexpected {', '.join(sorted(unknown))}")
    kw = defaults | hyper
    if key == "sgd":
        return torch.optim.SGD(params, lr=kw["lr"])
    if key == "momentum":
        return torch.optim.SGD(params, lr=kw["lr"], momentum=kw["momentum"])
    if key == "adagrad":
        return torch.optim.Adagrad(params, lr=kw["lr"], eps=kw["eps"])
    if key == "rmsprop":
        return torch.optim.RMSprop(params, lr=kw["lr"], alpha=kw["alpha"], eps=kw["eps"])
    if key == "adam":
        return torch.optim.Adam(params, lr=kw["lr"], betas=kw["betas"], eps=kw["eps"])
    return torch.optim.AdamW(params, lr=kw["lr"], betas=kw["betas"], eps=kw["eps"], weight_decay=kw["weight_decay"])


def regression_problem(dim: int = 16, batch: int = 64, *, seed: int = 0,
                       device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """A small regression task: inputs x ~ N(0, 1) of shape (batch, dim), targets ``x @ w_true``.

    >>> x, y = regression_problem(4, 8); tuple(x.shape), tuple(y.shape)
    ((8, 4), (8,))
    """
    dim = _validate.positive_int("dim", dim)
    batch = _validate.positive_int("batch", batch)
    ensure_fits(4 * batch * (dim + 1), "cpu", what=f"regression_problem(dim={dim}, batch={batch})")
    gen = torch.Generator().manual_seed(_validate.non_negative_int("seed", seed))
    x = torch.randn(batch, dim, generator=gen)
    w_true = torch.randn(dim, generator=gen) / math.sqrt(dim)
    return x.to(device), (x @ w_true).to(device)


def train_cruncher(optimizer: str | type[Optimizer] | Callable[..., Optimizer], *, steps: int = 20,
                   dim: int = 16, num_layers: int = 2, batch: int = 64, seed: int = 0,
                   device: str | torch.device = "cpu", **hyper: Any) -> tuple[list[float], Cruncher]:
    """Train a fresh ``Cruncher(dim, num_layers)`` for ``steps`` full-batch steps on
    :func:`regression_problem`; return the losses (before each step) and the trained model.

    ``optimizer`` is a name of :data:`OPTIMIZERS` or a class/factory called as ``optimizer(params, **hyper)``.
    The model's initialisation depends only on ``seed``.

    >>> losses, _ = train_cruncher("adam", steps=5, lr=0.01); len(losses)
    5
    """
    steps = _validate.positive_int("steps", steps)
    factory = OPTIMIZERS[check_optimizer_name(optimizer)] if isinstance(optimizer, str) else optimizer
    if not callable(factory):
        raise TypeError(f"optimizer must be a name or an Optimizer class, got {type(optimizer).__name__}")
    x, y = regression_problem(dim, batch, seed=seed, device=device)
    model = Cruncher(dim, num_layers, generator=torch.Generator().manual_seed(seed + 1)).to(device)
    opt = factory(model.parameters(), **hyper)
    losses = []
    with cpu_threads(1):  # tiny tensors: thread hand-offs cost more than 16×16 matmuls
        for _ in range(steps):
            loss = nn.functional.mse_loss(model(x), y)
            losses.append(loss.item())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    return losses, model


def compare_with_torch(name: str, *, steps: int = 20, seed: int = 0, dim: int = 16, num_layers: int = 2,
                       **hyper: Any) -> float:
    """Largest absolute difference between the parameters after ``steps`` steps of lectorch's and
    torch's version of optimizer ``name``: same model, data, seed and hyper-parameters.

    >>> compare_with_torch("adamw", steps=3, lr=0.01, weight_decay=0.1) < 1e-6
    True
    """
    _, ours = train_cruncher(name, steps=steps, dim=dim, num_layers=num_layers, seed=seed, **hyper)
    _, theirs = train_cruncher(lambda params, **kw: torch_optimizer(name, params, **kw), steps=steps, dim=dim,
                               num_layers=num_layers, seed=seed, **hyper)
    with torch.no_grad():
        return max((a - b).abs().max().item() for a, b in zip(ours.parameters(), theirs.parameters()))


def state_bytes(optimizer: Optimizer, *, include_scalars: bool = True) -> int:
    """Bytes of every tensor in ``optimizer.state`` (measured, not predicted).

    torch's own optimizers also keep the step count as a 0-dim float tensor (4 bytes per parameter
    tensor); ``include_scalars=False`` counts only the parameter-sized buffers.

    >>> p = nn.Parameter(torch.zeros(10)); opt = Adam([p]); p.grad = torch.ones(10); _ = opt.step()
    >>> state_bytes(opt)
    80
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    total = 0
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and (include_scalars or value.dim() > 0):
                total += value.numel() * value.element_size()
    return total


def parameter_bytes(params: Iterable[torch.Tensor] | nn.Module) -> int:
    """Bytes of the parameters (of a module, or an iterable of tensors).

    >>> parameter_bytes(nn.Linear(3, 2))
    32
    """
    params = params.parameters() if isinstance(params, nn.Module) else params
    return sum(p.numel() * p.element_size() for p in params)


def gradient_bytes(params: Iterable[torch.Tensor] | nn.Module) -> int:
    """Bytes held by the ``.grad`` tensors that exist (``None`` gradients hold nothing).

    >>> m = nn.Linear(3, 2); gradient_bytes(m)
    0
    >>> m(torch.ones(1, 3)).sum().backward(); gradient_bytes(m)
    32
    """
    params = params.parameters() if isinstance(params, nn.Module) else params
    return sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)


# ---- 2-D problems for pictures of the optimizers' paths ---------------------------------------
def ill_conditioned_quadratic(xy: torch.Tensor) -> torch.Tensor:
    """``(x² + 25·y²) / 2``: curvature 25 times larger along y than along x (condition number 25).

    >>> ill_conditioned_quadratic(torch.tensor([1.0, 1.0])).item()
    13.0
    """
    return 0.5 * (xy[0] ** 2 + 25 * xy[1] ** 2)


def rosenbrock(xy: torch.Tensor) -> torch.Tensor:
    """Rosenbrock's banana valley ``(1 - x)² + 100·(y - x²)²``, minimum 0 at (1, 1).

    >>> rosenbrock(torch.tensor([1.0, 1.0])).item()
    0.0
    """
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _quadratic_grad(xy: torch.Tensor) -> torch.Tensor:
    return torch.stack([xy[0], 25 * xy[1]])


def _rosenbrock_grad(xy: torch.Tensor) -> torch.Tensor:
    x, y = xy[0], xy[1]
    return torch.stack([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])


#: Hand-written gradients of the 2-D problems (autograd gives the same; these are just faster).
GRADIENTS: dict[Callable, Callable] = {ill_conditioned_quadratic: _quadratic_grad, rosenbrock: _rosenbrock_grad}


def trajectory(name: str, loss_fn: Callable[[torch.Tensor], torch.Tensor], start: tuple[float, float], *,
               steps: int = 100, **hyper: Any) -> torch.Tensor:
    """The points visited by optimizer ``name`` minimising ``loss_fn`` from ``start``: shape (steps + 1, 2).

    The gradient comes from autograd, or from :data:`GRADIENTS` for the two built-in problems.

    >>> path = trajectory("sgd", ill_conditioned_quadratic, (1.0, 1.0), steps=50, lr=0.02)
    >>> path.shape, round(ill_conditioned_quadratic(path[-1]).item(), 3)
    (torch.Size([51, 2]), 0.066)
    """
    steps = _validate.positive_int("steps", steps)
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    xy = nn.Parameter(torch.tensor(start, dtype=torch.float64))
    if xy.shape != (2,):
        raise ValueError(f"start must be a point (x, y), got {start!r}")
    opt = make_optimizer(name, [xy], **hyper)
    grad_fn = GRADIENTS.get(loss_fn)
    points = [xy.detach().clone()]
    with cpu_threads(1):  # tiny tensors: thread hand-offs cost more than 16×16 matmuls
        for _ in range(steps):
            if grad_fn is None:
                opt.zero_grad(set_to_none=True)
                loss_fn(xy).backward()
            else:
                with torch.no_grad():
                    xy.grad = grad_fn(xy)
            opt.step()
            points.append(xy.detach().clone())
    return torch.stack(points)
