"""Chapter 08's exercises: reference answers pass (public, random and hidden cases), the classic
wrong variants fail, and no message reveals the expected value."""

from __future__ import annotations

import random

import pytest
import torch

from lectorch import optim, step_memory
from lectorch.exercises import check, compare, get_exercise, run_case
from lectorch.exercises.optim import optimizer_trainer

from grading import optim as grading  # noqa: E402
from _practice import practised  # noqa: E402




def _passes_hidden(exercise_id, answer, seed=0):
    ex = get_exercise(exercise_id)
    for case in grading.hidden_cases(exercise_id, random.Random(seed)):
        status, got = run_case(answer, case)
        assert status == "returned", (exercise_id, case.description, got)
        assert compare(ex, got, case.expected) is None, (exercise_id, case.description)


# --- optim-rmsprop ---------------------------------------------------------------------------------

class _Stub(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                raise NotImplementedError


class _NoEps(_Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt(), value=-group["lr"])


class _TwoBuffers(_Stub):
    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                s = state.setdefault("s", torch.zeros_like(p))
                state["copy"] = p.grad.clone()
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class _NoClosure(_Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])


class _Rebinds(_Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p = p - group["lr"] * p.grad / (s.sqrt() + group["eps"])  # noqa: F841 — the slip


class _SumNotAverage(_NoClosure):  # AdaGrad's sum instead of RMSProp's moving average
    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.addcmul_(p.grad, p.grad)
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class _RMSProp(_Stub):
    """The chapter's formula, in place."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                s = self.state[p].setdefault("square_avg", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class _OutOfPlaceRMSProp(_RMSProp):
    """The same formula written out of place, another order of operations (fp32 rounding differs)."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            a, lr, eps = group["alpha"], group["lr"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                s = a * state.get("square_avg", torch.zeros_like(p)) + (1 - a) * p.grad ** 2
                state["square_avg"] = s
                p.copy_(p - lr * (p.grad / (torch.sqrt(s) + eps)))
        return loss


def test_rmsprop_reference_passes():
    assert check("optim-rmsprop", optimizer_trainer(_RMSProp)).passed
    _passes_hidden("optim-rmsprop", optimizer_trainer(_RMSProp))
    assert check("optim-rmsprop", optimizer_trainer(_OutOfPlaceRMSProp)).passed


def test_rmsprop_bypasses_are_refused():
    class Mine(torch.optim.RMSprop):
        pass

    for bypass in (optim.RMSProp, torch.optim.RMSprop, Mine):
        result = check("optim-rmsprop", optimizer_trainer(bypass))
        assert result.status == "failed" and "asks you to write RMSProp yourself" in result.message, result


@pytest.mark.parametrize("wrong, words", [
    (_NoEps, "differ"), (_TwoBuffers, "one buffer"), (_NoClosure, "closure"), (_Rebinds, "never changed"),
    (_SumNotAverage, "differ"),
])
def test_rmsprop_wrong_variants_fail(wrong, words):
    result = check("optim-rmsprop", optimizer_trainer(wrong))
    assert result.status == "failed" and words in result.message, result.message


def test_rmsprop_not_a_class_and_stub():
    assert check("optim-rmsprop", optimizer_trainer(_Stub)).status == "not implemented"
    result = check("optim-rmsprop", optimizer_trainer(lambda params: None))
    assert result.status == "error" and "subclasses" in result.message
    # Adam with beta1 = 0 is RMSProp with bias correction: switched off like RMSprop itself
    result = check("optim-rmsprop", optimizer_trainer(optim.Adam))
    assert result.status == "failed" and "Adam is switched off" in result.message


# --- optim-adamw-step ----------------------------------------------------------------------------

def adamw_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    param = param * (1 - lr * weight_decay)
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat, v_hat = exp_avg / (1 - beta1**step), exp_avg_sq / (1 - beta2**step)
    return param - lr * m_hat / (v_hat.sqrt() + eps), exp_avg, exp_avg_sq


def _no_bias_correction(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    b1, b2 = betas
    m, v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * grad * grad
    return param * (1 - lr * weight_decay) - lr * m / (v.sqrt() + eps), m, v


def _l2_inside_the_moments(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad + weight_decay * param, m, v, step, lr=lr, betas=betas, eps=eps, weight_decay=0.0)


def _bias_correction_one_step_late(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad, m, v, step + 1, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def _bias_correction_one_step_early(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad, m, v, max(step - 1, 1), lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def _decay_without_lr(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    p, m, v = adamw_step(param, grad, m, v, step, lr=lr, betas=betas, eps=eps, weight_decay=0.0)
    return p - weight_decay * param, m, v


def _eps_inside_the_root(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    b1, b2 = betas
    m, v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * grad * grad
    p = param * (1 - lr * weight_decay)
    return p - lr * (m / (1 - b1**step)) / (v / (1 - b2**step) + eps).sqrt(), m, v


def test_adamw_reference_passes():
    assert check("optim-adamw-step", adamw_step).passed
    _passes_hidden("optim-adamw-step", adamw_step)


@pytest.mark.parametrize("wrong, words", [
    (_no_bias_correction, "new parameter"), (_l2_inside_the_moments, "exp_avg"),
    (_bias_correction_one_step_late, "new parameter"), (_bias_correction_one_step_early, "new parameter"),
    (_decay_without_lr, "new parameter"), (_eps_inside_the_root, "new parameter"),
])
def test_adamw_wrong_variants_fail(wrong, words):
    result = check("optim-adamw-step", wrong)
    assert result.status == "failed" and words in result.message, (wrong.__name__, result.message)


# --- optim-clip-grad-norm ------------------------------------------------------------------------

def clip_by_global_norm(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    scale = min(1.0, max_norm / (total + 1e-6))
    return [g * scale for g in grads], total


def _per_parameter(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * min(1.0, max_norm / (float(g.norm()) + 1e-6)) for g in grads], total


def _no_eps(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * min(1.0, max_norm / total) for g in grads], total


def _scales_small_gradients_up(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * (max_norm / (total + 1e-6)) for g in grads], total


def _sum_of_squares(grads, max_norm):
    total = float(sum((g * g).sum() for g in grads))
    return [g * min(1.0, max_norm / (total + 1e-6)) for g in grads], total


def _sum_of_norms(grads, max_norm):
    total = float(sum(g.norm() for g in grads))
    return [g * min(1.0, max_norm / (total + 1e-6)) for g in grads], total


def test_clip_reference_passes():
    assert check("optim-clip-grad-norm", clip_by_global_norm).passed
    _passes_hidden("optim-clip-grad-norm", clip_by_global_norm)


@pytest.mark.parametrize("wrong", [_per_parameter, _no_eps, _scales_small_gradients_up, _sum_of_squares,
                                   _sum_of_norms])
def test_clip_wrong_variants_fail(wrong):
    assert check("optim-clip-grad-norm", wrong).status == "failed", wrong.__name__


def test_clip_without_eps_fails_on_all_zero_gradients():
    case = grading.hidden_cases("optim-clip-grad-norm", random.Random(0))[0]
    assert case.description == "all gradients zero"
    status, got = run_case(_no_eps, case)
    assert status == "raised" or compare(get_exercise("optim-clip-grad-norm"), got, case.expected)
    status, got = run_case(clip_by_global_norm, case)
    assert compare(get_exercise("optim-clip-grad-norm"), got, case.expected) is None


# --- optim-step-peak (prediction) ----------------------------------------------------------------

def test_step_peak_physics_agrees_with_the_measurement():
    cfg = grading.PEAK_CONFIG
    expected = grading.EXPECTED["optim-step-peak"]
    measured, trace = step_memory.measure_step_memory(cfg["dim"], cfg["num_layers"], cfg["batch"],
                                                      optimizer=cfg["optimizer"])
    peak = measured.parameters + measured.batch + measured.optimizer_state + trace.peak_bytes
    assert 0 <= peak - expected <= 4 * cfg["batch"] * 4 + 64
    assert check("optim-step-peak", practised("optim-step-peak", expected), measured=peak).passed


def test_step_peak_slips_are_named():
    cfg = grading.PEAK_CONFIG
    everything = step_memory.predict_step_memory(cfg["dim"], cfg["num_layers"], cfg["batch"],
                                                 optimizer=cfg["optimizer"]).total
    result = check("optim-step-peak", lambda d, n, b: everything)
    assert result.status == "failed" and "all lived at once" in result.message
    resting = step_memory.step_timeline(cfg["dim"], cfg["num_layers"], cfg["batch"], optimizer="sgd").resting
    assert "resting" in check("optim-step-peak", lambda d, n, b: resting).message
    assert str(grading.EXPECTED["optim-step-peak"]) not in result.message


def test_stubs_are_not_implemented():
    def stub(*args, **kwargs):
        raise NotImplementedError

    for exercise_id in ("optim-adamw-step", "optim-clip-grad-norm"):
        assert check(exercise_id, stub).status == "not implemented"
    assert check("optim-step-peak", ...).status == "not implemented"
