"""The memory model of a training step: predictions against what autograd saves, what the optimizer
keeps and what is alive at once; compute against FlopCounterMode; the memory panel and exercise."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from lectorch import step_memory as sm
from lectorch.flops import count_flops
from lectorch.models import Cruncher, cruncher_num_parameters
from lectorch.widgets.optim import render_step_memory, step_memory_panel


@settings(max_examples=12, deadline=None)
@given(dim=st.sampled_from([8, 16, 48]), num_layers=st.integers(1, 4), batch=st.sampled_from([4, 16, 64]),
       dtype=st.sampled_from(["fp32", "bf16", "fp64"]), optimizer=st.sampled_from(["sgd", "momentum", "adam", "adamw"]))
def test_measured_parts_equal_prediction(dim, num_layers, batch, dtype, optimizer):
    measured, trace = sm.measure_step_memory(dim, num_layers, batch, dtype=dtype, optimizer=optimizer)
    assert measured == sm.predict_step_memory(dim, num_layers, batch, dtype=dtype, optimizer=optimizer)
    timeline = sm.step_timeline(dim, num_layers, batch, dtype=dtype, optimizer=optimizer)
    e = torch.empty(0, dtype={"fp32": torch.float32, "bf16": torch.bfloat16, "fp64": torch.float64}[dtype]).element_size()
    # the live-tensor peak matches the timeline up to the loss's few B-element tensors
    assert 0 <= trace.peak_bytes - (timeline.peak - timeline.resting) <= 4 * batch * e + 64
    assert trace.end_bytes <= 2 * batch * e  # everything but the loss's small buffers is freed


@pytest.mark.parametrize("dim, num_layers, batch, label", [
    (64, 4, 512, "backward: layer 4"),   # B > D: activations dominate, peak at the top of backward
    (256, 4, 8, "optimizer step"),       # D > B: gradients + temporaries dominate
])
def test_timeline_peak_location(dim, num_layers, batch, label):
    t = sm.step_timeline(dim, num_layers, batch, optimizer="adam")
    assert t.peak_label == label
    # "all at once" leaves out the transients: two B×D activation gradients, one D×D temporary of Adam
    assert t.peak <= sm.predict_step_memory(dim, num_layers, batch).total + (2 * batch * dim + dim * dim) * 4


def test_all_at_once_is_not_an_upper_bound_for_large_batches():
    """When B > (L-1)·D, the two B×D activation gradients outweigh the freed activations."""
    big_batch = sm.step_timeline(64, 4, 512, optimizer="adam")
    assert big_batch.peak > sm.predict_step_memory(64, 4, 512).total
    small_batch = sm.step_timeline(256, 4, 64, optimizer="adam")
    assert small_batch.peak < sm.predict_step_memory(256, 4, 64).total


def test_saved_tensors_are_the_layer_inputs():
    model = Cruncher(16, 3)
    x, y = torch.randn(8, 16), torch.randn(8)
    params = list(model.parameters())
    saved = sm.saved_tensors(lambda: nn.functional.mse_loss(model(x), y), parameters=params, inputs=[x, y])
    acts = [t for t in saved.tensors if t.kind == "activation"]
    assert sorted(t.shape for t in acts) == [(8,)] + [(8, 16)] * 3
    assert saved.activation_bytes == 4 * (8 * 16 * 3 + 8)
    # the first layer saves the input batch (for its weight's gradient) but not its weight
    assert sum(t.kind == "input" for t in saved.tensors) == 2
    assert sum(t.kind == "parameter" for t in saved.tensors) == 3


def test_no_grad_saves_nothing():
    model = Cruncher(16, 3)
    with torch.no_grad():
        saved = sm.saved_tensors(model, torch.randn(4, 16))
    assert saved.tensors == [] and saved.activation_bytes == 0


def test_track_memory_sees_allocations_and_frees():
    def f():
        a = torch.ones(1000)
        b = a * 2
        del a
        return b + 1

    trace = sm.track_memory(f)
    assert trace.peak_bytes == 8000 and trace.end_bytes == 4000
    assert [name for name, _ in trace.events] == ["ones", "mul", "add"]
    views = sm.track_memory(lambda x: x.t()[1:].view(-1)[:3].mul_(2), torch.ones(4, 4).t())
    assert views.peak_bytes == 0  # views and in-place operations allocate nothing


@pytest.mark.parametrize("dim, num_layers, batch", [(32, 1, 8), (64, 3, 16), (16, 5, 4)])
def test_step_flops_match_flop_counter(dim, num_layers, batch):
    model = Cruncher(dim, num_layers)
    x, y = torch.randn(batch, dim), torch.randn(batch)

    def fwd_bwd():
        nn.functional.mse_loss(model(x), y).backward()

    counted = count_flops(fwd_bwd)
    f = sm.step_flops(dim, num_layers, batch)
    assert counted.total == f.total
    p = cruncher_num_parameters(dim, num_layers)
    assert f.forward == 2 * batch * p and f.total == 6 * batch * p - 2 * batch * dim * dim
    with torch.no_grad():
        assert count_flops(model, x).total == f.forward


@pytest.mark.parametrize("bad, err, match", [
    (dict(dim=0), ValueError, "dim"), (dict(num_layers=-1), ValueError, "num_layers"),
    (dict(batch=1.5), TypeError, "batch"), (dict(dtype="int8"), ValueError, "floating"),
    (dict(dtype="fp12"), ValueError, "dtype"), (dict(optimizer="lion"), ValueError, "optimizer"),
])
def test_bad_input(bad, err, match):
    kwargs = dict(dim=8, num_layers=2, batch=4) | bad
    with pytest.raises(err, match=match):
        sm.predict_step_memory(**kwargs)
    with pytest.raises(err, match=match):
        sm.step_timeline(**kwargs)


def test_cuda_peak_needs_cuda():
    with pytest.raises(ValueError, match="CUDA"):
        sm.cuda_step_peak(8, 1, 4, device="cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_peak_matches_timeline():  # runs on a GPU box
    dim, num_layers, batch = 1024, 4, 2048
    resting, peak = sm.cuda_step_peak(dim, num_layers, batch, optimizer="adam")
    t = sm.step_timeline(dim, num_layers, batch, optimizer="adam")
    predicted = t.peak - t.resting
    assert abs((peak - resting) - predicted) <= 0.01 * predicted + 2**20


# --- the memory panel and the exercise ------------------------------------------------------------
def test_step_memory_panel_reacts():
    panel = step_memory_panel(batch=64, width=128, depth=2, dtype="fp32", optimizer="adam")
    assert "measured peak" in panel.result.value
    before = panel.result.value
    panel.controls["dtype"].value = "bf16"
    assert panel.result.value != before
    panel.controls["optimizer"].value = "sgd"
    assert "optimizer state</td><td>0 B" in panel.result.value
    panel.controls["width"].value = 8192
    panel.controls["depth"].value = 32
    assert "too big to measure" in panel.result.value


def test_step_memory_panel_bad_arguments():
    with pytest.raises(ValueError, match="dtype"):
        step_memory_panel(dtype="fp8")
    with pytest.raises(ValueError, match="optimizer"):
        step_memory_panel(optimizer="lbfgs")
    text, _ = render_step_memory(16, 16, 1, "fp64", "momentum")
    assert "measured" in text


# --- the torch internals behind step_memory._Internals ------------------------------------------------


def test_the_torch_internals_still_behave_as_step_memory_needs():
    """Checked on the torch versions in _Internals.CHECKED_ON; a new torch must pass this before it is
    added there (these are private APIs: TorchDispatchMode, tree_flatten, _cdata, StorageWeakRef)."""
    import gc
    import warnings

    internals = sm._Internals
    if torch.__version__.split("+")[0] not in internals.CHECKED_ON:
        warnings.warn(f"torch {torch.__version__} is not in _Internals.CHECKED_ON {internals.CHECKED_ON}: "
                      "this test is what checks it", stacklevel=1)
    a = torch.ones(4, 4)
    assert internals.storage_key(a) == internals.storage_key(a[1:].t())  # views share the storage
    assert internals.storage_key(a) != internals.storage_key(a.clone())
    found = internals.tensors_in(((a, 1), {"k": [a.T, "x"]}))
    assert len(found) == 2 and found[0] is a and found[1].shape == (4, 4)
    b = torch.ones(3)
    ref = internals.WeakRef(b.untyped_storage())
    assert not ref.expired()
    del b
    gc.collect()
    assert ref.expired()
    seen = []

    class Spy(internals.DispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Spy():
        torch.ones(2) + 1
    assert "add" in seen
