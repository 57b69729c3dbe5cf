"""Chapter 01's precision-log-softmax answered as a student hands it in: the classic wrong forms (the
reference is the grader's, ``grading.topics.precision.log_softmax``)."""

from __future__ import annotations

import torch


def no_max(logits):
    x = logits.float()
    return x - x.exp().sum(dim=-1, keepdim=True).log()


def bf16_throughout(logits):
    x = logits.to(torch.bfloat16)
    shifted = x - x.amax(dim=-1, keepdim=True)
    return (shifted - shifted.exp().sum(dim=-1, keepdim=True).log()).float()


def global_max(logits):
    x = logits.float()
    shifted = x - x.max()
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def log_of_softmax(logits):
    x = logits.float()
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)).log()


def wrong_dim(logits):
    x = logits.float()
    shifted = x - x.amax(dim=0, keepdim=True)
    return shifted - shifted.exp().sum(dim=0, keepdim=True).log()

