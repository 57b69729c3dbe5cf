"""Datasheet figures of common GPUs: peak FLOP/s per dtype (dense and 2:4 sparse), memory, bandwidth.

Vendors quote tensor-core peaks *with* 2:4 structured sparsity, which ordinary training does not
use; the dense peak is half of it. MFU is measured against the dense peak.

>>> h100 = get_gpu("H100 SXM")
>>> h100.peak_flops("bf16") / 1e12
989.5
>>> h100.peak_flops("bf16", sparse=True) / 1e12
1979.0
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import torch

T = 1e12
#: Keys of the peak tables; torch dtypes map onto them via :func:`flops_key`.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's datasheet. ``dense``/``sparse`` map a precision key to peak FLOP/s (OP/s for int8)."""

    name: str
    architecture: str
    memory_bytes: float
    memory_type: str
    bandwidth_bytes_per_s: float
    dense: dict[str, float]
    sparse: dict[str, float] = field(default_factory=dict)
    source: str = ""
    notes: str = ""

    def peak_flops(self, dtype: str | torch.dtype, *, sparse: bool = False) -> float:
        """Peak FLOP/s of this GPU for ``dtype`` (dense unless ``sparse=True``).

        >>> get_gpu("A100").peak_flops(torch.float32) / 1e12
        19.5
        """
        key = flops_key(dtype)
        table = self.sparse if sparse else self.dense
        if key not in table:
            kind = "2:4-sparse" if sparse else "dense"
            have = ", ".join(table) or "none"
            raise ValueError(f"{self.name} has no {kind} {key} peak on its datasheet (it lists: {have})")
        return table[key]

    def ridge_point(self, dtype: str | torch.dtype = "bf16") -> float:
        """FLOPs per byte at which a kernel stops being memory-bound (roofline ridge).

        >>> round(get_gpu("H100 SXM").ridge_point("bf16"))
        295
        """
        return self.peak_flops(dtype) / self.bandwidth_bytes_per_s


def flops_key(dtype: str | torch.dtype) -> str:
    """Map a torch dtype or a name to a key of the peak tables.

    >>> flops_key(torch.bfloat16), flops_key("tf32"), flops_key(torch.float8_e4m3fn)
    ('bf16', 'tf32', 'fp8')
    """
    if isinstance(dtype, torch.dtype):
        mapping = {
            torch.float64: "fp64",
            torch.float32: "fp32",
            torch.bfloat16: "bf16",
            torch.float16: "fp16",
            torch.float8_e4m3fn: "fp8",
            torch.float8_e5m2: "fp8",
            torch.int8: "int8",
        }
        if dtype not in mapping:
            raise ValueError(f"dtype={dtype} has no peak-FLOP/s entry; use one of {', '.join(PRECISIONS)}")
        return mapping[dtype]
    if isinstance(dtype, str):
        key = dtype.strip().lower().removeprefix("torch.")
        aliases = {
            "float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
            "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
            "tensorfloat32": "tf32",
        }
        key = aliases.get(key, key)
        if key not in PRECISIONS:
            raise ValueError(f"dtype={dtype!r} is not a precision with datasheet peaks; use one of {', '.join(PRECISIONS)}")
        return key
    raise TypeError(f"dtype must be a torch.dtype or a string such as 'bf16', got {type(dtype).__name__}")


def _sparse_of(dense: dict[str, float], keys=("tf32", "bf16", "fp16", "fp8", "int8")) -> dict[str, float]:
    return {k: 2 * v for k, v in dense.items() if k in keys}


_H100_SXM_DENSE = {"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T}

GPUS: dict[str, GPUSpec] = {
    spec.name: spec
    for spec in [
        GPUSpec(
            name="A100 SXM 80GB", architecture="Ampere", memory_bytes=80e9, memory_type="HBM2e",
            bandwidth_bytes_per_s=2039e9,
            dense={"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T},
            source="NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)",
            notes="fp64 is the tensor-core figure; plain fp64 is 9.7 TFLOP/s. No fp8.",
        ),
        GPUSpec(
            name="H100 SXM", architecture="Hopper", memory_bytes=80e9, memory_type="HBM3",
            bandwidth_bytes_per_s=3.35e12, dense=_H100_SXM_DENSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
            notes="The datasheet's 1979 TFLOP/s bf16 assumes 2:4 sparsity; dense is half.",
        ),
        GPUSpec(
            name="H100 PCIe", architecture="Hopper", memory_bytes=80e9, memory_type="HBM2e",
            bandwidth_bytes_per_s=2.0e12,
            dense={"fp64": 51 * T, "fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T, "fp8": 1513 * T, "int8": 1513 * T},
            source="NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
            notes="Lower clocks and power (350 W) than the SXM part.",
        ),
        GPUSpec(
            name="H200 SXM", architecture="Hopper", memory_bytes=141e9, memory_type="HBM3e",
            bandwidth_bytes_per_s=4.8e12, dense=dict(_H100_SXM_DENSE),
            source="NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)",
            notes="Same compute as the H100 SXM; more and faster memory.",
        ),
        GPUSpec(
            name="B200", architecture="Blackwell", memory_bytes=180e9, memory_type="HBM3e",
            bandwidth_bytes_per_s=8e12,
            dense={"fp64": 37 * T, "fp32": 75 * T, "tf32": 1100 * T, "bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T, "int8": 4500 * T},
            source="NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx), 8-GPU figures divided by 8",
            notes="Per GPU of an HGX B200 board; fp4 (not listed) doubles fp8 again.",
        ),
        GPUSpec(
            name="L4", architecture="Ada Lovelace", memory_bytes=24e9, memory_type="GDDR6",
            bandwidth_bytes_per_s=300e9,
            dense={"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T, "fp8": 242.5 * T, "int8": 242.5 * T},
            source="NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)",
            notes="72 W inference card.",
        ),
        GPUSpec(
            name="T4", architecture="Turing", memory_bytes=16e9, memory_type="GDDR6",
            bandwidth_bytes_per_s=320e9,
            dense={"fp32": 8.1 * T, "fp16": 65 * T, "int8": 130 * T},
            sparse={},
            source="NVIDIA T4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/tesla-t4)",
            notes="Turing: no bf16, no tf32, no sparsity support; bf16 runs emulated and slowly.",
        ),
        GPUSpec(
            name="RTX 4090", architecture="Ada Lovelace", memory_bytes=24e9, memory_type="GDDR6X",
            bandwidth_bytes_per_s=1008e9,
            dense={"fp32": 82.6 * T, "tf32": 82.6 * T, "bf16": 165.2 * T, "fp16": 165.2 * T, "fp8": 330.3 * T, "int8": 660.6 * T},
            source="NVIDIA Ada Lovelace GPU architecture whitepaper, appendix (GeForce RTX 4090)",
            notes="bf16/fp16 figures are with fp32 accumulation (what torch uses); fp16 accumulation doubles them.",
        ),
    ]
}
for _spec in GPUS.values():
    if not _spec.sparse and _spec.name != "T4":
        object.__setattr__(_spec, "sparse", _sparse_of(_spec.dense))

_ALIASES = {
    "a100": "A100 SXM 80GB", "a100 sxm": "A100 SXM 80GB", "a100-sxm4-80gb": "A100 SXM 80GB",
    "h100": "H100 SXM", "h100 sxm": "H100 SXM", "h100 80gb hbm3": "H100 SXM", "h100 pcie": "H100 PCIe",
    "h200": "H200 SXM", "h200 sxm": "H200 SXM", "b200": "B200", "l4": "L4", "t4": "T4", "tesla t4": "T4",
    "rtx 4090": "RTX 4090", "geforce rtx 4090": "RTX 4090", "4090": "RTX 4090",
}


def get_gpu(name: str) -> GPUSpec:
    """Look up a GPU by name (case-insensitive; "H100" means the SXM part).

    >>> get_gpu("h200").memory_bytes / 1e9
    141.0
    """
    if isinstance(name, GPUSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"name must be a GPU name such as 'H100 SXM', got {type(name).__name__}")
    key = name.strip().lower().removeprefix("nvidia ").strip()
    for spec_name in GPUS:
        if key == spec_name.lower():
            return GPUS[spec_name]
    if key in _ALIASES:
        return GPUS[_ALIASES[key]]
    close = difflib.get_close_matches(key, [n.lower() for n in GPUS] + list(_ALIASES), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(f"GPU {name!r} is not in lectorch's spec table.{hint} Known: {', '.join(GPUS)}.")


def gpu_for_device(device: str | torch.device) -> GPUSpec | None:
    """The spec of a CUDA device, matched by the name the driver reports (None if unknown or CPU).

    >>> gpu_for_device("cpu") is None
    True
    """
    dev = torch.device(device) if isinstance(device, str) else device
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    return gpu_from_driver_name(torch.cuda.get_device_name(dev))


def gpu_from_driver_name(driver_name: str) -> GPUSpec | None:
    """Match a driver name such as 'NVIDIA H100 80GB HBM3' to a spec.

    >>> gpu_from_driver_name("NVIDIA H100 80GB HBM3").name
    'H100 SXM'
    >>> gpu_from_driver_name("NVIDIA A100-SXM4-80GB").name
    'A100 SXM 80GB'
    """
    n = driver_name.lower()
    if "h200" in n:
        return GPUS["H200 SXM"]
    if "h100" in n:
        return GPUS["H100 PCIe"] if "pcie" in n else GPUS["H100 SXM"]
    if "a100" in n:
        return GPUS["A100 SXM 80GB"]
    if "b200" in n:
        return GPUS["B200"]
    if "4090" in n:
        return GPUS["RTX 4090"]
    if "t4" in n.split() or "tesla t4" in n:
        return GPUS["T4"]
    if n.endswith(" l4") or n == "l4":
        return GPUS["L4"]
    return None


def spec_table() -> list[dict[str, object]]:
    """The spec table as rows (TFLOP/s, GB, TB/s), for display or a DataFrame.

    >>> spec_table()[0]["GPU"]
    'A100 SXM 80GB'
    """
    rows = []
    for spec in GPUS.values():
        row: dict[str, object] = {"GPU": spec.name, "arch": spec.architecture}
        for key in PRECISIONS:
            dense = spec.dense.get(key)
            row[f"{key} dense"] = None if dense is None else dense / T
            sparse = spec.sparse.get(key)
            if key in ("tf32", "bf16", "fp16", "fp8"):
                row[f"{key} 2:4"] = None if sparse is None else sparse / T
        row["memory GB"] = spec.memory_bytes / 1e9
        row["TB/s"] = spec.bandwidth_bytes_per_s / 1e12
        row["source"] = spec.source
        rows.append(row)
    return rows
