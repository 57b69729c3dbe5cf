"""Napkin math: training time from the 6·N·T rule, and the largest model that fits in memory.

A GPU's memory enters as the datasheet's "80 GB" read as 80·10⁹ bytes, like the CS336 lecture's
``h100_bytes = 80e9``: a round figure, slightly below the 80 GiB an H100 has
(:attr:`lectorch.hardware.GPUSpec.napkin_memory_bytes`).

>>> round(training_days(70e9, 15e12, num_gpus=1024, gpu="H100 SXM", mfu=0.5))
144
>>> max_trainable_params(80e9, bytes_per_param=16)
5000000000.0
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lectorch import _validate
from lectorch.hardware import GPUSpec, get_gpu

SECONDS_PER_DAY = 86_400


def training_flops(params: float, tokens: float, *, flops_per_param_token: float = 6.0) -> float:
    """Training compute ≈ 6 × parameters × tokens (2 forward + 4 backward per parameter and token).

    >>> training_flops(70e9, 15e12)
    6.3e+24
    """
    params = _validate.positive_number("params", params)
    tokens = _validate.positive_number("tokens", tokens)
    return _validate.positive_number("flops_per_param_token", flops_per_param_token) * params * tokens


def cluster_flops_per_s(
    *, num_gpus: int, mfu: float, gpu: str | GPUSpec = "H100 SXM", dtype: str | torch.dtype = "bf16",
    peak_flops_per_s: float | None = None,
) -> float:
    """Useful FLOP/s of ``num_gpus`` GPUs at utilisation ``mfu`` (dense peak unless given).

    >>> cluster_flops_per_s(num_gpus=1, mfu=0.5) / 1e12
    494.75
    """
    num_gpus = _validate.positive_int("num_gpus", num_gpus)
    mfu = _validate.fraction("mfu", mfu)
    peak = (
        _validate.positive_number("peak_flops_per_s", peak_flops_per_s)
        if peak_flops_per_s is not None
        else get_gpu(gpu).peak_flops(dtype)
    )
    return num_gpus * peak * mfu


def training_days(
    params: float, tokens: float, *, num_gpus: int, mfu: float, gpu: str | GPUSpec = "H100 SXM",
    dtype: str | torch.dtype = "bf16", peak_flops_per_s: float | None = None,
) -> float:
    """Days to train ``params`` parameters on ``tokens`` tokens.

    >>> round(training_days(70e9, 15e12, num_gpus=1024, mfu=0.5), 1)
    143.9
    """
    flops = training_flops(params, tokens)
    per_s = cluster_flops_per_s(num_gpus=num_gpus, mfu=mfu, gpu=gpu, dtype=dtype, peak_flops_per_s=peak_flops_per_s)
    return flops / (per_s * SECONDS_PER_DAY)


@dataclass(frozen=True)
class BytesPerParam:
    """Bytes each parameter costs during training, by component."""

    weights: float
    gradients: float
    optimizer_state: float
    master_weights: float = 0.0

    def __post_init__(self) -> None:
        for name in ("weights", "gradients", "optimizer_state", "master_weights"):
            _validate.non_negative_number(name, getattr(self, name))

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_state + self.master_weights


#: fp32 weights and gradients, AdamW's two fp32 moments: 4 + 4 + 8 = 16 bytes.
ADAMW_FP32 = BytesPerParam(weights=4, gradients=4, optimizer_state=8)
#: Mixed precision as Megatron-LM and DeepSpeed lay it out: bf16 weights and gradients, an fp32 master
#: copy and fp32 moments: 2 + 2 + 4 + 8 = 16 bytes.
ADAMW_BF16_MIXED = BytesPerParam(weights=2, gradients=2, optimizer_state=8, master_weights=4)
#: Mixed precision as PyTorch's autocast does it (chapter 10): the parameters and their gradients stay
#: fp32 and the moments are fp32, 4 + 4 + 8 = 16 bytes; the bf16 copies of the weights that the
#: forward pass casts are temporaries, not state.
ADAMW_AUTOCAST = BytesPerParam(weights=4, gradients=4, optimizer_state=8)
#: Plain SGD in fp32 keeps no state: 4 + 4 = 8 bytes.
SGD_FP32 = BytesPerParam(weights=4, gradients=4, optimizer_state=0)


def max_trainable_params(memory_bytes: float, *, bytes_per_param: float | BytesPerParam = 16, num_gpus: int = 1) -> float:
    """The most parameters whose weights, gradients and optimizer state fit (activations ignored).

    >>> max_trainable_params(80e9, bytes_per_param=ADAMW_FP32, num_gpus=8)
    40000000000.0
    """
    memory_bytes = _validate.positive_number("memory_bytes", memory_bytes)
    if isinstance(bytes_per_param, BytesPerParam):
        bytes_per_param = bytes_per_param.total
    per_param = _validate.positive_number("bytes_per_param", bytes_per_param)
    return _validate.positive_int("num_gpus", num_gpus) * memory_bytes / per_param


@dataclass(frozen=True)
class NapkinSummary:
    """The answers to both napkin questions for one setting (see :func:`summarize`)."""

    training_flops: float
    cluster_flops_per_s: float
    days: float
    gpu_hours: float
    memory_needed_bytes: float
    #: all the GPUs' memory: usable as one only if the training state is fully sharded (ZeRO-3, FSDP)
    memory_available_bytes: float
    #: the largest model when the state is fully sharded over all the GPUs
    max_params: float
    #: one GPU's memory: what plain data parallelism, which keeps a full copy on every GPU, can use
    memory_per_gpu_bytes: float
    #: the largest model under plain data parallelism: what one GPU holds
    max_params_replicated: float

    @property
    def fits(self) -> bool:
        """Whether the state fits when fully sharded over all the GPUs (ZeRO-3, FSDP)."""
        return self.memory_needed_bytes <= self.memory_available_bytes

    @property
    def fits_replicated(self) -> bool:
        """Whether the state fits in one GPU, as plain data parallelism needs."""
        return self.memory_needed_bytes <= self.memory_per_gpu_bytes


def summarize(
    params: float, tokens: float, *, gpu: str | GPUSpec, num_gpus: int, mfu: float,
    bytes_per_param: float | BytesPerParam = ADAMW_FP32, dtype: str | torch.dtype = "bf16",
) -> NapkinSummary:
    """Time, GPU-hours and memory of training ``params`` parameters on ``tokens`` tokens.

    Memory is given both ways: fully sharded over all the GPUs (ZeRO-3, FSDP), and replicated on
    every GPU (plain data parallelism), each GPU's memory taken as its ``napkin_memory_bytes``.

    >>> s = summarize(70e9, 15e12, gpu="H100 SXM", num_gpus=1024, mfu=0.5)
    >>> round(s.days), s.fits, s.fits_replicated, s.max_params_replicated
    (144, True, False, 5000000000.0)
    """
    spec = get_gpu(gpu)
    per_param = bytes_per_param.total if isinstance(bytes_per_param, BytesPerParam) else bytes_per_param
    per_s = cluster_flops_per_s(num_gpus=num_gpus, mfu=mfu, gpu=spec, dtype=dtype)
    days = training_days(params, tokens, num_gpus=num_gpus, mfu=mfu, peak_flops_per_s=spec.peak_flops(dtype))
    return NapkinSummary(
        training_flops=training_flops(params, tokens),
        cluster_flops_per_s=per_s,
        days=days,
        gpu_hours=days * 24 * num_gpus,
        memory_needed_bytes=params * _validate.positive_number("bytes_per_param", per_param),
        memory_available_bytes=spec.napkin_memory_bytes * num_gpus,
        max_params=max_trainable_params(spec.napkin_memory_bytes, bytes_per_param=per_param, num_gpus=num_gpus),
        memory_per_gpu_bytes=spec.napkin_memory_bytes,
        max_params_replicated=max_trainable_params(spec.napkin_memory_bytes, bytes_per_param=per_param),
    )
