"""Napkin math: the motivating answers, the rule's algebra, and clear errors."""

import math

import pytest
from hypothesis import given, strategies as st

from lectorch import napkin
from lectorch.widgets.napkin import napkin_panel, render_napkin


def test_the_motivating_question_takes_144_days():
    days = napkin.training_days(70e9, 15e12, num_gpus=1024, mfu=0.5, gpu="H100 SXM")
    assert round(days) == 144
    per_day = napkin.cluster_flops_per_s(num_gpus=1024, mfu=0.5) * napkin.SECONDS_PER_DAY
    assert math.isclose(per_day, 4.377e22, rel_tol=1e-3)


def test_largest_model_on_one_and_eight_gpus():
    assert napkin.max_trainable_params(80e9, bytes_per_param=napkin.ADAMW_FP32) == 5e9
    assert napkin.max_trainable_params(80e9, bytes_per_param=16, num_gpus=8) == 4e10
    assert napkin.ADAMW_BF16_MIXED.total == napkin.ADAMW_FP32.total == 16
    assert napkin.SGD_FP32.total == 8


@given(
    params=st.floats(1e6, 1e13), tokens=st.floats(1e6, 1e14),
    gpus=st.integers(1, 100_000), mfu=st.floats(0.01, 1.0),
)
def test_days_scale_as_the_formula_says(params, tokens, gpus, mfu):
    days = napkin.training_days(params, tokens, num_gpus=gpus, mfu=mfu, peak_flops_per_s=1e15)
    assert math.isclose(days, 6 * params * tokens / (gpus * 1e15 * mfu * 86400), rel_tol=1e-9)
    double = napkin.training_days(params, tokens, num_gpus=2 * gpus, mfu=mfu, peak_flops_per_s=1e15)
    assert math.isclose(double, days / 2, rel_tol=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_gpus=0, mfu=0.5), "num_gpus"),
        (dict(num_gpus=8, mfu=50), "mfu"),
        (dict(num_gpus=8, mfu=0.5, gpu="H1000"), "H1000"),
        (dict(num_gpus=8, mfu=0.5, gpu="A100", dtype="fp8"), "fp8"),
        (dict(num_gpus=8, mfu=0.5, dtype="float13"), "float13"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        napkin.training_days(70e9, 15e12, **kwargs)


def test_bad_types_and_values():
    with pytest.raises(TypeError, match="num_gpus"):
        napkin.training_days(70e9, 15e12, num_gpus=2.5, mfu=0.5)
    with pytest.raises(ValueError, match="tokens"):
        napkin.training_flops(70e9, -1)
    with pytest.raises(ValueError, match="bytes_per_param"):
        napkin.max_trainable_params(80e9, bytes_per_param=0)


def test_summary_and_panel():
    s = napkin.summarize(7e9, 1e12, gpu="A100", num_gpus=8, mfu=0.4)
    assert s.fits and math.isclose(s.max_params, 40e9)
    assert not napkin.summarize(405e9, 1e12, gpu="H100", num_gpus=8, mfu=0.4).fits
    panel = napkin_panel()
    assert "144 days" in panel.result.value
    panel.controls["num_gpus"].value = 512
    assert "288 days" in panel.result.value
    panel.controls["gpu"].value = "A100 SXM 80GB"
    panel.controls["dtype"].value = "fp8"  # the A100 has no fp8: a message, not a crash
    assert "A100" in panel.result.value and "fp8" in panel.result.value
    assert "not</b> fit" in render_napkin(405e9, 15e12, "H100 SXM", 8, 0.5, "AdamW fp32 (16 B)", "bf16")


def test_memory_both_ways():
    # full sharding pools the GPUs' memory; plain data parallelism keeps a copy on every GPU
    s = napkin.summarize(70e9, 15e12, gpu="H100 SXM", num_gpus=1024, mfu=0.5)
    assert s.memory_per_gpu_bytes == 80e9 and s.memory_available_bytes == 1024 * 80e9
    assert s.fits and not s.fits_replicated
    assert s.max_params == 1024 * s.max_params_replicated == 1024 * 5e9
    html = render_napkin(70e9, 15e12, "H100 SXM", 1024, 0.5, "AdamW fp32 (16 B)", "bf16")
    assert "fully sharded" in html and "plain data parallelism" in html
    assert napkin.ADAMW_AUTOCAST.total == napkin.ADAMW_BF16_MIXED.total == 16
