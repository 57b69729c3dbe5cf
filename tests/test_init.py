"""Chapter 07: init scales, truncation, randomness, the init panel (exercises: test_exercises_init.py)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from lectorch import init, randomness
from lectorch.widgets.init import init_panel, render_init


# --- init scales --------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [16, 256, 4096])
def test_standard_normal_grows_like_sqrt_width_and_lecun_stays_one(width):
    assert init.output_std(width, "standard") == pytest.approx(math.sqrt(width), rel=0.06)
    assert init.output_std(width, "lecun") == pytest.approx(1.0, rel=0.06)
    assert init.output_std(width, "kaiming") == pytest.approx(math.sqrt(2), rel=0.06)


def test_measured_std_matches_prediction_for_every_scheme():
    for scheme in init.SCHEMES:
        for width in (64, 1024):
            assert init.output_std(width, scheme) == pytest.approx(init.predicted_output_std(width, scheme), rel=0.06)


def test_init_std_agrees_with_torch_initialisers():
    g = torch.Generator().manual_seed(0)
    w = torch.empty(512, 2048)  # torch's layout: (fan_out, fan_in)
    nn.init.xavier_normal_(w, generator=g)
    assert float(w.std()) == pytest.approx(init.init_std("xavier", 2048, 512), rel=0.01)
    nn.init.kaiming_normal_(w, nonlinearity="relu", generator=g)
    assert float(w.std()) == pytest.approx(init.init_std("kaiming", 2048), rel=0.01)


def test_xavier_equals_lecun_for_square_layers_and_differs_otherwise():
    assert init.init_std("xavier", 300) == pytest.approx(init.init_std("lecun", 300))
    assert init.init_std("xavier", 100, 300) != init.init_std("lecun", 100)


def test_depth_compounds_the_growth():
    stds = init.depth_stds(64, 3, "standard", batch=512)
    for k, s in enumerate(stds, start=1):
        assert s == pytest.approx(8.0**k, rel=0.15)
    assert all(s == pytest.approx(1, rel=0.15) for s in init.depth_stds(64, 3, "lecun", batch=512))


def test_layer_outputs_leave_global_rng_alone():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    init.layer_outputs(32, "lecun")
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("bad, err, match", [
    (dict(scheme="he"), ValueError, "scheme"), (dict(scheme="xavir"), ValueError, "xavier"),
    (dict(scheme=3), TypeError, "scheme"), (dict(fan_in=0), ValueError, "fan_in"),
    (dict(fan_in=2.5), TypeError, "fan_in"), (dict(fan_out=-1), ValueError, "fan_out"),
])
def test_init_std_bad_input(bad, err, match):
    kwargs = dict(scheme="lecun", fan_in=4, fan_out=None) | bad
    with pytest.raises(err, match=match):
        init.init_std(**kwargs)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="width"):
        init.output_std(0, "lecun")
    with pytest.raises(ValueError, match="num_layers"):
        init.depth_stds(8, 0, "lecun")
    with pytest.raises(ValueError, match="std"):
        init.trunc_normal_bounds(0)
    with pytest.raises(ValueError, match="std"):
        init.truncation_in_std(3, -0.1)
    with pytest.raises(TypeError, match="tensor"):
        init.truncated_normal_([1.0, 2.0], std=1.0)


# --- truncation -----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(std=st.floats(1e-3, 10), num_std=st.floats(0.5, 4))
def test_truncated_normal_respects_bounds_in_standard_deviations(std, num_std):
    w = init.truncated_normal_(torch.empty(4000), std=std, num_std=num_std, generator=torch.Generator().manual_seed(0))
    assert float(w.abs().max()) <= num_std * std * (1 + 1e-6)
    # the cut is at num_std deviations, so the samples do reach close to it
    assert float(w.abs().max()) >= 0.8 * num_std * std


def test_absolute_bounds_slip_hardly_truncates():
    g = torch.Generator().manual_seed(0)
    std = 0.02
    slip = nn.init.trunc_normal_(torch.empty(100_000), std=std, a=-3, b=3, generator=g)
    right = init.truncated_normal_(torch.empty(100_000), std=std, generator=g)
    assert float(slip.abs().max()) / std > 4  # a plain normal of 1e5 samples reaches beyond 4 std
    assert float(right.abs().max()) / std <= 3
    assert init.truncation_in_std(3, std) == pytest.approx(150)


# --- randomness -----------------------------------------------------------------------------------
def test_seed_everything_repeats_all_three_streams():
    randomness.seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    randomness.seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a


def test_derived_seeds_are_stable_and_distinct():
    assert randomness.derive_seed(0, "data") == randomness.derive_seed(0, "data")
    seeds = {randomness.derive_seed(s, p) for s in range(5) for p in ("data", "model", "dropout")}
    assert len(seeds) == 15
    assert all(0 <= s < 2**63 for s in seeds)
    with pytest.raises(TypeError, match="purpose"):
        randomness.derive_seed(0, "")
    with pytest.raises(ValueError, match="seed"):
        randomness.derive_seed(-1, "data")


def test_make_generators_are_independent_streams():
    gens = randomness.make_generators(0, ("data", "model"))
    a = torch.rand(3, generator=gens["data"])
    b = torch.rand(3, generator=gens["model"])
    assert not torch.equal(a, b)
    with pytest.raises(ValueError, match="distinct"):
        randomness.make_generators(0, ("data", "data"))
    with pytest.raises(TypeError, match="purposes"):
        randomness.make_generators(0, "data")


def test_rng_state_roundtrip_and_bad_state():
    randomness.seed_everything(1)
    state = randomness.get_rng_state()
    a = (random.random(), np.random.rand(), torch.rand(2))
    randomness.set_rng_state(state)
    b = (random.random(), np.random.rand(), torch.rand(2))
    assert a[:2] == b[:2] and torch.equal(a[2], b[2])
    with pytest.raises(ValueError, match="get_rng_state"):
        randomness.set_rng_state({"torch": state["torch"]})


# --- panel ----------------------------------------------------------------------------------------
def test_init_panel_reacts_to_controls():
    panel = init_panel(width=1024, scheme="standard")
    assert "measured <b>3" in panel.result.value  # std ≈ 32 (3x.x)
    panel.controls["scheme"].value = "lecun"
    assert "measured <b>1" in panel.result.value or "measured <b>0.9" in panel.result.value
    panel.controls["width"].value = 16
    assert "sqrt(16)" in panel.result.value
    assert "<img" in panel.result.value


def test_init_panel_bad_arguments():
    with pytest.raises(ValueError, match="width"):
        init_panel(width=100)
    with pytest.raises(ValueError, match="scheme"):
        init_panel(scheme="uniform")
    text, _ = render_init(64, "xavier")
    assert "sqrt(2/(fan_in + fan_out))" in text
