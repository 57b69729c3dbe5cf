"""Chapter 04's function exercises (einsum-gqa-scores, einsum-center-tokens) answered as a student
hands them in: the reference forms and the classic wrong ones."""

from __future__ import annotations

from einops import einsum, rearrange, reduce


def gqa_scores(q, k):
    qg = rearrange(q, "b (kv g) s1 d -> b kv g s1 d", kv=k.shape[1])
    s = einsum(qg, k, "b kv g s1 d, b kv s2 d -> b kv g s1 s2")
    return rearrange(s, "b kv g s1 s2 -> b (kv g) s1 s2") / q.shape[-1] ** 0.5


def center_buggy(x):  # the notebook's stub
    means = reduce(x, "batch seq hidden -> batch seq", "mean")
    return x - means


def center(x):
    return x - reduce(x, "batch seq hidden -> batch seq 1", "mean")

