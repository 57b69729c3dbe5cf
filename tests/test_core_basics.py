"""Core helpers: bytes of tensors, device choice, seeding, panels and figures."""

import ipywidgets as w
import pytest
import torch
from hypothesis import given, strategies as st

import lectorch
from lectorch import device as dev
from lectorch.memory import bytes_of, format_bytes, tensor_bytes
from lectorch.models import Cruncher, num_parameters
from lectorch.widgets import Panel

DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int8, torch.int64]


@given(shape=st.lists(st.integers(0, 9), min_size=0, max_size=4), dtype=st.sampled_from(DTYPES))
def test_tensor_bytes_equals_what_torch_allocates(shape, dtype):
    t = torch.empty(shape, dtype=dtype)
    assert tensor_bytes(shape, dtype) == bytes_of(t) == t.untyped_storage().nbytes()


def test_course_figures():
    assert tensor_bytes((4, 8), "fp32") == 128
    assert tensor_bytes((4 * 12288, 12288), torch.float32) == 2304 * 2**20
    assert format_bytes(128) == "128 B"
    assert format_bytes(2304 * 2**20) == "2.42 GB (2.25 GiB)"


def test_bytes_errors():
    with pytest.raises(ValueError, match="negative"):
        tensor_bytes((4, -1))
    with pytest.raises(ValueError, match="dtype"):
        tensor_bytes((4,), "float13")
    with pytest.raises(TypeError, match="tensor"):
        bytes_of([1, 2])
    with pytest.raises(ValueError, match="n must"):
        format_bytes(-1)


def test_device_choice_and_errors(monkeypatch):
    monkeypatch.setenv("LECTORCH_DEVICE", "cpu")
    assert lectorch.get_device() == torch.device("cpu")
    with pytest.raises(ValueError, match="prefer"):
        lectorch.get_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            dev.check_device("cuda")
        assert dev.list_gpus() == []
    dev.assert_on_device(torch.zeros(1), "cpu")
    with pytest.raises(AssertionError, match="expected"):
        dev.assert_on_device(torch.zeros(1), "meta")
    assert lectorch.describe_device("cpu").total_memory_bytes > 2**30
    assert dev.free_memory_bytes("cpu") > 0


def test_seeding_is_repeatable_and_generators_are_independent():
    lectorch.seed_everything(3)
    a = torch.rand(3)
    lectorch.seed_everything(3)
    assert torch.equal(a, torch.rand(3))
    from lectorch.randomness import make_generator

    assert torch.equal(torch.rand(2, generator=make_generator(1)), torch.rand(2, generator=make_generator(1)))
    with pytest.raises(ValueError, match="seed"):
        lectorch.seed_everything(-1)


def test_panel_updates_and_reports_bad_input():
    def render(n, name):
        if n > 5:
            raise ValueError("n must be <= 5")
        return f"{name}:{n}"

    panel = Panel({"n": w.IntSlider(value=2, max=9), "name": w.Text(value="a")}, render, title="t")
    assert panel.result.value == "a:2"
    panel.controls["n"].value = 7
    assert "n must be" in panel.result.value
    assert repr(panel) == "Panel('t', controls: n, name)"
    with pytest.raises(ValueError, match="controls"):
        Panel({}, render)


def test_cruncher_parameter_count():
    model = Cruncher(dim=32, num_layers=4)
    assert num_parameters(model) == 32 * 32 * 4 + 32
    with pytest.raises(ValueError, match="dim=32"):
        model(torch.ones(2, 16))
    with pytest.raises(ValueError, match="num_layers"):
        Cruncher(dim=4, num_layers=0)


@pytest.mark.parametrize("display", [True, False])
def test_glue_writes_what_myst_nb_glue_writes(monkeypatch, display):
    """lectorch.glue writes myst-nb's glue output itself (importing myst_nb.ext.glue costs a kernel
    about two seconds): the same display call as myst_nb.glue, for each kind of value."""
    import IPython.display
    import myst_nb.ext.glue as myst_glue

    from lectorch import _glue, glue

    calls = {"myst": [], "lectorch": []}
    monkeypatch.setattr(myst_glue, "ipy_display", lambda *a, **k: calls["myst"].append((a, k)))
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: calls["lectorch"].append((a, k)))
    for value in (42, 3.5e9, "6ND", [1, 2]):
        myst_glue.glue("x", value, display=display)
        glue("x", value, display=display)
    assert calls["lectorch"] == calls["myst"] and len(calls["myst"]) == 4
    assert _glue.GLUE_PREFIX == myst_glue.GLUE_PREFIX


def test_glue_is_silent_without_myst_nb(monkeypatch):
    import importlib.util

    import IPython.display

    from lectorch import glue

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(a))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "myst_nb" else real(name, *a))
    glue("x", 42, display=False)
    assert shown == []
    with pytest.raises(TypeError, match="non-empty str"):
        glue("", 1)
