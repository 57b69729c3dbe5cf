"""Inputs that cannot hurt: each bad input is refused up front with an error that names the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch import _validate, bench, data, memory, napkin, quantize, randomness, step_memory, train, views
from lectorch.memory import NotEnoughMemory
from lectorch.models import Cruncher, Linear, TinyLM

TOKENS = np.arange(100, dtype=np.uint16)


def _endless():
    while True:
        yield 2


# --- unguarded allocations: refused before anything is allocated ---------------------------------------


@pytest.mark.parametrize("call, word", [
    (lambda: data.get_batch(np.zeros(1000, np.uint16), 10**7, 256, "cpu"), "batch_size=10000000"),
    (lambda: data.markov_tokens(10**12, 16), "num_tokens"),
    (lambda: step_memory.measure_step_memory(60000, 1, 8), r"Cruncher\(dim=60000"),
    (lambda: Cruncher(10**6, 1), "dim"),
    (lambda: Linear(10**6, 10**6), "in_dim"),
    (lambda: TinyLM(10**6, 10**5, 1), r"TinyLM\(vocab_size"),
], ids=["get_batch", "markov_tokens", "measure_step_memory", "Cruncher", "Linear", "TinyLM"])
def test_huge_sizes_are_refused_with_the_size(call, word):
    with pytest.raises(NotEnoughMemory, match=word) as info:
        call()
    assert "needs" in str(info.value) and "free" in str(info.value)


@pytest.mark.parametrize("fn", [memory.tensor_bytes, views.contiguous_strides, lambda s: _validate.ints("shape", s)])
def test_an_endless_shape_is_refused_not_a_hang(fn):
    with pytest.raises(ValueError, match=f"more than {_validate.MAX_ITEMS}"):
        fn(_endless())


# --- silent nonsense now raises ------------------------------------------------------------------------


@pytest.mark.parametrize("bad, error", [
    (np.linspace(0, 9, 100), TypeError),     # floats would be truncated into ids
    (np.ones(100, bool), TypeError),
    (np.arange(-50, 50), ValueError),        # negative ids
])
def test_get_batch_refuses_what_are_not_token_ids(bad, error):
    with pytest.raises(error, match="data"):
        data.get_batch(bad, 4, 8, "cpu", generator=torch.Generator().manual_seed(0))


def test_get_batch_with_an_unusable_device_is_a_value_and_a_runtime_error():
    for device in ("tpu", "cuda:7") if not torch.cuda.is_available() else ("tpu",):
        with pytest.raises(ValueError, match="device") as info:
            data.get_batch(TOKENS, 2, 4, device)
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, data.DeviceUnavailable)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-2**62, 2**62), min_size=2, max_size=20))
def test_bigram_entropy_refuses_negative_or_overflowing_ids(ids):
    arr = np.asarray(ids, dtype=np.int64)
    if arr.min() < 0 or arr.max() >= 2**31:
        with pytest.raises(ValueError, match="tokens"):
            data.bigram_entropy(arr)
    else:
        assert 0 <= data.bigram_entropy(arr) <= math.log(len(ids))


def test_bigram_entropy_refuses_floats():
    with pytest.raises(TypeError, match="tokens"):
        data.bigram_entropy(np.array([0.5, 1.5, 0.5]))


def test_a_flattened_scale_is_refused():
    w = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    q, scale = quantize.quantize_int8(w)
    with pytest.raises(ValueError, match="flattened scale"):
        quantize.dequantize_int8(q, scale.flatten())
    assert (quantize.dequantize_int8(q, scale) - w).abs().max() <= scale.max() / 2 + 1e-6


@pytest.mark.parametrize("field, value", [("weight_decay", math.nan), ("weight_decay", "0.1"), ("dropout", math.nan),
                                          ("min_lr_ratio", math.nan), ("weight_decay", -1.0),
                                          ("activation_checkpointing", "no"), ("dtype", "int8")])
def test_train_config_refuses(field, value):
    with pytest.raises((ValueError, TypeError), match=field if field != "dtype" else "dtype"):
        train.TrainConfig(**{field: value})


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["weights", "gradients", "optimizer_state", "master_weights"]),
       st.one_of(st.floats(max_value=-1e-9), st.just(math.nan), st.just(math.inf)))
def test_bytes_per_param_fields_are_non_negative_numbers(field, value):
    fields = {"weights": 2, "gradients": 2, "optimizer_state": 8, field: value}
    with pytest.raises(ValueError, match=field):
        napkin.BytesPerParam(**fields)


@pytest.mark.parametrize("bad", [-0.002, math.nan])
def test_format_seconds_refuses_negative_and_nan(bad):
    with pytest.raises(ValueError, match="seconds"):
        bench.format_seconds(bad)


def test_grad_norm_of_one_tensor_is_refused():
    with pytest.raises(TypeError, match="parameters"):
        train.grad_norm(torch.ones(3, requires_grad=True))


# --- the hang -------------------------------------------------------------------------------------------


def test_benchmark_max_total_s_bounds_everything(fake_clock):
    clock = fake_clock(0.01)  # each call takes 10 ms of the harness's clock, however busy the machine
    t = bench.benchmark(clock.work, device="cpu", warmup=0, min_trial_s=100, max_total_s=0.5)
    assert clock.now <= 0.5 + t.number * 0.01  # the budget plus at most one trial


# --- obscure errors made clear ----------------------------------------------------------------------------


@pytest.mark.parametrize("ids", [torch.tensor([[9]]), torch.tensor([[-1]])])
def test_token_ids_outside_the_vocabulary_name_vocab_size(ids):
    with pytest.raises(ValueError, match=r"vocab_size=8"):
        TinyLM(8, 4, 1)(ids)


def test_train_on_data_with_a_larger_vocabulary():
    cfg = train.TrainConfig(vocab_size=16, dim=8, num_layers=1, batch_size=4, context_length=8, total_steps=2,
                            warmup_steps=0)
    with pytest.raises(ValueError, match="vocab_size=16"):
        train.train(cfg, np.arange(100, dtype=np.uint16), progress=False)


def test_measure_step_memory_refuses_dtypes_and_devices_it_cannot_run():
    with pytest.raises(ValueError, match="fp32"):
        step_memory.measure_step_memory(4, 1, 2, dtype="fp8_e4m3")
    with pytest.raises(ValueError, match="device"):
        step_memory.measure_step_memory(4, 1, 2, device="tpu")


def test_seeds_beyond_64_bits_and_bad_rng_states():
    with pytest.raises(ValueError, match="2\\*\\*64"):
        randomness.seed_everything(2**64)
    with pytest.raises(ValueError, match="device"):
        randomness.make_generator(0, "tpu")
    with pytest.raises(ValueError, match="get_rng_state"):
        randomness.set_rng_state({"python": 1, "numpy": 2, "torch": 3, "cuda": [], "generator": None})


def test_cosine_schedule_needs_an_optimizer():
    with pytest.raises(TypeError, match="optimizer"):
        train.cosine_schedule("adam", warmup_steps=1, total_steps=3)


def test_write_tokens_into_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="folder"):
        data.write_tokens(tmp_path / "no" / "t.bin", [1, 2])
