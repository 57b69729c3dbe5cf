"""Exercises of chapter 10: precision and scale.

- ``scale-saved-bytes`` (derive, as a function): the bytes autograd saves for a TinyLM, with and
  without activation checkpointing, checked against ``saved_tensors_hooks`` on a real model.
- ``scale-ckpt-time`` (predict, then measure): the step-time ratio checkpointing should cost,
  from its FLOPs, for a model whose head is large.
- ``scale-hfu`` (derive): the hardware FLOP utilisation of a run that recomputes every layer.
- ``scale-int4-bytes`` (derive): the bytes of a 70B model in int4 with per-group scales and zeros.

Plain answers, the references of the function cases (``saved_tensors_hooks`` on a real model) and
hidden cases live in ``grading/topics/scale.py``; the package holds only seals.
"""

from __future__ import annotations



from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import public_cases

# HFU and int4 bytes are functions of their setting: the page's numbers are the public case
# (sealed); the grader tries hidden runs and group sizes (grading/topics/scale.py)
_HFU = Sealed.stored("scale-hfu")
_INT4 = Sealed.stored("scale-int4-bytes")

# ------------------------------------------------------------------- saved activation bytes


def saved_case(b: int, t: int, d: int, n: int, v: int, checkpointing: bool, description: str = "") -> Case:
    """A case of ``scale-saved-bytes``; its expected bytes are measured by the grader on a real
    model (sealed in the package)."""
    return Case(args=(b, t, d, n, v), kwargs={"checkpointing": checkpointing},
                description=description or f"B={b}, T={t}, D={d}, {n} blocks, V={v}"
                + (", checkpointed" if checkpointing else ""))


register(
    Exercise(
        id="scale-saved-bytes",
        title="saved_bytes(batch_size, context_length, dim, num_layers, vocab_size, checkpointing)",
        kind="function",
        refuse_what="the count of saved bytes",
        no_tensors=True,
        refuse=(
            "lectorch.train.predicted_saved_bytes",
            "lectorch.step_memory.saved_tensors",
            "lectorch.step_memory.predict_step_memory",
            "lectorch.step_memory.step_timeline",
        ),
        rtol=0.0,
        hint=("go through the table of section 2 row by row: which rows grow with the number of "
              "blocks, which with the vocabulary, and what is their dtype?",
              "with checkpointing a block keeps only its input; the head's input, the loss's "
              "log-probabilities, the int64 ids and targets and one 4-byte scalar stay."),
        cases=public_cases("scale-saved-bytes", (
            saved_case(16, 32, 64, 4, 64, False, "the panel's model at batch 16"),
            saved_case(16, 32, 64, 4, 64, True, "the panel's model at batch 16, checkpointed"),
            saved_case(1, 1, 8, 1, 8, False, "one token"),
            saved_case(8, 128, 256, 12, 1000, True, "a deeper model, checkpointed"))),
        summary=("runs your function on 4 cases (hidden ones when graded), exactly: the bytes "
                 "saved_tensors_hooks measures on a real TinyLM"),
    )
)

# --------------------------------------------------------------- predict: checkpointing's time

#: The model of ``scale-ckpt-time``: a large vocabulary, so the (never recomputed) head matters.
CKPT_TIME_MODEL = {"batch_size": 8, "context_length": 32, "dim": 64, "num_layers": 2,
                   "vocab_size": 2048}

#: asked as a function of the model: the page's model is the public case (sealed); the grader tries
#: hidden TinyLMs (grading/topics/scale.py), their FLOPs counted by FlopCounterMode
_CKPT_TIME = Sealed.stored("scale-ckpt-time")

register(
    Exercise(
        id="scale-ckpt-time",
        title=("ckpt_time_ratio(batch_size, context_length, dim, num_layers, vocab_size): a TinyLM's step "
               "time with activation checkpointing over the step time without"),
        kind="prediction",
        expected=_CKPT_TIME,
        cases=(Case(args=tuple(CKPT_TIME_MODEL.values()), expected=_CKPT_TIME,
                    description="B = 8, T = 32, D = 64, 2 blocks, V = 2048"),),
        rtol=_CKPT_TIME.rtol,
        refuse_what="the FLOP count",
        no_tensors=True,
        refuse=("lectorch.train.measure_step", "lectorch.flops.count_flops",
                "lectorch.reference.checkpointing_flop_overhead"),
        hint=("predict from FLOPs: which matmuls does the non-reentrant checkpoint run a second "
              "time, and how large are they next to the whole step's?",
              "the head (D × V) is not inside a checkpointed block: it is never recomputed, but "
              "its forward and backward are part of every step."),
        summary=("runs your function on the page's model (hidden ones when graded) and judges it "
                 "against the FLOP ratio (within ±2 %); with measured=, compares it with the step "
                 "times measured on your machine"),
    )
)

# ------------------------------------------------------------------------------- derive: HFU

register(
    Exercise(
        id="scale-hfu",
        title="hfu(params, tokens_per_s, num_gpus): HFU on H100 SXM, every layer recomputed",
        kind="value",
        expected=_HFU,
        cases=(Case(args=(7e9, 0.6e6, 64), expected=_HFU, description="7B at 0.6 M tokens/s on 64 H100 SXM"),),
        rtol=_HFU.rtol,
        refuse_what="the utilisation",
        refuse=("lectorch.bench.mfu", "lectorch.napkin.cluster_flops_per_s", "lectorch.napkin.training_flops"),
        allow=("lectorch.hardware.get_gpu",),
        slips={
            "counts-only-model": "it counts only the model's FLOPs; the hardware also runs the recomputation.",
            "1979-tflop-s": "the 1979 TFLOP/s of the datasheet assumes 2:4 sparsity: use the dense peak.",
        },
        hint=("HFU = FLOPs the hardware executes per second / peak FLOP/s of all the GPUs.",
              "with every layer recomputed a step costs one more forward pass: how many FLOPs "
              "per token and parameter is that?"),
    )
)

# ------------------------------------------------------------------------ derive: int4 bytes

register(
    Exercise(
        id="scale-int4-bytes",
        title="int4_bytes(params, group): bytes of int4 weights in groups, each with an fp16 scale and zero",
        kind="value",
        expected=_INT4,
        cases=(Case(args=(70e9, 64), expected=_INT4, description="70B parameters, groups of 64"),),
        rtol=_INT4.rtol,
        slips={
            "each-group-stores": "each group stores two fp16 numbers, a scale and a zero point.",
            "groups-scales-zero": "the groups' scales and zero points cost bytes too.",
            "bits-or-bytes": "bits or bytes?",
        },
        hint=("count bits per weight first: the 4 bits of the weight plus its share of its "
              "group's extra numbers.",),
    )
)

__all__ = ["saved_case", "CKPT_TIME_MODEL"]
