"""Tests of lectorch.transfer, the transfer panel and the bandwidth figure (chapter 02)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lectorch import transfer as T
from lectorch.dtypes import DTYPE_ALIASES
from lectorch.plots.device import bandwidth_figure
from lectorch.widgets.device import panel_budget_bytes, transfer_panel

CUDA = torch.cuda.is_available()


# --- napkin figures ------------------------------------------------------------------------------

def test_pcie_figures():
    assert T.pcie_bytes_per_s(4) == pytest.approx(31.5e9, rel=1e-3)
    assert T.pcie_bytes_per_s(5) == pytest.approx(63.0e9, rel=1e-3)
    assert T.pcie_bytes_per_s(3) == pytest.approx(15.75e9, rel=1e-3)
    assert T.pcie_bytes_per_s(5) == 2 * T.pcie_bytes_per_s(4)
    assert T.pcie_bytes_per_s(4, lanes=8) == T.pcie_bytes_per_s(4) / 2
    assert T.NVLINK4_BYTES_PER_S == 450e9


@pytest.mark.parametrize("gen", [2, 6, "4", True])
def test_pcie_unknown_generation(gen):
    with pytest.raises(ValueError, match="generation"):
        T.pcie_bytes_per_s(gen)


def test_pcie_bad_lanes():
    with pytest.raises(ValueError, match="lanes"):
        T.pcie_bytes_per_s(4, lanes=3)
    with pytest.raises(ValueError, match="lanes"):
        T.pcie_bytes_per_s(4, lanes=0)


@given(st.floats(1, 1e15), st.floats(1e6, 1e13))
def test_transfer_seconds_times_bandwidth_is_bytes(nbytes, bw):
    assert T.transfer_seconds(nbytes, bw) * bw == pytest.approx(nbytes, rel=1e-12)


def test_transfer_seconds_errors():
    with pytest.raises(ValueError, match="nbytes"):
        T.transfer_seconds(0, 1e9)
    with pytest.raises(ValueError, match="bytes_per_s"):
        T.transfer_seconds(1, -1)
    with pytest.raises(TypeError, match="nbytes"):
        T.transfer_seconds("1GB", 1e9)


# --- measured copies -----------------------------------------------------------------------------

def test_measure_copy_on_cpu():
    r = T.measure_copy(2**14, "cpu", trials=3)
    assert r.kind == "host → host" and r.nbytes == 2**14
    assert r.seconds > 0 and r.bytes_per_s == r.nbytes / r.seconds
    assert "GB/s" in str(r) and str(r).startswith("host → host: 16.00 KiB in ")


def test_measure_copy_refuses_what_cannot_fit():
    with pytest.raises(ValueError, match="needs"):
        T.measure_copy(10**15, "cpu")
    with pytest.raises(MemoryError):
        T.measure_copy(10**15, "cpu")


def test_measure_copy_bad_arguments():
    with pytest.raises(ValueError, match="nbytes"):
        T.measure_copy(0, "cpu")
    with pytest.raises(ValueError, match="device="):
        T.measure_copy(16, "gpu")
    if not CUDA:
        with pytest.raises(ValueError, match="pinned=True needs a CUDA GPU"):
            T.measure_copy(16, "cpu", pinned=True)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (runs on the GPU box)")
def test_measure_copy_pinned_and_pageable_on_cuda():
    pageable = T.measure_copy(2**26, "cuda", pinned=False)
    pinned = T.measure_copy(2**26, "cuda", pinned=True)
    assert "pageable" in pageable.kind and "pinned" in pinned.kind
    assert pinned.bytes_per_s > 0 and pageable.bytes_per_s > 0


def test_copy_modes_and_kinds():
    assert T.copy_modes("cpu") == (False,)
    assert T.copy_kind("cpu") == "host → host"
    if CUDA:
        assert T.copy_modes("cuda") == (False, True)
        assert T.copy_kind("cuda:0", pinned=True) == "host → cuda:0 (pinned)"


def test_sweep_sizes():
    assert T.sweep_sizes("cpu") == [2**16 * 4**k for k in range(5)]
    assert T.sweep_sizes("cpu")[-1] == 16 * 2**20
    assert T.sweep_sizes("cpu", smallest=1, largest=8, step=2) == [1, 2, 4, 8]
    assert T.sweep_sizes("cpu", smallest=3, largest=10, step=3) == [3, 9]
    with pytest.raises(ValueError, match="largest"):
        T.sweep_sizes("cpu", smallest=100, largest=10)
    with pytest.raises(ValueError, match="step"):
        T.sweep_sizes("cpu", step=1)


def test_bandwidth_sweep_on_cpu():
    results = T.bandwidth_sweep("cpu", [2**10, 2**12], trials=3)
    assert [r.nbytes for r in results] == [2**10, 2**12]
    assert all(r.bytes_per_s > 0 for r in results)


# --- summaries (the panel's computation) -------------------------------------------------------

@given(st.integers(1, 2**24), st.sampled_from(sorted(DTYPE_ALIASES)))
@settings(max_examples=60, deadline=None)
def test_summary_bytes_match_torch(elements, name):
    s = T.summarize_transfer(elements, name, "cpu", measure=False)
    assert s.nbytes == torch.empty(0, dtype=DTYPE_ALIASES[name]).element_size() * elements
    for link, seconds in s.napkin_seconds.items():
        assert seconds == pytest.approx(s.nbytes / T.NAPKIN_LINKS[link])
    assert s.measured == ()


def test_summary_measures_and_respects_budget():
    s = T.summarize_transfer(2**12, "fp32", "cpu", trials=3)
    assert [r.kind for r in s.measured] == ["host → host"] and s.measured[0].nbytes == 2**14
    with pytest.raises(ValueError, match="limit"):
        T.summarize_transfer(2**12, "fp64", "cpu", max_bytes=2**14, measure=False)
    with pytest.raises(ValueError, match="elements"):
        T.summarize_transfer(0, "fp32", measure=False)
    with pytest.raises(ValueError, match="dtype"):
        T.summarize_transfer(4, "float13", measure=False)


# --- panel ---------------------------------------------------------------------------------------

def test_panel_budget():
    assert panel_budget_bytes("cpu", max_bytes=2**20) == 2**20
    assert panel_budget_bytes("cpu") <= 2**26
    with pytest.raises(ValueError, match="max_bytes"):
        panel_budget_bytes("cpu", max_bytes=0)


def test_transfer_panel_updates_without_measuring():
    p = transfer_panel("cpu", max_bytes=2**20, measure=False)
    assert repr(p) == "Panel('Moving a tensor: bytes and seconds', controls: elements, dtype)"
    values = [v for _label, v in p.controls["elements"].options]
    assert values[-1] == 2**20 and all(v <= 2**20 for v in values)   # never more than the budget
    p.controls["elements"].value = 2**16
    p.controls["dtype"].value = "bf16"
    assert "131,072 B" in p.result.value
    p.controls["dtype"].value = "fp64"
    assert "524,288 B" in p.result.value
    p.controls["elements"].value = 2**20   # 8 MiB of fp64 > the 1 MiB budget: a message, no allocation
    assert "⚠" in p.result.value and "limit" in p.result.value and "smaller dtype" in p.result.value
    p.controls["dtype"].value = "int8"
    assert "⚠" not in p.result.value and "1,048,576 B" in p.result.value


def test_transfer_panel_measures_on_cpu():
    p = transfer_panel("cpu", max_bytes=2**16)
    assert "measured on this machine: host → host" in p.result.value and "GB/s" in p.result.value


# --- figure --------------------------------------------------------------------------------------

def _fake(kind, nbytes, seconds):
    from lectorch.bench import Timing

    return T.TransferResult(kind=kind, nbytes=nbytes, timing=Timing(times_s=(seconds,), number=1))


def test_bandwidth_figure():
    results = [_fake("host → host", 2**k, 2**k / 5e9) for k in (16, 20, 24)]
    fig = bandwidth_figure(results)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == pytest.approx([5.0, 5.0, 5.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64 KiB", "1 MiB", "16 MiB"]


def test_bandwidth_figure_gpu_shows_pcie_peaks():
    results = [_fake("host → cuda:0 (pinned)", 2**20, 2**20 / 25e9), _fake("host → cuda:0 (pageable)", 2**20, 2**20 / 10e9)]
    ax = bandwidth_figure(results).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:2] == ["host → cuda:0 (pinned)", "host → cuda:0 (pageable)"]
    assert any("PCIe 4.0 x16 peak (31.5 GB/s)" == lab for lab in labels)
    assert math.isclose(ax.get_lines()[0].get_ydata()[0], 25.0)


def test_bandwidth_figure_rejects_empty():
    with pytest.raises(ValueError, match="results"):
        bandwidth_figure([])


def test_measure_copy_restores_the_thread_count():
    before = torch.get_num_threads()
    T.measure_copy(2**12, "cpu", trials=3)
    assert torch.get_num_threads() == before
