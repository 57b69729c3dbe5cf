"""Exercises of chapter 07: truncation bounds, parameter counts, the init scale that keeps outputs O(1)."""

from __future__ import annotations

import math
import numbers

from lectorch import init, models
from lectorch.exercises import Case, Exercise, register

register(
    Exercise(
        id="init-trunc-std-devs",
        title="the truncation of trunc_normal_(w, std=0.02, a=-3, b=3), in standard deviations",
        kind="value",
        expected=init.truncation_in_std(3, 0.02),
        hint="a and b are absolute bounds: divide the bound by the standard deviation.",
        slips={0.02: "3 standard deviations would need a = -3·std; here a and b are absolute values.",
               1 / 0.02**2: "divide the bound by the std once, not by the variance."},
    )
)


def _number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _compare_bounds(got, expected) -> str | None:
    if not isinstance(got, (tuple, list)) or len(got) != 2 or not all(_number(v) for v in got):
        return "return a pair of numbers (a, b), e.g. as a tuple."
    a, b = float(got[0]), float(got[1])
    if math.isclose(a, expected[0], rel_tol=1e-6) and math.isclose(b, expected[1], rel_tol=1e-6):
        return None
    if (a, b) == (-3.0, 3.0):
        return "(-3, 3) are absolute bounds: they cut at 3/std standard deviations, not at 3."
    if a > b:
        return "a is the lower bound and b the upper one: a must be below b."
    return f"({a:.4g}, {b:.4g}) does not cut at ±3 standard deviations."


register(
    Exercise(
        id="init-trunc-bounds",
        title="trunc_bounds(std) → (a, b) cutting N(0, std²) at ±3 standard deviations",
        kind="function",
        hint="trunc_normal_'s a and b are in the units of the values, not in standard deviations.",
        compare=_compare_bounds,
        cases=tuple(
            Case(args=(std,), expected=init.trunc_normal_bounds(std), description=desc)
            for std, desc in [(0.02, "GPT-2's std 0.02"), (1 / math.sqrt(768), "std 1/sqrt(768)"),
                              (0.5, "std 0.5"), (2.0, "std 2")]
        ),
    )
)


def _compare_params(got, expected) -> str | None:
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return f"a parameter count is a whole number (int), got {type(got).__name__}."
    if got == expected:
        return None
    missing = expected - got
    if missing > 0 and got % (missing * missing) == 0:
        return f"{got} leaves out the D×1 head."
    return f"{got} is {'too large' if got > expected else 'too small'}."


register(
    Exercise(
        id="init-cruncher-params",
        title="cruncher_params(dim, num_layers): the parameters of a Cruncher",
        kind="function",
        hint="num_layers bias-free D×D layers, then one bias-free D×1 head.",
        compare=_compare_params,
        cases=tuple(
            Case(args=args, expected=models.cruncher_num_parameters(*args), description=desc)
            for args, desc in [((64, 3), "dim 64, 3 layers"), ((1024, 4), "dim 1024, 4 layers"),
                               ((4096, 32), "dim 4096, 32 layers"), ((7, 1), "dim 7, one layer")]
        ),
    )
)


def _compare_std(got, expected) -> str | None:
    if not _number(got):
        return f"expected a number, got {type(got).__name__}."
    got = float(got)
    if math.isclose(got, expected, rel_tol=1e-6):
        return None
    if math.isclose(got, expected**2, rel_tol=1e-6):
        return "that is the variance; the std is its square root."
    if math.isclose(got, 1 / expected, rel_tol=1e-6):
        return "the output grows like sqrt(fan_in): the weight std must shrink by that factor, not grow."
    return f"{got:.4g} does not keep the output std at 1."


register(
    Exercise(
        id="init-std",
        title="init_std(fan_in): the weight std that keeps a layer's outputs O(1)",
        kind="function",
        hint="Var(sum of fan_in products x·w) = fan_in · Var(w) for unit-variance x; make it 1.",
        compare=_compare_std,
        cases=tuple(
            Case(args=(fan_in,), expected=init.init_std("lecun", fan_in), description=f"fan_in {fan_in}")
            for fan_in in (16, 768, 4096, 12288)
        ),
    )
)
