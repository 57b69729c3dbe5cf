"""Exercises of chapter 00, napkin math."""

from lectorch import napkin
from lectorch.exercises import Case, Exercise, register

register(
    Exercise(
        id="napkin-bytes-per-param",
        title="AdamW in fp32 costs 16 bytes per parameter",
        kind="value",
        expected=16,
        hint="count the weight, its gradient and AdamW's two moments, each a float32 of 4 bytes.",
        slips={0.75: "you counted only one of AdamW's two moments.", 0.5: "you left out the optimizer state."},
    )
)

register(
    Exercise(
        id="napkin-two-weeks",
        title="FLOPs of 8 H100s running for two weeks at their dense bf16 peak",
        kind="value",
        expected=8 * 14 * napkin.SECONDS_PER_DAY * 989.5e12,
        rtol=1e-3,
        hint="GPUs × days × seconds per day × dense peak FLOP/s (1979e12 / 2 for bf16).",
        slips={
            0.5: "two weeks are 14 days: this looks like one week.",
            2.0: "use the dense peak (989.5e12): 1979e12 assumes 2:4 sparsity.",
            1 / 8: "there are 8 GPUs.",
        },
    )
)


def _days(params, tokens, num_gpus, peak_flops_per_s, mfu):
    return napkin.training_days(params, tokens, num_gpus=num_gpus, mfu=mfu, peak_flops_per_s=peak_flops_per_s)


register(
    Exercise(
        id="napkin-training-days",
        title="training_days(params, tokens, num_gpus, peak_flops_per_s, mfu)",
        kind="function",
        rtol=1e-6,
        hint="days = 6·params·tokens / (num_gpus · peak · mfu · 86400).",
        slips={1 / 3: "training costs 6 FLOPs per parameter and token, not 2 (that is the forward pass alone).",
               24.0: "a day has 86 400 seconds; did you divide by 3600 (hours)?"},
        cases=tuple(
            Case(args=args, expected=_days(*args), description=desc)
            for args, desc in [
                ((70e9, 15e12, 1024, 989.5e12, 0.5), "the motivating question"),
                ((7e9, 2e12, 64, 312e12, 0.4), "a 7B model on 64 A100s"),
                ((1.5e9, 3e10, 1, 165.2e12, 0.6), "a small model on one RTX 4090"),
                ((405e9, 15.6e12, 16384, 989.5e12, 0.4), "a 405B model on 16k GPUs"),
            ]
        ),
    )
)


def _max_params(memory_bytes, bytes_per_param, num_gpus):
    return napkin.max_trainable_params(memory_bytes, bytes_per_param=bytes_per_param, num_gpus=num_gpus)


register(
    Exercise(
        id="napkin-max-params",
        title="max_params(memory_bytes, bytes_per_param, num_gpus)",
        kind="function",
        hint="total memory of all GPUs divided by the bytes each parameter needs.",
        slips={1 / 8: "the memory of all GPUs counts, not one."},
        cases=tuple(
            Case(args=args, expected=_max_params(*args), description=desc)
            for args, desc in [
                ((80e9, 16, 1), "one 80 GB GPU with AdamW in fp32"),
                ((80e9, 16, 8), "eight 80 GB GPUs"),
                ((141e9, 8, 4), "four 141 GB GPUs with SGD"),
            ]
        ),
    )
)
