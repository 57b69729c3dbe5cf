"""lectorch.dtypes (bit layouts, rounding, neighbours, the summary table), its panels and figures
(the exercises of chapter 01 are tested in test_exercises_precision.py)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch import dtypes
from lectorch.dtypes import (
    DTYPE_ALIASES, FLOAT_DTYPES, as_dtype, bracket, bytes_per_element, dtype_summary, float_bits, float_format,
    format_summary_table, from_fields, next_down, next_up, relative_error, round_to, short_name, spacing,
    summary_table,
)
from lectorch.memory import tensor_bytes
from lectorch.plots.precision import bit_layout_figure, range_figure, relative_spacing
from lectorch.widgets.precision import bytes_table, describe_value, float_bits_panel, tensor_bytes_panel

SETTINGS = settings(max_examples=150, deadline=None)
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
SMALL = (torch.float16, torch.bfloat16, E4M3, E5M2)
any_dtype = st.sampled_from(FLOAT_DTYPES)
any_float = st.floats(allow_nan=True, allow_infinity=True)


def same_float(a: float, b: float) -> bool:
    """Equal including the sign of zero, and NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def torch_stores(x: float, dtype: torch.dtype) -> float:
    return torch.tensor(x, dtype=torch.float64).to(dtype).to(torch.float64).item()


# --- the existing API other chapters use stays as it was ---------------------------------------------


def test_as_dtype_and_bytes_unchanged():
    assert as_dtype("bf16") is torch.bfloat16 and as_dtype(torch.float16) is torch.float16
    assert as_dtype(" torch.Float32 ") is torch.float32
    assert bytes_per_element("fp8_e4m3") == 1 and bytes_per_element(torch.float64) == 8
    assert DTYPE_ALIASES["e5m2"] is E5M2 and DTYPE_ALIASES["int8"] is torch.int8
    with pytest.raises(ValueError, match="dtype='bf61'.*Did you mean"):
        as_dtype("bf61")
    with pytest.raises(TypeError, match="dtype must be"):
        as_dtype(3)


# --- layouts and the summary table -------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, layout, bias, maximum",
    [
        (torch.float64, (11, 52), 1023, 1.7976931348623157e308),
        (torch.float32, (8, 23), 127, 3.4028234663852886e38),
        (torch.float16, (5, 10), 15, 65504.0),
        (torch.bfloat16, (8, 7), 127, 3.3895313892515355e38),
        (E4M3, (4, 3), 7, 448.0),
        (E5M2, (5, 2), 15, 57344.0),
    ],
)
def test_layouts(dtype, layout, bias, maximum):
    fmt = float_format(dtype)
    assert (fmt.exponent_bits, fmt.mantissa_bits) == layout
    assert fmt.bits == torch.finfo(dtype).bits == 8 * dtype.itemsize == 8 * fmt.bytes
    assert fmt.bias == bias and fmt.max == maximum
    assert fmt.layout() == f"1/{layout[0]}/{layout[1]}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_summary_agrees_with_finfo(dtype):
    row, info = dtype_summary(dtype), torch.finfo(dtype)
    assert (row.bits, row.max, row.smallest_normal, row.eps) == (info.bits, info.max, info.smallest_normal, info.eps)
    assert row.smallest_normal == info.tiny and -row.max == info.min
    assert row.smallest_subnormal == from_fields(0, 0, 1, dtype) > 0
    assert row.smallest_subnormal / 2 == 0 or torch_stores(row.smallest_subnormal / 2, dtype) == 0  # nothing smaller
    assert row.bytes == dtype.itemsize and row.name == short_name(dtype)


def test_summary_table_facts():
    rows = {r.name: r for r in summary_table()}
    assert list(rows) == ["fp64", "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"]
    assert rows["fp16"].smallest_subnormal == 2**-24 and rows["fp16"].smallest_normal == 2**-14
    assert rows["bf16"].smallest_normal == rows["fp32"].smallest_normal  # same exponent: same range
    assert rows["bf16"].eps == 2**-7 and rows["fp32"].eps == 2**-23
    text = format_summary_table()
    assert len(text.splitlines()) == 7 and "65504" in text and "57344" in text and "448" in text
    assert [r.name for r in summary_table("bf16")] == ["bf16"]


def test_summary_detects_a_disagreeing_layout(monkeypatch):
    fp16 = dtypes.float_format("fp16")
    monkeypatch.setitem(dtypes._BY_DTYPE, torch.float16, dataclasses.replace(fp16, has_inf=False))  # no infinity
    with pytest.raises(RuntimeError, match="finfo"):
        dtype_summary("fp16")


# --- decomposition: exact and round-tripping ---------------------------------------------------------


@SETTINGS
@given(x=any_float, dtype=any_dtype)
def test_decomposition_round_trips(x, dtype):
    b = float_bits(x, dtype)
    fmt = float_format(dtype)
    assert same_float(b.stored, torch_stores(x, dtype))  # what torch stores
    assert same_float(b.reassemble(), b.stored)  # arithmetic on the fields gives the stored value back
    assert b.pattern == (b.sign << (fmt.bits - 1)) | (b.exponent << fmt.mantissa_bits) | b.mantissa
    assert 0 <= b.pattern < 2**fmt.bits and b.kind in dtypes._KINDS
    assert len(b.bitstring.replace(" ", "")) == fmt.bits
    if not b.is_nan:
        assert same_float(from_fields(b.sign, b.exponent, b.mantissa, dtype), b.stored)  # the bits give it back
        assert b.sign == (math.copysign(1, b.stored) < 0)
    if b.is_finite and not b.is_zero:
        if b.kind == "normal":  # 2**e <= |stored| < 2**(e+1)
            assert math.frexp(b.stored)[1] - 1 == b.unbiased_exponent
        assert b.is_subnormal == (abs(b.stored) < fmt.smallest_normal)


@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=str)
def test_every_fp8_bit_pattern(dtype):
    """All 256 patterns: the fields give the value torch reads, and storing that value gives the pattern back."""
    fmt = float_format(dtype)
    values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).to(torch.float64).tolist()
    nans = 0
    for pattern, value in enumerate(values):
        sign = pattern >> 7
        exponent = (pattern >> fmt.mantissa_bits) & (2**fmt.exponent_bits - 1)
        mantissa = pattern & (2**fmt.mantissa_bits - 1)
        assert same_float(from_fields(sign, exponent, mantissa, dtype), value)
        if math.isnan(value):
            nans += 1
            continue
        b = float_bits(value, dtype)
        assert b.pattern == pattern and same_float(b.reassemble(), value)
    assert nans == (2 if dtype == E4M3 else 6)  # E4M3FN: only S.1111.111; E5M2: IEEE-style, 3 mantissas × 2 signs


@SETTINGS
@given(pattern=st.integers(0, 2**16 - 1), dtype=st.sampled_from([torch.float16, torch.bfloat16]))
def test_16_bit_patterns_round_trip(pattern, dtype):
    value = torch.tensor(pattern - (2**16 if pattern >= 2**15 else 0), dtype=torch.int16).view(dtype).item()
    if not math.isnan(value):
        assert float_bits(value, dtype).pattern == pattern


def test_known_bits():
    assert float_bits(1.0, "fp32").bitstring == "0 01111111 00000000000000000000000"
    assert float_bits(-2.0, "fp16").bitstring == "1 10000 0000000000"
    b = float_bits(0.1, "bf16")
    assert (b.sign, b.exponent, b.mantissa, b.unbiased_exponent, b.kind) == (0, 123, 77, -4, "normal")
    assert float_bits(2**-24, "fp16").bitstring == "0 00000 0000000001" and float_bits(2**-24, "fp16").is_subnormal
    assert float_bits(-0.0, "fp32").sign == 1 and float_bits(-0.0, "fp32").is_zero
    assert float_bits(float("inf"), "bf16").is_inf and float_bits(float("inf"), "bf16").unbiased_exponent is None
    assert "stored as" in str(float_bits(0.1, "fp16"))


def test_lecture_facts():
    assert round_to(1e-8, "fp16") == 0.0  # underflow
    assert round_to(1e-8, "bf16") == pytest.approx(1e-8, rel=2**-8) and round_to(1e-8, "bf16") != 0
    assert round_to(65504, "fp16") == 65504 and round_to(65519, "fp16") == 65504
    assert round_to(65520, "fp16") == math.inf and round_to(70000, "fp16") == math.inf  # overflow
    assert round_to(257, "bf16") == 256 and round_to(0.1, "fp8_e4m3") == 0.1015625 and round_to(0.1, "e5m2") == 0.09375
    assert round_to(57344, "e5m2") == 57344 and round_to(448, "e4m3") == 448


def test_tensor_input_is_cast_from_its_own_dtype():
    half = torch.tensor(0.1, dtype=torch.float16)
    b = float_bits(half, "fp32")
    assert b.value == b.stored == half.item() != 0.1
    assert float_bits(torch.tensor([3]), "bf16").stored == 3.0  # an int tensor is a number too
    assert float_bits(torch.tensor(0.5, dtype=E4M3), "fp8_e4m3").stored == 0.5


# --- NaN, infinity and saturation (documented behaviour) ---------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nan_is_decomposed_and_refused_where_undefined(dtype):
    b = float_bits(float("nan"), dtype)
    assert b.is_nan and b.kind == "nan" and math.isnan(b.stored) and math.isnan(b.reassemble())
    assert b.exponent == 2 ** float_format(dtype).exponent_bits - 1  # all-ones exponent
    for fn in (next_up, next_down, spacing, relative_error, bracket):
        with pytest.raises(ValueError, match="NaN|not finite"):
            fn(float("nan"), dtype)


def test_e4m3_has_no_infinity():
    assert float_bits(float("nan"), E4M3).pattern & 0x7F == 0x7F  # S.1111.111
    stored = round_to(1000.0, E4M3)
    assert stored == 448.0 or math.isnan(stored)  # the cast saturates or gives NaN: never inf
    with pytest.raises(ValueError, match="no infinity"):
        next_up(448, E4M3)
    with pytest.raises(ValueError, match="no infinity"):
        next_down(-448, E4M3)
    assert next_up(448, E5M2) == 512 and next_up(57344, E5M2) == math.inf


def test_infinities():
    assert next_up(math.inf, "fp16") == math.inf and next_down(-math.inf, "fp16") == -math.inf
    assert next_up(-math.inf, "fp16") == -65504 and next_down(math.inf, "bf16") == torch.finfo(torch.bfloat16).max
    with pytest.raises(ValueError, match="infinite"):
        spacing(math.inf, "fp32")
    with pytest.raises(ValueError, match="not finite"):
        relative_error(-math.inf, "fp32")
    with pytest.raises(ValueError, match="overflows"):
        bracket(1e6, "fp16")
    with pytest.raises(ValueError, match="infinite"):
        bracket(math.inf, "fp16")


# --- neighbours, spacing, rounding error -------------------------------------------------------------


@SETTINGS
@given(x=st.floats(allow_nan=False), dtype=st.sampled_from(FLOAT_DTYPES[:4]))
def test_neighbours_match_torch_nextafter(x, dtype):
    t = torch.tensor(x, dtype=torch.float64).to(dtype)
    up = torch.nextafter(t, torch.tensor(math.inf, dtype=dtype)).to(torch.float64).item()
    down = torch.nextafter(t, torch.tensor(-math.inf, dtype=dtype)).to(torch.float64).item()
    assert next_up(x, dtype) == up and next_down(x, dtype) == down


@SETTINGS
@given(x=st.floats(width=32, allow_nan=False, allow_infinity=False), dtype=st.sampled_from(SMALL))
def test_rounding_is_to_nearest_even(x, dtype):
    """For float32 inputs torch rounds once: the stored value is the nearer neighbour, ties to even."""
    fmt = float_format(dtype)
    if abs(x) > fmt.max:
        return
    lo, hi = bracket(x, dtype)
    stored = round_to(x, dtype)
    assert lo <= x <= hi and stored in (lo, hi)
    if lo != hi:
        assert hi == next_up(lo, dtype)
        other = hi if stored == lo else lo
        assert abs(stored - x) <= abs(other - x)
        if abs(stored - x) == abs(other - x):  # a tie: the even mantissa wins
            assert float_bits(stored, dtype).mantissa % 2 == 0
        assert relative_error(x, dtype) <= (fmt.eps / 2 if abs(x) >= fmt.smallest_normal else 1.0)


@SETTINGS
@given(x=st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_fp16_matches_numpy(x):
    with np.errstate(over="ignore"):
        expected = float(np.float16(np.float32(x)))
    assert same_float(round_to(x, "fp16"), expected)


@SETTINGS
@given(x=st.floats(allow_nan=False, allow_infinity=False), dtype=any_dtype)
def test_spacing_is_the_gap_away_from_zero(x, dtype):
    s = abs(round_to(x, dtype))
    if not math.isfinite(s) or s == float_format(dtype).max:
        return
    assert spacing(x, dtype) == next_up(s, dtype) - s
    assert relative_spacing(np.array([s if s > 0 else float_format(dtype).smallest_subnormal]), dtype)[0] > 0


def test_spacing_and_relative_error_examples():
    assert spacing(1000.0, "bf16") == 4.0 and spacing(1000.0, "fp16") == 0.5 and spacing(0.0, "fp16") == 2**-24
    assert relative_error(1e-8, "fp16") == 1.0 and relative_error(0.0, "e4m3") == 0.0
    assert relative_error(70000, "fp16") == math.inf
    assert relative_error(0.1, "fp32") <= 2**-24
    assert bracket(0.5, "e4m3") == (0.5, 0.5) and bracket(257, "bf16") == (256.0, 258.0)
    assert bracket(1e-300, "fp16") == (0.0, 2**-24) and bracket(-1e-300, "fp16") == (-(2**-24), -0.0)


def test_relative_spacing_against_layout():
    fmt = float_format("bf16")
    rel = relative_spacing(np.array([1.0, 1.99, fmt.smallest_subnormal, fmt.smallest_normal]), "bf16")
    assert rel[0] == fmt.eps and rel[1] == pytest.approx(fmt.eps / 1.99) and rel[2] == 1.0 and rel[3] == fmt.eps
    with pytest.raises(ValueError, match="x must"):
        relative_spacing(np.array([0.0]), "bf16")


# --- bad input ---------------------------------------------------------------------------------------


def test_bad_dtype():
    with pytest.raises(ValueError, match="dtype='fp17'"):
        float_bits(1.0, "fp17")
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype"):
        float_bits(1.0, torch.int32)
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype"):
        float_format("int8")
    with pytest.raises(ValueError, match="dtype=.*knows the bit layout"):
        float_format(torch.float8_e4m3fnuz)
    with pytest.raises(TypeError, match="dtype must be"):
        next_up(1.0, None)


def test_bad_value():
    with pytest.raises(TypeError, match="value must be a real number"):
        float_bits("0.1", "fp16")
    with pytest.raises(TypeError, match="value must be a real number"):
        float_bits(True, "fp16")
    with pytest.raises(TypeError, match="value must be a real number"):
        float_bits(1j, "fp16")
    with pytest.raises(ValueError, match="value must be a single number"):
        float_bits(torch.ones(2), "fp16")
    with pytest.raises(TypeError, match="value must be a real number"):
        float_bits(torch.tensor(1 + 1j), "fp16")
    with pytest.raises(ValueError, match="value=.*too large"):
        float_bits(10**400, "fp32")


def test_bad_fields():
    with pytest.raises(ValueError, match="sign=2"):
        from_fields(2, 0, 0, "fp16")
    with pytest.raises(ValueError, match="exponent=32 .* 5 exponent"):
        from_fields(0, 32, 0, "fp16")
    with pytest.raises(ValueError, match="mantissa=-1"):
        from_fields(0, 1, -1, "fp16")
    with pytest.raises(TypeError, match="mantissa must be an int"):
        from_fields(0, 1, 0.5, "fp16")
    assert from_fields(1, 0b1111, 0b110, "e4m3") == -448.0 and from_fields(0, 2**11 - 1, 0, "fp64") == math.inf


# --- panels and figures ------------------------------------------------------------------------------


def test_float_bits_panel_reacts():
    panel = float_bits_panel(1e-8, "fp16")
    assert "underflows" in panel.result.value and "<b>0.0</b>" in panel.result.value
    panel.controls["dtype"].value = "bf16"
    assert "underflows" not in panel.result.value and "1.0011717677116394e-08" in panel.result.value
    panel.controls["value"].value = 70000.0
    panel.controls["dtype"].value = "fp16"
    assert "overflows to inf" in panel.result.value
    panel.controls["value"].value = 65519.0
    assert "<b>65504.0</b>" in panel.result.value and "rounds down" in panel.result.value
    panel.controls["dtype"].value = "fp8_e4m3"
    assert "no infinity" in panel.result.value
    panel.controls["value"].value = float("nan")
    assert "NaN in, NaN out" in panel.result.value
    panel.controls["value"].value = 2**-24 * 0.75
    panel.controls["dtype"].value = "fp16"
    assert "subnormal" in panel.result.value
    assert repr(panel) == "Panel('What does a dtype store?', controls: value, dtype)"
    assert describe_value(257, "bf16").count('title="mantissa"') == 7


def test_tensor_bytes_panel_reacts():
    panel = tensor_bytes_panel()
    assert "128 B" in panel.result.value
    panel.controls["rows"].value, panel.controls["cols"].value = 4 * 12288, 12288
    assert "2.42 GB (2.25 GiB)" in panel.result.value and "2,415,919,104" in panel.result.value
    panel.controls["dtype"].value = "bf16"
    assert "<b>1.21 GB (1.12 GiB)</b>" in panel.result.value
    for dt in FLOAT_DTYPES:
        assert f"{tensor_bytes((4 * 12288, 12288), dt):,}" in panel.result.value
    with pytest.raises(ValueError, match="rows"):
        bytes_table(0, 8)
    with pytest.raises(ValueError, match="dtype="):
        bytes_table(4, 8, "fp7")


def test_figures():
    fig = bit_layout_figure()
    assert len(fig.axes[0].patches) == sum(float_format(d).bits for d in FLOAT_DTYPES)
    fig = bit_layout_figure("fp8_e4m3", value=-448)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "".join(t for t in texts if t in "01" and t) == "11111110"
    assert any(t.endswith("stores -448") for t in texts)
    assert len(range_figure().axes) == 2 and len(range_figure(["fp16"], marks={}).axes) == 2
    with pytest.raises(ValueError, match="at least one"):
        range_figure([])
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        bit_layout_figure(["int8"])


# --- one registry: every dtype list derives from dtypes.FORMATS ----------------------------------------


def test_every_dtype_list_derives_from_the_registry(monkeypatch):
    from lectorch import hardware, roofline, step_memory
    from lectorch.plots import COLORS

    assert dtypes.FLOAT_DTYPES == tuple(f.dtype for f in dtypes.FORMATS)
    for fmt in dtypes.FORMATS:
        assert dtypes.float_format(fmt.dtype) is fmt and dtypes.short_name(fmt.dtype) == fmt.name
        for alias in (fmt.name, *fmt.aliases, str(fmt.dtype).removeprefix("torch.")):
            assert DTYPE_ALIASES[alias] is fmt.dtype
        assert hardware.flops_key(fmt.dtype) == fmt.flops_key == hardware.flops_key(fmt.name)
        assert roofline.element_bytes(fmt.name) == fmt.dtype.itemsize == fmt.bytes
        assert COLORS[fmt.name] == fmt.color
    assert step_memory.STEP_DTYPES == tuple(f.name for f in dtypes.FORMATS if f.trainable)
    assert hardware.flops_key("tf32") == "tf32" and roofline.element_bytes("tf32") == 4
    assert roofline.element_bytes("fp8") == 1 and COLORS["fp8"] == dtypes.float_format("fp8_e4m3").color


def test_format_rows_are_consistent_with_torch():
    for fmt in dtypes.FORMATS:
        info = torch.finfo(fmt.dtype)
        assert fmt.bits == info.bits and fmt.max == info.max and fmt.eps == info.eps
        assert fmt.flops_key in __import__("lectorch.hardware", fromlist=["PRECISIONS"]).PRECISIONS
