"""Eager vs torch.compile on an einsum-heavy function: softmax attention written with einops.

    python benchmarks/bench_einsum_compile.py                      # default device, sizes to suit it
    python benchmarks/bench_einsum_compile.py --device cpu --seq 128
    TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python benchmarks/bench_einsum_compile.py   # a cold compile
    python benchmarks/bench_einsum_compile.py --device cpu --threads 1   # a busy, shared CPU

A script, not a test (chapter 04 runs the same comparison only on a GPU: a first compile on a small
CPU takes longer than a whole chapter may). It prints the first-call time of the compiled function
(tracing + code generation; much shorter when the compiler's on-disk cache is warm), the time per call
of eager (einsum, and the same with matmul and transpose), compiled, and torch's fused
scaled_dot_product_attention (median and IQR from
lectorch.bench.benchmark), the FLOPs of the two einsums and the FLOP/s reached, and checks that all
three agree numerically.
"""

from __future__ import annotations

import argparse
import time

import torch
from einops import einsum
from jaxtyping import Float
from torch import Tensor

import lectorch
from lectorch.bench import achieved_flops_per_s, benchmark, format_seconds
from lectorch.contractions import analyze
from lectorch.device import synchronize
from lectorch.dtypes import as_dtype

SCORES = "batch heads seq1 hidden, batch heads seq2 hidden -> batch heads seq1 seq2"
MIX = "batch heads seq1 seq2, batch heads seq2 hidden -> batch heads seq1 hidden"


# jaxtyping's shapes as aliases: a shape string inside an annotation reads to ruff as a (broken)
# forward reference (F722); in an assignment it is plain data
Seq1 = Float[Tensor, "batch heads seq1 hidden"]
Seq2 = Float[Tensor, "batch heads seq2 hidden"]


def attention(q: Seq1, k: Seq2, v: Seq2) -> Seq1:
    """Softmax attention: two einsums around a scaled softmax (the function of chapter 04)."""
    scores = einsum(q, k, SCORES) / q.shape[-1] ** 0.5
    return einsum(scores.softmax(dim=-1), v, MIX)


def attention_matmul(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """The same with index juggling: what the einsums replace."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.softmax(dim=-1) @ v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 … (default: lectorch.get_device())")
    parser.add_argument("--dtype", default="fp32", help="fp32, bf16, fp16 (default fp32)")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--heads", type=int, default=None)
    parser.add_argument("--seq", type=int, default=None)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (default: torch's choice). On a busy shared machine, "
                             "--threads 1 avoids waiting for a descheduled second thread in every op.")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    device = lectorch.get_device(args.device)
    dtype = as_dtype(args.dtype)
    gpu = device.type == "cuda"
    sizes = {
        "batch": args.batch or (16 if gpu else 4),
        "heads": args.heads or (16 if gpu else 8),
        "seq1": args.seq or (1024 if gpu else 256),
        "hidden": args.hidden,
    }
    sizes["seq2"] = sizes["seq1"]
    flops = analyze(SCORES, sizes).flops + analyze(MIX, sizes).flops
    print(lectorch.describe_device(device))
    print(f"torch {torch.__version__}, dtype {dtype}, sizes {sizes}, {flops:.3g} FLOPs per call (two einsums)")

    lectorch.seed_everything(0)
    shape = (sizes["batch"], sizes["heads"], sizes["seq1"], sizes["hidden"])
    q, k, v = (torch.randn(shape, device=device, dtype=dtype) for _ in range(3))

    compiled = torch.compile(attention)
    t0 = time.perf_counter()
    out_compiled = compiled(q, k, v)
    synchronize(device)
    first_call_s = time.perf_counter() - t0
    out_eager = attention(q, k, v)
    others = [out_compiled, attention_matmul(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v)]
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    agree = all(torch.allclose(other, out_eager, **tol) for other in others)
    diff = (out_compiled - out_eager).abs().max().item()
    print(f"compiled == eager == matmul == sdpa: {agree} (compiled vs eager: max abs difference {diff:.2e})")
    print(f"first compiled call (compilation): {first_call_s:.1f} s")
    if not agree:
        raise SystemExit("compiled and eager results differ")

    timings = {
        "matmul": benchmark(lambda: attention_matmul(q, k, v), device=device, trials=args.trials,
                            label="eager, matmul + transpose"),
        "eager": benchmark(lambda: attention(q, k, v), device=device, trials=args.trials, label="eager, einsum"),
        "compiled": benchmark(lambda: compiled(q, k, v), device=device, trials=args.trials, label="compiled, einsum"),
        "sdpa": benchmark(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v), device=device,
                          trials=args.trials, label="F.scaled_dot_product_attention"),
    }
    for t in timings.values():
        print(f"{t}  ->  {achieved_flops_per_s(flops, t.median_s) / 1e9:.1f} GFLOP/s")
    speedup = timings["eager"].median_s / timings["compiled"].median_s
    print(f"compiled is {speedup:.2f}× the speed of eager "
          f"({format_seconds(timings['eager'].median_s)} -> {format_seconds(timings['compiled'].median_s)} per call)")


if __name__ == "__main__":
    main()
