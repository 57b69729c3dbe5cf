"""The Cruncher and Linear: shapes, parameter counts, initial scale, generators and bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from lectorch.models import Cruncher, Linear, cruncher_num_parameters, num_parameters


@settings(max_examples=20, deadline=None)
@given(dim=st.integers(1, 40), num_layers=st.integers(1, 6))
def test_parameter_count_matches_formula(dim, num_layers):
    model = Cruncher(dim, num_layers)
    assert num_parameters(model) == cruncher_num_parameters(dim, num_layers) == dim * dim * num_layers + dim
    assert len(list(model.parameters())) == num_layers + 1


def test_forward_shape_and_scale():
    torch.manual_seed(0)
    model = Cruncher(256, 6)
    out = model(torch.randn(512, 256)).detach()
    assert out.shape == (512,)
    assert float(out.std()) == pytest.approx(1.0, rel=0.2)  # 1/sqrt(dim) init keeps the scale


def test_linear_weight_scale_and_layout():
    layer = Linear(1024, 512, generator=torch.Generator().manual_seed(0))
    assert layer.weight.shape == (1024, 512)
    assert float(layer.weight.detach().std()) == pytest.approx(1024**-0.5, rel=0.02)
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad


def test_generator_makes_init_independent_of_global_stream():
    a = Cruncher(8, 2, generator=torch.Generator().manual_seed(1))
    torch.rand(1000)  # consume the global stream: must not matter
    b = Cruncher(8, 2, generator=torch.Generator().manual_seed(1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    c = Cruncher(8, 2, generator=torch.Generator().manual_seed(2))
    assert not torch.equal(a.final.weight, c.final.weight)


def test_bad_input():
    with pytest.raises(ValueError, match="dim"):
        Cruncher(0, 2)
    with pytest.raises(ValueError, match="num_layers"):
        Cruncher(4, 0)
    with pytest.raises(TypeError, match="num_layers"):
        Cruncher(4, 2.0)
    with pytest.raises(ValueError, match="in_dim"):
        Linear(-1, 3)
    with pytest.raises(TypeError, match="generator"):
        Linear(3, 3, generator=0)
    with pytest.raises(ValueError, match="dim=4"):
        Cruncher(4, 1)(torch.ones(2, 5))
    with pytest.raises(TypeError, match="model"):
        num_parameters([torch.ones(3)])
    with pytest.raises(ValueError, match="dim"):
        cruncher_num_parameters(0, 1)
