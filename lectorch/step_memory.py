"""The memory (and compute) of one training step of the Cruncher: predicted, then measured.

A step holds parameters, gradients, optimizer state and the activations autograd saves for the
backward pass, each ``numel × bytes per element``. For ``Cruncher(D, L)`` (P = D²·L + D parameters)
on a batch of B rows, with MSE loss:

* parameters, gradients: P elements each; optimizer state: 0, 1 or 2 × P (:data:`lectorch.optim.STATE_TENSORS`);
* activations: every matmul saves its input for the weight's gradient. The inputs of the L D×D
  layers and of the head are x₀ … x_L; x₀ is the batch itself, the other L are new tensors of B×D:
  ``B·D·L`` elements, plus the head's output (B elements), which the loss saves;
* the batch: x (B×D) and the targets (B).

>>> m = predict_step_memory(dim=1024, num_layers=4, batch=512, dtype="fp32", optimizer="adam")
>>> m.parameters == 4 * (1024**2 * 4 + 1024), m.optimizer_state == 2 * m.parameters
(True, True)
>>> m.activations == 4 * (512 * 1024 * 4 + 512)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from torch import nn

from lectorch import _validate
from lectorch.device import check_device
from lectorch.dtypes import FORMATS, as_dtype
from lectorch.memory import ensure_fits
from lectorch.models import cruncher_num_parameters
from lectorch.optim import STATE_TENSORS, STEP_TEMPORARIES, check_optimizer_name

# ------------------------------------------------------------------------------- torch internals
# The only private torch APIs in lectorch, all behind this one helper so that a torch upgrade that
# moves them breaks one place (tests/test_step_memory.py checks their behaviour and names the torch
# versions they were checked on, _Internals.CHECKED_ON):
#   torch.utils._python_dispatch.TorchDispatchMode  sees every operator call (allocations included)
#   torch.utils._pytree.tree_flatten                 the tensors inside an operator's args and outputs
#   UntypedStorage._cdata                            the identity of a storage (views share it)
#   torch.multiprocessing.reductions.StorageWeakRef  notices when a storage is freed


class _Internals:
    """Storage identity, weak references, pytree flattening and the dispatch-mode base class."""

    from torch.multiprocessing.reductions import StorageWeakRef as WeakRef
    from torch.utils._python_dispatch import TorchDispatchMode as DispatchMode

    CHECKED_ON = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")  # each by `make torch-matrix`

    @staticmethod
    def storage_key(tensor: torch.Tensor) -> int:
        """One int per storage: equal for a tensor and its views, distinct for separate storages."""
        return tensor.untyped_storage()._cdata

    @staticmethod
    def tensors_in(tree: Any) -> list[torch.Tensor]:
        """The tensors inside nested tuples, lists and dicts (an operator's args or outputs)."""
        from torch.utils._pytree import tree_flatten

        return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]

#: Dtypes the memory panel and :func:`measure_step_memory` accept (a CPU can run a step in each),
#: from the float-format registry.
STEP_DTYPES = tuple(fmt.name for fmt in FORMATS if fmt.trainable)


@dataclass(frozen=True)
class StepMemory:
    """Bytes of each part of a training step's memory; ``total`` adds them all up (all alive at once)."""

    parameters: int
    gradients: int
    optimizer_state: int
    activations: int
    batch: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state + self.activations + self.batch

    def as_dict(self) -> dict[str, int]:
        """The parts by name, in a fixed order.

        >>> list(StepMemory(1, 2, 3, 4, 5).as_dict())
        ['parameters', 'gradients', 'optimizer_state', 'activations', 'batch']
        """
        return {"parameters": self.parameters, "gradients": self.gradients, "optimizer_state": self.optimizer_state,
                "activations": self.activations, "batch": self.batch}


def _sizes(dim: int, num_layers: int, batch: int) -> tuple[int, int, int]:
    return (_validate.positive_int("dim", dim), _validate.positive_int("num_layers", num_layers),
            _validate.positive_int("batch", batch))


def _step_dtype(dtype: torch.dtype | str) -> torch.dtype:
    dt = as_dtype(dtype)
    if _format_name(dt) not in STEP_DTYPES:
        raise ValueError(f"dtype={dtype!r}: a training step runs in one of {', '.join(STEP_DTYPES)}")
    return dt


def _format_name(dt: torch.dtype) -> str | None:
    return next((fmt.name for fmt in FORMATS if fmt.dtype == dt), None)


def _element_size(dtype: torch.dtype | str) -> int:
    dt = as_dtype(dtype)
    if not dt.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype to train in, got {dt}")
    return dt.itemsize


def predict_step_memory(dim: int, num_layers: int, batch: int, *, dtype: torch.dtype | str = "fp32",
                        optimizer: str = "adam") -> StepMemory:
    """Bytes of parameters, gradients, optimizer state, saved activations and batch for a training
    step of ``Cruncher(dim, num_layers)`` on ``batch`` rows, everything in ``dtype``.

    >>> predict_step_memory(16, 2, 8, optimizer="sgd").optimizer_state
    0
    """
    d, n, b = _sizes(dim, num_layers, batch)
    e = _element_size(dtype)
    p = cruncher_num_parameters(d, n)
    k = STATE_TENSORS[check_optimizer_name(optimizer)]
    return StepMemory(parameters=p * e, gradients=p * e, optimizer_state=k * p * e,
                      activations=(b * d * n + b) * e, batch=(b * d + b) * e)


@dataclass(frozen=True)
class Timeline:
    """Predicted live bytes at the high points of a step: ``events`` is a list of (label, bytes)."""

    events: list[tuple[str, int]]
    resting: int

    @property
    def peak(self) -> int:
        return max(b for _, b in self.events)

    @property
    def peak_label(self) -> str:
        return max(self.events, key=lambda e: e[1])[0]


def step_timeline(dim: int, num_layers: int, batch: int, *, dtype: torch.dtype | str = "fp32",
                  optimizer: str = "adam", first_step: bool = False) -> Timeline:
    """Live bytes through one step (forward, backward layer by layer, optimizer step, zero_grad).

    *Resting* memory is what lives between steps: parameters, batch and, after the first step, the
    optimizer state. The peak differs from "everything at once" (``StepMemory.total``) both ways:
    activations are freed during the backward pass as gradients are created (lower), while the
    gradients of the activations and the optimizer's temporaries, which the sum leaves out, come on
    top (higher). Tensors of B or fewer elements (head output, loss and its gradient) are left out.
    Backward of layer k (from L down to 1) holds the saved inputs x₁ … x_{k-1}, the gradients of the
    layers above it and its own, the gradient of its output and (except for layer 1, whose input
    needs none) of its input. The optimizer step holds the gradients and
    :data:`lectorch.optim.STEP_TEMPORARIES` tensors of the largest weight's size (D×D).

    >>> t = step_timeline(64, 2, 128, optimizer="sgd"); t.peak_label
    'backward: layer 2'
    """
    d, n, b = _sizes(dim, num_layers, batch)
    e = _element_size(dtype)
    key = check_optimizer_name(optimizer)
    p = cruncher_num_parameters(d, n)
    state = STATE_TENSORS[key] * p
    inputs = b * d + b
    resting = p + inputs + (0 if first_step else state)
    acts = b * d * n
    events = [("start", resting), ("end of forward", resting + acts)]
    events.append(("backward: head", resting + acts + d + b * d))
    for k in range(n, 0, -1):
        live = (k - 1) * b * d + d + (n - k + 1) * d * d + b * d + (b * d if k > 1 else 0)
        events.append((f"backward: layer {k}", resting + live))
    events.append(("after backward", resting + p))
    temporaries = STEP_TEMPORARIES[key] * d * d
    events.append(("optimizer step", resting + p + (state if first_step else 0) + temporaries))
    events.append(("after zero_grad", resting + (state if first_step else 0)))
    return Timeline(events=[(label, n_el * e) for label, n_el in events], resting=resting * e)


@dataclass(frozen=True)
class StepFlops:
    """FLOPs of one training step: the forward and the backward matmuls."""

    forward: int
    backward: int

    @property
    def total(self) -> int:
        return self.forward + self.backward


def step_flops(dim: int, num_layers: int, batch: int) -> StepFlops:
    """Exact matmul FLOPs of a training step of ``Cruncher(dim, num_layers)`` on ``batch`` rows.

    Forward: 2·B·P; the backward pass is derived in chapter 06 (an exercise there asks for it),
    and chapter 08 prints the total next to the 6× rule.

    >>> f = step_flops(1024, 4, 512); f.forward == 2 * 512 * (4 * 1024**2 + 1024)
    True
    """
    d, n, b = _sizes(dim, num_layers, batch)
    p = cruncher_num_parameters(d, n)
    return StepFlops(forward=2 * b * p, backward=2 * b * p + 2 * b * (p - d * d))


def cruncher_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> float:
    """One training step: forward, MSE loss, backward, ``optimizer.step()``, ``zero_grad(set_to_none=True)``.

    >>> from lectorch.models import Cruncher
    >>> m = Cruncher(4, 1); opt = torch.optim.SGD(m.parameters(), lr=0.1)
    >>> isinstance(cruncher_step(m, opt, torch.ones(2, 4), torch.zeros(2)), float)
    True
    """
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


@dataclass(frozen=True)
class SavedTensor:
    """One tensor autograd saved for the backward pass."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    kind: str  # "parameter", "input" or "activation"
    repeat: bool = False  # its storage was saved before (it costs nothing more)


@dataclass(frozen=True)
class Saved:
    """What autograd saved while running a function. ``activation_bytes`` counts each storage that is
    neither a parameter nor an input once (the memory the saving costs); ``by_dtype`` splits it."""

    tensors: list[SavedTensor]
    activation_bytes: int
    by_dtype: dict[str, int] = field(default_factory=dict)
    result: Any = field(default=None, repr=False, compare=False)

    @property
    def activations(self) -> list[SavedTensor]:
        """The tensors that cost memory: kind "activation", each storage once, in the order saved."""
        return [t for t in self.tensors if t.kind == "activation" and not t.repeat]


def saved_tensors(fn: Callable[..., Any], *args: Any, parameters: Iterable[torch.Tensor] = (),
                  inputs: Iterable[torch.Tensor] = (), **kwargs: Any) -> Saved:
    """Run ``fn(*args, **kwargs)`` and record every tensor autograd saves (``saved_tensors_hooks``).

    Saved tensors that share storage with ``parameters`` or ``inputs`` cost no new memory (they exist
    anyway); the rest are the activations, counted by storage, once each. The count is exact and
    device-independent; ``result`` holds ``fn``'s return value (e.g. the loss, to call backward on).

    >>> w = nn.Parameter(torch.ones(3, 2)); x = torch.ones(4, 3)
    >>> s = saved_tensors(lambda: (x @ w).relu(), parameters=[w], inputs=[x])
    >>> [t.kind for t in s.tensors], s.activation_bytes, s.by_dtype
    (['input', 'activation'], 32, {'float32': 32})
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    for name, group in (("parameters", parameters), ("inputs", inputs)):
        if isinstance(group, torch.Tensor):
            raise TypeError(f"{name} must be an iterable of tensors such as model.parameters(), not one tensor; "
                            f"pass [{name[:-1]}]")
    param_keys = {_Internals.storage_key(t) for t in parameters}
    input_keys = {_Internals.storage_key(t) for t in inputs}
    records: list[SavedTensor] = []
    seen: set[int] = set()  # storages saved so far
    by_dtype: dict[str, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        nbytes = t.untyped_storage().nbytes()
        key = _Internals.storage_key(t)
        kind = "parameter" if key in param_keys else "input" if key in input_keys else "activation"
        repeat = key in seen
        seen.add(key)
        records.append(SavedTensor(tuple(t.shape), t.dtype, nbytes, kind, repeat=repeat))
        if kind == "activation" and not repeat:
            name = str(t.dtype).removeprefix("torch.")
            by_dtype[name] = by_dtype.get(name, 0) + nbytes
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = fn(*args, **kwargs)
    return Saved(tensors=records, activation_bytes=sum(by_dtype.values()), by_dtype=by_dtype, result=result)


@dataclass(frozen=True)
class MemoryTrace:
    """Bytes of tensors created inside a function and still alive, after each operator."""

    peak_bytes: int
    end_bytes: int
    events: list[tuple[str, int]]
    result: Any = field(default=None, repr=False, compare=False)


class _LiveTensors(_Internals.DispatchMode):
    """Counts the storages that operators allocate and notices when they are freed."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[Any, int]] = {}
        self.current = 0
        self.peak = 0
        self.events: list[tuple[str, int]] = []

    def sweep(self) -> None:
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                del self.live[key]
                self.current -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.sweep()
        inputs = {_Internals.storage_key(t) for t in _Internals.tensors_in((args, kwargs))}
        out = func(*args, **kwargs)
        for t in _Internals.tensors_in(out):
            storage = t.untyped_storage()
            key = _Internals.storage_key(t)
            if key not in inputs and key not in self.live:  # a new allocation, not a view or in-place
                self.live[key] = (_Internals.WeakRef(storage), storage.nbytes())
                self.current += storage.nbytes()
        self.peak = max(self.peak, self.current)
        self.events.append((func.overloadpacket.__name__, self.current))
        return out


def track_memory(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> MemoryTrace:
    """Run ``fn`` and measure the bytes of the tensors it creates that are alive at once, operator by
    operator (a ``TorchDispatchMode`` that sees every allocation, backward included, on any device).

    It counts tensor storages only: not the caching allocator's rounding, cuBLAS workspaces or
    tensors that existed before the call. The peak is the measured *extra* memory of ``fn``.

    >>> t = track_memory(lambda: (torch.ones(1000) * 2).sum())   # ones and the product coexist
    >>> t.peak_bytes, t.end_bytes                                # the sum (4 bytes) is returned
    (8000, 4)
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    mode = _LiveTensors()
    with mode:
        result = fn(*args, **kwargs)
    mode.sweep()
    return MemoryTrace(peak_bytes=mode.peak, end_bytes=mode.current, events=mode.events, result=result)


def measure_step_memory(dim: int, num_layers: int, batch: int, *, dtype: torch.dtype | str = "fp32",
                        optimizer: str = "adam", device: str | torch.device = "cpu", seed: int = 0
                        ) -> tuple[StepMemory, MemoryTrace]:
    """Run two training steps of a Cruncher and measure, from the tensors themselves: the bytes of
    parameters, gradients (after backward), optimizer state, saved activations and batch, and the
    live-tensor trace of the second step (so the optimizer state already exists, as in training).

    The predicted memory (twice over, for the peak) is checked against the device's free memory
    first: a size that cannot fit is refused with a ``ValueError`` before anything is allocated.

    >>> measured, trace = measure_step_memory(32, 2, 16, optimizer="adam")
    >>> measured == predict_step_memory(32, 2, 16, optimizer="adam")
    True
    """
    from lectorch.bench import cpu_threads
    from lectorch.models import Cruncher
    from lectorch.optim import gradient_bytes, make_optimizer, parameter_bytes, state_bytes

    d, n, b = _sizes(dim, num_layers, batch)
    dt = _step_dtype(dtype)
    device = check_device(device)
    need = 2 * predict_step_memory(d, n, b, dtype=dt, optimizer=optimizer).total
    what = f"a training step of Cruncher(dim={d}, num_layers={n}) on batch={b} rows"
    ensure_fits(need, device, what=what)
    if device.type != "cpu":
        ensure_fits(4 * (cruncher_num_parameters(d, n) + b * d + b), "cpu", what=what)
    gen = torch.Generator().manual_seed(_validate.non_negative_int("seed", seed))
    model = Cruncher(d, n, generator=gen).to(device=device, dtype=dt)
    x = torch.randn(b, d, generator=gen).to(device=device, dtype=dt)
    y = torch.randn(b, generator=gen).to(device=device, dtype=dt)
    opt = make_optimizer(optimizer, model.parameters(), lr=1e-3)
    params = list(model.parameters())

    with cpu_threads(1):  # small steps: one thread avoids thread hand-offs
        saved = saved_tensors(lambda: nn.functional.mse_loss(model(x), y), parameters=params, inputs=[x, y])
        saved.result.backward()
        grads = gradient_bytes(params)
        opt.step()
        opt.zero_grad(set_to_none=True)
        trace = track_memory(cruncher_step, model, opt, x, y)
    measured = StepMemory(parameters=parameter_bytes(params), gradients=grads, optimizer_state=state_bytes(opt),
                          activations=saved.activation_bytes, batch=x.numel() * x.element_size() + y.numel() * y.element_size())
    return measured, trace


def cuda_step_peak(dim: int, num_layers: int, batch: int, *, dtype: torch.dtype | str = "fp32",
                   optimizer: str = "adam", device: str | torch.device = "cuda", seed: int = 0) -> tuple[int, int]:
    """On a CUDA device: ``(resting, peak)`` bytes from ``torch.cuda.memory_allocated`` and
    ``max_memory_allocated`` around one training step, after a warm-up step (which creates the
    optimizer state and cuBLAS workspaces). Both include the workspaces; their difference does not.

    >>> cuda_step_peak(8, 1, 4, device="cpu")
    Traceback (most recent call last):
    ...
    ValueError: cuda_step_peak needs a CUDA device, got device='cpu'
    """
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"cuda_step_peak needs a CUDA device, got device={str(dev)!r}")
    from lectorch.models import Cruncher
    from lectorch.optim import make_optimizer

    d, n, b = _sizes(dim, num_layers, batch)
    dt = _step_dtype(dtype)
    dev = check_device(dev)
    ensure_fits(2 * predict_step_memory(d, n, b, dtype=dt, optimizer=optimizer).total, dev,
                what=f"a training step of Cruncher(dim={d}, num_layers={n}) on batch={b} rows")
    gen = torch.Generator().manual_seed(_validate.non_negative_int("seed", seed))
    model = Cruncher(d, n, generator=gen).to(device=dev, dtype=dt)
    x = torch.randn(b, d, generator=gen).to(device=dev, dtype=dt)
    y = torch.randn(b, generator=gen).to(device=dev, dtype=dt)
    opt = make_optimizer(optimizer, model.parameters(), lr=1e-3)
    cruncher_step(model, opt, x, y)  # warm-up: optimizer state, cuBLAS workspaces
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    resting = torch.cuda.memory_allocated(dev)
    cruncher_step(model, opt, x, y)
    torch.cuda.synchronize(dev)
    return resting, torch.cuda.max_memory_allocated(dev)
