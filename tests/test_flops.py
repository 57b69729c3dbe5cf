"""FLOP counts (lectorch.flops) against torch's FlopCounterMode; chapter 05's panels and figures."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lectorch.bench import Timing
from lectorch.flops import (
    count_flops,
    elementwise_flops,
    format_flops,
    forward_flops,
    linear_flops,
    matmul_flops,
    matmul_to_elementwise_ratio,
)
from lectorch.hardware import get_gpu
from lectorch.models import Cruncher, num_parameters
from lectorch.plots.flops import compute_scale_figure, flops_per_s_figure, roofline_figure
from lectorch.roofline import MatmulPoint, Roofline
from lectorch.widgets.flops import matmul_panel, render_matmul, render_roofline, roofline_panel

dims = st.integers(min_value=1, max_value=1 << 14)
meta = dict(device="meta")  # FlopCounterMode counts shapes: meta tensors cost no memory and no time
relaxed = settings(deadline=None, max_examples=50)  # the first FlopCounterMode call is slow; CPUs are shared


# --- formulas vs FlopCounterMode ------------------------------------------------------------------

@relaxed
@given(B=dims, D=dims, K=dims, bias=st.booleans())
def test_linear_flops_equal_flop_counter_for_nn_linear(B, D, K, bias):
    layer = torch.nn.Linear(D, K, bias=bias, **meta)
    assert count_flops(layer, torch.empty(B, D, **meta)).total == linear_flops(B, D, K) == 2 * B * D * K


@relaxed
@given(batch=st.integers(1, 64), seq=st.integers(1, 512), D=dims, K=dims)
def test_linear_over_tokens_counts_every_token(batch, seq, D, K):
    x, w = torch.empty(batch, seq, D, **meta), torch.empty(K, D, **meta)
    assert count_flops(F.linear, x, w).total == linear_flops(batch * seq, D, K)


@relaxed
@given(batch=st.integers(1, 64), m=dims, k=dims, n=dims)
def test_batched_matmul_flops_equal_flop_counter(batch, m, k, n):
    a, b = torch.empty(batch, m, k, **meta), torch.empty(batch, k, n, **meta)
    assert count_flops(torch.bmm, a, b).total == matmul_flops(m, k, n, batch=batch)


@settings(max_examples=25, deadline=None)
@given(dim=st.integers(1, 64), layers=st.integers(1, 4), batch=st.integers(1, 32))
def test_forward_flops_are_two_per_parameter_and_token_for_the_cruncher(dim, layers, batch):
    model = Cruncher(dim, layers)
    counted = count_flops(model, torch.ones(batch, dim)).total
    assert counted == forward_flops(batch, num_parameters(model)) == 2 * batch * (dim * dim * layers + dim)


def test_flop_counter_ignores_elementwise_ops():
    x = torch.ones(8, 16)
    counted = count_flops(lambda t: torch.relu(t) + t * 2, x)
    assert counted.total == 0 and counted.by_operator == {}
    assert elementwise_flops(x.numel()) == 128
    assert elementwise_flops(10, flops_per_element=8) == 80


@relaxed
@given(B=dims, D=dims, K=dims)
def test_matmul_dominates_elementwise_by_2D(B, D, K):
    assert matmul_to_elementwise_ratio(B, D, K) == 2 * D


def test_count_flops_reports_operators_and_result():
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    counted = count_flops(torch.matmul, a, b)
    assert counted.by_operator == {"mm": 48} and counted.result.shape == (2, 4)


def test_format_flops():
    assert format_flops(3.15e23) == "315 ZFLOPs"
    assert format_flops(989.5e12, per_s=True) == "989.5 TFLOP/s"
    assert format_flops(12.0) == "12 FLOPs"


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="batch"):
        linear_flops(0, 4, 4)
    with pytest.raises(ValueError, match="in_features"):
        linear_flops(4, -2, 4)
    with pytest.raises(TypeError, match="out_features"):
        linear_flops(4, 4, 2.0)
    with pytest.raises(ValueError, match="tokens"):
        forward_flops(0, 10)
    with pytest.raises(ValueError, match="numel"):
        elementwise_flops(0)
    with pytest.raises(ValueError, match="flops_per_element"):
        elementwise_flops(4, flops_per_element=-1)
    with pytest.raises(TypeError, match="fn"):
        count_flops(42)
    assert format_flops(0) == "0 FLOPs"  # one formatter: zero work is a count, not an error
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="value"):
            format_flops(bad)


# The chapter's exercises are tested in tests/test_exercises_flops.py.


# --- panels ---------------------------------------------------------------------------------------

def test_matmul_panel_measures_and_recomputes_on_change():
    panel = matmul_panel("cpu", size=16, trials=3)
    assert repr(panel) == "Panel('Measure (B, D) @ (D, K) on cpu', controls: B, D, K, dtype, threads)"
    assert "8,192" in panel.result.value and "no datasheet peak for a CPU" in panel.result.value
    assert "on cpu, 1 thread" in panel.result.value
    panel.controls["D"].value = 32
    assert "16,384" in panel.result.value
    panel.controls["dtype"].value = "bf16"
    assert "in bf16 on cpu" in panel.result.value
    threads = torch.get_num_threads()
    panel.controls["threads"].value = 2
    assert "2 threads" in panel.result.value
    assert torch.get_num_threads() == threads  # the measurement restored the setting


def test_matmul_panel_refuses_too_large_sizes_with_a_message():
    panel = matmul_panel("cpu", size=16, trials=3)
    for name in ("B", "D", "K"):
        panel.controls[name].value = 1 << 20
    assert "⚠" in panel.result.value and "free" in panel.result.value  # does not fit in memory
    panel.controls["B"].value = panel.controls["D"].value = panel.controls["K"].value = 8192
    assert "⚠" in panel.result.value and "choose smaller sizes" in panel.result.value  # would take too long


def test_matmul_panel_compares_with_a_labelled_reference_on_cpu():
    text = render_matmul(16, 16, 16, "fp32", device="cpu", reference_peak=1e9, reference_label="best measured", trials=3)
    assert "vs best measured" in text and "not an MFU" in text


def test_matmul_panel_rejects_dtypes_the_device_lacks():
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="tf32"):
            matmul_panel("cpu", dtype="tf32")


def test_roofline_panel():
    panel = roofline_panel()
    assert "compute-bound" in panel.result.value and "<img" in panel.result.value
    panel.controls["m"].value = 1
    assert "memory-bound" in panel.result.value
    panel.controls["gpu"].value = "T4"
    assert "⚠" in panel.result.value and "bf16" in panel.result.value  # the T4 has no bf16 peak
    text, fig = render_roofline("H100 SXM", "bf16", 8192, 8192, 8192)
    assert "2,730.7 FLOPs/byte" in text and "295.4" in text and isinstance(fig, Figure)


# --- figures ---------------------------------------------------------------------------------------

def _point(n, precision, seconds):
    return MatmulPoint(n, n, n, precision, "cpu", Timing(times_s=(seconds, seconds * 1.1, seconds * 0.9), number=1))


def test_figures_build_from_plain_data():
    pts = [_point(n, p, 1e-3 * n / 64) for n in (64, 128) for p in ("fp32", "bf16")]
    fig = flops_per_s_figure(pts, {"fp32": 1e11})
    assert fig.axes[0].get_yscale() == "log"
    fig = roofline_figure([Roofline.from_gpu("H100", "bf16"), Roofline(5e10, 2e10, "cpu")], pts, styles=[":", "-"])
    assert len(fig.axes[0].collections) == 2  # one scatter per precision
    fig = compute_scale_figure({"GPT-3": 3.15e23, "GPT-4": 2e25}, {"EU": 1e25, "US": 1e26})
    assert len(fig.axes[0].patches) == 2 and len(fig.axes[0].lines) == 2


def test_figures_refuse_empty_input():
    with pytest.raises(ValueError, match="points"):
        flops_per_s_figure([])
    with pytest.raises(ValueError, match="rooflines"):
        roofline_figure([])
    with pytest.raises(ValueError, match="runs"):
        compute_scale_figure({}, {})
    with pytest.raises(ValueError, match="styles"):
        roofline_figure([Roofline(1e12, 1e12)], styles=["-", ":"])


def test_spec_peaks_used_by_the_chapter():
    h100 = get_gpu("H100 SXM")
    assert h100.peak_flops("bf16", sparse=True) == 2 * h100.peak_flops("bf16") == 1979e12
    assert h100.peak_flops("bf16") / h100.peak_flops("fp32") == pytest.approx(14.77, abs=0.01)
