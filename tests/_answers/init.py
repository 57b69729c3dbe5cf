"""Chapter 07's function exercises (init-fix-trunc, init-leaky-std) answered as a student hands them
in: the reference forms and the classic wrong ones."""

from __future__ import annotations

import math

from torch import nn


def fixed(weight, generator=None):
    std = 1 / math.sqrt(weight.shape[0])
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std, generator=generator)


def the_buggy_stub(weight, generator=None):
    fan_in = weight.shape[1]
    std = 1 / math.sqrt(fan_in)
    return nn.init.trunc_normal_(weight, std=std, a=-3, b=3, generator=generator)


def absolute_bounds(weight, generator=None):
    std = 1 / math.sqrt(weight.shape[0])
    return nn.init.trunc_normal_(weight, std=std, a=-3, b=3, generator=generator)


def wrong_axis(weight, generator=None):
    std = 1 / math.sqrt(weight.shape[1])
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std, generator=generator)


def std_not_scaled(weight, generator=None):
    return nn.init.trunc_normal_(weight, std=1.0, a=-3.0, b=3.0, generator=generator)


def two_std(weight, generator=None):
    std = 1 / math.sqrt(weight.shape[0])
    return nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std, generator=generator)


def variance_as_std(weight, generator=None):
    std = 1 / weight.shape[0]
    return nn.init.trunc_normal_(weight, std=std, a=-3 * std, b=3 * std, generator=generator)


def leaky_relu_std(fan_in, slope):
    return math.sqrt(2 / ((1 + slope**2) * fan_in))

