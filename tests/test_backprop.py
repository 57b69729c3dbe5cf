"""Tests of lectorch.backprop (chapter 06): predicted FLOPs equal FlopCounterMode's, exactly."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import lectorch
from lectorch import backprop
from lectorch.backprop import (
    attention, attention_flops, cruncher_flops, cruncher_widths, make_mlp, measured_flops, mlp_flops,
    predicted_and_measured,
)
from lectorch.models import Cruncher
from lectorch.plots.backprop import dataflow_figure, flops_bars_figure, ratio_figure
from lectorch.widgets.backprop import backprop_panel

sizes = st.integers(min_value=1, max_value=24)
FAST = settings(max_examples=30, deadline=None)


def _counted_fwd_bwd(model: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """Independent reference: forward alone, then forward+backward, each under its own counter."""
    with FlopCounterMode(display=False) as fwd:
        model(x)
    with FlopCounterMode(display=False) as both:
        model(x).sum().backward()
    return fwd.get_total_flops(), both.get_total_flops() - fwd.get_total_flops()


# --- the formulas -------------------------------------------------------------------------------

def test_two_layer_formulas():
    b, d, k = 8, 64, 16
    f = mlp_flops(b, [d, d, k])
    assert f.forward == 2 * b * d * d + 2 * b * d * k
    assert f.backward == 4 * b * d * k + 2 * b * d * d
    g = mlp_flops(b, [d, d, k], input_requires_grad=True)
    assert g.backward == 4 * b * d * k + 4 * b * d * d == 2 * g.forward
    assert g.total == 6 * b * g.num_parameters


def test_cruncher_flops_formula_and_ratio():
    b, d, n = 4, 16, 5
    f = cruncher_flops(b, d, n)
    assert cruncher_widths(d, n) == (16, 16, 16, 16, 16, 16, 1)
    assert f.forward == 2 * b * (n * d * d + d)
    assert f.backward == 2 * f.forward - 2 * b * d * d
    assert f.ratio == pytest.approx(2 - d / (n * d + 1))
    assert f.num_parameters == lectorch.models.num_parameters(Cruncher(d, n))


def test_as_dict_keys():
    assert mlp_flops(2, [3, 4, 5]).as_dict() == {
        "forward": 2 * 2 * (12 + 20), "backward_weight": 2 * 2 * 32, "backward_input": 2 * 2 * 20,
        "backward": 2 * 2 * 52, "total": 2 * 2 * 84,
    }


def test_attention_flops_formula():
    assert attention_flops(2, 3, 4) == {"forward": 4 * 2 * 9 * 4, "backward": 8 * 2 * 9 * 4, "total": 12 * 2 * 9 * 4}


# --- against FlopCounterMode, exactly ------------------------------------------------------------

# Property tests run on the meta device: FlopCounterMode sees the same aten ops (it counts from
# shapes) and no arithmetic runs, so many random shapes are cheap. test_real_tensors_* repeat a few
# cases with real CPU tensors.

def _check_linear(batch, d, k, bias, requires_grad, device):
    layer = nn.Linear(d, k, bias=bias, device=device)
    x = torch.randn(batch, d, device=device, requires_grad=requires_grad)
    m = measured_flops(layer, x)
    p = mlp_flops(batch, [d, k], input_requires_grad=requires_grad)
    assert (m.forward, m.backward) == (p.forward, p.backward)
    assert _counted_fwd_bwd(layer, x.detach().requires_grad_(requires_grad)) == (p.forward, p.backward)


def _check_mlp(batch, widths, requires_grad, relu, device):
    with torch.device(device):
        model = make_mlp(widths, activation=nn.ReLU if relu else None)
        x = torch.randn(batch, widths[0], requires_grad=requires_grad)
    m = measured_flops(model, x)
    p = mlp_flops(batch, widths, input_requires_grad=requires_grad)
    assert (m.forward, m.backward, m.total) == (p.forward, p.backward, p.total)
    assert _counted_fwd_bwd(model, x.detach().requires_grad_(requires_grad)) == (p.forward, p.backward)
    layer_names = [n for n, mod in model.named_modules() if isinstance(mod, lectorch.models.Linear)]
    assert len(layer_names) == len(p.layers)
    for name, layer in zip(layer_names, p.layers):  # per layer too
        assert m.forward_by_module[f"Sequential.{name}"] == layer.forward
        assert m.backward_by_module[f"Sequential.{name}"] == layer.backward


def _check_cruncher(batch, dim, num_layers, requires_grad, device):
    with torch.device(device):
        model = Cruncher(dim, num_layers)
        x = torch.randn(batch, dim, requires_grad=requires_grad)
    m = measured_flops(model, x, loss_fn=lambda out: (out - 1).pow(2).mean())
    p = cruncher_flops(batch, dim, num_layers, input_requires_grad=requires_grad)
    assert (m.forward, m.backward) == (p.forward, p.backward)
    assert m.backward_by_module["Cruncher.layers.0"] == p.layers[0].backward
    assert m.backward_by_module["Cruncher.final"] == p.layers[-1].backward
    assert _counted_fwd_bwd(model, x.detach().requires_grad_(requires_grad)) == (p.forward, p.backward)


@FAST
@given(batch=sizes, d=sizes, k=sizes, bias=st.booleans(), requires_grad=st.booleans())
def test_nn_linear_matches_counter(batch, d, k, bias, requires_grad):
    _check_linear(batch, d, k, bias, requires_grad, "meta")


@FAST
@given(batch=sizes, widths=st.lists(sizes, min_size=2, max_size=6), requires_grad=st.booleans(), relu=st.booleans())
def test_mlp_matches_counter(batch, widths, requires_grad, relu):
    _check_mlp(batch, widths, requires_grad, relu, "meta")


@FAST
@given(batch=sizes, dim=sizes, num_layers=st.integers(1, 6), requires_grad=st.booleans())
def test_cruncher_matches_counter(batch, dim, num_layers, requires_grad):
    _check_cruncher(batch, dim, num_layers, requires_grad, "meta")


@FAST
@given(b=st.integers(1, 4), t=st.integers(1, 5), widths=st.lists(sizes, min_size=2, max_size=4))
def test_token_inputs_count_batch_times_sequence(b, t, widths):
    with torch.device("meta"):
        model, x = make_mlp(widths), torch.empty(b, t, widths[0])
    m = measured_flops(model, x)
    p = mlp_flops(b * t, widths)
    assert (m.forward, m.backward) == (p.forward, p.backward)


@pytest.mark.parametrize("batch, d, k, bias, requires_grad", [(3, 5, 2, True, False), (1, 4, 7, False, True)])
def test_real_tensors_linear(batch, d, k, bias, requires_grad):
    _check_linear(batch, d, k, bias, requires_grad, "cpu")


@pytest.mark.parametrize("batch, widths, requires_grad, relu", [(5, [6, 3, 4], False, True), (2, [3, 8, 8, 1], True, False)])
def test_real_tensors_mlp(batch, widths, requires_grad, relu):
    _check_mlp(batch, widths, requires_grad, relu, "cpu")


@pytest.mark.parametrize("batch, dim, num_layers, requires_grad", [(4, 8, 3, False), (2, 5, 1, True)])
def test_real_tensors_cruncher(batch, dim, num_layers, requires_grad):
    _check_cruncher(batch, dim, num_layers, requires_grad, "cpu")


@FAST
@given(b=st.integers(1, 3), t=st.integers(1, 6), d=st.integers(1, 8))
def test_attention_matches_counter(b, t, d):
    q, k, v = (torch.randn(b, t, d, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as mode:
        out = attention(q, k, v)
        forward = mode.get_total_flops()
        out.sum().backward()
    expected = attention_flops(b, t, d)
    assert forward == expected["forward"]
    assert mode.get_total_flops() - forward == expected["backward"]


def test_meta_device_large_sizes():
    predicted, measured = predicted_and_measured(4096, [8192] * 5 + [1])
    assert (predicted.forward, predicted.backward) == (measured.forward, measured.backward)
    assert predicted.forward == 2 * 4096 * (4 * 8192**2 + 8192)


def test_frozen_model_counts_input_grads_only():
    model = Cruncher(8, 3).requires_grad_(False)
    m = measured_flops(model, torch.ones(4, 8, requires_grad=True))
    p = cruncher_flops(4, 8, 3, input_requires_grad=True)
    assert m.backward == p.backward_input


def test_measured_flops_leaves_no_trace():
    model = Cruncher(4, 2)
    model.final.weight.grad = torch.full((4, 1), 7.0)
    x = torch.ones(3, 4, requires_grad=True)
    state = torch.random.get_rng_state()
    measured_flops(model, x)
    assert x.grad is None
    assert model.layers[0].weight.grad is None
    assert torch.equal(model.final.weight.grad, torch.full((4, 1), 7.0))
    assert torch.equal(state, torch.random.get_rng_state())
    with torch.no_grad():  # counting still works inside no_grad and leaves grad mode as it was
        assert measured_flops(model, x).backward > 0
        assert not torch.is_grad_enabled()


def test_tied_weights_count_uses_not_parameters():
    shared = lectorch.models.Linear(8, 8)
    model = nn.Sequential(shared, shared, shared)
    m = measured_flops(model, torch.ones(2, 8))
    # 3 uses of one 8×8 matrix: 3 × 6·B·N, less the first use's input gradient (x is data)
    assert m.total == mlp_flops(2, [8, 8, 8, 8]).total == 3 * 6 * 2 * 64 - 2 * 2 * 64


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("batch, widths, err, match", [
    (0, [4, 4], ValueError, "batch"),
    (-3, [4, 4], ValueError, "batch"),
    (2.5, [4, 4], TypeError, "batch"),
    (2, [4], ValueError, "widths"),
    (2, [], ValueError, "widths"),
    (2, [4, 0, 3], ValueError, r"widths\[1\]"),
    (2, [4, -2], ValueError, r"widths\[1\]"),
    (2, "44", TypeError, "widths"),
    (2, 4, TypeError, "widths"),
])
def test_mlp_flops_bad_input(batch, widths, err, match):
    with pytest.raises(err, match=match):
        mlp_flops(batch, widths)


def test_other_bad_input():
    with pytest.raises(TypeError, match="input_requires_grad"):
        mlp_flops(2, [3, 3], input_requires_grad="yes")
    with pytest.raises(ValueError, match="num_layers"):
        cruncher_flops(2, 3, 0)
    with pytest.raises(ValueError, match="dim"):
        cruncher_flops(2, -1, 2)
    with pytest.raises(ValueError, match="seq_len"):
        attention_flops(2, 0, 4)
    with pytest.raises(ValueError, match="same shape"):
        attention(torch.ones(1, 3, 2), torch.ones(1, 4, 2), torch.ones(1, 3, 2))
    with pytest.raises(TypeError, match="k must be"):
        attention(torch.ones(1, 3, 2), [[1.0]], torch.ones(1, 3, 2))
    with pytest.raises(TypeError, match="model"):
        measured_flops(lambda x: x, torch.ones(2, 2))
    with pytest.raises(TypeError, match="x must be"):
        measured_flops(nn.Linear(2, 2), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="x must be"):
        measured_flops(nn.Linear(2, 2), torch.ones(0, 2))
    with pytest.raises(ValueError, match="loss_fn"):
        measured_flops(nn.Linear(2, 2), torch.ones(3, 2), loss_fn=lambda out: out)
    with pytest.raises(ValueError, match="requires grad"):
        measured_flops(nn.Linear(2, 2).requires_grad_(False), torch.ones(3, 2))
    with pytest.raises(RuntimeError):  # a shape mismatch is torch's own clear error
        measured_flops(make_mlp([3, 2]), torch.ones(4, 5))
    with pytest.raises(ValueError, match="dim=3"):
        measured_flops(Cruncher(3, 1), torch.ones(4, 5))
    with pytest.raises(TypeError, match="activation"):
        make_mlp([2, 2, 2], activation="relu")


# --- figures and panel --------------------------------------------------------------------------

def test_figures_build():
    assert "forward 81,920" in dataflow_figure(8, 64, 16).axes[0].get_title()
    texts = [t.get_text() for t in dataflow_figure(8, 64, 16).axes[0].texts]
    assert any("not needed" in t for t in texts)
    texts = [t.get_text() for t in dataflow_figure(8, 64, 16, input_requires_grad=True).axes[0].texts]
    assert not any("not needed" in t for t in texts) and any("65,536" in t for t in texts)
    predicted, measured = predicted_and_measured(4, [8, 8, 2])
    assert len(flops_bars_figure(predicted, measured).axes) == 2
    with pytest.raises(TypeError, match="predicted"):
        flops_bars_figure({"forward": 1})
    with pytest.raises(ValueError, match="same length"):
        ratio_figure([1, 2], [1.0], [1.0, 2.0], dim=4)


def test_panel_updates_and_reports_bad_values():
    panel = backprop_panel()
    assert "backward / forward = <b>1.20</b>" in panel.result.value  # 2-layer net, B=8, D=64, K=16
    panel.controls["input_requires_grad"].value = True
    assert "backward / forward = <b>2.00</b>" in panel.result.value
    assert "total / (6 × batch × parameters) = <b>1.000</b>" in panel.result.value
    panel.controls["depth"].value = 1
    panel.controls["input_requires_grad"].value = False
    assert "backward / forward = <b>1.00</b>" in panel.result.value
    assert "✗" not in panel.result.value and "✓" in panel.result.value
    panel.controls["batch"].value = 0  # the slider clamps to its minimum: still a valid result
    assert "batch 1" in panel.result.value
    panel.render = lambda **_: mlp_flops(0, [2, 2])
    panel.update()
    assert "⚠" in panel.result.value and "batch" in panel.result.value


def test_backprop_module_has_no_global_state():
    assert not hasattr(backprop, "_cache")
