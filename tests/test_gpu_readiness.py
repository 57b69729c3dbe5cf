"""Fixes of the CUDA paths that no CPU run exercises: each tested here with what a CPU can check."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lectorch import data as D
from lectorch.train import lm_loss, scaler_step


# --- lm_loss: the loss in float32 whatever the logits' dtype ------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_lm_loss_of_low_precision_logits_is_the_fp32_cross_entropy(dtype):
    g = torch.Generator().manual_seed(0)
    logits = (4 * torch.randn(3, 5, 50, generator=g)).to(dtype)
    targets = torch.randint(50, (3, 5), generator=g)
    loss = lm_loss(logits, targets)
    assert loss.dtype == torch.float32
    expected = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    assert torch.equal(loss, expected)
    # what CUDA autocast would compute without the upcast: a bf16 log-softmax, measurably different
    low = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    assert low.dtype == dtype


def test_lm_loss_gradient_flows_back_in_the_logits_dtype():
    logits = torch.randn(2, 3, 7, dtype=torch.bfloat16, requires_grad=True)
    lm_loss(logits, torch.zeros(2, 3, dtype=torch.long)).backward()
    assert logits.grad.dtype == torch.bfloat16


def test_lm_loss_saves_fp32_log_probs_under_cpu_autocast():
    from lectorch.step_memory import saved_tensors

    model = torch.nn.Linear(8, 16)
    x, y = torch.randn(4, 3, 8), torch.randint(16, (4, 3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        saved = saved_tensors(lambda: lm_loss(model(x), y), parameters=list(model.parameters()))
    # the log-probabilities the loss saves are float32 (4·3·16 of them, 4 bytes each)
    assert saved.by_dtype.get("float32", 0) >= 4 * 3 * 16 * 4


# --- scaler_step: the LR schedule advances only when the optimizer did ---------------------------------

def _setup():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (step + 1))
    return model, opt, sched


def test_a_skipped_fp16_step_does_not_advance_the_schedule():
    model, opt, sched = _setup()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    before = model.weight.detach().clone()
    scaler.scale(model(torch.tensor([[float("inf"), 1.0]])).sum()).backward()  # inf gradient: skipped
    assert scaler_step(scaler, opt, sched) is False
    assert torch.equal(model.weight, before) and sched.last_epoch == 0 and scaler.get_scale() == 2.0**9
    opt.zero_grad()
    scaler.scale(model(torch.ones(1, 2)).sum()).backward()  # a good step: optimizer and schedule advance
    assert scaler_step(scaler, opt, sched) is True
    assert sched.last_epoch == 1 and not torch.equal(model.weight, before)


class _MockScaler:
    """A GradScaler stand-in whose step is skipped (scale halves), as on a CUDA overflow."""

    def __init__(self, skip):
        self.scale, self.skip, self.stepped = 1024.0, skip, False

    def is_enabled(self):
        return True

    def get_scale(self):
        return self.scale

    def step(self, optimizer):
        if not self.skip:
            self.stepped = True
            optimizer.step()

    def update(self):
        if self.skip:
            self.scale /= 2


@pytest.mark.parametrize("skip", [True, False])
def test_scaler_step_detects_the_skip_from_the_scale(skip):
    model, opt, sched = _setup()
    model(torch.ones(1, 2)).sum().backward()
    scaler = _MockScaler(skip)
    assert scaler_step(scaler, opt, sched) is (not skip)
    assert sched.last_epoch == (0 if skip else 1)


def test_train_steps_the_schedule_through_scaler_step():
    import inspect

    from lectorch import train

    source = inspect.getsource(train.train)
    assert "scaler_step(scaler, optimizer, scheduler)" in source and "scheduler.step()" not in source


# --- get_batch on CUDA: one pinned contiguous buffer, one copy, slices on the device --------------------

def test_the_cuda_path_pins_one_contiguous_buffer_and_copies_it_once(monkeypatch):
    stream = np.arange(1000, dtype=np.uint16)
    expected = D.get_batch(stream, 4, 16, "cpu", generator=torch.Generator().manual_seed(5))
    pinned, uploads = [], []

    def fake_pinned(shape):
        t = torch.empty(shape, dtype=torch.int64)
        pinned.append(t)
        return t

    def fake_upload(host, device):
        uploads.append((host, device))
        return host.clone()  # stands in for the device copy

    monkeypatch.setattr(D, "check_device", lambda device, **kw: torch.device("cuda", 0))
    monkeypatch.setattr(D, "_pinned_buffer", fake_pinned)
    monkeypatch.setattr(D, "_upload", fake_upload)
    x, y = D.get_batch(stream, 4, 16, "cuda", generator=torch.Generator().manual_seed(5))
    assert len(pinned) == 1 and pinned[0].shape == (4, 17)  # whole windows: inputs and targets at once
    assert len(uploads) == 1 and uploads[0][0] is pinned[0] and uploads[0][1] == torch.device("cuda", 0)
    assert torch.equal(x, expected[0]) and torch.equal(y, expected[1])
    assert x.is_contiguous() and y.is_contiguous() and x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()


def test_pinned_buffer_and_upload_are_what_cuda_needs():
    import inspect

    assert "pin_memory=True" in inspect.getsource(D._pinned_buffer)
    assert "non_blocking=True" in inspect.getsource(D._upload)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_get_batch_on_cuda_equals_the_cpu_batch():
    stream = np.arange(5000, dtype=np.uint16)
    cpu = D.get_batch(stream, 8, 64, "cpu", generator=torch.Generator().manual_seed(1))
    gpu = D.get_batch(stream, 8, 64, "cuda", generator=torch.Generator().manual_seed(1))
    assert all(t.device.type == "cuda" for t in gpu)
    assert torch.equal(gpu[0].cpu(), cpu[0]) and torch.equal(gpu[1].cpu(), cpu[1])
