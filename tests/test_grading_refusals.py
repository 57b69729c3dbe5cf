"""The grader refuses the same library shortcuts as the practice checker."""

from __future__ import annotations


import torch

from grading import grader, harness


def test_the_plan_carries_each_exercises_refusals():
    refusals = grader._refusals()
    assert "torch.optim.AdamW" in " ".join(refusals["optim-adamw-step"]["names"])
    assert refusals["views-transpose-strides"]["no_tensors"]


def test_a_bypass_fails_in_the_sandboxs_call_and_honest_work_passes():
    spec = {"names": ["torch.log_softmax", "torch.Tensor.log_softmax", "torch.nn.functional.log_softmax"],
            "what": "the stable log-softmax", "no_tensors": False}
    x = torch.randn(3, 5)
    bypass = harness._call(lambda t: torch.log_softmax(t, -1), (x,), {}, 0, spec)
    assert "returned" not in bypass and "write the stable log-softmax yourself" in str(bypass)

    def honest(t):
        shifted = t - t.amax(-1, keepdim=True)
        return shifted - shifted.exp().sum(-1, keepdim=True).log()

    ok = harness._call(honest, (x,), {}, 0, spec)
    assert torch.allclose(ok["returned"], torch.log_softmax(x, -1))  # restored afterwards
