"""Where tensors live: choose the device once, describe it, and read its memory.

Everything runs on a CPU; a GPU adds speed and the CUDA-only readings.

>>> device = get_device("cpu")
>>> device
device(type='cpu')
>>> synchronize(device)   # a no-op on the CPU, a barrier on a GPU
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from lectorch import _validate

#: Set this environment variable (e.g. ``LECTORCH_DEVICE=cpu``) to override the automatic choice.
DEVICE_ENV = "LECTORCH_DEVICE"


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def get_device(prefer: str | torch.device | None = None) -> torch.device:
    """The device the course runs on: CUDA if present, else Apple's MPS, else the CPU.

    ``prefer`` (or the ``LECTORCH_DEVICE`` environment variable) forces a choice and is checked:
    asking for a GPU that is not there raises a ``ValueError`` instead of failing later.

    >>> get_device("cpu")
    device(type='cpu')
    """
    if prefer is None:
        prefer = os.environ.get(DEVICE_ENV) or None
    if prefer is None:
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    return check_device(prefer, name="prefer")


def check_device(device: str | torch.device, *, name: str = "device") -> torch.device:
    """Parse ``device`` and make sure it exists on this machine.

    >>> check_device("cpu")
    device(type='cpu')
    """
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise ValueError(
                f"{name}={device!r} is not a device string; use 'cpu', 'cuda', 'cuda:0' or 'mps'"
            ) from None
    else:
        raise TypeError(f"{name} must be a str or torch.device, got {type(device).__name__}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"{name}={str(dev)!r} but this machine has no CUDA GPU visible to torch; "
                "use 'cpu' or get_device() to choose automatically"
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"{name}={str(dev)!r} but only {count} GPU(s) are visible (cuda:0 … cuda:{count - 1})")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
    elif dev.type == "mps" and not _mps_available():
        raise ValueError(f"{name}='mps' but Apple's MPS backend is not available here; use 'cpu'")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"{name}={str(dev)!r}: lectorch supports 'cpu', 'cuda' and 'mps' devices")
    return dev


def synchronize(device: str | torch.device) -> None:
    """Wait until every kernel queued on ``device`` has finished (GPUs run asynchronously).

    Time a GPU operation only between two synchronisations, or you time the launch, not the work.

    >>> synchronize("cpu")
    """
    dev = check_device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


def assert_on_device(tensor: torch.Tensor, device: str | torch.device) -> None:
    """Raise ``AssertionError`` unless ``tensor`` lives on ``device`` (a name says nothing about it).

    >>> assert_on_device(torch.zeros(2), "cpu")
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    try:
        want = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must name a torch device such as 'cpu', 'cuda' or 'cuda:0', "
                         f"got {device!r} ({err})") from None
    got = tensor.device
    same = got.type == want.type and (want.index is None or got.index == want.index)
    if not same:
        raise AssertionError(f"tensor is on {got}, expected {want}; move it with tensor.to({str(want)!r})")


def _host_memory_bytes() -> tuple[int, int]:
    """(total, available) bytes of host RAM, from /proc/meminfo where it exists."""
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
        return info["MemTotal"], info.get("MemAvailable", info["MemFree"])
    except (OSError, KeyError, ValueError):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return total, total // 2


def free_memory_bytes(device: str | torch.device) -> int:
    """Bytes that can still be allocated on ``device`` (host RAM available for the CPU).

    >>> free_memory_bytes("cpu") > 0
    True
    """
    dev = check_device(device)
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        return int(free)
    if dev.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
    return _host_memory_bytes()[1]


@dataclass(frozen=True)
class DeviceInfo:
    """What a device is: name, memory and, on a GPU, its compute capability and SM count."""

    device: str
    name: str
    total_memory_bytes: int
    compute_capability: tuple[int, int] | None = None
    multiprocessors: int | None = None
    cpu_threads: int | None = None

    def __str__(self) -> str:
        gib = self.total_memory_bytes / 2**30
        extra = ""
        if self.compute_capability is not None:
            extra = f", compute capability {self.compute_capability[0]}.{self.compute_capability[1]}, {self.multiprocessors} SMs"
        elif self.cpu_threads is not None:
            extra = f", {self.cpu_threads} torch threads"
        return f"{self.device}: {self.name}, {gib:.1f} GiB{extra}"


def describe_device(device: str | torch.device | None = None) -> DeviceInfo:
    """Describe ``device`` (default: :func:`get_device`).

    >>> describe_device("cpu").device
    'cpu'
    """
    dev = get_device() if device is None else check_device(device)
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        return DeviceInfo(
            device=str(dev),
            name=props.name,
            total_memory_bytes=int(props.total_memory),
            compute_capability=(props.major, props.minor),
            multiprocessors=props.multi_processor_count,
        )
    if dev.type == "mps":
        return DeviceInfo(device="mps", name="Apple GPU (MPS)", total_memory_bytes=int(torch.mps.recommended_max_memory()))
    return DeviceInfo(device="cpu", name=_cpu_name(), total_memory_bytes=_host_memory_bytes()[0], cpu_threads=torch.get_num_threads())


def _cpu_name() -> str:
    """The CPU's model name where the OS tells it (Linux), else the architecture."""
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def list_gpus() -> list[DeviceInfo]:
    """Every CUDA GPU torch can see (an empty list on a CPU-only machine).

    >>> isinstance(list_gpus(), list)
    True
    """
    if not torch.cuda.is_available():
        return []
    return [describe_device(f"cuda:{i}") for i in range(torch.cuda.device_count())]


# --- GPU memory readings (chapter 02) -------------------------------------------------------------

#: The CUDA caching allocator hands out memory in blocks of (multiples of) this many bytes.
CUDA_BLOCK_BYTES = 512


def allocator_bytes(nbytes: int, *, block: int = CUDA_BLOCK_BYTES) -> int:
    """Bytes ``torch.cuda.memory_allocated`` grows by for one allocation of ``nbytes``.

    PyTorch's CUDA caching allocator rounds every request up to a multiple of ``block`` (512)
    bytes; an empty tensor allocates nothing. Exact for small tensors (under 1 MiB); a large one
    may be served by a cached block up to 1 MiB bigger than it.

    >>> allocator_bytes(32 * 32 * 4)   # a 32×32 float32 matrix: 4096 is a multiple of 512
    4096
    >>> allocator_bytes(3 * 4)         # three float32 numbers still take one 512-byte block
    512
    """
    nbytes = _validate.non_negative_int("nbytes", nbytes)
    block = _validate.positive_int("block", block)
    return -(-nbytes // block) * block


#: Environment variables that configure the CUDA caching allocator (the second is torch ≥ 2.9's name).
ALLOC_CONF_ENVS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def allocator_settings() -> str | None:
    """The allocator configuration set in the environment (``NAME=value; …``), or None for the default.

    Exact ``memory_allocated`` figures assume the default caching allocator: ``backend:cudaMallocAsync``
    counts requested bytes without the 512-byte rounding, ``roundup_power2_divisions`` rounds sizes
    that are not powers of two further, and ``max_split_size_mb``/``expandable_segments`` change which
    cached block serves a request. Such settings are read when CUDA starts, so unset them before.

    >>> import os
    >>> allocator_settings() is None or any(os.environ.get(n) for n in ALLOC_CONF_ENVS)
    True
    """
    found = [f"{name}={os.environ[name]}" for name in ALLOC_CONF_ENVS if os.environ.get(name)]
    return "; ".join(found) or None


def exact_allocator_readings() -> bool:
    """Whether exact allocator deltas (512-byte blocks, no oversized cached block) can be expected:
    True with the default allocator, False when :func:`allocator_settings` finds a configuration.

    >>> exact_allocator_readings() == (allocator_settings() is None)
    True
    """
    return allocator_settings() is None


def warm_up_cublas(device: str | torch.device) -> None:
    """Run one tiny matmul and one linear layer in float32 and bfloat16 on ``device`` and wait.

    The first matmul on a CUDA stream creates cuBLAS/cuBLASLt handles and allocates their workspaces
    (tens of MiB on recent GPUs) through the caching allocator; a memory reading around that first
    call would count them. Call this before the reading (``track_allocated`` does). On a CPU it is a
    harmless no-op in effect.

    >>> warm_up_cublas("cpu")
    """
    dev = check_device(device)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.ones(16, 16, device=dev, dtype=dtype)
        _ = x @ x
        _ = torch.nn.functional.linear(x, x, x[0])
    synchronize(dev)


@dataclass
class AllocatedReading:
    """What :func:`track_allocated` measured, in bytes, relative to the start of the ``with`` block.

    ``delta_bytes``: how much more ``memory_allocated`` reports at the end than at the start.
    ``peak_bytes``: the highest it went above the start (``max_memory_allocated`` − start).
    ``allocator_settings``: a non-default allocator configuration in force (figures may then differ
    from the exact block arithmetic), or None.
    """

    device: str
    start_bytes: int = 0
    delta_bytes: int = 0
    peak_bytes: int = 0
    allocator_settings: str | None = None

    @property
    def exact(self) -> bool:
        """True when the default allocator made this reading (its block arithmetic then holds)."""
        return self.allocator_settings is None

    def __str__(self) -> str:
        text = f"{self.device}: memory_allocated +{self.delta_bytes} bytes, peak +{self.peak_bytes} bytes"
        if self.allocator_settings:
            text += f" (with {self.allocator_settings}: not the default allocator)"
        return text


class track_allocated:  # noqa: N801 (used like a function: ``with track_allocated(device) as m:``)
    """Measure the CUDA memory that the code in a ``with`` block allocates (deltas, not totals).

    Uses ``torch.cuda.memory_allocated`` before and after, and ``reset_peak_memory_stats`` +
    ``max_memory_allocated`` for the peak. Only a CUDA GPU has these counters: any other device
    raises a ``ValueError`` (check ``device.type == "cuda"`` first).

    ``warm_up=True`` first runs :func:`warm_up_cublas`, so a first matmul inside the block does not
    add cuBLAS's workspaces to the reading. With ``require_default_allocator=True`` a configured
    allocator (``PYTORCH_CUDA_ALLOC_CONF``) raises a ``ValueError`` that says what to unset; without
    it the reading records the configuration (``reading.exact`` is then False).

    >>> track_allocated("cpu")
    Traceback (most recent call last):
    ...
    ValueError: device='cpu': memory_allocated readings need a CUDA GPU; on a CPU compute the bytes with lectorch.memory.tensor_bytes
    """

    def __init__(self, device: str | torch.device, *, warm_up: bool = True,
                 require_default_allocator: bool = False) -> None:
        dev = check_device(device)
        if dev.type != "cuda":
            raise ValueError(
                f"device={str(dev)!r}: memory_allocated readings need a CUDA GPU; "
                "on a CPU compute the bytes with lectorch.memory.tensor_bytes"
            )
        settings = allocator_settings()
        if settings and require_default_allocator:
            raise ValueError(
                f"{settings} is set: exact allocator readings assume PyTorch's default caching allocator; "
                "unset it and restart the Python process (the allocator reads it when CUDA starts)"
            )
        self.device = dev
        self.warm_up = bool(warm_up)
        self.reading = AllocatedReading(device=str(dev), allocator_settings=settings)

    def __enter__(self) -> AllocatedReading:
        if self.warm_up:
            warm_up_cublas(self.device)
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.reading.start_bytes = torch.cuda.memory_allocated(self.device)
        return self.reading

    def __exit__(self, *exc_info: object) -> None:
        torch.cuda.synchronize(self.device)
        start = self.reading.start_bytes
        self.reading.delta_bytes = torch.cuda.memory_allocated(self.device) - start
        self.reading.peak_bytes = torch.cuda.max_memory_allocated(self.device) - start


#: Set this environment variable to 1 and a run without a usable CUDA GPU fails instead of falling
#: back to the CPU (the GPU CI job and ``make gpu-check`` set it).
REQUIRE_GPU_ENV = "LECTORCH_REQUIRE_GPU"


def cuda_problem() -> str | None:
    """Why torch cannot use a CUDA GPU here (None when it can): a CPU build, or no device visible.

    >>> cuda_problem() is None or "CUDA" in cuda_problem()
    True
    """
    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return (f"torch {torch.__version__} is a CPU build (torch.version.cuda is None): install the CUDA lock "
                "(make install ACCEL=cuda) or use the machine's own CUDA torch (SYSTEM_TORCH=1)")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    hint = f"CUDA_VISIBLE_DEVICES={visible!r} hides them; " if visible is not None else ""
    return (f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device: {hint}check nvidia-smi "
            "and that the driver is new enough for this CUDA version")


def gpu_required() -> bool:
    """Whether ``LECTORCH_REQUIRE_GPU`` asks for a CUDA GPU (any value but empty or 0).

    >>> isinstance(gpu_required(), bool)
    True
    """
    return os.environ.get(REQUIRE_GPU_ENV, "").strip() not in ("", "0")
