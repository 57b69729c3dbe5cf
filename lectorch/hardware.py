"""Datasheet figures of common GPUs: peak FLOP/s per dtype (dense and 2:4 sparse), memory, bandwidth,
and the NVLink bandwidth between the GPUs of one server.

Vendors quote tensor-core peaks *with* 2:4 structured sparsity, which ordinary training does not
use; the dense peak is half of it. MFU is measured against the dense peak.

>>> h100 = get_gpu("H100 SXM")
>>> h100.peak_flops("bf16") / 1e12
989.5
>>> h100.peak_flops("bf16", sparse=True) / 1e12
1979.0

Memory capacities are binary, like the caches: the "80 GB" of an H100 SXM is 80 GiB (five 16 GiB HBM3
stacks), of which ``nvidia-smi`` shows 81559 MiB and torch's ``total_memory`` about 79.1 GiB (the driver
keeps the rest); an H200's "141 GB" shows as 143771 MiB. ``memory_bytes`` stores the capacity in bytes;
napkin math reads the datasheet's "80 GB" as 80·10⁹ bytes instead, as the CS336 lecture does: a round,
slightly conservative figure (:attr:`GPUSpec.napkin_memory_bytes`).

>>> h100.memory_bytes == 80 * GiB, h100.napkin_memory_bytes
(True, 80000000000.0)
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

import torch

T = 1e12
GiB = 2**30
#: Keys of the peak tables; torch dtypes map onto them via :func:`flops_key`.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's datasheet. ``dense``/``sparse`` map a precision key to peak FLOP/s (OP/s for int8)."""

    name: str
    architecture: str
    #: the capacity in bytes: the datasheet's "GB" of GPU memory are GiB (see the module's docstring)
    memory_bytes: float
    memory_type: str
    bandwidth_bytes_per_s: float
    dense: dict[str, float]
    sparse: dict[str, float] = field(default_factory=dict)
    source: str = ""
    notes: str = ""
    #: On-chip figures (None where lectorch does not list them): streaming multiprocessors, L2 cache,
    #: and per SM the register file and the combined L1 cache / shared memory, with their source.
    sms: int | None = None
    l2_cache_bytes: int | None = None
    registers_per_sm_bytes: int | None = None
    l1_shared_per_sm_bytes: int | None = None
    chip_source: str = ""
    #: GPU-to-GPU NVLink bandwidth of one GPU, both directions together (as datasheets quote it), on
    #: boards whose GPUs are joined by NVLink (SXM boards, NVSwitch); None for PCIe cards (an optional
    #: NVLink bridge joins only two or four of them) and cards without NVLink. With its source.
    nvlink_bytes_per_s: float | None = None
    nvlink_source: str = ""
    #: The link between the GPU and its host CPU: a PCIe generation with 16 lanes, or NVLink-C2C (the
    #: Hopper GPU of a GH200 superchip and its Grace CPU).
    host_link: str = "PCIe 5.0 x16"

    @property
    def napkin_memory_bytes(self) -> float:
        """The datasheet's capacity read as decimal GB ("80 GB" → 80·10⁹ bytes): the round, slightly
        conservative figure napkin math uses (the lecture's ``h100_bytes = 80e9``); the GPU has
        :attr:`memory_bytes`.

        >>> get_gpu("H100 SXM").napkin_memory_bytes / get_gpu("H100 SXM").memory_bytes
        0.9313225746154785
        """
        return self.memory_bytes / GiB * 1e9

    @property
    def host_link_bytes_per_s(self) -> float:
        """Peak bytes per second of the host link in one direction.

        >>> get_gpu("H100 SXM").host_link_bytes_per_s / 1e9, get_gpu("T4").host_link_bytes_per_s / 1e9
        (63.01538461538462, 15.753846153846155)
        >>> get_gpu("GH200 96GB HBM3").host_link_bytes_per_s / 1e9
        450.0
        """
        if self.host_link == NVLINK_C2C:
            return NVLINK_C2C_BYTES_PER_S
        from lectorch.transfer import pcie_bytes_per_s

        return pcie_bytes_per_s(int(self.host_link.removeprefix("PCIe ")[0]))

    @property
    def nvlink_per_direction_bytes_per_s(self) -> float | None:
        """NVLink bandwidth each way: half the datasheet's both-directions figure (None without NVLink).

        What one GPU's sends can use, e.g. in an all-reduce (chapter 10).

        >>> get_gpu("H100 SXM").nvlink_per_direction_bytes_per_s / 1e9
        450.0
        >>> get_gpu("L4").nvlink_per_direction_bytes_per_s is None
        True
        """
        return None if self.nvlink_bytes_per_s is None else self.nvlink_bytes_per_s / 2

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
    from lectorch.dtypes import FLOPS_KEYS, MATMUL_MODES, as_dtype  # the float-format registry

    if isinstance(dtype, str):
        key = dtype.strip().lower().removeprefix("torch.")
        if key in PRECISIONS:
            return key
        if key in MATMUL_MODES:
            return "tf32"
        try:
            dtype = as_dtype(key)
        except ValueError:
            raise ValueError(f"dtype={dtype!r} is not a precision with datasheet peaks; use one of {', '.join(PRECISIONS)}") from None
    if isinstance(dtype, torch.dtype):
        if dtype not in FLOPS_KEYS:
            raise ValueError(f"dtype={dtype} has no peak-FLOP/s entry; use one of {', '.join(PRECISIONS)}")
        return FLOPS_KEYS[dtype]
    raise TypeError(f"dtype must be a torch.dtype or a string such as 'bf16', got {type(dtype).__name__}")


#: The GH200's CPU-GPU link: 900 GB/s both ways, 450 GB/s each way (NVIDIA GH200 Grace Hopper Superchip
#: datasheet, nvidia.com/en-us/data-center/grace-hopper-superchip).
NVLINK_C2C = "NVLink-C2C"
NVLINK_C2C_BYTES_PER_S = 450e9


def _sparse_of(dense: dict[str, float], keys=("tf32", "bf16", "fp16", "fp8", "int8")) -> dict[str, float]:
    return {k: 2 * v for k, v in dense.items() if k in keys}


_A100_NVLINK = "NVIDIA A100 Tensor Core GPU datasheet, SXM columns: NVIDIA NVLink 600 GB/s (third generation)"
_H100_SXM_DENSE = {"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T}

GPUS: dict[str, GPUSpec] = {
    spec.name: spec
    for spec in [
        GPUSpec(
            name="A100 SXM 80GB", architecture="Ampere", memory_bytes=80 * GiB, memory_type="HBM2e", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=2039e9,
            dense={"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T},
            source="NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)",
            notes="fp64 is the tensor-core figure; plain fp64 is 9.7 TFLOP/s. No fp8.",
            nvlink_bytes_per_s=600e9, nvlink_source=_A100_NVLINK,
        ),
        GPUSpec(
            name="H100 SXM", architecture="Hopper", memory_bytes=80 * GiB, memory_type="HBM3",
            bandwidth_bytes_per_s=3.35e12, dense=_H100_SXM_DENSE,
            source="NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
            notes="The datasheet's 1979 TFLOP/s bf16 assumes 2:4 sparsity; dense is half. "
                  "fp64 is the tensor-core figure; plain fp64 is 34 TFLOP/s.",
            sms=132, l2_cache_bytes=50 * 2**20, registers_per_sm_bytes=256 * 2**10,
            l1_shared_per_sm_bytes=256 * 2**10,
            chip_source="NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs on the "
                        "SXM5 board, 50 MB L2, 256 KB register file and 256 KB L1/shared memory per SM",
            nvlink_bytes_per_s=900e9,
            nvlink_source="NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: NVIDIA NVLink 900 GB/s "
                          "(fourth generation, 18 links)",
        ),
        GPUSpec(
            name="H100 PCIe", architecture="Hopper", memory_bytes=80 * GiB, memory_type="HBM2e",
            bandwidth_bytes_per_s=2.0e12,
            dense={"fp64": 51 * T, "fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T, "fp8": 1513 * T, "int8": 1513 * T},
            source="NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
            notes="Lower clocks and power (350 W) than the SXM part. "
                  "fp64 is the tensor-core figure; plain fp64 is 26 TFLOP/s.",
        ),
        GPUSpec(
            name="H200 SXM", architecture="Hopper", memory_bytes=141 * GiB, memory_type="HBM3e",
            bandwidth_bytes_per_s=4.8e12, dense=dict(_H100_SXM_DENSE),
            source="NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)",
            notes="Same compute as the H100 SXM; more and faster memory. "
                  "fp64 is the tensor-core figure; plain fp64 is 34 TFLOP/s.",
            nvlink_bytes_per_s=900e9,
            nvlink_source="NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: NVIDIA NVLink 900 GB/s",
        ),
        GPUSpec(
            name="B200", architecture="Blackwell", memory_bytes=180 * GiB, memory_type="HBM3e",
            bandwidth_bytes_per_s=7.7e12,
            dense={"fp64": 37 * T, "fp32": 75 * T, "tf32": 1125 * T, "bf16": 2250 * T, "fp16": 2250 * T, "fp8": 4500 * T, "int8": 4500 * T},
            source="NVIDIA HGX platform page (nvidia.com/en-us/data-center/hgx), HGX B200 column: the 8-GPU "
                   "compute figures divided by 8 (e.g. TF32 18 PFLOP/s 2:4-sparse → 2.25 per GPU, 1.125 dense); "
                   "memory: HGX B200's per-GPU 180 GB and 7.7 TB/s",
            notes="Per GPU of an HGX B200 board; fp4 (not listed) doubles fp8 again. The 8 TB/s often quoted is "
                  "DGX B200's 64 TB/s for 8 GPUs divided by 8 (nvidia.com/en-us/data-center/dgx-b200); "
                  "the driver's 7680-bit bus at 3996 MHz gives 7.67 TB/s (github.com/pytorch/ao/pull/4002).",
            nvlink_bytes_per_s=1.8e12,
            nvlink_source="NVIDIA HGX B200 specifications: fifth-generation NVLink, 1.8 TB/s per GPU "
                          "(14.4 TB/s for the 8 GPUs)",
        ),
        GPUSpec(
            name="L4", architecture="Ada Lovelace", memory_bytes=24 * GiB, memory_type="GDDR6", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=300e9,
            dense={"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T, "fp8": 242.5 * T, "int8": 242.5 * T},
            source="NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)",
            notes="72 W inference card.",
        ),
        GPUSpec(
            name="T4", architecture="Turing", memory_bytes=16 * GiB, memory_type="GDDR6", host_link="PCIe 3.0 x16",
            bandwidth_bytes_per_s=320e9,
            dense={"fp32": 8.1 * T, "fp16": 65 * T, "int8": 130 * T},
            sparse={},
            source="NVIDIA T4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/tesla-t4)",
            notes="Turing: no bf16, no tf32, no sparsity support; bf16 runs emulated and slowly.",
        ),
        GPUSpec(
            name="RTX 4090", architecture="Ada Lovelace", memory_bytes=24 * GiB, memory_type="GDDR6X", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1008e9,
            dense={"fp32": 82.6 * T, "tf32": 82.6 * T, "bf16": 165.2 * T, "fp16": 165.2 * T, "fp8": 330.3 * T, "int8": 660.6 * T},
            source="NVIDIA Ada Lovelace GPU architecture whitepaper, appendix (GeForce RTX 4090)",
            notes="bf16/fp16 figures are with fp32 accumulation (what torch uses); fp16 accumulation doubles them.",
        ),
    ]
}
_A100_DENSE = {"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T, "int8": 624 * T}
_NVL_DENSE = {"fp64": 60 * T, "fp32": 60 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T, "fp8": 1670.5 * T, "int8": 1670.5 * T}
_A100_SOURCE = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)"
_A100_NOTES = "Same compute as every A100; fp64 is the tensor-core figure (plain fp64 is 9.7 TFLOP/s)."
_GH200_SOURCE = "NVIDIA GH200 Grace Hopper Superchip datasheet (nvidia.com/en-us/data-center/grace-hopper-superchip)"
#: the China-market A100 and H100: the same chips and tensor-core peaks, NVLink cut to 400 GB/s
_A800_SOURCE = "NVIDIA A800 Tensor Core GPU datasheet (nvidia.cn/data-center/a800)"
_H800_SOURCE = "NVIDIA H800 Tensor Core GPU datasheet (nvidia.cn/data-center/h800)"
_EXPORT_NVLINK = "NVLink cut to 400 GB/s (the A100's and H100's: 600 and 900 GB/s)"

#: Board variants a cloud machine may have: same chip as a row of ``GPUS``, other memory, clocks
#: or power. Looked up by :func:`get_gpu` and :func:`gpu_from_driver_name` like the main rows.
VARIANTS: dict[str, GPUSpec] = {
    spec.name: spec
    for spec in [
        GPUSpec(
            name="A100 SXM 40GB", architecture="Ampere", memory_bytes=40 * GiB, memory_type="HBM2", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1555e9, dense=dict(_A100_DENSE), source=_A100_SOURCE, notes=_A100_NOTES,
            nvlink_bytes_per_s=600e9, nvlink_source=_A100_NVLINK,
        ),
        GPUSpec(
            name="A100 PCIe 40GB", architecture="Ampere", memory_bytes=40 * GiB, memory_type="HBM2", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1555e9, dense=dict(_A100_DENSE), source=_A100_SOURCE,
            notes=_A100_NOTES + " 250 W; sustains lower clocks than the SXM part.",
        ),
        GPUSpec(
            name="A100 PCIe 80GB", architecture="Ampere", memory_bytes=80 * GiB, memory_type="HBM2e", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1935e9, dense=dict(_A100_DENSE), source=_A100_SOURCE,
            notes=_A100_NOTES + " 300 W; sustains lower clocks than the SXM part.",
        ),
        GPUSpec(
            name="H100 NVL", architecture="Hopper", memory_bytes=94 * GiB, memory_type="HBM3",
            bandwidth_bytes_per_s=3.9e12, dense=dict(_NVL_DENSE),
            source="NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (nvidia.com/en-us/data-center/h100)",
            notes="PCIe card (350-400 W): the datasheet's 1671 TFLOP/s bf16 is 2:4 sparse, dense 835.5. "
                  "fp64 is the tensor-core figure; plain fp64 is 30 TFLOP/s.",
        ),
        GPUSpec(
            name="H200 NVL", architecture="Hopper", memory_bytes=141 * GiB, memory_type="HBM3e",
            bandwidth_bytes_per_s=4.8e12, dense=dict(_NVL_DENSE),
            source="NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column (nvidia.com/en-us/data-center/h200)",
            notes="PCIe card (up to 600 W): the datasheet's 1671 TFLOP/s bf16 is 2:4 sparse, dense 835.5. "
                  "fp64 is the tensor-core figure; plain fp64 is 30 TFLOP/s. Some drivers report it as "
                  "plain 'NVIDIA H200', which lectorch reads as the SXM part.",
        ),
        GPUSpec(
            name="GH200 96GB HBM3", architecture="Hopper", memory_bytes=96 * GiB, memory_type="HBM3", host_link=NVLINK_C2C,
            bandwidth_bytes_per_s=4.0e12, dense=dict(_H100_SXM_DENSE), source=_GH200_SOURCE,
            notes="The Hopper GPU of a GH200 480GB superchip (96 GB HBM3 + 480 GB LPDDR5X of the Grace CPU); "
                  "fp64 is the tensor-core figure.",
        ),
        GPUSpec(
            name="GH200 144GB HBM3e", architecture="Hopper", memory_bytes=144 * GiB, memory_type="HBM3e", host_link=NVLINK_C2C,
            bandwidth_bytes_per_s=4.9e12, dense=dict(_H100_SXM_DENSE), source=_GH200_SOURCE,
            notes="The Hopper GPU of a GH200 superchip with 144 GB HBM3e; fp64 is the tensor-core figure.",
        ),
        GPUSpec(
            name="A800 SXM 80GB", architecture="Ampere", memory_bytes=80 * GiB, memory_type="HBM2e", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=2039e9, dense=dict(_A100_DENSE), source=_A800_SOURCE,
            notes="The China-market A100 SXM: the same compute and memory, " + _EXPORT_NVLINK + ". " + _A100_NOTES,
            nvlink_bytes_per_s=400e9, nvlink_source="NVIDIA A800 Tensor Core GPU datasheet, SXM column: NVIDIA NVLink 400 GB/s",
        ),
        GPUSpec(
            name="A800 PCIe 80GB", architecture="Ampere", memory_bytes=80 * GiB, memory_type="HBM2e", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1935e9, dense=dict(_A100_DENSE), source=_A800_SOURCE,
            notes="The China-market A100 PCIe 80GB: the same compute and memory. " + _A100_NOTES,
        ),
        GPUSpec(
            name="H800 SXM", architecture="Hopper", memory_bytes=80 * GiB, memory_type="HBM3",
            bandwidth_bytes_per_s=3.35e12, dense={k: v for k, v in _H100_SXM_DENSE.items() if k != "fp64"},
            source=_H800_SOURCE,
            notes="The China-market H100 SXM: the same tensor-core peaks and memory, " + _EXPORT_NVLINK + "; "
                  "its fp64 is cut far below the H100's (not listed here).",
            nvlink_bytes_per_s=400e9, nvlink_source="NVIDIA H800 Tensor Core GPU datasheet, SXM column: NVIDIA NVLink 400 GB/s",
        ),
        GPUSpec(
            name="H800 PCIe", architecture="Hopper", memory_bytes=80 * GiB, memory_type="HBM2e",
            bandwidth_bytes_per_s=2.0e12,
            dense={"fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T, "fp8": 1513 * T, "int8": 1513 * T},
            source=_H800_SOURCE,
            notes="The China-market H100 PCIe: the same tensor-core peaks and memory; its fp64 is cut far below "
                  "the H100's (not listed here).",
        ),
        GPUSpec(
            name="RTX 4090 D", architecture="Ada Lovelace", memory_bytes=24 * GiB, memory_type="GDDR6X", host_link="PCIe 4.0 x16",
            bandwidth_bytes_per_s=1008e9,
            # fp32: 14,592 cores × 2 FLOPs × 2.52 GHz; tensor peaks: the RTX 4090's scaled by 114/128 SMs
            dense={"fp32": 73.5 * T, "tf32": 73.5 * T,
                   **{k: round(GPUS["RTX 4090"].dense[k] / T * 114 / 128, 1) * T for k in ("bf16", "fp16", "fp8", "int8")}},
            source="NVIDIA GeForce RTX 4090 D specifications (nvidia.cn: 14,592 CUDA cores, 2.52 GHz boost, "
                   "1177 AI TOPS); tensor peaks are the RTX 4090's at 114 of its 128 SMs",
            notes="The China-market 4090: 114 SMs instead of 128, same memory. bf16/fp16 with fp32 accumulation.",
        ),
    ]
}
#: GPUs Chinese labs use that have no row, and why: a row needs a datasheet from NVIDIA to cite, and
#: a number is added only with one (so the H800 rows have no fp64: its cut fp64 peak is stated in no
#: NVIDIA document the course can cite). :func:`get_gpu` names the reason.
OMITTED: dict[str, str] = {
    "H20": "NVIDIA publishes no datasheet for the H20 (the export-market Hopper board that followed the "
           "H800): its figures circulate only in third-party articles, and a row is added only with a "
           "datasheet to cite. Pass your own peak and bandwidth where a function takes them.",
}

#: Every row: the course's main table and the board variants.
ALL_GPUS: dict[str, GPUSpec] = {**GPUS, **VARIANTS}
#: The GPUs the napkin and roofline panels offer: the main table and the China-market parts that
#: Chinese labs train on.
PANEL_GPUS: dict[str, GPUSpec] = {**GPUS, **{name: VARIANTS[name] for name in ("A800 SXM 80GB", "H800 SXM", "RTX 4090 D")}}
for _spec in ALL_GPUS.values():
    if not _spec.sparse and _spec.name != "T4":
        object.__setattr__(_spec, "sparse", _sparse_of(_spec.dense))

#: Names the NVIDIA driver reports (``torch.cuda.get_device_name``, ``nvidia-smi``), matched exactly
#: (case and spacing aside): a name not listed is unknown, never mapped to a near miss.
DRIVER_NAMES: dict[str, str] = {
    "NVIDIA A100-SXM4-80GB": "A100 SXM 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 SXM 40GB",
    "NVIDIA A100-PCIE-40GB": "A100 PCIe 40GB",
    "NVIDIA A100 80GB PCIe": "A100 PCIe 80GB",
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 PCIe": "H100 PCIe",
    "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H200": "H200 SXM",
    "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA GH200 480GB": "GH200 96GB HBM3",
    "NVIDIA GH200 144G HBM3e": "GH200 144GB HBM3e",
    "NVIDIA B200": "B200",
    "NVIDIA L4": "L4",
    "Tesla T4": "T4",
    "NVIDIA GeForce RTX 4090": "RTX 4090",
    "NVIDIA GeForce RTX 4090 D": "RTX 4090 D",
    "NVIDIA A800-SXM4-80GB": "A800 SXM 80GB",
    "NVIDIA A800 80GB PCIe": "A800 PCIe 80GB",
    "NVIDIA H800": "H800 SXM",
    "NVIDIA H800 PCIe": "H800 PCIe",
}

#: Set this environment variable to a spec name (e.g. ``LECTORCH_GPU="H200 NVL"``) when the driver
#: reports a name lectorch does not know, or one shared by two boards.
GPU_ENV = "LECTORCH_GPU"

_ALIASES = {
    "a100": "A100 SXM 80GB", "a100 sxm": "A100 SXM 80GB", "a100-sxm4-80gb": "A100 SXM 80GB",
    "h100": "H100 SXM", "h100 sxm": "H100 SXM", "h100 80gb hbm3": "H100 SXM", "h100 pcie": "H100 PCIe",
    "h200": "H200 SXM", "h200 sxm": "H200 SXM", "b200": "B200", "l4": "L4", "t4": "T4", "tesla t4": "T4",
    "rtx 4090": "RTX 4090", "geforce rtx 4090": "RTX 4090", "4090": "RTX 4090",
    "a800": "A800 SXM 80GB", "h800": "H800 SXM", "4090 d": "RTX 4090 D",
}


def get_gpu(name: str) -> GPUSpec:
    """Look up a GPU by name (case-insensitive; "H100" means the SXM part).

    >>> get_gpu("h200").memory_bytes / GiB
    141.0
    """
    if isinstance(name, GPUSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"name must be a GPU name such as 'H100 SXM', got {type(name).__name__}")
    key = name.strip().lower().removeprefix("nvidia ").strip()
    for spec_name in ALL_GPUS:
        if key == spec_name.lower():
            return ALL_GPUS[spec_name]
    if key in _ALIASES:
        return ALL_GPUS[_ALIASES[key]]
    for omitted, why in OMITTED.items():
        if key == omitted.lower():
            raise ValueError(f"GPU {name!r} has no row in lectorch's spec table: {why}")
    close = difflib.get_close_matches(key, [n.lower() for n in ALL_GPUS] + list(_ALIASES), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    raise ValueError(f"GPU {name!r} is not in lectorch's spec table.{hint} Known: {', '.join(ALL_GPUS)}.")


def gpu_for_device(device: str | torch.device) -> GPUSpec | None:
    """The spec of a CUDA device, matched by the name the driver reports (None if unknown or CPU).

    ``$LECTORCH_GPU`` (a spec name) overrides the match, for a board the driver does not name.

    >>> gpu_for_device("cpu") is None
    True
    """
    dev = torch.device(device) if isinstance(device, str) else device
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    override = os.environ.get(GPU_ENV)
    if override:
        return get_gpu(override)
    return gpu_from_driver_name(torch.cuda.get_device_name(dev))


def _normal(name: str) -> str:
    return " ".join(name.lower().split())


_BY_DRIVER_NAME = {_normal(k): v for k, v in DRIVER_NAMES.items()}


def gpu_from_driver_name(driver_name: str, *, strict: bool = False) -> GPUSpec | None:
    """The spec row of a driver-reported name such as 'NVIDIA H100 80GB HBM3', matched exactly.

    An unknown name gives None (``strict=True``: a ``ValueError`` that says what to do), never the
    row of a similar-sounding board: an H100 NVL is not an H100 SXM.

    >>> gpu_from_driver_name("NVIDIA H100 80GB HBM3").name
    'H100 SXM'
    >>> gpu_from_driver_name("NVIDIA H100 NVL").name, gpu_from_driver_name("NVIDIA A100-PCIE-40GB").name
    ('H100 NVL', 'A100 PCIe 40GB')
    >>> gpu_from_driver_name("NVIDIA H100 94GB HBM2e") is None
    True
    """
    if not isinstance(driver_name, str):
        raise TypeError(f"driver_name must be a str such as 'NVIDIA H100 80GB HBM3', got {type(driver_name).__name__}")
    row = _BY_DRIVER_NAME.get(_normal(driver_name))
    if row is not None:
        return ALL_GPUS[row]
    if strict:
        raise ValueError(
            f"driver name {driver_name!r} is not in lectorch.hardware.DRIVER_NAMES, so no datasheet peak is known "
            f"for it; set {GPU_ENV} to one of {', '.join(ALL_GPUS)} if it is one of those boards, or add its "
            "datasheet row"
        )
    return None


def spec_table(*, variants: bool = False) -> list[dict[str, object]]:
    """The spec table as rows (TFLOP/s, GiB, TB/s), for display or a DataFrame; ``variants=True``
    adds the board variants (:data:`VARIANTS`).

    >>> spec_table()[0]["GPU"], len(spec_table(variants=True)) - len(spec_table())
    ('A100 SXM 80GB', 12)
    """
    rows = []
    for spec in (ALL_GPUS if variants else GPUS).values():
        row: dict[str, object] = {"GPU": spec.name, "arch": spec.architecture}
        for key in PRECISIONS:
            dense = spec.dense.get(key)
            row[f"{key} dense"] = None if dense is None else dense / T
            sparse = spec.sparse.get(key)
            if key in ("tf32", "bf16", "fp16", "fp8"):
                row[f"{key} 2:4"] = None if sparse is None else sparse / T
        row["memory GiB"] = spec.memory_bytes / GiB
        row["TB/s"] = spec.bandwidth_bytes_per_s / 1e12
        row["source"] = spec.source
        rows.append(row)
    return rows
