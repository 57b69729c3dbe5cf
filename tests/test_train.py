"""lectorch.train (model, schedule, clipping, autocast, saved activations, the loop), lectorch.quantize,
and chapter 09's panel and figures (its exercises: tests/test_exercises_train.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lectorch import train as tr
from lectorch.data import bigram_entropy, markov_tokens, write_tokens
from lectorch.flops import count_flops, linear_flops
from lectorch.quantize import QMAX, dequantize_int8, quantization_error, quantize_int8
from lectorch.models import TinyLM
from lectorch.step_memory import saved_tensors
from lectorch.train import (CosineSchedule, TrainConfig, autocast_context, cosine_lr, cosine_schedule,
                            grad_norm, lm_loss, measure_step, predicted_saved_bytes, train)

# ----------------------------------------------------------------------------------------- model


def test_tinylm_shapes_and_parameter_count():
    model = TinyLM(vocab_size=50, dim=12, num_layers=3)
    assert model(torch.zeros(2, 7, dtype=torch.long)).shape == (2, 7, 50)
    assert sum(p.numel() for p in model.parameters()) == 2 * 50 * 12 + 8 * 12 * 12 * 3


def test_tinylm_bad_input():
    with pytest.raises(ValueError, match="dim"):
        TinyLM(10, 0, 1)
    with pytest.raises(TypeError, match="num_layers"):
        TinyLM(10, 4, 1.5)
    with pytest.raises(TypeError, match="ids must be integer"):
        TinyLM(10, 4, 1)(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="dropout"):
        TinyLM(10, 4, 1, dropout=1.0)


def test_lm_loss_is_mean_cross_entropy():
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    targets = torch.tensor([[0, 1, 2], [3, 4, 0]])
    manual = -torch.log_softmax(logits, -1).gather(-1, targets[..., None]).mean()
    assert torch.allclose(lm_loss(logits, targets), manual)
    with pytest.raises(ValueError, match="do not match"):
        lm_loss(logits, targets[:, :2])


# -------------------------------------------------------------------------------------- schedule


def test_cosine_lr_at_the_landmarks():
    kw = dict(max_lr=1e-3, min_lr=1e-4, warmup_steps=100, total_steps=1100)
    assert cosine_lr(0, **kw) == 0.0
    assert cosine_lr(50, **kw) == pytest.approx(5e-4)
    assert cosine_lr(100, **kw) == pytest.approx(1e-3)  # end of warm-up: the peak
    assert cosine_lr(600, **kw) == pytest.approx((1e-3 + 1e-4) / 2)  # midpoint of the decay
    assert cosine_lr(1100, **kw) == pytest.approx(1e-4)  # the end: the floor
    assert cosine_lr(5000, **kw) == 1e-4


@settings(max_examples=60, deadline=None)
@given(warmup=st.integers(0, 50), extra=st.integers(1, 200), ratio=st.floats(0, 1))
def test_cosine_lr_rises_then_falls_within_bounds(warmup, extra, ratio):
    total = warmup + extra
    lrs = [cosine_lr(s, max_lr=2.0, min_lr=2.0 * ratio, warmup_steps=warmup, total_steps=total) for s in range(total + 3)]
    assert all(0 <= lr <= 2.0 + 1e-12 for lr in lrs)
    assert all(a <= b + 1e-12 for a, b in zip(lrs[:warmup], lrs[1:warmup + 1]))
    assert all(a >= b - 1e-12 for a, b in zip(lrs[warmup:], lrs[warmup + 1:]))


def test_lambdalr_follows_the_function():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=3e-3)
    sched = cosine_schedule(opt, warmup_steps=5, total_steps=40, min_ratio=0.1)
    for step in range(45):
        assert opt.param_groups[0]["lr"] == pytest.approx(cosine_lr(step, max_lr=3e-3, min_lr=3e-4, warmup_steps=5, total_steps=40))
        opt.step()
        sched.step()
    assert sched.state_dict()["lr_lambdas"] == [{"warmup_steps": 5, "total_steps": 40, "min_ratio": 0.1}]


def test_schedule_bad_input():
    with pytest.raises(ValueError, match="warmup_steps=20 must be <= total_steps=10"):
        cosine_lr(0, max_lr=1.0, warmup_steps=20, total_steps=10)
    with pytest.raises(ValueError, match="min_lr"):
        cosine_lr(0, max_lr=1.0, min_lr=2.0, warmup_steps=0, total_steps=10)
    with pytest.raises(ValueError, match="step"):
        cosine_lr(-1, max_lr=1.0, warmup_steps=0, total_steps=10)
    with pytest.raises(ValueError, match="max_lr"):
        cosine_lr(0, max_lr=0.0, warmup_steps=0, total_steps=10)
    with pytest.raises(ValueError, match="total_steps"):
        CosineSchedule(0, 0)(0)
    with pytest.raises(ValueError, match="warmup_steps"):
        cosine_schedule(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0), warmup_steps=5, total_steps=2)


# ---------------------------------------------------------------------------------------- clipping


def test_grad_norm_matches_clip_grad_norm_and_clipping_bounds_it():
    torch.manual_seed(0)
    model = TinyLM(16, 8, 2)
    lm_loss(model(torch.randint(16, (4, 6))), torch.randint(16, (4, 6))).mul(100).backward()
    before = grad_norm(model.parameters())
    returned = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    assert before == pytest.approx(float(returned), rel=1e-6) and before > 1.0
    assert grad_norm(model.parameters()) == pytest.approx(1.0, rel=1e-5)  # scaled onto the sphere
    grads = [p.grad.clone() for p in model.parameters()]
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)  # below the limit: untouched
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters()))
    assert grad_norm([torch.zeros(2, requires_grad=True)]) == 0.0


# --------------------------------------------------------------------------------- mixed precision


def test_autocast_context_turns_on_and_off():
    a = torch.ones(4, 4)
    with autocast_context("cpu", "bf16"):
        assert (a @ a).dtype == torch.bfloat16
        assert lm_loss(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long)).dtype == torch.float32
    assert not torch.is_autocast_enabled("cpu") and torch.get_default_dtype() == torch.float32
    with autocast_context("cpu", "fp32"):
        assert (a @ a).dtype == torch.float32
    with autocast_context("cpu", "fp16"):  # CPU autocast takes fp16 too (lectorch used to refuse it)
        assert (a @ a).dtype == torch.float16
    with pytest.raises(ValueError, match="dtype"):
        autocast_context("cpu", "int8")
    with pytest.raises(ValueError, match="dtype"):
        autocast_context("cpu", "fp13")


def test_fp16_underflow_is_what_loss_scaling_fixes():
    tiny = torch.tensor(1e-8)  # a small gradient
    assert tiny.half().item() == 0.0  # flushed to zero in fp16 …
    assert (tiny * 65536).half().float().item() / 65536 == pytest.approx(1e-8, rel=1e-3)  # … kept when scaled
    assert tiny.bfloat16().item() == pytest.approx(1e-8, rel=1e-2)  # bf16 has fp32's range: no scaling needed


# ------------------------------------------------------------------------------- saved activations


@settings(max_examples=10, deadline=None)
@given(b=st.integers(1, 4), t=st.integers(1, 6), d=st.integers(1, 12), n=st.integers(1, 3), v=st.integers(2, 20),
       ckpt=st.booleans())
def test_saved_bytes_formula_matches_the_measurement(b, t, d, n, v, ckpt):
    torch.manual_seed(0)
    model = TinyLM(v, d, n, checkpointing=ckpt)
    x, y = torch.randint(v, (b, t)), torch.randint(v, (b, t))
    saved = saved_tensors(lambda: lm_loss(model(x), y), parameters=list(model.parameters()))
    assert saved.activation_bytes == predicted_saved_bytes(b, t, d, n, v, checkpointing=ckpt)
    saved.result.backward()  # the graph is usable


def test_saved_tensors_excludes_parameters_and_counts_shared_storage_once():
    w = torch.ones(3, 3, requires_grad=True)
    x = torch.ones(2, 3, requires_grad=True)  # both need gradients, so the matmul saves both
    assert saved_tensors(lambda: (x @ w).sum()).activation_bytes == (6 + 9) * 4
    assert saved_tensors(lambda: (x @ w).sum(), parameters=[w]).activation_bytes == 6 * 4
    z = torch.ones(4, requires_grad=True)
    assert saved_tensors(lambda: (z * z).sum()).activation_bytes == 16  # the same tensor saved twice
    with pytest.raises(TypeError, match="callable"):
        saved_tensors(3)


def test_bf16_autocast_saves_fewer_bytes_but_copies_the_weights():
    torch.manual_seed(0)
    model = TinyLM(32, 16, 2)
    x, y = torch.randint(32, (4, 8)), torch.randint(32, (4, 8))
    fp32 = saved_tensors(lambda: lm_loss(model(x), y), parameters=list(model.parameters()))
    with autocast_context("cpu", "bf16"):
        bf16 = saved_tensors(lambda: lm_loss(model(x), y), parameters=list(model.parameters()))
    assert bf16.activation_bytes < fp32.activation_bytes
    weight_copies = sum(p.numel() * 2 for n, p in model.named_parameters() if not n.startswith("embed"))
    assert bf16.by_dtype["bfloat16"] >= weight_copies  # autocast keeps bf16 copies of the weights for backward
    assert not torch.is_autocast_enabled("cpu")


def test_checkpointing_recomputes_only_what_backward_needs():
    b, t, d, n, v = 4, 8, 16, 3, 32
    ids = torch.randint(v, (b, t))

    def step(model):
        return lambda: lm_loss(model(ids), ids).backward()

    torch.manual_seed(0)
    plain = TinyLM(v, d, n)
    torch.manual_seed(0)
    ckpt = TinyLM(v, d, n, checkpointing=True)
    f_plain, f_ckpt = count_flops(step(plain)).total, count_flops(step(ckpt)).total
    # forward+backward = 3 × forward; checkpointing adds the up-projection of every block once more
    # (non-reentrant checkpoint stops recomputing once it has every saved tensor: the down-projection's
    # output is never saved, so it is not recomputed).
    assert f_plain == 3 * (n * 2 * linear_flops(b * t, d, 4 * d) + linear_flops(b * t, d, v))
    assert f_ckpt - f_plain == n * linear_flops(b * t, d, 4 * d)
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(plain.parameters(), ckpt.parameters()))


def test_predicted_saved_bytes_bad_input():
    with pytest.raises(ValueError, match="vocab_size"):
        predicted_saved_bytes(1, 1, 1, 1, 0)


# ---------------------------------------------------------------------------------------- the loop

SMALL = dict(vocab_size=16, dim=16, num_layers=1, batch_size=8, context_length=16, total_steps=60, warmup_steps=6,
             max_lr=3e-2)


@pytest.fixture(scope="module")
def corpus():
    return markov_tokens(4000, 16, seed=0)


@pytest.fixture(scope="module")
def small_run(corpus):
    return train(TrainConfig(**SMALL), corpus, progress=False)


def test_training_goes_from_the_uniform_guess_towards_the_entropy_floor(small_run, corpus):
    floor = bigram_entropy(corpus)
    assert abs(small_run.losses[0] - math.log(16)) < 0.5
    assert np.mean(small_run.losses[-10:]) < floor + 0.25
    assert np.mean(small_run.losses[-10:]) < small_run.losses[0] - 1.0


def test_the_loop_records_lr_and_pre_clip_norms(small_run):
    cfg = TrainConfig(**SMALL)
    expected = [cosine_lr(s, max_lr=cfg.max_lr, min_lr=cfg.max_lr * cfg.min_lr_ratio, warmup_steps=cfg.warmup_steps,
                          total_steps=cfg.total_steps) for s in range(cfg.total_steps)]
    assert small_run.lrs == pytest.approx(expected)
    assert max(small_run.grad_norms) > cfg.grad_clip  # clipping had something to do
    assert small_run.steps == cfg.total_steps and small_run.start_step == 0


def test_the_loop_is_deterministic_and_checkpointing_changes_no_number(small_run, corpus):
    short = {**SMALL, "total_steps": 15}
    first = train(TrainConfig(**short), corpus, progress=False)
    again = train(TrainConfig(**short), corpus, progress=False)
    assert again.losses == first.losses and first.losses[:6] == small_run.losses[:6]  # same warm-up, same start
    ckpt = train(TrainConfig(**{**short, "activation_checkpointing": True}), corpus, progress=False)
    assert ckpt.losses == first.losses


def test_bf16_training_works_and_leaves_no_global_state(corpus):
    state = torch.get_rng_state()
    run = train(TrainConfig(**{**SMALL, "dtype": "bf16", "total_steps": 20}), corpus, progress=False)
    assert all(math.isfinite(x) for x in run.losses) and run.losses[-1] < run.losses[0]
    assert not torch.is_autocast_enabled("cpu") and torch.get_default_dtype() == torch.float32
    assert torch.is_grad_enabled()
    assert torch.equal(state, torch.get_rng_state())  # initialisation used its own seed, not the global RNG


def test_train_bad_input(corpus):
    with pytest.raises(ValueError, match="context_length=16 must be smaller than the data length 10"):
        train(TrainConfig(**SMALL), corpus[:10], progress=False)
    with pytest.raises(TypeError, match="TrainConfig"):
        train(dict(SMALL), corpus)
    for name, value, exc in [("batch_size", 0, ValueError), ("batch_size", -4, ValueError), ("batch_size", 2.5, TypeError),
                             ("context_length", 0, ValueError), ("warmup_steps", 100, ValueError),
                             ("dropout", 1.5, ValueError), ("max_lr", -1.0, ValueError), ("dtype", "fp13", ValueError),
                             ("grad_clip", 0.0, ValueError), ("min_lr_ratio", 2.0, ValueError)]:
        with pytest.raises(exc, match=name if name != "warmup_steps" else "warmup_steps=100"):
            TrainConfig(**{**SMALL, name: value})


def test_measure_step_on_cpu():
    a = measure_step(batch_size=2, dim=8, num_layers=2, vocab_size=16, context_length=4, trials=1)
    b = measure_step(batch_size=2, dim=8, num_layers=2, vocab_size=16, context_length=4, trials=1, checkpointing=True)
    c = measure_step(batch_size=2, dim=8, num_layers=2, vocab_size=16, context_length=4, trials=1, dtype="bf16")
    assert a.saved_activation_bytes == predicted_saved_bytes(2, 4, 8, 2, 16)
    assert b.saved_activation_bytes == predicted_saved_bytes(2, 4, 8, 2, 16, checkpointing=True)
    assert b.flops > a.flops == c.flops and c.saved_activation_bytes < a.saved_activation_bytes
    assert a.step_seconds > 0 and a.peak_memory_bytes is None
    with pytest.raises(ValueError, match="batch_size"):
        measure_step(batch_size=0)
    with pytest.raises(ValueError, match="dtype"):
        measure_step(batch_size=1, dtype="int8", device="cpu")


def test_the_command_line_trains_and_saves(tmp_path, corpus):
    write_tokens(tmp_path / "t.bin", corpus)
    tr.main(["--data", str(tmp_path / "t.bin"), "--steps", "4", "--warmup-steps", "1", "--vocab-size", "16",
             "--dim", "8", "--num-layers", "1", "--batch-size", "2", "--context-length", "8",
             "--save-params", str(tmp_path / "p.pt"), "--checkpoint", str(tmp_path / "c.pt")])
    saved = torch.load(tmp_path / "p.pt", weights_only=True)
    assert saved["losses"].shape == (4,) and "head.weight" in saved
    assert (tmp_path / "c.pt").exists()


def test_fp16_with_grad_scaler_on_cpu(corpus):
    # CPU autocast runs fp16 and torch.amp.GradScaler("cpu") scales, unscales and steps: nothing CUDA-only
    run = train(TrainConfig(**{**SMALL, "dtype": "fp16", "total_steps": 8}), corpus, device="cpu", progress=False)
    assert all(math.isfinite(x) for x in run.losses) and run.losses[-1] < run.losses[0]
    assert not torch.is_autocast_enabled("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_fp16_with_grad_scaler_on_cuda(corpus):
    run = train(TrainConfig(**{**SMALL, "dtype": "fp16", "total_steps": 20}), corpus, device="cuda", progress=False)
    assert all(math.isfinite(x) for x in run.losses[5:])
    r = measure_step(batch_size=4, device="cuda", trials=1)
    assert r.peak_memory_bytes is not None and r.peak_memory_bytes > r.saved_activation_bytes


# ------------------------------------------------------------------------------------ quantisation


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), seed=st.integers(0, 10_000), log_scale=st.floats(-6, 3),
       axis=st.sampled_from([0, 1, None]))
def test_int8_round_trip_error_is_at_most_half_a_step(rows, cols, seed, log_scale, axis):
    w = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 10**log_scale
    q, scale = quantize_int8(w, axis=axis)
    assert q.dtype == torch.int8 and int(q.abs().max()) <= QMAX
    err = (w - dequantize_int8(q, scale)).abs()
    assert (err <= scale / 2 * (1 + 1e-5) + 1e-30).all()
    if axis is not None:  # each channel's largest magnitude is stored exactly as ±127
        assert (q.abs().amax(dim=1 - axis) == QMAX).all()


def test_per_channel_beats_per_tensor_when_channels_differ():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 64, generator=g) * torch.logspace(-3, 0, 8)[:, None]  # rows of very different size
    per_row, per_tensor = quantization_error(w, axis=0), quantization_error(w, axis=None)
    assert per_row.relative_error < per_tensor.relative_error
    small = w[0]  # the row of the smallest weights: one shared scale crushes it to (nearly) nothing
    row_err = (small - dequantize_int8(*quantize_int8(w, axis=0))[0]).norm() / small.norm()
    tensor_err = (small - dequantize_int8(*quantize_int8(w, axis=None))[0]).norm() / small.norm()
    assert row_err < 0.01 and tensor_err > 0.5
    assert per_row.int8_bytes == 8 * 64 + 8 * 4 and per_row.fp32_bytes == 8 * 64 * 4
    assert per_tensor.compression == pytest.approx(8 * 64 * 4 / (8 * 64 + 4))


def test_quantize_edge_cases_and_bad_input():
    q, scale = quantize_int8(torch.zeros(2, 3))
    assert (q == 0).all() and (scale == 1).all()
    assert quantization_error(torch.zeros(2, 2)).relative_error == 0.0
    with pytest.raises(ValueError, match="2-D"):
        quantize_int8(torch.zeros(3))
    with pytest.raises(TypeError, match="floating"):
        quantize_int8(torch.zeros(2, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="inf or NaN"):
        quantize_int8(torch.tensor([[1.0, float("inf")]]))
    with pytest.raises(ValueError, match="axis"):
        quantize_int8(torch.ones(2, 2), axis=2)
    with pytest.raises(TypeError, match="weight"):
        quantize_int8([[1.0]])
    with pytest.raises(TypeError, match="int8"):
        dequantize_int8(torch.zeros(2, 2), torch.ones(2, 1))
    with pytest.raises(ValueError, match="broadcast"):
        dequantize_int8(torch.zeros(2, 2, dtype=torch.int8), torch.ones(3, 1))


# ------------------------------------------------------------------------------------ panel, plots


def test_step_cost_panel_reacts_to_its_controls():
    from lectorch.widgets.train import step_cost_html, step_cost_panel

    panel = step_cost_panel("cpu")
    assert repr(panel) == "Panel('One training step of a TinyLM: memory and time', controls: batch_size, dtype, checkpointing)"
    assert "fp16" not in panel.controls["dtype"].options
    first = panel.result.value
    assert "1.00× fp32 without checkpointing" in first and "not tracked on cpu" in first
    panel.controls["checkpointing"].value = True
    assert "(0.16× fp32 without checkpointing)" in panel.result.value  # (4·D + D + V)/(4·9·D + D + V), D = V = 64
    panel.controls["batch_size"].value = 2
    assert "B=2: 64 tokens" in panel.result.value
    panel.controls["dtype"].options = ["fp32", "bf16", "int8"]  # a dtype autocast cannot run …
    panel.controls["dtype"].value = "int8"
    assert "⚠" in panel.result.value and "int8" in panel.result.value  # … is explained, not a crash
    with pytest.raises(ValueError, match="int8"):
        step_cost_html(2, "int8", False, "cpu")


def test_figures():
    from lectorch.plots.train import start_histogram, tradeoff_bars, training_curves

    fig = training_curves(np.linspace(4, 1, 50), np.linspace(0, 1e-3, 50), floor=1.0, initial=4.0)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert isinstance(tradeoff_bars(["fp32", "fp32 ckpt"], [10, 5], [3, 4]), Figure)
    assert isinstance(start_histogram([0, 1, 2, 2], 3), Figure)
    with pytest.raises(ValueError, match="same"):
        training_curves([1.0, 2.0], [0.1])
    with pytest.raises(ValueError, match="same"):
        tradeoff_bars(["a"], [1, 2], [1])
    with pytest.raises(ValueError):
        start_histogram([], 3)
