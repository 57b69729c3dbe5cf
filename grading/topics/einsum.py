"""Grading bundle of chapter 04 (einsum): plain expected values and hidden cases.

Not part of the student package. The crossover is counted by FlopCounterMode on the meta device.
"""

from __future__ import annotations

import math
import random

from grading.case_seals import with_results

import torch
from einops import einsum, rearrange

from lectorch.exercises import Case
from lectorch.exercises import einsum as ex
from lectorch.flops import count_flops
from grading.topics import Topic


def layer_flops(seq: int, *, hidden: int, heads: int, kv_heads: int, head_dim: int,
                mlp_width: int) -> tuple[int, int]:
    """(attention's scores + mixing, everything else) forward FLOPs of one layer at ``seq`` tokens,
    with grouped-query attention and a SwiGLU MLP, counted by torch."""
    with torch.device("meta"):
        x = torch.empty(1, seq, hidden)
        wq, wo = torch.empty(hidden, heads * head_dim), torch.empty(heads * head_dim, hidden)
        wk, wv = (torch.empty(hidden, kv_heads * head_dim) for _ in range(2))
        gate, up, down = (torch.empty(hidden, mlp_width), torch.empty(hidden, mlp_width),
                          torch.empty(mlp_width, hidden))
        q = rearrange(x @ wq, "b s (kv g d) -> b kv g s d", kv=kv_heads, d=head_dim)
        k = rearrange(x @ wk, "b s (kv d) -> b kv s d", d=head_dim)
        v = rearrange(x @ wv, "b s (kv d) -> b kv s d", d=head_dim)

        def attention(q, k, v):
            w = einsum(q, k, "b kv g s1 d, b kv s2 d -> b kv g s1 s2").softmax(-1)
            return einsum(w, v, "b kv g s1 s2, b kv s2 d -> b kv g s1 d")

        def rest(x, o):
            projections = x @ wq, x @ wk, x @ wv, o @ wo
            mlp = (torch.nn.functional.silu(x @ gate) * (x @ up)) @ down
            return projections, mlp

        o = rearrange(attention(q, k, v), "b kv g s d -> b s (kv g d)")
        return count_flops(attention, q, k, v).total, count_flops(rest, x, o).total


def crossover(**layer) -> float:
    """The s where attention (∝ s²) equals the rest (∝ s): s · rest / attention at any s."""
    seq = 1024
    attention, rest = layer_flops(seq, **layer)
    return seq * rest / attention


EXPECTED = {
    "einsum-summed-dims": "s",  # summed_dims(ex.SUMMED_PATTERN)
    "einsum-layer-crossover": crossover(**ex.LAYER),
}


# --- references: the expected results of the function exercises, from torch itself --------------


def gqa_reference(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """torch's meaning of grouped-query attention (as in ``scaled_dot_product_attention(...,
    enable_gqa=True)``): each K head is repeated for its group of consecutive query heads."""
    group = q.shape[-3] // k.shape[-3]
    k_full = k.repeat_interleave(group, dim=-3)
    return q @ k_full.transpose(-2, -1) / math.sqrt(q.shape[-1])


def gqa_results(case) -> dict:
    q, k = case.args
    scores = gqa_reference(q, k)
    return {"scores": scores, "direction": scores.double() / scores.double().norm()}


REFERENCE = {
    "einsum-gqa-scores": gqa_results,
    "einsum-center-tokens": lambda case: case.args[0] - case.args[0].mean(dim=-1, keepdim=True),
}


def _with_expected(exercise_id: str, cases: list) -> list:
    return with_results(REFERENCE[exercise_id], cases)


def random_gqa_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        kv, group = rng.randint(1, 4), rng.randint(1, 4)
        dims = (rng.randint(1, 3), kv * group, kv, rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 8))
        cases.append(ex.gqa_case(*dims, f"random sizes (batch, heads, kv_heads, seq1, seq2, hidden) = {dims}",
                                 seed=rng.randrange(2**31)))
    return cases


def random_center_cases(rng: random.Random, n: int = 3) -> list:
    cases = []
    for _ in range(n):
        if rng.random() < 0.5:
            side = rng.randint(2, 6)
            shape = (side, side, side)  # where the bug runs silently
        else:
            shape = (rng.randint(1, 4), rng.randint(2, 9), rng.randint(2, 9))
        cases.append(ex.center_case(shape, f"a random {shape} tensor", seed=rng.randrange(2**31)))
    return cases


def summed_dims(pattern: str) -> str:
    """The reference of einsum-summed-dims: the names in an operand and not in the output."""
    inputs, output = pattern.split("->")
    names = {d for operand in inputs.split(",") for d in operand.split()}
    return " ".join(sorted(names - set(output.split())))


def _summed_cases(rng: random.Random) -> list:
    patterns = ["i j, j k -> i k", "b h s d, b h t d -> b h s t", "b i, b i ->", "x y -> y x",
                "b s d, d f -> b s f", "i, j -> i j"]
    names = ["a", "b", "c", "s", "t", "d", "h1", "h2"]
    for _ in range(2):
        left, right = rng.sample(names, rng.randint(1, 4)), rng.sample(names, rng.randint(1, 4))
        seen = list(dict.fromkeys(left + right))
        out = rng.sample(seen, rng.randint(0, len(seen) - 1))
        patterns.append(f"{' '.join(left)}, {' '.join(right)} -> {' '.join(out)}")
    return [Case(args=(p,), expected=summed_dims(p), description="a hidden pattern") for p in patterns]


def _crossover_cases(rng: random.Random) -> list:
    layers = [(4096, 32, 32, 128, 11008),   # Llama 2 7B: full K/V
              (8192, 64, 8, 128, 28672),    # Llama 3 70B
              (3072, 16, 16, 256, 24576)]   # Gemma 7B: heads × head_dim is not hidden
    for _ in range(2):
        head_dim = rng.choice([64, 128])
        hidden = rng.choice([512, 1024, 2048, 3072])
        heads = hidden // head_dim
        kv_heads = rng.choice([k for k in (1, 2, 4, 8, heads) if heads % k == 0])
        layers.append((hidden, heads, kv_heads, head_dim, 64 * round(hidden * rng.uniform(2.5, 4) / 64)))
    return [Case(args=layer, expected=crossover(**dict(zip(ex.LAYER, layer))), description="a hidden layer")
            for layer in layers]


def hidden_cases(exercise_id: str, rng: random.Random) -> list:
    if exercise_id == "einsum-summed-dims":
        return _summed_cases(rng)
    if exercise_id == "einsum-layer-crossover":
        return _crossover_cases(rng)
    if exercise_id == "einsum-gqa-scores":
        return _with_expected(exercise_id, [
            ex.gqa_case(1, 8, 1, 4, 6, 4, "one key head for all (multi-query attention)", seed=10),
            ex.gqa_case(2, 6, 2, 5, 5, 5, "seq1 == seq2 == hidden", seed=11),
            ex.gqa_case(1, 4, 2, 1, 7, 3, "a single query token", seed=12),
            *random_gqa_cases(rng, 3)])
    if exercise_id == "einsum-center-tokens":
        return _with_expected(exercise_id, [
            ex.center_case((3, 3, 3), "a cube", seed=10),
            ex.center_case((1, 1, 5), "one token", seed=11),
            ex.center_case((2, 5, 5), "seq == hidden", seed=12),
            *random_center_cases(rng, 3)])
    return []

#: the wrong answers that reveal a known slip, by exercise and slip name (sealed in the package)
SLIPS = {
    "einsum-layer-crossover": {
        "k-v-project": 29696.0,
        "swiglu-mlp-three": 19456.0,
        "standard-layer-with": 24576.0,
        "mlp-14336-wide": 21504.0,
        "mixing-einsum-weights": 53248.0,
        "grouped-query-attention": 106496.0,
    },
}


#: public practice settings (answers sealed in the package)
PRACTICE = {
    "einsum-layer-crossover": lambda: [Case(args=s, expected=crossover(**dict(zip(("hidden", "heads", "kv_heads", "head_dim", "mlp_width"), s))), description=d)
                                       for s, d in [((2048, 16, 16, 128, 8192), "full K/V, 16 heads"),
                                                    ((1024, 8, 2, 128, 4096), "2 K/V heads")]],
}


TOPIC = Topic(expected=EXPECTED, hidden=hidden_cases, reference=REFERENCE, slips=SLIPS, practice=PRACTICE)
