"""The GPU spec table: datasheet facts the course relies on, internal consistency, lookups."""

import math

import pytest
import torch

from lectorch import hardware


def test_datasheet_figures_the_course_quotes():
    h100 = hardware.get_gpu("H100 SXM")
    assert h100.peak_flops("bf16", sparse=True) == 1979e12
    assert h100.peak_flops(torch.bfloat16) == 989.5e12
    assert h100.peak_flops("fp32") == 67e12
    a100 = hardware.get_gpu("A100")
    assert a100.peak_flops("bf16") == 312e12 and a100.peak_flops("fp32") == 19.5e12
    assert hardware.get_gpu("H200").memory_bytes == 141 * 2**30
    assert h100.memory_bytes == 80 * 2**30 and h100.napkin_memory_bytes == 80e9


def test_memory_capacities_are_binary():
    # nvidia-smi's totals (the GiB less the driver's share) exceed the decimal reading of "80 GB"
    readings_mib = {"H100 SXM": 81559, "A100 SXM 80GB": 81920, "A100 SXM 40GB": 40960, "H200 SXM": 143771}
    for name, mib in readings_mib.items():
        spec = hardware.get_gpu(name)
        assert spec.napkin_memory_bytes < mib * 2**20 <= spec.memory_bytes, name


def test_host_links():
    assert hardware.get_gpu("T4").host_link == "PCIe 3.0 x16"
    assert hardware.get_gpu("A100").host_link == hardware.get_gpu("L4").host_link == "PCIe 4.0 x16"
    assert hardware.get_gpu("H100 SXM").host_link == "PCIe 5.0 x16"
    gh200 = hardware.get_gpu("GH200 144GB HBM3e")
    assert gh200.host_link == hardware.NVLINK_C2C and gh200.host_link_bytes_per_s == 450e9


@pytest.mark.parametrize("name", list(hardware.ALL_GPUS))
def test_every_entry_is_consistent(name):
    spec = hardware.ALL_GPUS[name]
    assert spec.source and spec.memory_bytes > 0 and spec.bandwidth_bytes_per_s > 0
    for key, sparse in spec.sparse.items():
        assert sparse == 2 * spec.dense[key], f"{name} {key}: 2:4 sparsity doubles the dense peak"
    if "bf16" in spec.dense:
        assert spec.dense["bf16"] >= 2 * spec.dense["fp32"], "tensor-core bf16 beats fp32"
    assert spec.ridge_point("fp32") > 1


def test_required_gpus_are_present():
    for name in ["A100", "H100 SXM", "H100 PCIe", "H200", "B200", "L4", "T4", "RTX 4090"]:
        hardware.get_gpu(name)


def test_driver_names_match():
    assert hardware.gpu_from_driver_name("NVIDIA H200").name == "H200 SXM"
    assert hardware.gpu_from_driver_name("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert hardware.gpu_from_driver_name("Tesla T4").name == "T4"
    assert hardware.gpu_from_driver_name("NVIDIA L4").name == "L4"
    assert hardware.gpu_from_driver_name("NVIDIA GeForce RTX 4090").name == "RTX 4090"
    assert hardware.gpu_from_driver_name("Some Other GPU") is None


def test_errors():
    with pytest.raises(ValueError, match="Did you mean"):
        hardware.get_gpu("H10O")
    with pytest.raises(TypeError, match="name"):
        hardware.get_gpu(100)
    with pytest.raises(ValueError, match="T4 has no dense bf16"):
        hardware.get_gpu("T4").peak_flops("bf16")
    with pytest.raises(ValueError, match="dtype"):
        hardware.flops_key(torch.complex64)
    with pytest.raises(ValueError, match="fp7"):
        hardware.flops_key("fp7")


def test_spec_table_rows():
    rows = hardware.spec_table()
    assert [r["GPU"] for r in rows] == list(hardware.GPUS)
    h100 = next(r for r in rows if r["GPU"] == "H100 SXM")
    assert h100["bf16 dense"] == 989.5 and h100["bf16 2:4"] == 1979 and h100["memory GiB"] == 80


# --- driver names → datasheet rows (exact) ---------------------------------------------------------

@pytest.mark.parametrize("driver, row", [
    ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA GH200 480GB", "GH200 96GB HBM3"),
    ("NVIDIA GH200 144G HBM3e", "GH200 144GB HBM3e"), ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"), ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA GeForce RTX 4090 D", "RTX 4090 D"), ("nvidia  h100 80gb hbm3 ", "H100 SXM"), ("NVIDIA B200", "B200"),
    ("NVIDIA A800-SXM4-80GB", "A800 SXM 80GB"), ("NVIDIA A800 80GB PCIe", "A800 PCIe 80GB"), ("NVIDIA H800", "H800 SXM"),
    ("NVIDIA H800 PCIe", "H800 PCIe"),
])
def test_variant_boards_get_their_own_rows(driver, row):
    assert hardware.gpu_from_driver_name(driver).name == row


def test_variant_figures_differ_where_the_datasheets_do():
    nvl, sxm = hardware.get_gpu("H100 NVL"), hardware.get_gpu("H100 SXM")
    assert nvl.peak_flops("bf16") == 835.5e12 and nvl.peak_flops("bf16", sparse=True) == 1671e12
    assert nvl.memory_bytes == 94 * 2**30 and nvl.bandwidth_bytes_per_s == 3.9e12
    assert hardware.get_gpu("H200 NVL").peak_flops("bf16") < hardware.get_gpu("H200 SXM").peak_flops("bf16")
    assert hardware.get_gpu("GH200 96GB HBM3").memory_bytes == 96 * 2**30
    assert hardware.get_gpu("GH200 144GB HBM3e").bandwidth_bytes_per_s == 4.9e12
    assert hardware.get_gpu("A100 PCIe 40GB").bandwidth_bytes_per_s == 1555e9
    assert hardware.get_gpu("A100 PCIe 80GB").bandwidth_bytes_per_s == 1935e9
    assert hardware.get_gpu("RTX 4090 D").peak_flops("bf16") < hardware.get_gpu("RTX 4090").peak_flops("bf16")
    assert sxm.peak_flops(sxm.dense and "bf16") == 989.5e12
    assert hardware.get_gpu("B200").peak_flops("tf32") == 1125e12
    # HGX B200's per-GPU memory bandwidth, not DGX B200's 64 TB/s ÷ 8
    assert hardware.get_gpu("B200").bandwidth_bytes_per_s == 7.7e12
    # RTX 4090 D: fp32 from 14,592 cores × 2 FLOPs × 2.52 GHz; tensor peaks the 4090's × 114/128 SMs
    d, full = hardware.get_gpu("RTX 4090 D"), hardware.get_gpu("RTX 4090")
    assert d.peak_flops("fp32") == 73.5e12 == round(14_592 * 2 * 2.52e9 / 1e11) * 1e11
    assert {k: round(d.peak_flops(k) / 1e12, 1) for k in ("bf16", "fp16", "fp8", "int8")} == {
        "bf16": 147.1, "fp16": 147.1, "fp8": 294.2, "int8": 588.3}
    for k in ("bf16", "fp8", "int8"):
        assert math.isclose(d.peak_flops(k), full.peak_flops(k) * 114 / 128, rel_tol=5e-4)
    for name in ("H100 SXM", "H100 PCIe", "H200 SXM", "H100 NVL", "H200 NVL", "A100 SXM 80GB"):
        assert "fp64 is the tensor-core figure" in hardware.get_gpu(name).notes, name
    for spec in hardware.VARIANTS.values():
        assert spec.source and spec.name not in hardware.GPUS


@pytest.mark.parametrize("near_miss", ["NVIDIA H100", "NVIDIA H200 141GB", "NVIDIA GH200", "NVIDIA A100",
                                       "NVIDIA GeForce RTX 4090 Ti", "NVIDIA L40S", "NVIDIA T4G"])
def test_unknown_driver_names_are_unknown_not_near_misses(near_miss):
    assert hardware.gpu_from_driver_name(near_miss) is None
    with pytest.raises(ValueError, match="LECTORCH_GPU"):
        hardware.gpu_from_driver_name(near_miss, strict=True)


def test_every_driver_name_points_at_a_row():
    assert set(hardware.DRIVER_NAMES.values()) <= set(hardware.ALL_GPUS)


def test_gpu_env_overrides_the_driver_match(monkeypatch):
    monkeypatch.setattr(hardware.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(hardware.torch.cuda, "get_device_name", lambda dev=None: "NVIDIA H200")
    assert hardware.gpu_for_device(hardware.torch.device("cuda", 0)).name == "H200 SXM"
    monkeypatch.setenv(hardware.GPU_ENV, "H200 NVL")
    assert hardware.gpu_for_device(hardware.torch.device("cuda", 0)).name == "H200 NVL"


def test_on_chip_figures_of_the_h100():
    """Chapter 02's memory hierarchy reads these (whitepaper figures; caches in binary units)."""
    h100 = hardware.get_gpu("H100 SXM")
    assert (h100.sms, h100.l2_cache_bytes) == (132, 50 * 2**20)
    assert h100.registers_per_sm_bytes == h100.l1_shared_per_sm_bytes == 256 * 2**10
    assert "whitepaper" in h100.chip_source
    assert hardware.get_gpu("T4").sms is None  # not listed: None, never a guess


def test_nvlink_bandwidth_of_the_sxm_boards():
    """Datasheet NVLink figures (both directions together); each way is half (chapter 10's 450)."""
    from lectorch import transfer

    totals = {name: spec.nvlink_bytes_per_s for name, spec in hardware.ALL_GPUS.items()}
    assert totals == {**dict.fromkeys(hardware.ALL_GPUS), "A100 SXM 80GB": 600e9, "A100 SXM 40GB": 600e9,
                      "H100 SXM": 900e9, "H200 SXM": 900e9, "B200": 1.8e12, "A800 SXM 80GB": 400e9, "H800 SXM": 400e9}
    h100 = hardware.get_gpu("H100 SXM")
    assert h100.nvlink_per_direction_bytes_per_s == 450e9 == transfer.NVLINK4_BYTES_PER_S
    assert hardware.get_gpu("B200").nvlink_per_direction_bytes_per_s == 900e9
    for spec in hardware.ALL_GPUS.values():
        if spec.nvlink_bytes_per_s is None:  # PCIe cards and cards without NVLink: none, never a guess
            assert spec.nvlink_per_direction_bytes_per_s is None and not spec.nvlink_source
        else:
            assert "NVLink" in spec.nvlink_source and spec.nvlink_source.startswith("NVIDIA")
    for name in ("H100 PCIe", "H100 NVL", "H200 NVL", "A100 PCIe 80GB", "L4", "T4", "RTX 4090"):
        assert hardware.get_gpu(name).nvlink_bytes_per_s is None, name


def test_the_china_market_parts_chinese_labs_use():
    """A800 and H800 (datasheets): the A100's and H100's tensor-core peaks and memory, NVLink cut to
    400 GB/s; the H800's fp64 is cut, so it has no fp64 peak here. The napkin and roofline panels
    offer them with the RTX 4090 D."""
    a800, a100 = hardware.get_gpu("A800"), hardware.get_gpu("A100 SXM 80GB")
    assert a800.name == "A800 SXM 80GB" and a800.dense == a100.dense and a800.memory_bytes == 80 * 2**30
    assert round(a800.ridge_point("bf16"), 1) == 153.0  # 312 TFLOP/s / 2.039 TB/s
    assert a800.nvlink_per_direction_bytes_per_s == 200e9
    assert hardware.get_gpu("A800 PCIe 80GB").bandwidth_bytes_per_s == 1935e9
    h800 = hardware.get_gpu("H800")
    assert h800.name == "H800 SXM" and h800.peak_flops("bf16") == 989.5e12 and h800.peak_flops("fp8", sparse=True) == 3958e12
    assert round(h800.ridge_point("bf16")) == 295 and h800.nvlink_bytes_per_s == 400e9
    with pytest.raises(ValueError, match="no dense fp64"):
        h800.peak_flops("fp64")
    h800_pcie = hardware.get_gpu("H800 PCIe")
    assert h800_pcie.peak_flops("bf16") == 756.5e12 and h800_pcie.nvlink_bytes_per_s is None
    assert {"A800 SXM 80GB", "H800 SXM", "RTX 4090 D"} <= set(hardware.PANEL_GPUS)
    from lectorch import napkin

    # 70 B parameters, 15 T tokens on 1024 H800s at MFU 0.5: the H100's 144 days (same bf16 peak)
    assert round(napkin.training_days(70e9, 15e12, num_gpus=1024, gpu="H800", mfu=0.5)) == 144


def test_a_gpu_without_a_datasheet_has_no_row_and_says_why():
    """The H20 has no NVIDIA datasheet to cite, and the H800's fp64 no NVIDIA figure: no row, no number."""
    assert "H20" in hardware.OMITTED and "H20" not in hardware.ALL_GPUS
    with pytest.raises(ValueError, match="no datasheet"):
        hardware.get_gpu("NVIDIA H20")
    assert hardware.gpu_from_driver_name("NVIDIA H20") is None
    for name in ("H800 SXM", "H800 PCIe"):
        assert "fp64" not in hardware.get_gpu(name).dense
