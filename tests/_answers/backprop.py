"""Chapter 06's function exercises (backprop-mlp-backward, backprop-skip-grads) answered as a
student hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import torch


def backward_flops(batch, widths, input_requires_grad=False):
    total = 0
    for i, (d, k) in enumerate(zip(widths[:-1], widths[1:])):
        total += 2 * batch * d * k * (2 if i > 0 or input_requires_grad else 1)
    return total


def forward_flops(batch, widths):
    return sum(2 * batch * d * k for d, k in zip(widths[:-1], widths[1:]))


def skip_grads(x, w1, w2):
    z = x @ w1
    s = torch.relu(z) + x
    ds = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype) @ w2.T
    return x.T @ (ds * (z > 0)), s.T @ torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)


def no_skip_in_w2(x, w1, w2):
    ones = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)
    z = x @ w1
    return x.T @ ((ones @ w2.T) * (z > 0)), torch.relu(z).T @ ones


def no_relu_mask(x, w1, w2):
    ones = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)
    return x.T @ (ones @ w2.T), (torch.relu(x @ w1) + x).T @ ones


def mask_at_zero_is_one(x, w1, w2):
    ones = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)
    z = x @ w1
    return x.T @ ((ones @ w2.T) * (z >= 0)), (torch.relu(z) + x).T @ ones


def swapped(x, w1, w2):
    return skip_grads(x, w1, w2)[::-1]


def skip_into_w1(x, w1, w2):
    ones = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)
    z = x @ w1
    ds = ones @ w2.T
    return x.T @ (ds * (z > 0) + ds), (torch.relu(z) + x).T @ ones

