"""Value and prediction exercises asked as functions of their setting: judged beyond the page's numbers.

For each one: the page's numbers are the public case (sealed; the practice check confirms it) and
the grader judges hidden settings from ``grading/topics/<topic>.py``. Per exercise, at least two
correct forms pass (one in fp32 where it applies, one with other operations), and at least three
wrong variants fail: the page's answer hard-coded (which fails the practice check on its practice
settings, and the grade: brute-forcing the public case yields nothing), classic slips, a library
bypass where one exists, and a value 1 % outside each edge of the stated tolerance, on the public
case and on the hidden ones alike.
"""

from __future__ import annotations

import functools
import math
import random
import re
import struct

import numpy as np
import pytest
import torch

import lectorch
import lectorch.backprop
import lectorch.bench
import lectorch.memory
import lectorch.step_memory
import lectorch.train
import lectorch.contractions
import lectorch.flops
import lectorch.views
import lectorch.transfer
from lectorch import hardware, napkin
from lectorch.transfer import pcie_bytes_per_s
from lectorch.exercises import check, compare, get_exercise, reset_attempts, run_case
from lectorch.exercises.views import COPY_QUIZ

import grading
from grading import expected_values, harness, judge, load_topics
from _practice import practice_answers, practised

TOPICS = load_topics()
PLAIN = expected_values(TOPICS)
_PEAK = hardware.get_gpu("H100 SXM").peak_flops("bf16")


def _f32(x):
    return torch.tensor(x, dtype=torch.float32)


def _bf16_by_shifts(n):
    if n < 256:
        return float(n)
    step = 2 ** (n.bit_length() - 8)
    low, rest = divmod(n, step)
    if 2 * rest > step or (2 * rest == step and low % 2 == 1):
        low += 1
    return float(low * step)


def _bf16_by_struct(n):
    """Round the float32 bit pattern to its top 16 bits, ties to even (as hardware does)."""
    bits = struct.unpack("<I", struct.pack("<f", float(n)))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.unpack("<f", struct.pack("<I", (bits >> 16) << 16))[0]


def _stall_by_loop(step):
    value = 2.0**-20
    while value * 2**-7 / 2 <= step:
        value *= 2
    return value


def _stall_simulated(step):
    total = torch.zeros((), dtype=torch.bfloat16)
    for _ in range(5000):
        total += step
    return total.item()


def gen_rate(gen):
    """A PCIe x16 link's bytes per second in one direction, from its lanes (128b/130b coding)."""
    return 16 * {3: 8e9, 4: 16e9, 5: 32e9}[gen] * 128 / 130 / 8


def _measured_ratio(a, b):
    from lectorch.roofline import measure_matmul

    return measure_matmul(*b, "fp32", "cpu").seconds / measure_matmul(*a, "fp32", "cpu").seconds


def _measured_ckpt_ratio(**model):
    step = lectorch.train.measure_step
    return step(checkpointing=True, trials=1, **model).flops / step(trials=1, **model).flops


def _tied_by_counter(b, d, h):
    from torch.utils.flop_counter import FlopCounterMode

    w = torch.zeros(d, h, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        ((torch.zeros(b, d) @ w) @ w.T).sum().backward()
    return counter.get_total_flops()


# id -> correct forms, wrong variants by name (each must fail the grader, and the practice check
# too unless it is ``right_on_the_page``), and the name of the library bypass among them (refused)
def _copies_by_rules(rows, cols):
    letters = {"j", "k"}  # element-wise ops and triu always write new storage
    if rows > 1 and cols > 1:  # x.T is not contiguous: .contiguous() and .reshape copy
        letters |= {"f", "h"}
    if rows > 1 and cols > 2 and cols % 2:  # x[:, ::2]'s strides (cols, 2) do not merge into one
        letters.add("i")
    return letters


def _copies_by_strides(rows, cols):
    """Other operations: the strides of each result, written out, tested for a view of x."""
    def mergeable(sizes, strides):  # can these dims be read with one stride? (size-1 dims drop out)
        dims = [(n, st) for n, st in zip(sizes, strides) if n != 1]
        return all(dims[k][1] == dims[k + 1][0] * dims[k + 1][1] for k in range(len(dims) - 1))

    transposed = mergeable((cols, rows), (1, cols))
    stepped = mergeable((rows, -(-cols // 2)), (cols, 2))
    out = "jk"
    out += "" if transposed else "fh"
    out += "" if stepped else "i"
    return "".join(sorted(out))


SPECS = {
    "napkin-two-weeks": dict(
        correct=[lambda n, d: n * d * napkin.SECONDS_PER_DAY * _PEAK,
                 lambda n, d: float(_f32(n) * _f32(d) * 24 * 3600 * _f32(989.5e12))],  # fp32
        wrong={"one week": lambda n, d: n * 7 * 86400 * _PEAK,
               "sparse peak": lambda n, d: n * d * 86400 * 2 * _PEAK,
               "hours": lambda n, d: n * d * 24 * _PEAK,
               "library": lambda n, d: napkin.cluster_flops_per_s(num_gpus=n, mfu=1.0) * d * 86400},
        bypass="library"),
    "napkin-8bit-adam-bytes": dict(
        correct=[lambda b: 2 + 2 + 4 + 2 * (1 + 4 / b),
                 lambda b: float(_f32(8.0) + _f32(2.0) + _f32(8.0) / _f32(float(b)))],
        wrong={"no scales": lambda b: 10.0,
               "one moment's scales": lambda b: 10 + 4 / b,
               "no master copy": lambda b: 2 + 2 + 2 * (1 + 4 / b),
               "1-byte scales": lambda b: 10 + 2 / b}),
    "napkin-zero2-params": dict(
        correct=[lambda n, m: m / (2 + 14 / n),
                 lambda n, m: float(_f32(m) * _f32(n) / (_f32(2.0) * n + 14))],
        wrong={"stage 3": lambda n, m: n * m / 16,
               "nothing sharded": lambda n, m: m / 16,
               "only optimizer state sharded": lambda n, m: m / (2 + 2 + 12 / n),
               "library": lambda n, m: napkin.max_trainable_params(m, bytes_per_param=2 + 14 / n)},
        bypass="library"),
    "precision-bf16-257": dict(
        correct=[_bf16_by_shifts, _bf16_by_struct],
        wrong={"truncates": lambda n: float(n >> max(n.bit_length() - 8, 0) << max(n.bit_length() - 8, 0)),
               "ties away from zero": lambda n: float(round(n / 2 ** max(n.bit_length() - 8, 0) + 1e-9)
                                                       * 2 ** max(n.bit_length() - 8, 0)),
               "exact": lambda n: float(n),
               "torch": lambda n: torch.tensor(float(n), dtype=torch.bfloat16).item(),
               "library": lambda n: lectorch.dtypes.round_to(n, "bf16")},
        bypass="library", right_on_the_page=("truncates",)),
    "precision-bf16-stall": dict(
        correct=[_stall_by_loop, lambda step: 2.0 ** math.ceil(math.log2(step * 256) + 1e-12)],
        wrong={"exact sum": lambda step: 1000 * step,
               "one octave early": lambda step: _stall_by_loop(step) / 2,
               "gap, not half a gap": lambda step: _stall_by_loop(step) * 2,
               "simulated in torch": _stall_simulated,
               "library": lambda step: next(2.0**k for k in range(-20, 20)
                                            if lectorch.dtypes.spacing(2.0**k, "bf16") / 2 > step)},
        bypass="library"),
    "device-gpu-bytes": dict(
        correct=[lambda shape, dtype: math.prod(shape) * dtype.itemsize,
                 lambda shape, dtype: functools.reduce(lambda a, b: a * b, shape, 1) * torch.finfo(dtype).bits // 8
                 if dtype.is_floating_point else math.prod(shape) * torch.iinfo(dtype).bits // 8],
        wrong={"bits": lambda shape, dtype: math.prod(shape) * dtype.itemsize * 8,
               "always 4 bytes": lambda shape, dtype: math.prod(shape) * 4,
               "MiB": lambda shape, dtype: math.prod(shape) * dtype.itemsize / 2**20,
               "allocates": lambda shape, dtype: torch.empty(shape, dtype=dtype, device="meta").nbytes,
               "library": lambda shape, dtype: lectorch.memory.tensor_bytes(shape, dtype)},
        bypass="library"),
    "device-h2d-seconds": dict(
        correct=[lambda shape, dtype, gen: math.prod(shape) * dtype.itemsize / pcie_bytes_per_s(gen),
                 # fp32 (numpy: torch is off), the link's rate from its lanes
                 lambda shape, dtype, gen: float(np.float32(math.prod(shape)) * np.float32(dtype.itemsize)
                                                 / np.float32(gen_rate(gen)))],
        wrong={"both directions": lambda shape, dtype, gen: math.prod(shape) * dtype.itemsize / (2 * pcie_bytes_per_s(gen)),
               "bits": lambda shape, dtype, gen: 8 * math.prod(shape) * dtype.itemsize / pcie_bytes_per_s(gen),
               "milliseconds": lambda shape, dtype, gen: 1e3 * math.prod(shape) * dtype.itemsize / pcie_bytes_per_s(gen),
               "always PCIe 5": lambda shape, dtype, gen: math.prod(shape) * dtype.itemsize / pcie_bytes_per_s(5),
               "library": lambda shape, dtype, gen: lectorch.transfer.transfer_seconds(
                   math.prod(shape) * dtype.itemsize, pcie_bytes_per_s(gen))},
        bypass="library", right_on_the_page=("always PCIe 5",)),
    "flops-time-ratio": dict(
        correct=[lambda a, b: math.prod(b) / math.prod(a),
                 lambda a, b: float(np.float32(2 * b[0] * b[1] * b[2]) / np.float32(2 * a[0] * a[1] * a[2]))],
        wrong={"bytes moved": lambda a, b: (b[0] * b[1] + b[1] * b[2] + b[0] * b[2]) / (a[0] * a[1] + a[1] * a[2] + a[0] * a[2]),
               "upside down": lambda a, b: math.prod(a) / math.prod(b),
               "output size": lambda a, b: b[0] * b[2] / (a[0] * a[2]),
               "measured": _measured_ratio},
        bypass="measured", right_on_the_page=("output size",)),
    "backprop-time-ratio": dict(
        correct=[lambda d, n: (2 * (n * d * d + d) - d * d) / (n * d * d + d),
                 lambda d, n: 2 - 1 / n],  # the head neglected: other operations, within ±20 %
        wrong={"as long": lambda d, n: 1.0,
               "counts the forward": lambda d, n: 3 - 1 / n,
               "always 2": lambda d, n: 2.0,
               "library": lambda d, n: lectorch.backprop.cruncher_flops(1, d, n).ratio},
        bypass="library", right_on_the_page=("always 2",)),
    "backprop-tied-flops": dict(
        correct=[lambda b, d, h: 10 * b * d * h,
                 lambda b, d, h: sum(2 * b * d * h for _ in ("x@W", "h@Wt", "dWt", "dh", "dW"))],
        wrong={"6 × tokens × params": lambda b, d, h: 6 * b * d * h,
               "x's gradient too": lambda b, d, h: 12 * b * d * h,
               "forward alone": lambda b, d, h: 4 * b * d * h,
               "library": _tied_by_counter},
        bypass="library"),
    "scale-hfu": dict(
        correct=[lambda p, t, n: 8 * p * t / (n * _PEAK),
                 lambda p, t, n: float(_f32(8.0) * _f32(p) * _f32(t) / (_f32(n) * _f32(989.5e12)))],
        wrong={"MFU": lambda p, t, n: 6 * p * t / (n * _PEAK),
               "sparse peak": lambda p, t, n: 8 * p * t / (n * 2 * _PEAK),
               "one GPU": lambda p, t, n: 8 * p * t / _PEAK,
               "library": lambda p, t, n: lectorch.bench.mfu(8 * p * t, 1.0, n * _PEAK)},
        bypass="library"),
    "scale-int4-bytes": dict(
        correct=[lambda p, g: p * (4 + 32 / g) / 8,
                 lambda p, g: float(_f32(p) / 2 + _f32(p) / g * 4)],  # fp32, half a byte + 4 bytes a group
        wrong={"no zero point": lambda p, g: p * (4 + 16 / g) / 8,
               "no group data": lambda p, g: p * 4 / 8,
               "bits": lambda p, g: p * (4 + 32 / g),
               "always groups of 64": lambda p, g: p * 4.5 / 8},
        right_on_the_page=("always groups of 64",)),
    "init-relu-depth": dict(
        correct=[lambda b: 2 ** (-b / 2), lambda b: math.sqrt(0.5) ** b,
                 lambda b: float(np.sqrt(np.float32(0.5) ** b))],  # fp32
        wrong={"no ReLU effect": lambda b: 1.0,
               "halves the std": lambda b: 0.5 ** b,
               "one ReLU fewer": lambda b: 2 ** (-(b - 1) / 2),
               "simulated": lambda b: _relu_stack_simulated(b)},
        bypass="simulated"),
    "init-variant-params": dict(
        correct=[lambda d, n, o: n * (d * d + d) + d * o + o,
                 lambda d, n, o: sum(d_in * d_out + d_out for d_in, d_out in [(d, d)] * n + [(d, o)])],
        wrong={"plain Cruncher": lambda d, n, o: n * d * d + d,
               "head without biases": lambda d, n, o: n * (d * d + d) + d * o,
               "one output": lambda d, n, o: n * (d * d + d) + d + 1,
               "built": lambda d, n, o: sum(p.numel() for p in torch.nn.Linear(d, o).parameters()) + n * (d * d + d)},
        bypass="built", right_on_the_page=()),
    "train-ckpt-size": dict(
        correct=[lambda v, d, n: 12 * (2 * v * d + 8 * d * d * n),
                 lambda v, d, n: sum(3 * 4 * k for k in [v * d, v * d] + [8 * d * d] * n)],
        wrong={"with gradients": lambda v, d, n: 16 * (2 * v * d + 8 * d * d * n),
               "weights only": lambda v, d, n: 4 * (2 * v * d + 8 * d * d * n),
               "in elements": lambda v, d, n: 3 * (2 * v * d + 8 * d * d * n),
               "built": lambda v, d, n: 12 * (2 * torch.nn.Embedding(v, d).weight.numel() + 8 * d * d * n)},
        bypass="built"),
    "optim-step-peak": dict(
        correct=[lambda d, n, b: 4 * ((d * d * n + d) + (b * d + b) + (n + 1) * b * d + d + d * d),
                 # fp32 (numpy: torch is off), the B×D tensors and the rest counted apart
                 lambda d, n, b: float(np.float32(4) * (np.float32(b * d) * (n + 2) + np.float32(d * d * (n + 1))
                                                        + 2 * d + b))],
        wrong={"all at once": lambda d, n, b: 4 * ((d * d * n + d) * 2 + (b * d + b) + n * b * d),
               "elements": lambda d, n, b: (d * d * n + d) + (b * d + b) + (n + 1) * b * d + d + d * d,
               "resting only": lambda d, n, b: 4 * ((d * d * n + d) + (b * d + b)),
               "always two layers": lambda d, n, b: 4 * ((d * d * 2 + d) + (b * d + b) + 3 * b * d + d + d * d),
               "library": lambda d, n, b: lectorch.step_memory.step_timeline(d, n, b, optimizer="sgd").peak},
        bypass="library", right_on_the_page=("always two layers",)),
    "scale-ckpt-time": dict(
        correct=[lambda b, t, d, n, v: 1 + n * (2 * b * t * d * 4 * d) / (3 * (2 * n * 2 * b * t * d * 4 * d + 2 * b * t * d * v)),
                 # fp32 (numpy: torch is off), per token: the batch and the context cancel
                 lambda b, t, d, n, v: float(np.float32(1) + np.float32(4 * n * d) / np.float32(3 * (8 * n * d + v)))],
        wrong={"whole blocks recomputed": lambda b, t, d, n, v: 1 + 2 * n * 8 * d * d / (3 * (16 * n * d * d + 2 * d * v)),
               "head left out": lambda b, t, d, n, v: 1 + 1 / 6,
               "forward only": lambda b, t, d, n, v: 1 + 4 * n * d / (8 * n * d + v),
               "always the page's model": lambda b, t, d, n, v: 1 + 4 * 2 * 64 / (3 * (8 * 2 * 64 + 2048)),
               "library": lambda b, t, d, n, v: _measured_ckpt_ratio(batch_size=b, context_length=t, dim=d,
                                                                     num_layers=n, vocab_size=v)},
        bypass="library", right_on_the_page=("always the page's model",)),
    "einsum-summed-dims": dict(
        correct=[lambda p: set(p.split("->")[0].replace(",", " ").split()) - set(p.split("->")[1].split()),
                 lambda p: " ".join(d for d in dict.fromkeys(re.findall(r"\w+", p.split("->")[0]))
                                    if d not in re.findall(r"\w+", p.split("->")[1]))],
        wrong={"kept": lambda p: p.split("->")[1],
               "shared": lambda p: set.intersection(*[set(o.split()) for o in p.split("->")[0].split(",")]),
               "in one operand only": lambda p: set.symmetric_difference(*[set(o.split()) for o in p.split("->")[0].split(",")]),
               "library": lambda p: set(lectorch.contractions.parse_pattern(p).dims)
               - set(lectorch.contractions.parse_pattern(p).output)},
        bypass="library"),
    "einsum-layer-crossover": dict(
        correct=[lambda h, H, kv, hd, m: h * (H * hd + kv * hd + 1.5 * m) / (H * hd),
                 # fp32 (numpy: torch is off), FLOPs per token of each side
                 lambda h, H, kv, hd, m: float((np.float32(4 * h * H * hd) + np.float32(4 * h * kv * hd)
                                                + np.float32(6 * h * m)) / np.float32(4 * H * hd))],
        wrong={"full K/V": lambda h, H, kv, hd, m: h * (2 * H * hd + 1.5 * m) / (H * hd),
               "two MLP matrices": lambda h, H, kv, hd, m: h * (H * hd + kv * hd + m) / (H * hd),
               "scores per key/value head": lambda h, H, kv, hd, m: h * (H * hd + kv * hd + 1.5 * m) / (kv * hd),
               "heads × head_dim is hidden": lambda h, H, kv, hd, m: h * (h + kv * hd + 1.5 * m) / h,
               "library": lambda h, H, kv, hd, m: lectorch.flops.count_flops(lambda: None).total},
        bypass="library", right_on_the_page=("heads × head_dim is hidden",)),
    "views-storage-index": dict(
        correct=[lambda shape, r, c, k, i, j: (r * shape[1] + c) + i * shape[1] + j * k,
                 lambda shape, r, c, k, i, j: (r + i) * shape[1] + (c + j * k)],  # x's own row and column
        wrong={"no offset": lambda shape, r, c, k, i, j: i * shape[1] + j * k,
               "step forgotten": lambda shape, r, c, k, i, j: (r * shape[1] + c) + i * shape[1] + j,
               "rows of the other length": lambda shape, r, c, k, i, j: (r * shape[0] + c) + i * shape[0] + j * k,
               "indices swapped": lambda shape, r, c, k, i, j: (r * shape[1] + c) + j * shape[1] + i * k,
               "library": lambda shape, r, c, k, i, j: lectorch.views.element_offset(
                   (i, j), (shape[1], k), r * shape[1] + c)},
        bypass="library"),
    "views-which-copy": dict(
        correct=[_copies_by_rules, _copies_by_strides],
        wrong={"always the 4×4 letters": lambda rows, cols: "fhjk",
               "size-1 dims ignored": lambda rows, cols: "fhjk" + ("i" if cols % 2 else ""),
               "a stepped slice always copies": lambda rows, cols: "jk" + ("fhi" if rows > 1 and cols > 1 else ""),
               "library": lambda rows, cols: "".join(
                   k for k, (_, op) in COPY_QUIZ.items()
                   if not lectorch.views.shares_storage(torch.arange(float(rows * cols)).view(rows, cols),
                                                        op(torch.arange(float(rows * cols)).view(rows, cols))))},
        bypass="library", right_on_the_page=("always the 4×4 letters", "size-1 dims ignored")),
    "views-permute-slice": dict(
        correct=[lambda shape: ((2, shape[2] * shape[3], shape[1] * shape[2] * shape[3]), shape[2] * shape[3] + shape[3]),
                 lambda shape: (lambda st: ([2 * st[3], st[1], st[0]], st[1] + st[2]))(
                     [math.prod(shape[k + 1:]) for k in range(4)])],  # a list, from the products
        wrong={"fresh strides": lambda shape: ((shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3]), 0),
               "no step": lambda shape: ((1, shape[2] * shape[3], shape[1] * shape[2] * shape[3]),
                                         shape[2] * shape[3] + shape[3]),
               "no offset": lambda shape: ((2, shape[2] * shape[3], shape[1] * shape[2] * shape[3]), 0),
               "index's offset only": lambda shape: ((2, shape[2] * shape[3], shape[1] * shape[2] * shape[3]), shape[3]),
               "library": lambda shape: (lambda st: ((2 * st[3], st[1], st[0]), st[1] + st[2]))(
                   lectorch.views.contiguous_strides(shape))},
        bypass="library"),
}


def _relu_stack_simulated(blocks, width=256):
    g = torch.Generator().manual_seed(0)
    h = torch.randn(64, width, generator=g)
    for _ in range(blocks):
        h = torch.relu(h @ (torch.randn(width, width, generator=g) / width**0.5))
    return (h @ (torch.randn(width, width, generator=g) / width**0.5)).std().item()


def hidden(ex_id, seed=0):
    return grading.hidden_cases(TOPICS, ex_id, grading.grading_rng(seed, ex_id))


@functools.lru_cache(maxsize=None)
def _entry(ex_id, seed):
    return grading.build_bundle(seed, exercise_ids=[ex_id])["exercises"][ex_id]


def _graded(ex_id, fn, seed=0):
    """(status, message) of ``fn`` as the grader decides it: the bundle's cases are called as the
    sandbox's kernel does (harness._call with the exercise's refusals), then judged."""
    from lectorch.exercises import refusals

    entry = _entry(ex_id, seed)
    refuse = refusals().get(ex_id)
    results = [harness._call(fn, harness.from_inputs(c["args"]), harness.from_inputs(c["kwargs"]), 0, refuse)
               for c in entry["cases"]]
    record = {"found": True, "callable": True, "value": None, "cases": results}
    return judge.judge(get_exercise(ex_id), entry, record, "answer")


def _scaled(fn, factor):
    return lambda *a: fn(*a) * factor


@pytest.fixture(autouse=True)
def _fresh():
    reset_attempts()


@pytest.mark.parametrize("ex_id", SPECS)
def test_correct_forms_pass_the_public_and_the_hidden_cases(ex_id):
    ex = get_exercise(ex_id)
    assert ex.takes_function and len(SPECS[ex_id]["correct"]) >= 2
    cases = hidden(ex_id, 0) + hidden(ex_id, 1)
    assert len(cases) >= 3
    for fn in SPECS[ex_id]["correct"]:
        assert check(ex_id, fn).passed, check(ex_id, fn)
        for case in cases:
            got = run_case(fn, case, ex)
            assert got[0] == "returned" and compare(ex, got[1], case.expected) is None, (case, got)
        assert _graded(ex_id, fn) == ("passed", f"Correct: {ex.title} ({len(hidden(ex_id)) + 1} cases pass).")


@pytest.mark.parametrize("ex_id", SPECS)
def test_wrong_variants_fail(ex_id):
    spec = SPECS[ex_id]
    assert len(spec["wrong"]) >= 3
    for name, fn in spec["wrong"].items():
        result = check(ex_id, fn)
        # a mistake that happens to give the page's answer fails on the hidden cases only
        assert not result.passed or name in spec.get("right_on_the_page", ()), (name, result)
        status, message = _graded(ex_id, fn)
        assert status in ("failed", "error"), (name, status, message)
        if name == spec.get("bypass"):
            refused = ("yourself", "without creating a tensor")
            assert any(r in result.message for r in refused) and any(r in message for r in refused), (result, message)


@pytest.mark.parametrize("ex_id", SPECS)
def test_the_pages_answer_hard_coded_fails_practice_and_grade(ex_id):
    public = PLAIN[ex_id]
    # the practice check confirms the page's answer, and refuses it at the practice settings
    assert check(ex_id, practised(ex_id, public)).passed
    practice = practice_answers(ex_id)
    if practice and any(v != public for v in practice.values()):
        assert not check(ex_id, lambda *a: public).passed
    status, message = _graded(ex_id, lambda *a: public)
    assert status == "failed" and "hidden" in message, message
    shown = message.replace(repr(public), "")  # the student's own value may be shown, never the expected
    assert not any(repr(c.expected) in shown for c in hidden(ex_id)
                   if len(repr(c.expected).replace(".", "").strip("0")) >= 3)


@pytest.mark.parametrize("ex_id", [k for k in SPECS if isinstance(PLAIN[k], (int, float))])  # numbers
def test_one_percent_outside_each_edge_fails_inside_passes(ex_id):
    ex = get_exercise(ex_id)
    rtol, _ = ex.tolerance
    fn = SPECS[ex_id]["correct"][0]
    public = PLAIN[ex_id]  # the page's answer (a formula may differ from it within the tolerance)
    for factor in ((1 + rtol) * 1.01, (1 - rtol) * 0.99):
        assert not check(ex_id, practised(ex_id, public * factor)).passed, factor
        for case in hidden(ex_id):
            assert compare(ex, _scaled(fn, factor)(*case.args), case.expected) is not None, (case, factor)
    for factor in (1 + 0.75 * rtol, 1 - 0.75 * rtol):
        assert check(ex_id, practised(ex_id, public * factor)).passed, factor
        for case in hidden(ex_id):
            assert compare(get_exercise(ex_id), _scaled(fn, factor)(*case.args), case.expected) is None, factor


def test_feedback_on_the_public_case_names_its_slip_and_none_on_hidden_ones():
    slip = check("napkin-two-weeks", SPECS["napkin-two-weeks"]["wrong"]["one week"])
    assert "one week instead of two" in slip.message
    status, message = _graded("napkin-two-weeks", lambda n, d: n * d * 86400 * _PEAK / 3)
    assert status == "failed" and "not within ±1 % of the answer" in message and "not right" not in message
    assert "factor of" not in message
    assert "0 is not the answer" in check("napkin-zero2-params", lambda n, m: 0).message


def test_a_number_where_a_function_is_asked_says_so():
    result = check("napkin-two-weeks", 9.6e21)
    assert result.status == "failed" and "function of the setting" in result.message


def test_rounded_answers_at_the_pages_precision_pass():
    assert check("napkin-two-weeks", practised("napkin-two-weeks", 9.6e21)).passed  # the page's rounding of 9.58e21
    assert check("napkin-zero2-params", practised("napkin-zero2-params", 3.6e10)).passed
    assert check("napkin-8bit-adam-bytes", practised("napkin-8bit-adam-bytes", 10.03)).passed
    # the slip: no block scales
    assert not check("napkin-8bit-adam-bytes", practised("napkin-8bit-adam-bytes", 10.0)).passed


def test_library_functions_are_refused_only_where_they_do_the_exercise():
    # the catalogue's peak is the data the exercise asks for: allowed
    assert check("napkin-two-weeks", lambda n, d: n * d * 86400 * lectorch.hardware.get_gpu("H100 SXM").peak_flops("bf16")).passed


def test_hidden_cases_differ_between_seeds_and_from_the_public_case():
    for ex_id in SPECS:
        public = get_exercise(ex_id).cases[0].args
        a, b = [c.args for c in hidden(ex_id, 1)], [c.args for c in hidden(ex_id, 2)]
        assert a != b and public not in a, ex_id
        kind = (int, float) if isinstance(PLAIN[ex_id], (int, float)) else type(PLAIN[ex_id])
        assert all(isinstance(c.expected, kind) for c in hidden(ex_id, 1)), ex_id


def test_hidden_cases_are_deterministic_per_seed():
    rng1, rng2 = random.Random("7:x"), random.Random("7:x")
    assert [c.args for c in TOPICS["napkin"].hidden["napkin-zero2-params"](rng1)] == \
           [c.args for c in TOPICS["napkin"].hidden["napkin-zero2-params"](rng2)]


@pytest.mark.slow
def test_a_prediction_function_is_graded_on_hidden_settings_through_the_sandbox(tmp_path):
    """End to end (the grader's sandbox and kernel): a prediction written as a function of its
    setting passes; the page's answer hard-coded, which the practice check accepts, fails."""
    import nbformat

    from grading import grade

    bundle = grading.write_bundle(grading.build_bundle(99, exercise_ids=["device-h2d-seconds"]), tmp_path / "b.pt")
    setup = "import math\nimport torch\nimport lectorch\nfrom lectorch.transfer import pcie_bytes_per_s\n"
    answers = {
        "honest": "def h2d_seconds(shape, dtype, gen):\n    return math.prod(shape) * dtype.itemsize / pcie_bytes_per_s(gen)",
        "public-only": f"def h2d_seconds(shape, dtype, gen):\n    return {PLAIN['device-h2d-seconds']!r}",
    }
    for who, answer in answers.items():
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup + answer),
                                             nbformat.v4.new_code_cell('lectorch.check("device-h2d-seconds", h2d_seconds)')])
        (tmp_path / "subs" / who).mkdir(parents=True)
        nbformat.write(nb, tmp_path / "subs" / who / "02_device.ipynb")
    report = grade.grade_folder(tmp_path / "subs", bundle=bundle, timeout_s=120)
    status = {g.submission: (g.status, g.message) for g in report.grades if g.exercise == "device-h2d-seconds"}
    assert status["honest"][0] == "passed", grade.table(report)
    assert status["public-only"][0] == "failed" and "hidden" in status["public-only"][1], grade.table(report)
