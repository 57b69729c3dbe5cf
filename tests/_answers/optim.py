"""Chapter 08's function exercises (optim-rmsprop, optim-adamw-step, optim-clip-grad-norm) answered
as a student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import torch


class Stub(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                raise NotImplementedError


class NoEps(Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt(), value=-group["lr"])


class TwoBuffers(Stub):
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


class NoClosure(Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])


class Rebinds(Stub):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.mul_(group["alpha"]).addcmul_(p.grad, p.grad, value=1 - group["alpha"])
                p = p - group["lr"] * p.grad / (s.sqrt() + group["eps"])


class SumNotAverage(NoClosure):  # AdaGrad's sum instead of RMSProp's moving average
    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                s = self.state[p].setdefault("s", torch.zeros_like(p))
                s.addcmul_(p.grad, p.grad)
                p.addcdiv_(p.grad, s.sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class RMSProp(Stub):
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


class OutOfPlaceRMSProp(RMSProp):
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


def adamw_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    param = param * (1 - lr * weight_decay)
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat, v_hat = exp_avg / (1 - beta1**step), exp_avg_sq / (1 - beta2**step)
    return param - lr * m_hat / (v_hat.sqrt() + eps), exp_avg, exp_avg_sq


def no_bias_correction(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    b1, b2 = betas
    m, v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * grad * grad
    return param * (1 - lr * weight_decay) - lr * m / (v.sqrt() + eps), m, v


def l2_inside_the_moments(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad + weight_decay * param, m, v, step, lr=lr, betas=betas, eps=eps, weight_decay=0.0)


def bias_correction_one_step_late(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad, m, v, step + 1, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def bias_correction_one_step_early(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    return adamw_step(param, grad, m, v, max(step - 1, 1), lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def decay_without_lr(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    p, m, v = adamw_step(param, grad, m, v, step, lr=lr, betas=betas, eps=eps, weight_decay=0.0)
    return p - weight_decay * param, m, v


def eps_inside_the_root(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    b1, b2 = betas
    m, v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * grad * grad
    p = param * (1 - lr * weight_decay)
    return p - lr * (m / (1 - b1**step)) / (v / (1 - b2**step) + eps).sqrt(), m, v


def clip_by_global_norm(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    scale = min(1.0, max_norm / (total + 1e-6))
    return [g * scale for g in grads], total


def per_parameter(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * min(1.0, max_norm / (float(g.norm()) + 1e-6)) for g in grads], total


def no_eps(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * min(1.0, max_norm / total) for g in grads], total


def scales_small_gradients_up(grads, max_norm):
    total = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * (max_norm / (total + 1e-6)) for g in grads], total


def sum_of_squares(grads, max_norm):
    total = float(sum((g * g).sum() for g in grads))
    return [g * min(1.0, max_norm / (total + 1e-6)) for g in grads], total


def sum_of_norms(grads, max_norm):
    total = float(sum(g.norm() for g in grads))
    return [g * min(1.0, max_norm / (total + 1e-6)) for g in grads], total

