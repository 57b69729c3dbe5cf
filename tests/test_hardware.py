"""The GPU spec table: datasheet facts the course relies on, internal consistency, lookups."""

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
    assert hardware.get_gpu("H200").memory_bytes == 141e9
    assert h100.memory_bytes == 80e9


@pytest.mark.parametrize("name", list(hardware.GPUS))
def test_every_entry_is_consistent(name):
    spec = hardware.GPUS[name]
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
    assert h100["bf16 dense"] == 989.5 and h100["bf16 2:4"] == 1979
