"""Moving bytes between host and device: what a link can carry, and what a copy really takes.

``.to(device)`` copies a tensor over a link (PCIe between CPU and GPU, NVLink between GPUs): a
one-off cost of ``bytes / bandwidth``, paid again every time data crosses. Napkin figures first,
then measured copies (warm-up and synchronisation through :func:`lectorch.bench.benchmark`).

>>> round(pcie_bytes_per_s(4) / 1e9, 1)    # PCIe 4.0 x16, one direction, GB/s
31.5
>>> round(transfer_seconds(14e9, pcie_bytes_per_s(4)), 3)   # a 7B model in bf16 over PCIe 4.0
0.444
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lectorch import _validate
from lectorch.bench import Timing, benchmark, cpu_threads, format_seconds
from lectorch.device import check_device, get_device
from lectorch.dtypes import as_dtype
from lectorch.memory import ensure_fits, format_bytes, tensor_bytes

#: Transfer rate of one PCIe lane in GT/s and the line-code efficiency, per PCIe generation.
#: Source: PCI-SIG specifications (3.0: 8 GT/s, 4.0: 16 GT/s, 5.0: 32 GT/s, all with 128b/130b coding).
PCIE_GENERATIONS: dict[int, tuple[float, float]] = {3: (8e9, 128 / 130), 4: (16e9, 128 / 130), 5: (32e9, 128 / 130)}

#: NVLink 4 (H100 SXM): 18 links × 25 GB/s per direction = 450 GB/s each way (900 GB/s both ways).
#: Source: NVIDIA H100 Tensor Core GPU Architecture whitepaper. It links GPUs, not host and GPU.
NVLINK4_BYTES_PER_S = 18 * 25e9


def pcie_bytes_per_s(generation: int, lanes: int = 16) -> float:
    """Peak bytes per second of a PCIe link in ONE direction (before protocol overheads).

    ``lanes × transfers/s × coding efficiency / 8 bits``. Real copies reach roughly 70–90% of it.

    >>> round(pcie_bytes_per_s(5) / 1e9, 1)
    63.0
    >>> round(pcie_bytes_per_s(3, lanes=8) / 1e9, 2)
    7.88
    """
    if isinstance(generation, bool) or generation not in PCIE_GENERATIONS:
        raise ValueError(f"generation={generation!r}: lectorch knows PCIe generations {sorted(PCIE_GENERATIONS)}")
    lanes = _validate.positive_int("lanes", lanes)
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes={lanes}: a PCIe link has 1, 2, 4, 8 or 16 lanes")
    rate, efficiency = PCIE_GENERATIONS[generation]
    return lanes * rate * efficiency / 8


def transfer_seconds(nbytes: float, bytes_per_s: float) -> float:
    """Seconds to move ``nbytes`` at ``bytes_per_s``: the napkin estimate of a copy (a lower bound).

    >>> transfer_seconds(2**30, 32e9)   # 1 GiB at 32 GB/s
    0.033554432
    """
    nbytes = _validate.positive_number("nbytes", nbytes)
    return nbytes / _validate.positive_number("bytes_per_s", bytes_per_s)


@dataclass(frozen=True)
class TransferResult:
    """One measured copy: ``nbytes`` moved per call, timed by ``timing`` (median over trials)."""

    kind: str
    nbytes: int
    timing: Timing

    @property
    def seconds(self) -> float:
        """Median seconds per copy."""
        return self.timing.median_s

    @property
    def bytes_per_s(self) -> float:
        """Achieved bandwidth: bytes moved / median seconds."""
        return self.nbytes / self.seconds

    def __str__(self) -> str:
        return (
            f"{self.kind}: {format_bytes(self.nbytes, binary=True)} in {format_seconds(self.seconds)} "
            f"= {self.bytes_per_s / 1e9:.2f} GB/s"
        )


def copy_kind(device: str | torch.device, *, pinned: bool = False) -> str:
    """The label of a host → ``device`` copy.

    >>> copy_kind("cpu")
    'host → host'
    """
    dev = check_device(device)
    if dev.type == "cpu":
        return "host → host"
    return f"host → {dev} ({'pinned' if pinned else 'pageable'})"


def measure_copy(
    nbytes: int,
    device: str | torch.device | None = None,
    *,
    pinned: bool = False,
    fraction: float = 0.9,
    trials: int = 5,
    max_total_s: float = 1.0,
) -> TransferResult:
    """Time copying ``nbytes`` from host memory to ``device`` (a host-to-host copy on a CPU).

    The source is ordinary (pageable) host memory, or page-locked memory with ``pinned=True``
    (CUDA only); the destination is allocated once, so only the copy is timed. Both allocations are
    checked with :func:`lectorch.memory.ensure_fits` first: a size that cannot fit is refused with
    a ``ValueError`` instead of exhausting the machine. A host-to-host copy runs on one thread (it is
    memory-bound; extra threads on a shared machine mostly wait for a free core).

    >>> r = measure_copy(2**16, "cpu", trials=3)
    >>> r.kind, r.nbytes, r.bytes_per_s > 0
    ('host → host', 65536, True)
    """
    dev = get_device() if device is None else check_device(device)
    nbytes = _validate.positive_int("nbytes", nbytes)
    if pinned and dev.type != "cuda":
        raise ValueError(
            f"pinned=True needs a CUDA GPU (device is {dev}): page-locked host memory only speeds up "
            "copies between host and GPU; use pinned=False"
        )
    host_copies = 2 if dev.type == "cpu" else 1
    ensure_fits(host_copies * nbytes, "cpu", fraction=fraction, what=f"copying {format_bytes(nbytes)}")
    if dev.type != "cpu":
        ensure_fits(nbytes, dev, fraction=fraction, what=f"copying {format_bytes(nbytes)}")
    src = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)  # ones, not empty: touch every page
    dst = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    with cpu_threads(1 if dev.type == "cpu" else None):
        timing = benchmark(
            lambda: dst.copy_(src, non_blocking=pinned),
            device=dev, warmup=2, trials=trials, min_trial_s=0.005, max_total_s=max_total_s,
            label=copy_kind(dev, pinned=pinned),
        )
    return TransferResult(kind=copy_kind(dev, pinned=pinned), nbytes=nbytes, timing=timing)


def copy_modes(device: str | torch.device) -> tuple[bool, ...]:
    """The ``pinned`` settings worth measuring on ``device``: both on a CUDA GPU, pageable elsewhere.

    >>> copy_modes("cpu")
    (False,)
    """
    return (False, True) if check_device(device).type == "cuda" else (False,)


def sweep_sizes(device: str | torch.device, *, smallest: int = 2**16, largest: int | None = None, step: int = 4) -> list[int]:
    """Copy sizes in bytes for a bandwidth-vs-size sweep: ``smallest`` × ``step``**k up to ``largest``.

    ``largest`` defaults to 16 MiB on a CPU (fast to run) and 1 GiB on a GPU.

    >>> [s // 2**10 for s in sweep_sizes("cpu", largest=2**20)]   # KiB
    [64, 256, 1024]
    """
    dev = check_device(device)
    smallest = _validate.positive_int("smallest", smallest)
    step = _validate.positive_int("step", step)
    if step < 2:
        raise ValueError(f"step must be >= 2, got {step}")
    if largest is None:
        largest = 2**30 if dev.type == "cuda" else 2**24
    largest = _validate.positive_int("largest", largest)
    if largest < smallest:
        raise ValueError(f"largest={largest} is smaller than smallest={smallest}")
    count = int(math.floor(math.log(largest / smallest, step) + 1e-9)) + 1
    return [smallest * step**k for k in range(count)]


def bandwidth_sweep(
    device: str | torch.device,
    sizes: list[int] | None = None,
    *,
    trials: int = 5,
    max_total_s: float = 0.5,
) -> list[TransferResult]:
    """Measure every size of ``sizes`` (default :func:`sweep_sizes`) in every mode of :func:`copy_modes`.

    >>> [r.kind for r in bandwidth_sweep("cpu", [2**12, 2**14], trials=3)]
    ['host → host', 'host → host']
    """
    dev = check_device(device)
    sizes = sweep_sizes(dev) if sizes is None else [_validate.positive_int("sizes", s) for s in sizes]
    return [
        measure_copy(size, dev, pinned=pinned, trials=trials, max_total_s=max_total_s)
        for pinned in copy_modes(dev)
        for size in sizes
    ]


@dataclass(frozen=True)
class TransferSummary:
    """The accounting of moving one tensor: its bytes, the napkin times and (optionally) measurements."""

    elements: int
    dtype: torch.dtype
    nbytes: int
    napkin_seconds: dict[str, float]
    measured: tuple[TransferResult, ...] = ()


#: The links the napkin estimates use, with their one-direction peak bytes per second.
NAPKIN_LINKS: dict[str, float] = {
    "PCIe 4.0 x16": pcie_bytes_per_s(4),
    "PCIe 5.0 x16": pcie_bytes_per_s(5),
}


def summarize_transfer(
    elements: int,
    dtype: torch.dtype | str,
    device: str | torch.device = "cpu",
    *,
    measure: bool = True,
    max_bytes: int | None = None,
    trials: int = 3,
) -> TransferSummary:
    """Bytes of a 1-D tensor of ``elements`` × ``dtype``, its napkin transfer times, and measured copies.

    ``max_bytes`` caps what may be allocated (a widget's budget); the size must also fit in free
    memory. A copy moves bytes: the dtype only decides how many.

    >>> s = summarize_transfer(2**20, "bf16", measure=False)
    >>> s.nbytes, round(s.napkin_seconds["PCIe 4.0 x16"] * 1e6, 1)   # bytes, µs
    (2097152, 66.6)
    """
    elements = _validate.positive_int("elements", elements)
    dt = as_dtype(dtype)
    dev = check_device(device)
    nbytes = tensor_bytes((elements,), dt)
    if max_bytes is not None and nbytes > _validate.positive_int("max_bytes", max_bytes):
        raise ValueError(
            f"{elements:,} elements of {dt} are {format_bytes(nbytes)}, more than this panel's limit of "
            f"{format_bytes(max_bytes)}: choose fewer elements or a smaller dtype"
        )
    napkin = {name: transfer_seconds(nbytes, bw) for name, bw in NAPKIN_LINKS.items()}
    measured: tuple[TransferResult, ...] = ()
    if measure:
        measured = tuple(measure_copy(nbytes, dev, pinned=p, trials=trials, max_total_s=0.5) for p in copy_modes(dev))
    return TransferSummary(elements=elements, dtype=dt, nbytes=nbytes, napkin_seconds=napkin, measured=measured)
