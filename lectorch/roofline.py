"""Why small matmuls miss the peak: arithmetic intensity, the roofline, and measured points on it.

A kernel must move its operands between memory and the compute units. Its *arithmetic intensity* is
FLOPs per byte moved; the *roofline* says the best FLOP/s it can reach is
``min(peak, intensity × bandwidth)``. Below the ridge point (peak / bandwidth) a kernel is
memory-bound, above it compute-bound.

>>> matmul_intensity(8192, 8192, 8192, "bf16")        # 2n³ FLOPs / (3n² elements × 2 bytes)
2730.6666666666665
>>> h100 = Roofline.from_gpu("H100 SXM", "bf16")
>>> h100.bound(matmul_intensity(8192, 8192, 8192, "bf16")), h100.bound(matmul_intensity(1, 8192, 8192, "bf16"))
('compute', 'memory')
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from lectorch import _validate
from lectorch.bench import Timing, benchmark, cpu_threads
from lectorch.device import check_device, free_memory_bytes
from lectorch.dtypes import storage_dtype
from lectorch.flops import matmul_flops
from lectorch.memory import ensure_fits
from lectorch.hardware import GPUSpec, flops_key, get_gpu, gpu_for_device

#: Precisions a plain ``a @ b`` can run in, and the dtype its tensors are stored in.
#: "tf32" is float32 storage multiplied on tensor cores with a 10-bit mantissa (CUDA only).
MATMUL_PRECISIONS: dict[str, torch.dtype] = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}


def as_precision(dtype: str | torch.dtype, *, name: str = "dtype") -> str:
    """The precision key ("fp32", "tf32", "bf16", ...) of a dtype or name that matmuls can run in.

    >>> as_precision(torch.bfloat16), as_precision("float32"), as_precision("tf32")
    ('bf16', 'fp32', 'tf32')
    """
    try:
        key = flops_key(dtype)
    except ValueError:
        raise ValueError(
            f"{name}={dtype!r} is not a matmul precision lectorch knows; use one of {', '.join(MATMUL_PRECISIONS)}"
        ) from None
    except TypeError:
        raise TypeError(f"{name} must be a torch.dtype or a name such as 'bf16', got {type(dtype).__name__}") from None
    if key not in MATMUL_PRECISIONS:
        raise ValueError(
            f"{name}={dtype!r}: plain `a @ b` does not run in {key} (fp8 needs scaled matmuls); "
            f"use one of {', '.join(MATMUL_PRECISIONS)}"
        )
    return key


def element_bytes(dtype: str | torch.dtype) -> int:
    """Bytes per element of a dtype, where "tf32" counts as the float32 it is stored in.

    >>> element_bytes("bf16"), element_bytes("tf32"), element_bytes("fp8")
    (2, 4, 1)
    """
    return storage_dtype(dtype).itemsize  # from the float-format registry


def matmul_bytes(m: int, k: int, n: int, dtype: str | torch.dtype, *, batch: int = 1) -> int:
    """The fewest bytes an (m, k) @ (k, n) matmul moves: read both operands once, write the result.

    >>> matmul_bytes(4, 4, 4, "fp32")                   # 3 matrices of 16 floats of 4 bytes
    192
    """
    m = _validate.positive_int("m", m)
    k = _validate.positive_int("k", k)
    n = _validate.positive_int("n", n)
    batch = _validate.positive_int("batch", batch)
    return batch * (m * k + k * n + m * n) * element_bytes(dtype)


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs per byte moved between memory and the compute units.

    >>> arithmetic_intensity(2e12, 1e10)
    200.0
    """
    return _validate.positive_number("flops", flops) / _validate.positive_number("bytes_moved", bytes_moved)


def matmul_intensity(m: int, k: int, n: int, dtype: str | torch.dtype, *, batch: int = 1) -> float:
    """Arithmetic intensity of an (m, k) @ (k, n) matmul: ``2mkn / ((mk + kn + mn) · bytes)``.

    For a square n×n matmul this is ``2n / (3 · bytes)``: it grows with n, which is why big matmuls
    can keep the tensor cores busy and small ones cannot.

    >>> matmul_intensity(1024, 1024, 1024, "fp32")   # 2·1024 / (3·4)
    170.66666666666666
    """
    return arithmetic_intensity(matmul_flops(m, k, n, batch=batch), matmul_bytes(m, k, n, dtype, batch=batch))


def elementwise_intensity(dtype: str | torch.dtype, *, flops_per_element: float = 1, inputs: int = 1) -> float:
    """Intensity of an element-wise op that reads ``inputs`` tensors and writes one, all of ``dtype``.

    ReLU in float32: 1 FLOP per element, 4 bytes read + 4 bytes written.

    >>> elementwise_intensity("fp32")
    0.125
    """
    inputs = _validate.positive_int("inputs", inputs)
    flops = _validate.positive_number("flops_per_element", flops_per_element)
    return flops / ((inputs + 1) * element_bytes(dtype))


@dataclass(frozen=True)
class Roofline:
    """The roofline of one processor in one precision: ``attainable = min(peak, intensity × bandwidth)``."""

    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    label: str = ""

    def __post_init__(self) -> None:
        _validate.positive_number("peak_flops_per_s", self.peak_flops_per_s)
        _validate.positive_number("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)

    @classmethod
    def from_gpu(cls, gpu: str | GPUSpec, dtype: str | torch.dtype = "bf16", *, sparse: bool = False) -> Roofline:
        """The datasheet roofline of a GPU in ``lectorch.hardware``'s spec table (dense by default).

        >>> r = Roofline.from_gpu("A100", "bf16"); r.label, round(r.ridge_point, 1)
        ('A100 SXM 80GB bf16', 153.0)
        """
        spec = get_gpu(gpu)
        key = flops_key(dtype)
        label = f"{spec.name} {key}" + (" 2:4 sparse" if sparse else "")
        return cls(spec.peak_flops(key, sparse=sparse), spec.bandwidth_bytes_per_s, label)

    @property
    def ridge_point(self) -> float:
        """The intensity (FLOPs/byte) where memory-bound turns into compute-bound."""
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    def attainable(self, intensity: float) -> float:
        """The best FLOP/s a kernel of this intensity can reach.

        >>> Roofline(100e12, 1e12).attainable(10.0) / 1e12
        10.0
        """
        intensity = _validate.positive_number("intensity", intensity)
        return min(self.peak_flops_per_s, intensity * self.bandwidth_bytes_per_s)

    def bound(self, intensity: float) -> str:
        """Which resource limits a kernel of this intensity: "memory" below the ridge point, else "compute".

        >>> Roofline(100e12, 1e12).bound(50.0)
        'memory'
        """
        intensity = _validate.positive_number("intensity", intensity)
        return "compute" if intensity >= self.ridge_point else "memory"


def _new_tf32_api() -> bool:
    """Whether this torch has the ``fp32_precision`` switches (torch ≥ 2.9) beside the legacy flags."""
    return hasattr(torch.backends.cuda.matmul, "fp32_precision")


def tf32_enabled() -> bool:
    """Whether float32 matmuls on CUDA may run on TF32 tensor cores now (read without raising).

    Uses ``torch.backends.cuda.matmul.fp32_precision`` where torch has it; reading the legacy
    ``allow_tf32`` flag (or ``torch.get_float32_matmul_precision()``) raises while the two APIs
    disagree, e.g. after ``fp32_precision = "tf32"`` (not after ``"ieee"`` or ``"none"``), so the
    legacy flag is read only on old torch.
    (``fp32_precision == "none"`` inherits the global ``torch.backends.fp32_precision``.)

    >>> with tf32_matmuls(True):
    ...     tf32_enabled()
    True
    """
    if _new_tf32_api():
        value = torch.backends.cuda.matmul.fp32_precision
        if value == "none":
            value = getattr(torch.backends, "fp32_precision", "none")
        return value == "tf32"
    return bool(torch.backends.cuda.matmul.allow_tf32)


@contextlib.contextmanager
def tf32_matmuls(enabled: bool) -> Iterator[None]:
    """Allow (or forbid) TF32 tensor cores for float32 matmuls on CUDA inside a ``with`` block.

    Sets ``torch.backends.cuda.matmul.fp32_precision`` to "tf32" or "ieee" (torch's current API) and
    afterwards puts back exactly the value it had, even on an error; nothing else is touched, so
    neither the global ``torch.backends.fp32_precision`` nor CPU (oneDNN) settings change. On a torch
    without that API (before 2.9) the legacy ``allow_tf32`` flag is set and restored instead.

    >>> before = torch.backends.cuda.matmul.fp32_precision
    >>> with tf32_matmuls(True):
    ...     torch.backends.cuda.matmul.fp32_precision
    'tf32'
    >>> torch.backends.cuda.matmul.fp32_precision == before
    True
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, got {type(enabled).__name__}")
    matmul = torch.backends.cuda.matmul
    if _new_tf32_api():
        saved = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = saved
        return
    saved_flag = matmul.allow_tf32  # torch < 2.9: only the legacy flag exists
    matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        matmul.allow_tf32 = saved_flag


def datasheet_peak(device: str | torch.device, dtype: str | torch.dtype) -> float | None:
    """The dense datasheet peak FLOP/s of ``device`` in ``dtype``; None for a CPU or an unknown GPU.

    CPUs have no such figure in lectorch (it depends on cores, clocks and vector units).

    >>> datasheet_peak("cpu", "fp32") is None
    True
    """
    key = as_precision(dtype)
    spec = gpu_for_device(check_device(device))
    if spec is None or key not in spec.dense:
        return None
    return spec.peak_flops(key)


def check_matmul_fits(
    m: int, k: int, n: int, dtype: str | torch.dtype, device: str | torch.device, *, max_memory_fraction: float = 0.5
) -> int:
    """Bytes of the three matrices; raise ``ValueError`` if they exceed a fraction of free memory.

    >>> check_matmul_fits(64, 64, 64, "fp32", "cpu")
    49152
    """
    need = matmul_bytes(m, k, n, dtype)
    fraction = _validate.fraction("max_memory_fraction", max_memory_fraction)
    free = free_memory_bytes(device)
    if need > fraction * free:
        raise ValueError(
            f"an ({m}, {k}) @ ({k}, {n}) matmul in {as_precision(dtype)} needs {need / 1e9:.3g} GB, more than "
            f"{fraction:.0%} of the {free / 1e9:.3g} GB free on {check_device(device)}; choose smaller sizes"
        )
    return need


def matmul_operands(
    m: int, k: int, n: int, dtype: str | torch.dtype, device: str | torch.device, *, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random (m, k) and (k, n) matrices in ``dtype`` on ``device`` (after a memory check).

    >>> a, b = matmul_operands(2, 3, 4, "bf16", "cpu"); a.shape, b.dtype
    (torch.Size([2, 3]), torch.bfloat16)
    """
    key = as_precision(dtype)
    dev = check_device(device)
    check_matmul_fits(m, k, n, key, dev)
    # Drawn on the device itself: no host-side copy of large matrices.
    gen = torch.Generator(device=dev).manual_seed(_validate.non_negative_int("seed", seed))
    a = torch.randn(m, k, generator=gen, device=dev, dtype=MATMUL_PRECISIONS[key])
    b = torch.randn(k, n, generator=gen, device=dev, dtype=MATMUL_PRECISIONS[key])
    return a, b


@contextlib.contextmanager
def precision_mode(dtype: str | torch.dtype, device: str | torch.device) -> Iterator[None]:
    """The global matmul settings ``dtype`` needs: TF32 on for "tf32", off for "fp32"; restored after.

    >>> with precision_mode("fp32", "cpu"):
    ...     tf32_enabled()
    False
    """
    key = as_precision(dtype)
    dev = check_device(device)
    if key == "tf32" and dev.type != "cuda":
        raise ValueError(f"dtype='tf32' is a tensor-core mode of NVIDIA GPUs; {dev} has none (use 'fp32')")
    if key in ("fp32", "tf32"):
        with tf32_matmuls(key == "tf32"):
            yield
    else:
        yield


@dataclass(frozen=True)
class MatmulPoint:
    """One measured (m, k) @ (k, n) matmul: its work, its bytes and its time."""

    m: int
    k: int
    n: int
    precision: str
    device: str
    timing: Timing

    @property
    def flops(self) -> int:
        return matmul_flops(self.m, self.k, self.n)

    @property
    def bytes_moved(self) -> int:
        return matmul_bytes(self.m, self.k, self.n, self.precision)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes_moved

    @property
    def seconds(self) -> float:
        """Median seconds per matmul."""
        return self.timing.median_s

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    def mfu(self, peak_flops_per_s: float) -> float:
        """Achieved FLOP/s over ``peak_flops_per_s`` (the dense peak of this precision)."""
        return self.flops_per_s / _validate.positive_number("peak_flops_per_s", peak_flops_per_s)


def matmul_fn(m: int, k: int, n: int, dtype: str | torch.dtype, device: str | torch.device, *, seed: int = 0) -> Callable[[], Any]:
    """A no-argument function computing one (m, k) @ (k, n) matmul (operands made once, up front).

    Run it inside :func:`precision_mode` so fp32 and tf32 mean what they say.

    >>> matmul_fn(2, 3, 4, "fp32", "cpu")().shape
    torch.Size([2, 4])
    """
    a, b = matmul_operands(m, k, n, dtype, device, seed=seed)
    return lambda: a @ b


def measure_matmul(
    m: int, k: int, n: int, dtype: str | torch.dtype, device: str | torch.device, *, seed: int = 0,
    num_threads: int | None = None, **bench_kwargs: Any,
) -> MatmulPoint:
    """Benchmark an (m, k) @ (k, n) matmul with :func:`lectorch.bench.benchmark` (keyword arguments
    such as ``trials`` are passed on) and return the measured point. On a CPU, ``num_threads`` sets
    torch's thread count for the measurement (see :func:`lectorch.bench.cpu_threads`).

    >>> p = measure_matmul(32, 32, 32, "fp32", "cpu", trials=3, num_threads=1)
    >>> p.flops, p.flops_per_s > 0
    (65536, True)
    """
    key = as_precision(dtype)
    dev = check_device(device)
    fn = matmul_fn(m, k, n, key, dev, seed=seed)
    with precision_mode(key, dev), cpu_threads(num_threads if dev.type == "cpu" else None):
        timing = benchmark(fn, device=dev, label=f"{key} ({m}, {k}) @ ({k}, {n})", **bench_kwargs)
    return MatmulPoint(m=m, k=k, n=n, precision=key, device=str(dev), timing=timing)


def measure_bandwidth(
    device: str | torch.device, *, nbytes: int = 64 * 2**20, num_threads: int | None = None, **bench_kwargs: Any
) -> float:
    """Bytes/s of copying an ``nbytes`` buffer (read once + written once), a simple stand-in for
    memory bandwidth where no datasheet figure exists (a CPU). Make it larger than the caches.

    >>> measure_bandwidth("cpu", nbytes=2**20, trials=3) > 0
    True
    """
    dev = check_device(device)
    nbytes = _validate.positive_int("nbytes", nbytes)
    ensure_fits(2 * nbytes, dev, what=f"measure_bandwidth(nbytes={nbytes}) (a source and a destination)")
    src = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    with cpu_threads(num_threads if dev.type == "cpu" else None):
        timing = benchmark(lambda: dst.copy_(src), device=dev, **bench_kwargs)
    return 2 * src.numel() * 4 / timing.median_s
