"""The training loop: data → forward → loss → backward → clip → step → zero_grad, and what it costs.

The course's next-token model is :class:`lectorch.models.TinyLM` (an embedding, a stack of
feed-forward blocks and a linear head to vocabulary logits). :func:`train` runs it with AdamW, a cosine learning-rate schedule with linear warm-up, gradient
clipping by global norm, optional mixed precision (``torch.autocast``) and activation checkpointing,
atomic checkpoints that resume bit for bit, and, launched with ``torchrun``, DistributedDataParallel.

>>> import numpy as np
>>> from lectorch.data import markov_tokens
>>> cfg = TrainConfig(vocab_size=16, dim=8, num_layers=1, batch_size=4, context_length=8, total_steps=5, warmup_steps=1)
>>> result = train(cfg, markov_tokens(1000, 16), progress=False)
>>> len(result.losses)
5

Run it from a shell, on one device or several (one process per GPU)::

    python -m lectorch.train --data tokens.bin --steps 200
    torchrun --standalone --nproc_per_node=2 -m lectorch.train --data tokens.bin --steps 200
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
from dataclasses import dataclass
import pathlib
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from lectorch import _validate
from lectorch.checkpoint import CheckpointError, restore_checkpoint, save_checkpoint
from lectorch.data import get_batch
from lectorch.device import check_device, synchronize
from lectorch.dtypes import FORMATS, as_dtype
from lectorch.models import TinyLM
from lectorch.randomness import make_generator

if TYPE_CHECKING:  # for annotations only: the API docs then show a plain "Path" they need not resolve
    from pathlib import Path

#: The dtypes a run can train in: "fp32" (no autocast) and the 16-bit formats torch.autocast takes,
#: from the float-format registry (fp16 also needs a GradScaler, which :func:`train` makes).
AUTOCAST_DTYPES: tuple[str, ...] = tuple(f.name for f in FORMATS if f.trainable and f.bits <= 32)

# ------------------------------------------------------------------------------------------- loss


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of next-token ``logits`` (B, T, V) against ``targets`` (B, T), in nats.

    The loss is always computed in float32, whatever the logits' dtype: bf16/fp16 logits are upcast
    first. CPU autocast would do this for ``cross_entropy`` by itself; CUDA autocast registers no kernel
    for ``aten::cross_entropy_loss``, which then calls ``log_softmax`` with an explicit dtype (so it
    stays bf16 and the loss loses precision) before an fp32 ``nll_loss``. So the upcast is explicit
    here and the same on every device.

    >>> round(lm_loss(torch.zeros(2, 3, 10), torch.zeros(2, 3, dtype=torch.long)).item(), 4)  # ln 10
    2.3026
    >>> lm_loss(torch.zeros(2, 3, 10, dtype=torch.bfloat16), torch.zeros(2, 3, dtype=torch.long)).dtype
    torch.float32
    """
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} do not match: "
                         "expected (B, T, V) and (B, T)")
    if targets.dtype.is_floating_point or targets.dtype == torch.bool:
        raise TypeError(f"targets must be integer token ids (int64), got {targets.dtype}: "
                        "use targets.long() if they hold whole numbers")
    # checked on the CPU only: on a GPU the check would synchronise every step
    if targets.device.type == "cpu" and targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < logits.shape[-1]:
        raise ValueError(f"targets must be token ids in [0, {logits.shape[-1]}) (the logits' last dimension, "
                         f"the vocabulary), got ids from {int(targets.min())} to {int(targets.max())}")
    return F.cross_entropy(logits.flatten(0, -2).float(), targets.flatten())


# ---------------------------------------------------------------------------------------- schedule


def cosine_lr(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> float:
    """The learning rate at ``step``: linear warm-up 0 → ``max_lr``, then cosine decay to ``min_lr``.

    ``lr = max_lr·step/warmup_steps`` for step < warmup_steps; then
    ``min_lr + (max_lr - min_lr)·(1 + cos(π·progress))/2`` with progress 0 → 1 from warmup_steps to
    total_steps; ``min_lr`` after that.

    >>> cosine_lr(10, max_lr=1e-3, warmup_steps=10, total_steps=110)   # end of warm-up
    0.001
    >>> cosine_lr(60, max_lr=1e-3, warmup_steps=10, total_steps=110, min_lr=1e-4)   # halfway down
    0.00055
    """
    step = _validate.non_negative_int("step", step)
    max_lr = _validate.positive_number("max_lr", max_lr)
    warmup_steps = _validate.non_negative_int("warmup_steps", warmup_steps)
    total_steps = _validate.positive_int("total_steps", total_steps)
    if isinstance(min_lr, bool) or not isinstance(min_lr, (int, float)) or not 0 <= min_lr <= max_lr:
        raise ValueError(f"min_lr must be a number in [0, max_lr={max_lr}], got {min_lr!r}")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps={warmup_steps} must be <= total_steps={total_steps}")
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return float(min_lr)
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (max_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass(frozen=True)
class CosineSchedule:
    """:func:`cosine_lr` as a multiplier of the base LR, for ``torch.optim.lr_scheduler.LambdaLR``.

    A callable object rather than a lambda: LambdaLR then saves its fields in ``state_dict()``.

    >>> CosineSchedule(warmup_steps=10, total_steps=110, min_ratio=0.1)(60)
    0.55
    """

    warmup_steps: int
    total_steps: int
    min_ratio: float = 0.1

    def __call__(self, step: int) -> float:
        return cosine_lr(step, max_lr=1.0, warmup_steps=self.warmup_steps, total_steps=self.total_steps,
                         min_lr=self.min_ratio)


def cosine_schedule(optimizer: torch.optim.Optimizer, *, warmup_steps: int, total_steps: int,
                    min_ratio: float = 0.1) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR that follows :func:`cosine_lr` with ``max_lr`` = the optimizer's lr.

    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    >>> sched = cosine_schedule(opt, warmup_steps=4, total_steps=10)
    >>> opt.param_groups[0]["lr"]        # step 0 of a warm-up
    0.0
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    schedule = CosineSchedule(warmup_steps, total_steps, min_ratio)
    schedule(0)  # validates the arguments
    return torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


# ---------------------------------------------------------------------------------------- clipping


def grad_norm(parameters: Iterable[torch.Tensor]) -> float:
    """The global L2 norm of all gradients: sqrt(Σ‖g‖²), the quantity ``clip_grad_norm_`` bounds.

    >>> p = torch.zeros(2, requires_grad=True); p.grad = torch.tensor([3.0, 4.0]); grad_norm([p])
    5.0
    """
    if isinstance(parameters, torch.Tensor):
        raise TypeError("parameters must be an iterable of tensors such as model.parameters(), not one tensor")
    grads = [p.grad.detach().float() for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))


# --------------------------------------------------------------------------------- mixed precision


def autocast_context(device: str | torch.device, dtype: str | torch.dtype = "fp32") -> Any:
    """``torch.autocast`` for ``dtype`` on ``device`` ("fp32" → a no-op context).

    bf16 needs no loss scaling; fp16 needs a GradScaler (``torch.amp.GradScaler(device.type)``, which
    :func:`train` makes). Both run on CUDA and on CPUs (where they are emulated, so slow, unless the
    CPU has native bf16/fp16 units).

    >>> with autocast_context("cpu", "fp16"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.float16

    >>> with autocast_context("cpu", "bf16"):
    ...     (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
    torch.bfloat16
    >>> torch.is_autocast_enabled("cpu")      # off again after the block
    False
    """
    dev = check_device(device)
    dt = as_dtype(dtype)
    if dt == torch.float32:
        return contextlib.nullcontext()
    if dt not in (torch.bfloat16, torch.float16):
        raise ValueError(f"dtype={dtype!r}: autocast runs in 'bf16' or 'fp16' (or 'fp32' for no autocast)")
    return torch.autocast(device_type=dev.type, dtype=dt)


# ------------------------------------------------------------------------------ saved activations


def predicted_saved_bytes(batch_size: int, context_length: int, dim: int, num_layers: int, vocab_size: int,
                          *, checkpointing: bool = False) -> int:
    """Bytes autograd saves for one fp32 forward of :class:`lectorch.models.TinyLM` plus its loss (what
    :func:`lectorch.step_memory.saved_tensors` measures as ``activation_bytes``, parameters excluded).

    Per block without checkpointing: the inputs of both matmuls and of the GELU, (1 + 4 + 4)·B·T·D
    floats; with checkpointing only the block's input, B·T·D floats. Then the head's input (B·T·D),
    the log-probabilities (B·T·V), the int64 token ids (embedding) and targets (loss), and the
    loss's 4-byte ``total_weight``.

    >>> predicted_saved_bytes(4, 8, 16, 2, 32)
    43524
    """
    b = _validate.positive_int("batch_size", batch_size)
    t = _validate.positive_int("context_length", context_length)
    d = _validate.positive_int("dim", dim)
    n = _validate.positive_int("num_layers", num_layers)
    v = _validate.positive_int("vocab_size", vocab_size)
    per_block = d if checkpointing else 9 * d
    return 4 * b * t * (n * per_block + d + v) + 2 * 8 * b * t + 4


# ------------------------------------------------------------------------------------------- loop


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a run; a checkpoint stores it and a resume must use the same one.

    >>> TrainConfig(batch_size=0)
    Traceback (most recent call last):
    ...
    ValueError: batch_size must be >= 1, got 0; pass a positive size
    """

    vocab_size: int = 64
    dim: int = 64
    num_layers: int = 2
    batch_size: int = 16
    context_length: int = 32
    total_steps: int = 200
    warmup_steps: int = 20
    max_lr: float = 1e-2
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    dropout: float = 0.0
    grad_clip: float | None = 1.0
    dtype: str = "fp32"
    activation_checkpointing: bool = False
    seed: int = 0
    data_seed: int = 1
    checkpoint_every: int = 50

    def __post_init__(self) -> None:
        for name in ("vocab_size", "dim", "num_layers", "batch_size", "context_length", "total_steps"):
            _validate.positive_int(name, getattr(self, name))
        for name in ("warmup_steps", "seed", "data_seed", "checkpoint_every"):
            _validate.non_negative_int(name, getattr(self, name))
        _validate.positive_number("max_lr", self.max_lr)
        if not 0 <= _validate.non_negative_number("min_lr_ratio", self.min_lr_ratio) <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if not 0 <= _validate.non_negative_number("dropout", self.dropout) < 1:
            raise ValueError(f"dropout must be a probability in [0, 1), got {self.dropout}")
        _validate.non_negative_number("weight_decay", self.weight_decay)
        if self.grad_clip is not None:
            _validate.positive_number("grad_clip", self.grad_clip)
        if not isinstance(self.activation_checkpointing, bool):
            raise TypeError(f"activation_checkpointing must be True or False, got {self.activation_checkpointing!r}")
        if self.warmup_steps > self.total_steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} must be <= total_steps={self.total_steps}")
        if as_dtype(self.dtype, name="dtype") not in [as_dtype(d) for d in AUTOCAST_DTYPES]:
            raise ValueError(f"dtype={self.dtype!r}: a run trains in one of {', '.join(AUTOCAST_DTYPES)} (autocast)")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainResult:
    """A finished (or resumed-and-finished) run: the model and per-step histories."""

    model: nn.Module
    losses: list[float]
    grad_norms: list[float]
    lrs: list[float]
    start_step: int = 0

    @property
    def steps(self) -> int:
        return len(self.losses)


def build_model(config: TrainConfig, device: str | torch.device = "cpu") -> TinyLM:
    """The config's TinyLM, initialised from ``config.seed`` without touching the global RNG.

    >>> a = build_model(TrainConfig(dim=8)); b = build_model(TrainConfig(dim=8))
    >>> bool(torch.equal(a.head.weight, b.head.weight))
    True
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = TinyLM(config.vocab_size, config.dim, config.num_layers,
                       checkpointing=config.activation_checkpointing, dropout=config.dropout)
    return model.to(check_device(device))


def scaler_step(scaler: torch.amp.GradScaler, optimizer: torch.optim.Optimizer,
                scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> bool:
    """``scaler.step(optimizer)`` and ``scaler.update()``, then ``scheduler.step()`` only if the
    optimizer really stepped; return whether it did.

    With fp16 a GradScaler skips the optimizer step when a gradient is inf/NaN and then lowers its
    scale: that decrease is how the skip is detected. Stepping the schedule anyway would shift the
    learning rates by one step (torch warns about it). A disabled scaler always steps.

    >>> model = torch.nn.Linear(2, 1)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> model(torch.ones(1, 2)).sum().backward()
    >>> scaler_step(torch.amp.GradScaler("cpu", enabled=False), opt)
    True
    """
    before = scaler.get_scale() if scaler.is_enabled() else None
    scaler.step(optimizer)
    scaler.update()
    stepped = before is None or scaler.get_scale() >= before
    if stepped and scheduler is not None:
        scheduler.step()
    return stepped


def _is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def train(
    config: TrainConfig,
    data: np.ndarray,
    *,
    device: str | torch.device = "cpu",
    checkpoint_path: str | Path | None = None,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``config``'s model on ``data`` (token ids) and return it with its loss history.

    With ``checkpoint_path``, a checkpoint is written atomically every ``config.checkpoint_every``
    steps and at the end, and a run finding one there resumes from it (and continues exactly as if it
    had never stopped). Under ``torchrun`` (torch.distributed initialised) the model is wrapped in
    DistributedDataParallel; every rank draws the same global batch and trains on its own slice, and
    only rank 0 writes checkpoints. ``on_step(step, loss)`` is called after each step.
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    dev = check_device(device)
    distributed = _is_distributed()
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    if config.batch_size % world:
        raise ValueError(f"batch_size={config.batch_size} must be divisible by the number of processes ({world})")
    if not isinstance(data, np.ndarray):
        raise TypeError(f"data must be a 1-D numpy array or np.memmap of token ids, got {type(data).__name__}")
    if config.context_length >= len(data):
        raise ValueError(f"context_length={config.context_length} must be smaller than the data length {len(data)}")
    local = config.batch_size // world
    autocast_context(dev, config.dtype)  # a dtype autocast cannot run fails here, before any work

    model = build_model(config, dev)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and not n.startswith("embed")]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and not n.startswith("embed"))]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.max_lr, betas=(0.9, 0.95),
    )
    scheduler = cosine_schedule(optimizer, warmup_steps=config.warmup_steps, total_steps=config.total_steps,
                                min_ratio=config.min_lr_ratio)
    use_fp16 = as_dtype(config.dtype) == torch.float16
    scaler = torch.amp.GradScaler("cuda" if dev.type == "cuda" else "cpu", enabled=use_fp16)
    generator = make_generator(config.data_seed)
    losses: list[float] = []
    norms: list[float] = []
    lrs: list[float] = []
    start = 0

    if checkpoint_path is not None and pathlib.Path(checkpoint_path).exists():
        state = restore_checkpoint(checkpoint_path, model=model, optimizer=optimizer, scheduler=scheduler,
                                   scaler=scaler if use_fp16 else None, generator=generator)
        saved = state["extra"].get("config")
        if saved != config.as_dict():
            diff = [k for k in config.as_dict() if (saved or {}).get(k) != getattr(config, k)]
            raise CheckpointError(f"checkpoint {pathlib.Path(checkpoint_path)} was written by a run with another config "
                                  f"(different: {', '.join(diff) or 'all'}); use a new checkpoint path")
        start = state["step"]
        losses, norms, lrs = list(state["extra"]["losses"]), list(state["extra"]["grad_norms"]), list(state["extra"]["lrs"])

    net: nn.Module = model
    if distributed:
        net = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)

    def save(step: int) -> None:
        if rank == 0:
            save_checkpoint(checkpoint_path, model=model, step=step, optimizer=optimizer, scheduler=scheduler,
                            scaler=scaler if use_fp16 else None, generator=generator,
                            extra={"config": config.as_dict(), "losses": losses, "grad_norms": norms, "lrs": lrs})
        if distributed:
            dist.barrier()

    from tqdm.auto import tqdm

    bar = tqdm(range(start, config.total_steps), initial=start, total=config.total_steps,
               disable=not progress or rank != 0, desc="train", unit="step")
    net.train()
    for step in bar:
        inputs, targets = get_batch(data, config.batch_size, config.context_length, dev, generator=generator)
        inputs, targets = inputs[rank * local:(rank + 1) * local], targets[rank * local:(rank + 1) * local]
        with autocast_context(dev, config.dtype):
            loss = lm_loss(net(inputs), targets)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # gradients back in true units before clipping
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip or math.inf)
        lrs.append(optimizer.param_groups[0]["lr"])
        scaler_step(scaler, optimizer, scheduler)  # the LR schedule advances only if the optimizer stepped
        optimizer.zero_grad(set_to_none=True)
        loss = loss.detach().float()
        if distributed:  # the loss of the global batch = mean of the ranks' losses
            dist.all_reduce(loss, op=dist.ReduceOp.SUM)
            loss /= world
        losses.append(loss.item())
        norms.append(float(norm))
        if (step + 1) % 10 == 0 or step + 1 == config.total_steps:
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        if checkpoint_path is not None and (
            step + 1 == config.total_steps or (config.checkpoint_every and (step + 1) % config.checkpoint_every == 0)
        ):
            save(step + 1)
        if on_step is not None:
            on_step(step + 1, losses[-1])
    bar.close()
    return TrainResult(model=model, losses=losses, grad_norms=norms, lrs=lrs, start_step=start)


# -------------------------------------------------------------------------------- one measured step


@dataclass(frozen=True)
class StepReport:
    """Costs of one training step: saved activations (exact), FLOPs (counted), seconds and peak bytes (measured)."""

    saved_activation_bytes: int
    flops: int
    step_seconds: float
    peak_memory_bytes: int | None


def measure_step(*, batch_size: int, dtype: str = "fp32", checkpointing: bool = False,
                 device: str | torch.device = "cpu", vocab_size: int = 64, dim: int = 64, num_layers: int = 4,
                 context_length: int = 32, trials: int = 3) -> StepReport:
    """Measure one forward + backward of a :class:`lectorch.models.TinyLM` (peak memory only on CUDA).

    >>> r = measure_step(batch_size=2, dim=8, num_layers=1, vocab_size=16, context_length=4, trials=1)
    >>> r.saved_activation_bytes == predicted_saved_bytes(2, 4, 8, 1, 16)
    True
    """
    from lectorch.bench import benchmark
    from lectorch.flops import count_flops
    from lectorch.memory import ensure_fits
    from lectorch.step_memory import saved_tensors

    dev = check_device(device)
    batch_size = _validate.positive_int("batch_size", batch_size)
    trials = _validate.positive_int("trials", trials)
    config = TrainConfig(vocab_size=vocab_size, dim=dim, num_layers=num_layers, batch_size=batch_size,
                         context_length=context_length, activation_checkpointing=checkpointing, dtype=dtype)
    autocast_context(dev, dtype)  # validates dtype for this device before any work
    need = 2 * predicted_saved_bytes(batch_size, context_length, dim, num_layers, vocab_size,
                                     checkpointing=checkpointing) + 16 * batch_size * (context_length + 1)
    what = f"a step of TinyLM(dim={dim}, num_layers={num_layers}) on batch_size={batch_size} × {context_length} tokens"
    ensure_fits(need, dev, what=what)
    if dev.type != "cpu":
        ensure_fits(16 * batch_size * (context_length + 1), "cpu", what=what)
    model = build_model(config, dev)
    gen = make_generator(0)
    ids = torch.randint(vocab_size, (batch_size, context_length + 1), generator=gen).to(dev)
    inputs, targets = ids[:, :-1].clone(), ids[:, 1:].clone()  # separate tensors, as get_batch returns

    def forward() -> torch.Tensor:
        with autocast_context(dev, dtype):
            return lm_loss(model(inputs), targets)

    def step() -> None:
        forward().backward()
        model.zero_grad(set_to_none=True)

    saved_bytes = saved_tensors(forward, parameters=list(model.parameters())).activation_bytes  # graph freed here
    flops = count_flops(step).total
    peak = None
    if dev.type == "cuda":
        synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        step()
        synchronize(dev)
        peak = int(torch.cuda.max_memory_allocated(dev))
    timing = benchmark(step, device=dev, warmup=1, trials=trials, min_trial_s=0.005, max_total_s=1.0)
    return StepReport(saved_activation_bytes=saved_bytes, flops=flops, step_seconds=timing.median_s,
                      peak_memory_bytes=peak)


# ---------------------------------------------------------------------------------------- torchrun


def setup_distributed() -> torch.device:
    """Join the process group that ``torchrun`` describes in the environment; return this rank's device.

    torchrun starts one process per GPU and sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
    MASTER_PORT. GPUs talk over NCCL, CPU processes over gloo. Without torchrun this does nothing.

    >>> setup_distributed().type in ("cpu", "cuda")   # not under torchrun: the usual device choice
    True
    """
    if "WORLD_SIZE" not in os.environ:
        return check_device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(backend="gloo")
    return device


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m lectorch.train --data tokens.bin [...]``, also under ``torchrun``."""
    from lectorch.data import load_tokens

    parser = argparse.ArgumentParser(prog="python -m lectorch.train", description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="flat uint16 token file (lectorch.data.write_tokens)")
    parser.add_argument("--checkpoint", default=None, help="checkpoint file: written while training, resumed from")
    parser.add_argument("--save-params", default=None, help="write the final parameters here (rank 0)")
    for f in dataclasses.fields(TrainConfig):
        if f.name in ("dtype",):
            parser.add_argument("--dtype", default=f.default, choices=list(AUTOCAST_DTYPES))
        elif f.type in ("bool",):
            parser.add_argument(f"--{f.name.replace('_', '-')}", action="store_true")
        elif f.name == "grad_clip":
            parser.add_argument("--grad-clip", type=float, default=f.default)
        else:
            kind = int if f.type == "int" else float
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=f.default)
    parser.add_argument("--steps", type=int, default=None, help="alias of --total-steps")
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
    if args.steps is not None:
        values["total_steps"] = args.steps
    config = TrainConfig(**values)
    device = setup_distributed()
    try:
        result = train(config, load_tokens(args.data), device=device, checkpoint_path=args.checkpoint,
                       progress=False)
        if not _is_distributed() or dist.get_rank() == 0:
            print(f"steps {result.steps}  final loss {result.losses[-1]:.4f}")
            if args.save_params:
                torch.save({k: v.cpu() for k, v in result.model.state_dict().items()} | {"losses": torch.tensor(result.losses)},
                           args.save_params)
    finally:
        if _is_distributed():
            dist.destroy_process_group()


__all__ = ["AUTOCAST_DTYPES", "lm_loss", "cosine_lr", "CosineSchedule", "cosine_schedule", "grad_norm",
           "autocast_context", "predicted_saved_bytes", "TrainConfig",
           "TrainResult", "build_model", "train", "scaler_step", "StepReport", "measure_step",
           "setup_distributed", "main"]

if __name__ == "__main__":
    main()
