"""Chapter 04: einsum pattern analysis against torch.einsum and FlopCounterMode, its errors, the
widget, the figures, the exercises and the benchmark script's functions."""

from __future__ import annotations

import importlib.util
import math

import einops
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch.contractions import ELLIPSIS, analyze, parse_pattern, parse_sizes
from lectorch.flops import format_flops
from lectorch.flops import count_flops, matmul_flops
from lectorch.plots.einsum import contraction_diagram, flops_vs_size
from lectorch.widgets.einsum import einsum_panel, einsum_report, flops_formula

from _paths import ROOT
NAMES = ["batch", "heads", "seq", "seq2", "hidden", "out", "x", "y", "z", "w"]


# --- random patterns -------------------------------------------------------------------------

@st.composite
def matmul_like(draw):
    """A two-operand pattern where every summed dim is in both operands: (pattern, sizes)."""
    names = draw(st.permutations(NAMES))
    nb, nm, nk, nn = (draw(st.integers(lo, 2)) for lo in (0, 0, 1, 0))
    it = iter(names)
    b, m, k, n = ([next(it) for _ in range(c)] for c in (nb, nm, nk, nn))
    a_dims = draw(st.permutations(b + m + k))
    b_dims = draw(st.permutations(b + k + n))
    out = draw(st.permutations(b + m + n))
    sizes = {d: draw(st.integers(1, 5)) for d in b + m + n}
    sizes.update({d: draw(st.integers(2, 5)) for d in k})  # summed dims of size 1: see the test below
    pattern = f"{' '.join(a_dims)}, {' '.join(b_dims)} -> {' '.join(out)}"
    return pattern, sizes, (b, m, k, n)


@st.composite
def any_pattern(draw):
    """One to three operands of random dims; the output any subset of them."""
    pool = draw(st.permutations(NAMES))[: draw(st.integers(1, 5))]
    num_operands = draw(st.integers(1, 3))
    operands = [draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)) for _ in range(num_operands)]
    used = list(dict.fromkeys(d for g in operands for d in g))
    out = draw(st.permutations(used))[: draw(st.integers(0, len(used)))]
    sizes = {d: draw(st.integers(1, 4)) for d in used}
    return ", ".join(" ".join(g) for g in operands) + " -> " + " ".join(out), sizes


def tensors_for(c, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g) for s in c.input_shapes]


@settings(max_examples=40, deadline=None)
@given(matmul_like())
def test_matmul_like_patterns_match_torch_shapes_and_flop_counter(case):
    pattern, sizes, (b, m, k, n) = case
    c = analyze(pattern, sizes)
    ts = tensors_for(c)
    counted = count_flops(torch.einsum, c.torch_equation, *ts)
    assert tuple(counted.result.shape) == c.output_shape
    assert tuple(einops.einsum(*ts, pattern).shape) == c.output_shape
    assert c.flops == counted.total, (pattern, sizes, counted.by_operator)
    mm = c.matmul
    assert mm is not None
    prod = lambda dims: math.prod(sizes[d] for d in dims)  # noqa: E731
    assert (mm.batch, mm.m, mm.k, mm.n) == (prod(b), prod(m), prod(k), prod(n))
    assert c.flops == matmul_flops(mm.m, mm.k, mm.n, batch=mm.batch) == 2 * math.prod(sizes.values())
    assert set(c.batch) == set(b) and set(c.free) == set(m + n) and set(c.contracted) == set(k)


@settings(max_examples=60, deadline=None)
@given(any_pattern())
def test_any_pattern_matches_torch_output_shape_and_the_convention(case):
    pattern, sizes = case
    c = analyze(pattern, sizes)
    ts = tensors_for(c)
    assert tuple(torch.einsum(c.torch_equation, *ts).shape) == c.output_shape
    inputs = {d for g in c.pattern.inputs for d in g}
    assert set(c.contracted) == inputs - set(c.pattern.output)
    assert set(c.batch) | set(c.free) == set(c.pattern.output)
    assert not set(c.batch) & set(c.free)
    p = math.prod(sizes.values())
    assert c.iteration_space == p
    if len(ts) <= 2:  # one loop nest over every dimension
        assert c.flops == (len(ts) - 1) * p + (p if c.contracted else 0)
    else:  # pairwise, left to right: each step a loop nest over its pair's dimensions
        assert c.flops == sum((2 if s.summed else 1) * math.prod(sizes[d] for d in s.dims) for s in c.steps)
        assert {d for s in c.steps for d in s.summed} == set(c.contracted)
    # the loop nest never counts less than torch actually runs
    assert c.flops >= count_flops(torch.einsum, c.torch_equation, *ts).total


@settings(max_examples=30, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    drop=st.integers(0, 3),
    s1=st.integers(1, 4), s2=st.integers(1, 4), h=st.integers(2, 4),
)
def test_ellipsis_broadcasts_like_torch(lead, drop, s1, s2, h):
    pattern = "... s1 h, ... s2 h -> ... s1 s2"
    shapes = [(*lead, s1, h), (*lead[min(drop, len(lead)):], s2, h)]
    c = analyze(pattern, shapes=shapes)
    ts = [torch.randn(*s) for s in shapes]
    counted = count_flops(torch.einsum, c.torch_equation, *ts)
    assert tuple(counted.result.shape) == c.output_shape == (*lead, s1, s2)
    assert c.ellipsis_shape == tuple(lead)
    assert c.flops == 2 * math.prod(lead) * s1 * s2 * h == counted.total
    assert c.batch == (ELLIPSIS,) and c.contracted == ("h",)


def test_summed_dims_of_size_one_are_a_product_for_torch():
    # summing one term needs no addition: torch.einsum multiplies elementwise (FlopCounterMode: 0),
    # while the convention, like matmul_flops(m, 1, n), still counts the multiply-add
    c = analyze("b s h, b t h -> b s t", {"b": 2, "s": 3, "t": 4, "h": 1})
    assert c.matmul is not None and c.flops == matmul_flops(3, 1, 4, batch=2) == 48
    assert count_flops(torch.einsum, c.torch_equation, *tensors_for(c)).total == 0


def test_sizes_and_shapes_give_the_same_answer():
    pattern = "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2"
    by_sizes = analyze(pattern, {"batch": 2, "seq1": 3, "seq2": 4, "hidden": 5})
    by_shapes = analyze(pattern, shapes=[(2, 3, 5), (2, 4, 5)])
    assert by_sizes == by_shapes
    assert by_sizes.output_shape == (2, 3, 4) and by_sizes.flops == 240
    assert analyze("... i -> ...", {"...": (2, 3), "i": 4}).output_shape == (2, 3)
    assert analyze("... i -> i", {"...": (2, 3), "i": 4}).contracted == (ELLIPSIS,)
    assert analyze("i i ->", shapes=[(3, 3)]).flops == 3  # a trace: 3 additions


@pytest.mark.parametrize("pattern, sizes", [
    ("i j, j k, k l -> i l", {"i": 2, "j": 3, "k": 4, "l": 5}),
    ("b i j, b j k, b k l -> b i l", {"b": 3, "i": 2, "j": 5, "k": 4, "l": 6}),
    ("i j, j k, k l, l m -> i m", {"i": 7, "j": 3, "k": 4, "l": 5, "m": 2}),
    ("b s h, b t h, b t d -> b s d", {"b": 2, "s": 3, "t": 4, "h": 5, "d": 6}),  # attention: scores, then mixing
])
def test_chains_of_operands_count_as_torch_contracts_them(pattern, sizes):
    c = analyze(pattern, sizes)
    counted = count_flops(torch.einsum, c.torch_equation, *tensors_for(c))
    assert tuple(counted.result.shape) == c.output_shape
    assert c.flops == counted.total, (pattern, [(s.dims, s.summed, s.flops) for s in c.steps], counted.by_operator)


def test_flops_conventions_for_non_matmul_patterns():
    assert analyze("b s h -> b s", {"b": 2, "s": 3, "h": 4}).flops == 24  # a sum
    assert analyze("b s h -> h s b", {"b": 2, "s": 3, "h": 4}).flops == 0  # a rearrangement
    assert analyze("i, j -> i j", {"i": 3, "j": 4}).flops == 12  # an outer product: multiplies only
    three = analyze("i j, j k, k l -> i l", {"i": 2, "j": 3, "k": 4, "l": 5})
    # torch evaluates it pairwise (two matmuls), not as one loop nest (3 × 120 = 360); so does lectorch
    ts = tensors_for(three)
    assert three.flops == 2 * 2 * 3 * 4 + 2 * 2 * 4 * 5 == 128 and three.matmul is None
    assert count_flops(torch.einsum, three.torch_equation, *ts).total == three.flops
    assert analyze("b s h, b t -> b s t", {"b": 2, "s": 3, "h": 4, "t": 5}).matmul is None


def test_torch_equation_and_parse():
    c = analyze("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", shapes=[(1, 2, 3), (1, 4, 3)])
    assert c.torch_equation == "abc,adc->abd"
    assert analyze("... i, ... i -> ...", shapes=[(2, 3), (3,)]).torch_equation == "...a,...a->..."
    assert str(parse_pattern("  a  b ,b c->a c ")) == "a b, b c -> a c"
    assert parse_pattern("i, i ->").output == ()


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "pattern, match",
    [
        ("b s h, b t h", "'->' exactly once"),
        ("a -> b -> c", "'->' exactly once"),
        ("b s h -> b z", "dimension 'z', which appears in no operand"),
        ("b s h -> b ...", r"uses '\.\.\.', which appears in no operand"),
        ("bsh,bth->bst", "separate dimensions by spaces"),
        ("b s h -> b b", "repeats dimension 'b' in the output"),
        ("b s (h d) -> b s h", "parentheses"),
        ("b s 2h -> b s", "invalid dimension name '2h'"),
        ("b s-h -> b", "invalid dimension name"),
        ("... b ... -> b", r"'\.\.\.' more than once"),
        ("b s, -> b", "empty operand 2"),
        ("b s -> b, s", "exactly one output"),
    ],
)
def test_invalid_patterns_are_named(pattern, match):
    with pytest.raises(ValueError, match="pattern") as err:
        analyze(pattern, {})
    assert err.match(match)


def test_bad_sizes_and_shapes():
    pattern = "b s h, b t h -> b s t"
    with pytest.raises(TypeError, match="pattern"):
        analyze(42, {})
    with pytest.raises(ValueError, match="sizes has no size for dimension 't'"):
        analyze(pattern, {"b": 2, "s": 3, "h": 4})
    with pytest.raises(ValueError, match="sizes names dimension 'x'"):
        analyze(pattern, {"b": 2, "s": 3, "h": 4, "t": 5, "x": 1})
    with pytest.raises(ValueError, match=r"sizes\['b'\] must be >= 1"):
        analyze(pattern, {"b": 0, "s": 3, "h": 4, "t": 5})
    with pytest.raises(TypeError, match=r"sizes\['b'\]"):
        analyze(pattern, {"b": 2.5, "s": 3, "h": 4, "t": 5})
    with pytest.raises(TypeError, match="sizes must be a dict"):
        analyze(pattern, [("b", 2)])
    with pytest.raises(ValueError, match="size mismatch for dimension 'h': 4 and 5"):
        analyze(pattern, shapes=[(2, 3, 4), (2, 6, 5)])
    with pytest.raises(ValueError, match="size mismatch for dimension 'b'"):
        analyze(pattern, {"b": 3}, shapes=[(2, 3, 4), (2, 6, 4)])
    with pytest.raises(ValueError, match="shapes gives 1 operand shape.* has 2 operand"):
        analyze(pattern, shapes=[(2, 3, 4)])
    with pytest.raises(ValueError, match=r"shapes\[1\] = \(2, 6\) has 2 dimensions"):
        analyze(pattern, shapes=[(2, 3, 4), (2, 6)])
    with pytest.raises(TypeError, match="shapes must be a sequence"):
        analyze(pattern, shapes="2 3 4")
    with pytest.raises(ValueError, match=r"shapes\[0\].*below 1"):
        analyze(pattern, shapes=[(0, 3, 4), (0, 6, 4)])
    with pytest.raises(ValueError, match=r"size mismatch for '\.\.\.'"):
        analyze("... i, ... i -> ...", shapes=[(2, 3, 4), (5, 4)])
    with pytest.raises(ValueError, match=r"no shape for '\.\.\.'"):
        analyze("... i -> ...", {"i": 2})
    with pytest.raises(ValueError, match=r"shapes\[0\] = \(3,\) has 1 dimensions but operand 1"):
        analyze("... s h -> ...", shapes=[(3,)])


def test_parse_sizes_and_format_flops():
    assert parse_sizes("") == {}
    assert parse_sizes("b=2,s=3") == {"b": 2, "s": 3}
    assert parse_sizes("...=4 h=1") == {"...": (4,), "h": 1}
    for bad, match in [("b2", "name=size"), ("b=2 b=3", "twice"), ("b=two", "not a whole number"),
                       ("b=", "no size"), ("b=2x3", "only '...'"), ("=3", "name=size")]:
        with pytest.raises(ValueError, match="sizes") as err:
            parse_sizes(bad)
        assert err.match(match)
    with pytest.raises(ValueError, match=r"sizes\['b'\] must be >= 1"):
        parse_sizes("b=0")
    with pytest.raises(TypeError, match="sizes"):
        parse_sizes({"b": 2})
    assert format_flops(0) == "0 FLOPs" and format_flops(1.2e9) == "1.2 GFLOPs" and format_flops(1234567) == "1.235 MFLOPs"
    with pytest.raises(ValueError, match="value"):
        format_flops(-1)
    with pytest.raises(TypeError, match="value"):
        format_flops("1")


# --- widget and figures -------------------------------------------------------------------------

def test_panel_updates_and_shows_errors():
    panel = einsum_panel("i j, j k -> i k", "i=2 j=3 k=4", diagram=False)
    assert "(2, 4)" in panel.result.value and "48" in panel.result.value
    assert "as a matmul" in panel.result.value
    panel.controls["sizes"].value = "i=20 j=30 k=40"
    assert "(20, 40)" in panel.result.value and "48,000" in panel.result.value
    panel.controls["pattern"].value = "i j, j k -> i j k"
    assert "(20, 30, 40)" in panel.result.value and "as a matmul" not in panel.result.value
    panel.controls["pattern"].value = "i j, j k -> i q"
    assert "⚠" in panel.result.value and "appears in no operand" in panel.result.value
    panel.controls["pattern"].value = "i j, j k -> i k"
    panel.controls["sizes"].value = "i=2 j=3"
    assert "⚠" in panel.result.value and "no size for dimension" in panel.result.value
    panel.controls["sizes"].value = "i=2 j=3 k=4 q=1"
    assert "⚠" in panel.result.value and "not in the pattern" in panel.result.value
    assert repr(panel) == "Panel('einsum: shapes and FLOPs', controls: pattern, sizes)"


def test_default_panel_shows_diagram_and_scores_flops():
    panel = einsum_panel()
    assert "<img" in panel.result.value
    assert f"{2 * 8 * 1024 * 1024 * 64:,}" in panel.result.value


def test_report_and_formula():
    c = analyze("... i, ... i -> ...", {"...": (2, 3), "i": 4})
    assert flops_formula(c) == "2 × 2·3·4 = 48"
    assert flops_formula(analyze("a b -> b a", {"a": 2, "b": 3})).startswith("0")
    assert flops_formula(analyze("a b -> a", {"a": 2, "b": 3})) == "1 × 2·3 = 6"
    html = einsum_report("a b -> b a", "a=2 b=3", diagram=False)
    assert "(3, 2)" in html and "contracted dims (summed)</td><td style=\"text-align:left\">none" in html
    with pytest.raises(ValueError, match="pattern"):
        einsum_report("a b", "a=2 b=3")


def test_diagram_has_one_box_per_dimension_and_checks_input():
    c = analyze("b s1 h, b s2 h -> b s1 s2", {"b": 2, "s1": 3, "s2": 4, "h": 5})
    fig = contraction_diagram(c)
    boxes = [p for p in fig.axes[0].patches]
    assert len(boxes) == 9
    colors = [tuple(round(x, 3) for x in p.get_facecolor()[:3]) for p in boxes]
    assert len(set(colors)) == 3
    with pytest.raises(TypeError, match="Contraction"):
        contraction_diagram("b s h -> b")


def test_flops_vs_size_plots_the_analysis():
    fig = flops_vs_size(
        {"scores": "b s1 h, b s2 h -> b s1 s2", "projection": "b s1 h, h e -> b s1 e"},
        {"b": 1, "h": 8, "e": 8}, ["s1", "s2"], [4, 8, 16],
    )
    scores, proj = (line.get_ydata().tolist() for line in fig.axes[0].get_lines())
    assert scores == [2 * s * s * 8 for s in (4, 8, 16)]
    assert proj == [2 * s * 8 * 8 for s in (4, 8, 16)]
    assert scores[1] == proj[1]  # they cross where seq == hidden
    with pytest.raises(ValueError, match="patterns"):
        flops_vs_size({}, {}, ["i"], [1])
    with pytest.raises(ValueError, match="values"):
        flops_vs_size({"dot": "i, i ->"}, {}, ["i"], [0])


# The chapter's exercises are tested in tests/test_exercises_einsum.py.


# --- the benchmark script's functions (the timing itself is not a test) -------------------------

def test_benchmark_attention_matches_sdpa_and_matmul():
    path = ROOT / "benchmarks" / "bench_einsum_compile.py"
    spec = importlib.util.spec_from_file_location("bench_einsum_compile", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    out = bench.attention(q, k, v)
    assert torch.allclose(out, bench.attention_matmul(q, k, v), atol=1e-6)
    assert torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-5)
    sizes = {"batch": 2, "heads": 3, "seq1": 5, "seq2": 5, "hidden": 4}
    flops = analyze(bench.SCORES, sizes).flops + analyze(bench.MIX, sizes).flops
    assert flops == count_flops(bench.attention, q, k, v).total
