"""Arithmetic intensity, rooflines and measured matmul points (lectorch.roofline)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch import roofline
from lectorch.hardware import GPUS, get_gpu
from lectorch.roofline import (
    MatmulPoint,
    Roofline,
    arithmetic_intensity,
    as_precision,
    check_matmul_fits,
    datasheet_peak,
    element_bytes,
    elementwise_intensity,
    matmul_bytes,
    matmul_intensity,
    measure_bandwidth,
    measure_matmul,
    precision_mode,
    tf32_matmuls,
)

sizes = st.integers(min_value=1, max_value=1 << 16)
dtypes = st.sampled_from(["fp32", "tf32", "bf16", "fp16", "fp64", "fp8"])
relaxed = settings(deadline=None)  # pure arithmetic, but the CPUs running the tests are shared
BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp64": 8, "fp8": 1}


# --- intensity ----------------------------------------------------------------------------------

@relaxed
@given(m=sizes, k=sizes, n=sizes, dtype=dtypes)
def test_matmul_bytes_counts_each_matrix_once(m, k, n, dtype):
    assert matmul_bytes(m, k, n, dtype) == (m * k + k * n + m * n) * BYTES[dtype]


@relaxed
@given(n=sizes, dtype=dtypes)
def test_square_matmul_intensity_is_2n_over_3_bytes(n, dtype):
    assert matmul_intensity(n, n, n, dtype) == pytest.approx(2 * n / (3 * BYTES[dtype]), rel=1e-12)


@relaxed
@given(m=sizes, k=sizes, n=sizes, batch=st.integers(1, 64))
def test_batching_does_not_change_intensity(m, k, n, batch):
    assert matmul_intensity(m, k, n, "bf16", batch=batch) == pytest.approx(matmul_intensity(m, k, n, "bf16"), rel=1e-12)


def test_known_intensities():
    assert matmul_intensity(8192, 8192, 8192, "bf16") == pytest.approx(8192 / 3)
    assert matmul_intensity(1, 8192, 8192, "bf16") < 1.0  # matrix-vector: memory-bound everywhere
    assert elementwise_intensity("fp32") == 1 / 8
    assert elementwise_intensity("bf16", inputs=2) == 1 / 6  # a + b: two reads, one write
    assert arithmetic_intensity(100.0, 4.0) == 25.0


def test_element_bytes_of_torch_dtypes_and_names():
    assert element_bytes(torch.bfloat16) == 2
    assert element_bytes("float32") == 4
    assert element_bytes("tf32") == 4  # stored as float32
    assert element_bytes("fp8") == 1


# --- rooflines ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(GPUS))
def test_roofline_ridge_matches_the_spec_table(name):
    spec = GPUS[name]
    for key in spec.dense:
        roof = Roofline.from_gpu(name, key)
        assert roof.ridge_point == pytest.approx(spec.ridge_point(key))
        assert roof.attainable(roof.ridge_point * 1000) == roof.peak_flops_per_s
        assert roof.attainable(roof.ridge_point / 10) == pytest.approx(roof.peak_flops_per_s / 10)


@relaxed
@given(intensity=st.floats(min_value=1e-3, max_value=1e6))
def test_attainable_is_the_minimum_of_the_two_roofs(intensity):
    roof = Roofline(peak_flops_per_s=989.5e12, bandwidth_bytes_per_s=3.35e12)
    assert roof.attainable(intensity) == min(989.5e12, intensity * 3.35e12)
    assert roof.bound(intensity) == ("compute" if intensity >= roof.ridge_point else "memory")


def test_h100_numbers():
    roof = Roofline.from_gpu("H100 SXM", "bf16")
    assert round(roof.ridge_point, 1) == 295.4
    assert roof.bound(matmul_intensity(8192, 8192, 8192, "bf16")) == "compute"
    assert roof.bound(matmul_intensity(512, 512, 512, "bf16")) == "memory"  # 170.7 < 295.4
    sparse = Roofline.from_gpu("H100", "bf16", sparse=True)
    assert sparse.peak_flops_per_s == 2 * roof.peak_flops_per_s
    assert "sparse" in sparse.label


# --- precision settings -------------------------------------------------------------------------

def _tf32_state():
    """Everything a TF32 switch could touch, read without raising (the legacy reads may raise)."""
    b = torch.backends
    state = {"global": b.fp32_precision, "cuda.matmul": b.cuda.matmul.fp32_precision,
             "cudnn": b.cudnn.fp32_precision, "mkldnn.matmul": b.mkldnn.matmul.fp32_precision}
    for name, read in [("allow_tf32", lambda: b.cuda.matmul.allow_tf32),
                       ("matmul_precision", torch.get_float32_matmul_precision)]:
        try:
            state[name] = read()
        except RuntimeError:  # "mix of the legacy and new APIs"
            state[name] = "raises"
    return state


@pytest.fixture
def restore_precision():
    b = torch.backends
    saved = (b.fp32_precision, b.cuda.matmul.fp32_precision, b.cudnn.fp32_precision,
             b.mkldnn.fp32_precision, b.mkldnn.matmul.fp32_precision)
    yield
    b.fp32_precision = saved[0]
    b.cuda.matmul.fp32_precision, b.cudnn.fp32_precision = saved[1], saved[2]
    b.mkldnn.fp32_precision, b.mkldnn.matmul.fp32_precision = saved[3], saved[4]


def test_legacy_reads_raise_only_while_the_two_apis_disagree(restore_precision):
    # what chapter 5 says: "tf32" has no legacy twin, so both legacy reads raise; "ieee" and "none" agree
    matmul = torch.backends.cuda.matmul
    matmul.fp32_precision = "tf32"
    assert {k: _tf32_state()[k] for k in ("allow_tf32", "matmul_precision")} == {
        "allow_tf32": "raises", "matmul_precision": "raises"}
    for agreeing in ("ieee", "none"):
        matmul.fp32_precision = agreeing
        state = _tf32_state()
        assert state["allow_tf32"] is False and state["matmul_precision"] == "highest", agreeing


SETUPS = {
    "defaults": lambda: None,
    "new global tf32": lambda: setattr(torch.backends, "fp32_precision", "tf32"),
    "new global ieee": lambda: setattr(torch.backends, "fp32_precision", "ieee"),
    "new matmul ieee": lambda: setattr(torch.backends.cuda.matmul, "fp32_precision", "ieee"),
    "legacy allow_tf32": lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", True),
    "legacy precision high": lambda: torch.set_float32_matmul_precision("high"),
}


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("enabled", [True, False])
def test_tf32_context_works_after_either_api_and_restores_exactly(setup, enabled, restore_precision):
    SETUPS[setup]()
    before = _tf32_state()
    with pytest.raises(RuntimeError, match="boom"):
        with tf32_matmuls(enabled):
            assert roofline.tf32_enabled() is enabled
            assert torch.backends.cuda.matmul.fp32_precision == ("tf32" if enabled else "ieee")
            raise RuntimeError("boom")
    assert _tf32_state() == before
    with precision_mode("fp32", "cpu"):
        assert roofline.tf32_enabled() is False
    assert _tf32_state() == before


def test_tf32_enabled_reads_the_global_setting_through_none(restore_precision):
    torch.backends.fp32_precision = "tf32"  # the legacy reads now raise; tf32_enabled must not
    assert roofline.tf32_enabled() is True
    torch.backends.fp32_precision = "ieee"
    assert roofline.tf32_enabled() is False


def test_fp32_mode_forbids_tf32_and_tf32_needs_cuda():
    with tf32_matmuls(True):
        with precision_mode("fp32", "cpu"):
            assert roofline.tf32_enabled() is False
        assert roofline.tf32_enabled() is True
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="tf32"):
            with precision_mode("tf32", "cpu"):
                pass
    with pytest.raises(TypeError, match="enabled"):
        with tf32_matmuls(1):
            pass


def test_cpu_threads_are_restored_even_on_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError):
        with roofline.cpu_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with roofline.cpu_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads"):
        with roofline.cpu_threads(0):
            pass


def test_as_precision():
    assert as_precision(torch.float32) == "fp32"
    assert as_precision("bfloat16") == "bf16"
    assert as_precision("TF32") == "tf32"


def test_datasheet_peak_is_none_on_a_cpu():
    assert datasheet_peak("cpu", "bf16") is None


# --- measurements ---------------------------------------------------------------------------------

def test_measure_matmul_returns_a_consistent_point():
    p = measure_matmul(48, 32, 16, "fp32", "cpu", warmup=1, trials=3, min_trial_s=0.001)
    assert isinstance(p, MatmulPoint)
    assert (p.m, p.k, p.n, p.precision, p.device) == (48, 32, 16, "fp32", "cpu")
    assert p.flops == 2 * 48 * 32 * 16
    assert p.bytes_moved == (48 * 32 + 32 * 16 + 48 * 16) * 4
    assert p.flops_per_s == pytest.approx(p.flops / p.timing.median_s)
    assert p.mfu(p.flops_per_s) == pytest.approx(1.0)
    assert p.timing.trials == 3


def test_measure_matmul_leaves_global_settings_alone():
    before = _tf32_state(), torch.get_default_dtype()
    measure_matmul(8, 8, 8, "bf16", "cpu", trials=3, min_trial_s=0.001)
    measure_matmul(8, 8, 8, "fp32", "cpu", trials=3, min_trial_s=0.001)
    assert (_tf32_state(), torch.get_default_dtype()) == before


def test_operands_are_reproducible():
    a1, b1 = roofline.matmul_operands(3, 4, 5, "fp32", "cpu", seed=7)
    a2, b2 = roofline.matmul_operands(3, 4, 5, "fp32", "cpu", seed=7)
    assert torch.equal(a1, a2) and torch.equal(b1, b2)


def test_bandwidth_is_positive():
    assert measure_bandwidth("cpu", nbytes=1 << 20, trials=3) > 1e6


def test_too_large_matmuls_are_refused_before_allocating():
    with pytest.raises(ValueError, match="choose smaller sizes"):
        check_matmul_fits(1 << 20, 1 << 20, 1 << 20, "fp32", "cpu")
    with pytest.raises(ValueError, match="free"):
        measure_matmul(1 << 20, 1 << 20, 1 << 20, "bf16", "cpu")


# --- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, name", [((0, 4, 4), "m"), ((4, -1, 4), "k"), ((4, 4, 0), "n")])
def test_zero_or_negative_sizes(args, name):
    with pytest.raises(ValueError, match=f"^{name} must be >= 1"):
        matmul_bytes(*args, "fp32")
    with pytest.raises(ValueError, match=f"^{name} must be >= 1"):
        matmul_intensity(*args, "bf16")


def test_non_integer_sizes():
    with pytest.raises(TypeError, match="m"):
        matmul_intensity(2.5, 4, 4, "fp32")


def test_unknown_dtypes_and_gpus():
    with pytest.raises(ValueError, match="dtype='fp7'"):
        matmul_bytes(4, 4, 4, "fp7")
    with pytest.raises(ValueError, match="dtype='fp7'"):
        as_precision("fp7")
    with pytest.raises(ValueError, match="fp8"):
        as_precision("fp8")  # a plain a @ b does not run in fp8
    with pytest.raises(TypeError, match="dtype"):
        as_precision(3)
    with pytest.raises(ValueError, match="not in lectorch's spec table"):
        Roofline.from_gpu("H1000", "bf16")
    with pytest.raises(ValueError, match="no dense bf16 peak"):
        Roofline.from_gpu("T4", "bf16")
    with pytest.raises(ValueError, match="fp7"):
        Roofline.from_gpu("H100", "fp7")


def test_bad_roofline_values():
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        Roofline(0, 1e12)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        Roofline(1e12, -1)
    with pytest.raises(ValueError, match="intensity"):
        Roofline(1e12, 1e12).attainable(0)
    with pytest.raises(ValueError, match="bytes_moved"):
        arithmetic_intensity(1.0, 0)
    with pytest.raises(ValueError, match="max_memory_fraction"):
        check_matmul_fits(4, 4, 4, "fp32", "cpu", max_memory_fraction=2)
    with pytest.raises(TypeError, match="enabled"):
        with tf32_matmuls("yes"):
            pass


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(list(GPUS)))
def test_every_gpu_of_the_table_has_a_fp32_or_fp16_roofline(name):
    spec = get_gpu(name)
    key = "fp32" if "fp32" in spec.dense else "fp16"
    assert Roofline.from_gpu(name, key).ridge_point > 0
