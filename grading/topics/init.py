"""Grading bundle of chapter 07 (init): plain expected values and hidden cases.

Not part of the student package.
"""

from __future__ import annotations

import math
import random

from grading.case_seals import with_results

import torch
from torch import nn

from lectorch import init as lectorch_init
from lectorch.exercises import init as ex
from grading.topics import Topic

DIM, LAYERS, OUT = 768, 12, 10


class BiasedCruncher(nn.Module):
    """The exercise's variant: num_layers D×D layers with biases, then a D→10 head with biases."""

    def __init__(self, dim: int = DIM, num_layers: int = LAYERS, out: int = OUT):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim, bias=True, device="meta") for _ in range(num_layers))
        self.final = nn.Linear(dim, out, bias=True, device="meta")


def relu_stack_std(blocks: int = 8) -> float:
    """E[z²] of a LeCun layer's output is E[a²] of its input (fan_in · 1/fan_in); a ReLU halves E[z²]
    of a zero-mean symmetric z. So 8 ReLUs scale the second moment by 2⁻⁸ and the std by 2⁻⁴."""
    return math.sqrt(0.5**blocks)


EXPECTED = {
    "init-relu-depth": relu_stack_std(8),
    "init-variant-params": sum(p.numel() for p in BiasedCruncher().parameters()),
}


# --- references: the expected results of the function exercises ---------------------------------


def truncated_std(case) -> dict:
    """The std of N(0, 1/fan_in) cut at ±3 std (lectorch's Linear layout: fan_in = shape[0])."""
    fan_in = case.expected["shape"][0]
    return {"truncated_std": lectorch_init.truncated_std_factor(3.0) / math.sqrt(fan_in)}


def leaky_std_torch(fan_in: int, slope: float) -> float:
    """torch's own answer: the gain for leaky_relu over sqrt(fan_in)."""
    return nn.init.calculate_gain("leaky_relu", slope) / math.sqrt(fan_in)


REFERENCE = {
    "init-fix-trunc": truncated_std,
    "init-leaky-std": lambda case: leaky_std_torch(*case.args),
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return with_results(REFERENCE[exercise_id], cases)


def random_trunc_cases(rng: random.Random, n: int = 2) -> list:
    cases = []
    for _ in range(n):
        fan_in = 2 ** rng.randint(3, 13)
        fan_out = max(1, 2 ** 16 // fan_in)
        cases.append(ex.trunc_case((fan_in, fan_out), rng.randrange(2**31), f"a random {fan_in}×{fan_out} weight"))
    return cases


def random_leaky_cases(rng: random.Random, n: int = 3) -> list:
    return [ex.leaky_case(f := rng.randint(2, 8192), s := round(rng.uniform(0.0, 1.0), 3),
                          f"fan_in {f}, slope {s}") for _ in range(n)]


def variant_params(dim: int, num_layers: int, outputs: int) -> int:
    """Parameters of the biased Cruncher variant, counted by torch (on the meta device)."""
    return sum(p.numel() for p in BiasedCruncher(dim, num_layers, outputs).parameters())


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    from lectorch.exercises import Case

    if exercise_id == "init-relu-depth":  # the std after each ReLU: shallow and deep stacks
        blocks = [1, 2, rng.randint(3, 6), rng.randint(10, 16), rng.randint(30, 60)]
        return [Case(args=(b,), expected=relu_stack_std(b), description="a hidden depth") for b in blocks]
    if exercise_id == "init-variant-params":
        settings = [(1, 1, 1), (rng.randint(2, 100), rng.randint(1, 5), rng.randint(2, 20)),
                    (rng.choice([512, 1024, 4096]), rng.randint(6, 48), rng.choice([2, 100, 1000]))]
        return [Case(args=s, expected=variant_params(*s), description="a hidden variant") for s in settings]
    if exercise_id == "init-fix-trunc":
        return _with_expected(exercise_id, [
            ex.trunc_case((16, 4096), 10, "a 16×4096 weight: fan_in 16"),
            ex.trunc_case((1024, 64), 11, "a 1024×64 weight"),
            ex.trunc_case((300, 300), 12, "a 300×300 weight"),
            *random_trunc_cases(rng, 3)])
    if exercise_id == "init-leaky-std":
        return _with_expected(exercise_id, [
            ex.leaky_case(1024, 0.0, "slope 0: a plain ReLU"),
            ex.leaky_case(777, 1.0, "slope 1: no non-linearity at all"),
            ex.leaky_case(1, 0.3, "fan_in 1"),
            *random_leaky_cases(rng, 4)])
    return []


if __name__ == "__main__":
    print(EXPECTED, torch.__version__)

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "init-relu-depth": {
        "relus-matter-each": 1.0,
        "count-relus-between": 0.08838834764831845,
        "count-relus-between-2": 0.044194173824159216,
        "relu-halves-second": 0.00390625,
        "relu-s-output": 0.0134875,
    },
    "init-variant-params": {
        "plain-cruncher-variant": 7078655.999940873,
        "head-biases-too": 7094783.999887857,
        "variant-s-head": 7087873.000073824,
    },
}


def _practice_cases(make, settings) -> list:
    from lectorch.exercises import Case

    return [Case(args=s, expected=make(*s), description=d) for s, d in settings]


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "init-relu-depth": lambda: _practice_cases(relu_stack_std, [((3,), "3 blocks"), ((5,), "5 blocks")]),
    "init-variant-params": lambda: _practice_cases(variant_params, [((64, 2, 3), "D = 64, 2 layers, 3 outputs"),
                                                                    ((10, 1, 1), "D = 10, one layer, one output")]),
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
