"""The matrix of the function exercises: per exercise at least two correct
forms are accepted (one in float32 where it applies, one with other operations than the reference)
and at least three wrong variants are refused (a library bypass where one exists and, for a number
with a tolerance, a value 1 % outside each edge), by the practice check on the public cases AND by
the grader's plain comparison on the hidden cases.

Most forms come from tests/_answers/ (the per-topic tests use them too); this file adds the
missing ones and runs them all the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import struct
import os
import random
import statistics
import tempfile

import pytest
import torch

import grading
from grading.case_seals import references
from lectorch.dtypes import bytes_per_element
from lectorch.exercises import check, compare, exercises, get_exercise, reset_attempts, run_case
from lectorch.exercises import seal as sealed_cases

CASES = sealed_cases.stored_data()["cases"]

from _answers import backprop as tb  # noqa: E402
from _answers import device as td  # noqa: E402
from _answers import einsum as te  # noqa: E402
from _answers import flops as tf  # noqa: E402
from _answers import init as ti  # noqa: E402
from _answers import optim as to  # noqa: E402
from _answers import precision as tp  # noqa: E402
from _answers import scale as ts  # noqa: E402
from _answers import train as tt  # noqa: E402
from _answers import views as tv  # noqa: E402
from lectorch.exercises.optim import optimizer_trainer  # noqa: E402
from grading.topics.device import time_copy  # noqa: E402
from grading.topics.precision import log_softmax  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_thread():  # tiny tensors: a thread pool only costs time (and shared cores thrash)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.lru_cache(maxsize=None)
def _hidden(ex_id: str) -> list:
    topic = ex_id.split("-", 1)[0]
    rng = random.Random(f"matrix:{ex_id}")
    return grading.hidden_cases({topic: grading.load_topics()[topic]}, ex_id, rng)


def graded(ex_id: str, answer) -> bool:
    """True when every hidden case passes the grader's plain comparison."""
    ex = get_exercise(ex_id)
    for case in _hidden(ex_id):
        outcome, got = run_case(answer, case, ex)
        if outcome != "returned" or compare(ex, got, case.expected) is not None:
            return False
    return True


def practised(ex_id: str, answer) -> bool:
    reset_attempts(ex_id)
    return check(ex_id, answer).passed


# ------------------------------------------------------------------ forms this file adds

F32 = torch.float32


def gpus_needed(params, tokens, days, peak, mfu):
    return max(1, math.ceil(6 * params * tokens / (peak * mfu) / 86400 / days))


def gpus_needed_integer_ceil(params, tokens, days, peak, mfu):  # another rounding: -(-a // b)
    need, per_gpu = 6 * params * tokens, peak * mfu * days * 86400
    return max(1, int(-(-need // per_gpu)))


def tensor_nbytes(shape, dtype):
    return math.prod(shape) * dtype.itemsize


def tensor_nbytes_loop(shape, dtype):
    n = 1
    for size in shape:
        n *= size
    return n * dtype.itemsize


def log_softmax_f64(x):  # other operations: float64, logsumexp written out, cast at the end
    x = x.double()
    m = x.max(dim=-1, keepdim=True).values
    return (x - (m + (x - m).exp().sum(dim=-1, keepdim=True).log())).float()


def readings_by_steps(events):  # another rounding of the 512-byte blocks
    sizes, now, peak = {}, 0, 0
    for event in events:
        if event[0] == "alloc":
            _, name, shape, dtype = event
            nbytes = math.prod(shape) * bytes_per_element(dtype)
            sizes[name] = 512 * math.ceil(nbytes / 512)
            now += sizes[name]
            peak = max(peak, now)
        else:
            now -= sizes.pop(event[1])
    return now, peak


def per_copy_synced_median(copy, synchronize, clock, repeats=10):
    copy()
    synchronize()
    times = []
    for _ in range(repeats):
        start = clock()
        copy()
        synchronize()
        times.append(clock() - start)
    return statistics.median(times)


def _scaled(fn, factor):
    def run(*args, **kwargs):
        return fn(*args, **kwargs) * factor
    run.__name__ = f"{fn.__name__}_x{factor}"
    return run


def strides_accumulate(shape, dim0, dim1):
    import itertools

    strides = list(itertools.accumulate(reversed((1,) + tuple(shape[:0:-1])), lambda a, b: a * b))[::-1] \
        if shape else []
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    d0, d1 = dim0 % len(shape), dim1 % len(shape)
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return tuple(strides)


def merge_heads_cat(x):
    return torch.cat([x[:, h] for h in range(x.shape[1])], dim=-1)


def gqa_repeat_f64(q, k):  # other operations: repeat_interleave and a float64 matmul
    group = q.shape[1] // k.shape[1]
    kk = k.double().repeat_interleave(group, dim=1)
    return (q.double() @ kk.transpose(-2, -1) / math.sqrt(q.shape[-1])).float()


def center_by_sum(x):
    return x - x.sum(dim=-1, keepdim=True) / x.shape[-1]


def mfu_f32(B, D, K, seconds, peak):
    t = torch.tensor([2.0 * B * D * K, seconds, peak], dtype=F32)
    return float(t[0] / t[1] / t[2])


def smallest_n_loop(peak, bandwidth, bytes_per_element):
    ridge, n = peak / bandwidth, 1
    while 2 * n / (3 * bytes_per_element) < ridge:
        n += max(1, int((ridge * 3 * bytes_per_element / 2 - n) // 2))
    return n


def min_of_trials(fn, sync, clock, warmup=3, trials=9):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(trials):
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return min(times)


def backward_flops_by_layers(batch, widths, input_requires_grad=False):
    pairs = list(zip(widths[:-1], widths[1:]))
    weights = sum(2 * batch * i * o for i, o in pairs)
    inputs = sum(2 * batch * i * o for k, (i, o) in enumerate(pairs) if k or input_requires_grad)
    return weights + inputs


def skip_grads_einsum(x, w1, w2):
    z = torch.einsum("bd,de->be", x, w1)
    a = z.clamp(min=0)
    s = a + x
    g_out = torch.ones(x.shape[0], w2.shape[1], dtype=x.dtype)
    g_w2 = torch.einsum("bd,bk->dk", s, g_out)
    g_s = torch.einsum("bk,dk->bd", g_out, w2)
    g_z = g_s * (z > 0)
    return torch.einsum("bd,be->de", x, g_z), g_w2


def leaky_std(fan_in, slope):
    return math.sqrt(2 / ((1 + slope**2) * fan_in))


def _f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def leaky_std_f32(fan_in, slope):  # the formula in float32 arithmetic (rounded after each step), no tensors
    s = _f32(slope)
    return _f32(math.sqrt(_f32(2.0 / _f32(_f32(1 + _f32(s * s)) * fan_in))))


def adamw_step_f32(param, grad, m, v, step, *, lr, betas, eps, weight_decay):  # in float32, written out
    b1, b2 = betas
    param, grad, m, v = param.float(), grad.float(), m.float(), v.float()
    m, v = b1 * m + (1 - b1) * grad, b2 * v + (1 - b2) * grad.square()
    update = (m / (1 - b1**step)) / ((v / (1 - b2**step)).sqrt() + eps)
    return tuple(t.double() for t in (param * (1 - lr * weight_decay) - lr * update, m, v))


def adamw_bypass(param, grad, m, v, step, *, lr, betas, eps, weight_decay):
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    p.grad = grad
    opt.step()
    return p.detach(), opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]


def clip_f32(grads, max_norm):  # in float32, written out
    grads = [g.float() for g in grads]
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return [(g * scale).double() for g in grads], norm


def clip_bypass(grads, max_norm):
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad for p in params], float(norm)


class _RMSpropSubclass(torch.optim.RMSprop):
    pass


def get_batch_unfold(data, batch_size, context_length, device, generator=None):
    if context_length >= len(data):
        raise ValueError("context_length must be shorter than the data")
    starts = torch.randint(len(data) - context_length, (batch_size,), generator=generator)
    windows = data.long().unfold(0, context_length + 1, 1)[starts]
    return windows[:, :-1].to(device), windows[:, 1:].to(device)


def get_batch_bypass(data, batch_size, context_length, device, generator=None):
    from lectorch.data import get_batch

    return get_batch(data, batch_size, context_length, device, generator=generator)


def lr_at_torch_f32(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = torch.tensor((step - warmup_steps) / (total_steps - warmup_steps), dtype=F32)
    return float(min_lr + (max_lr - min_lr) * 0.5 * (1 + torch.cos(torch.pi * progress)))


def lr_bypass(step, max_lr, min_lr, warmup_steps, total_steps):
    from lectorch.train import cosine_lr

    return cosine_lr(step, max_lr, min_lr, warmup_steps, total_steps)


def _lr_shifted(sign):
    def run(step, max_lr, min_lr, warmup_steps, total_steps):  # 1 % outside the edge (8 ulps of max_lr)
        return tt.lr_at(step, max_lr, min_lr, warmup_steps, total_steps) + sign * 1.01 * 8 * 2.0**-23 * max_lr
    run.__name__ = f"lr_shifted_{'up' if sign > 0 else 'down'}"
    return run


def accumulated_by_concatenation(weight, micro_batches, accumulation, lr=0.1):
    w = weight.clone()
    for k in range(len(micro_batches) // accumulation):
        group = micro_batches[k * accumulation:(k + 1) * accumulation]
        x, y = torch.cat([b[0] for b in group]), torch.cat([b[1] for b in group])
        w.requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(x @ w.T, y)
        (g,) = torch.autograd.grad(loss, w)
        w = (w - lr * g).detach()
    return w


def accumulated_by_hand(weight, micro_batches, accumulation, lr=0.1):
    """train-accumulate written another way: one torch.autograd.grad per micro-batch, the group's
    gradients summed by hand, a plain SGD update."""
    w = weight.clone()
    for k in range(len(micro_batches) // accumulation):
        total = torch.zeros_like(w)
        for x, y in micro_batches[k * accumulation:(k + 1) * accumulation]:
            w.requires_grad_(True)
            (g,) = torch.autograd.grad(torch.nn.functional.cross_entropy(x @ w.T, y) / accumulation, w)
            total += g
            w = w.detach()
        w = (w - lr * total).detach()
    return w


def resumable_by_replay(tokens, num_steps, crash_at=None):
    """train-resume fixed with other operations: a real checkpoint file, the data order replayed from
    the rebuilt generator (its draws counted, not its state saved)."""
    return resumable_in_memory(tokens, num_steps, crash_at, to_file=True)


def fixed_by_rejection(weight, generator=None):
    """init-fix-trunc written another way: standard normal draws, those beyond ±3 redrawn until
    none is left, then scaled by 1/sqrt(fan_in) (no trunc_normal_)."""
    std = 1 / math.sqrt(weight.shape[0])
    with torch.no_grad():
        z = torch.randn(weight.shape, generator=generator)
        outside = z.abs() > 3
        while outside.any():
            z[outside] = torch.randn(int(outside.sum()), generator=generator)
            outside = z.abs() > 3
        weight.copy_(z * std)
    return weight


def resumable_in_memory(tokens, num_steps, crash_at=None, to_file=False):
    """train-resume with the right numbers but no checkpoint that survives a crash: a deep copy held
    in memory (no torch.save/load), the data order replayed from a fresh generator (its draws
    counted, not its state saved), dropout's global generator saved through torch.random."""
    import copy

    import torch.nn.functional as F

    def fresh_run():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 64))
        return model, torch.optim.AdamW(model.parameters(), lr=1e-2), torch.Generator().manual_seed(1)

    store = {}
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")

    def save(model, optimizer, step, losses):
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "rng": torch.random.get_rng_state(), "step": step, "losses": list(losses)}
        if to_file:
            torch.save(state, path)
        else:
            store.update(copy.deepcopy(state))

    def load(model, optimizer, order):
        if to_file:
            store.update(torch.load(path, weights_only=True))
        model.load_state_dict(store["model"])
        optimizer.load_state_dict(store["optimizer"])
        torch.random.set_rng_state(store["rng"])
        for _ in range(store["step"]):  # the same draws again: the order generator is where it was
            torch.randint(len(tokens) - 16, (8,), generator=order)
        return store["step"], list(store["losses"])

    model, optimizer, order = fresh_run()
    step, losses = 0, []
    while step < num_steps:
        if step == crash_at:
            save(model, optimizer, step, losses)
            model, optimizer, order = fresh_run()
            step, losses = load(model, optimizer, order)
            crash_at = None
        starts = torch.randint(len(tokens) - 16, (8,), generator=order)
        x = torch.stack([tokens[s:s + 16] for s in starts])
        y = torch.stack([tokens[s + 1:s + 17] for s in starts])
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        step += 1
    return losses, model[2].weight.detach()


def saved_bytes_bypass(b, t, d, n, v, checkpointing=False):
    from lectorch.train import predicted_saved_bytes

    return predicted_saved_bytes(b, t, d, n, v, checkpointing=checkpointing)


def saved_bytes_by_parts(b, t, d, n, v, checkpointing=False):  # the same count, added another way
    per_layer = b * t * d * (1 if checkpointing else 9) * 4
    return n * per_layer + 4 * b * t * (d + v) + 16 * b * t + 4


# ------------------------------------------------------------------ the matrix

MATRIX = {
    "napkin-gpus-needed": ([gpus_needed, gpus_needed_integer_ceil], [
        lambda p, t, d, pk, m: max(1, round(6 * p * t / (pk * m) / 86400 / d)),
        lambda p, t, d, pk, m: max(1, math.floor(6 * p * t / (pk * m) / 86400 / d)),
        lambda p, t, d, pk, m: max(1, math.ceil(2 * p * t / (pk * m) / 86400 / d)),
        lambda p, t, d, pk, m: __import__("lectorch").napkin.training_days(p, t, num_gpus=1, mfu=m, peak_flops_per_s=pk)]),
    "precision-tensor-bytes": ([tensor_nbytes, tensor_nbytes_loop], [
        lambda s, d: math.prod(s) * d.itemsize * 8,
        lambda s, d: torch.empty(s, dtype=d, device="meta").nbytes,
        lambda s, d: __import__("lectorch").memory.tensor_bytes(torch.Size(s), d),
        lambda s, d: math.prod(s or (0,)) * d.itemsize]),
    "precision-log-softmax": ([log_softmax, log_softmax_f64], [
        lambda x: torch.log_softmax(x.float(), -1), tp.no_max, tp.bf16_throughout, tp.wrong_dim]),
    "device-allocated-peak": ([td.honest_readings, readings_by_steps], [td.unrounded, td.peak_is_final, td.frees_ignored]),
    "device-timing-debug": ([time_copy, per_copy_synced_median], [
        td.no_warm_up, td.no_final_sync, td.no_sync_before_start,
        _scaled(time_copy, 1.01), _scaled(time_copy, 0.99)]),
    "views-transpose-strides": ([tv.transposed_strides, strides_accumulate], [
        lambda shape, d0, d1: tuple(torch.empty(shape).transpose(d0, d1).stride()),
        lambda shape, d0, d1: tuple(math.prod(shape[i + 1:]) for i in range(len(shape))),
        lambda shape, d0, d1: tuple(reversed(tv.transposed_strides(shape, d0, d1)))]),
    "views-merge-heads": ([tv.merge_heads, merge_heads_cat], [
        tv.merge_heads_buggy, lambda x: x.reshape(x.shape[0], x.shape[2], -1),
        lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1)]),
    "einsum-gqa-scores": ([te.gqa_scores, gqa_repeat_f64], [
        lambda q, k: q @ k.repeat(1, q.shape[1] // k.shape[1], 1, 1).transpose(-2, -1) / math.sqrt(q.shape[-1]),
        lambda q, k: te.gqa_scores(q, k) * q.shape[-1] ** 0.5,
        lambda q, k: __import__("lectorch").backprop.attention(q, k, k),
        lambda q, k: te.gqa_scores(q, k).transpose(-2, -1)]),
    "einsum-center-tokens": ([te.center, center_by_sum], [
        te.center_buggy, lambda x: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True),
        lambda x: x - x.mean(1, keepdim=True)]),
    "flops-mfu-from-time": ([tf.matmul_mfu, mfu_f32], [
        lambda B, D, K, s, p: B * D * K / s / p,
        lambda B, D, K, s, p: __import__("lectorch").bench.mfu(2 * B * D * K, s, p),
        _scaled(tf.matmul_mfu, 1 + 1.01e-6), _scaled(tf.matmul_mfu, 1 - 1.01e-6)]),
    "flops-compute-bound-n": ([tf.smallest_compute_bound_n, smallest_n_loop], [
        lambda p, bw, b: math.floor(1.5 * b * p / bw), lambda p, bw, b: math.ceil(3 * b * p / bw),
        lambda p, bw, b: __import__("lectorch").roofline.matmul_intensity(1, 1, 1, "fp32")]),
    "flops-honest-timer": ([tf.time_call, min_of_trials], [
        tf.time_call_stub, tf.synced_mean, tf.cold_median, _scaled(tf.time_call, 1.01), _scaled(tf.time_call, 0.99)]),
    "backprop-mlp-backward": ([tb.backward_flops, backward_flops_by_layers], [
        lambda b, w, input_requires_grad=False: tb.forward_flops(b, w),
        lambda b, w, input_requires_grad=False: tb.backward_flops(b, w, True),
        lambda b, w, input_requires_grad=False: __import__("lectorch").backprop.mlp_flops(
            b, w, input_requires_grad=input_requires_grad).backward]),
    "backprop-skip-grads": ([tb.skip_grads, skip_grads_einsum], [tb.no_relu_mask, tb.mask_at_zero_is_one, tb.swapped]),
    "init-fix-trunc": ([ti.fixed, fixed_by_rejection], [ti.absolute_bounds, ti.wrong_axis, ti.two_std]),
    "init-leaky-std": ([leaky_std, leaky_std_f32], [
        lambda f, s: 2 / ((1 + s**2) * f), lambda f, s: torch.nn.init.calculate_gain("leaky_relu", s) / math.sqrt(f),
        _scaled(leaky_std, 1 + 1.01e-6), _scaled(leaky_std, 1 - 1.01e-6)]),
    "optim-rmsprop": ([optimizer_trainer(to.RMSProp), optimizer_trainer(to.OutOfPlaceRMSProp)], [
        optimizer_trainer(_RMSpropSubclass), optimizer_trainer(to.NoEps), optimizer_trainer(to.SumNotAverage)]),
    "optim-adamw-step": ([to.adamw_step, adamw_step_f32], [adamw_bypass, to.no_bias_correction, to.eps_inside_the_root]),
    "optim-clip-grad-norm": ([to.clip_by_global_norm, clip_f32], [clip_bypass, to.per_parameter, to.scales_small_gradients_up]),
    "train-get-batch": ([tt.get_batch, get_batch_unfold], [
        get_batch_bypass,
        lambda data, b, t, device, generator=None: tt.get_batch(data, b, t, device, None),
        lambda data, b, t, device, generator=None: tuple(z.int() for z in tt.get_batch(data, b, t, device, generator))]),
    "train-lr-at-step": ([tt.lr_at, lr_at_torch_f32], [lr_bypass, _lr_shifted(+1), _lr_shifted(-1),
                                                      lambda s, mx, mn, w, t: 2 * tt.lr_at(s, mx, mn, w, t)]),
    # one step on the concatenated batch, and a checkpoint held in memory, get the numbers right but
    # skip the lesson (one backward per micro-batch; a checkpoint that survives the crash)
    "train-accumulate": ([tt.accumulated_training, accumulated_by_hand], [
        tt.buggy_accumulation(zero_inside=True), tt.buggy_accumulation(divide=False),
        tt.buggy_accumulation(zero_ever=False), accumulated_by_concatenation]),
    "train-resume": ([tt.resumable(), resumable_by_replay], [
        tt.resumable(optimizer_state=False), tt.resumable(order_state=False), tt.resumable(torch_rng=False),
        resumable_in_memory]),
    "scale-saved-bytes": ([ts.saved_bytes, saved_bytes_by_parts], [
        saved_bytes_bypass, lambda b, t, d, n, v, checkpointing=False: ts.saved_bytes(b, t, d, n, v, False),
        lambda b, t, d, n, v, checkpointing=False: ts.saved_bytes(b, t, d, n, v, checkpointing) - 16 * b * t]),
}

_ROWS = [(ex_id, i, True) for ex_id, (ok, _) in MATRIX.items() for i in range(len(ok))] + [
    (ex_id, i, False) for ex_id, (_, bad) in MATRIX.items() for i in range(len(bad))]


def test_the_matrix_covers_every_function_exercise():
    functions = {ex_id for ex_id, ex in exercises().items() if ex.kind == "function"}
    assert set(MATRIX) == functions
    assert all(len(ok) >= 2 and len(bad) >= 3 for ok, bad in MATRIX.values())


@pytest.mark.parametrize("ex_id, index, correct", _ROWS,
                         ids=[f"{e}-{'ok' if c else 'wrong'}{i}" for e, i, c in _ROWS])
def test_practice_check_and_grader_agree_on_the_matrix(ex_id, index, correct):
    answer = MATRIX[ex_id][0 if correct else 1][index]
    if correct:
        assert practised(ex_id, answer), check(ex_id, answer).message
        assert graded(ex_id, answer)
    else:
        assert not practised(ex_id, answer)
        assert not graded(ex_id, answer)


def _seal_accepts(sealed, value) -> bool:
    """True when the seal view ``sealed`` (``sealed_cases.view``) stands for ``value``: the same
    structure, and each number and tensor element within its tolerance (give or take a bin)."""
    if isinstance(sealed, sealed_cases.SealedRecord):
        return (dataclasses.is_dataclass(value) and {f.name for f in dataclasses.fields(value)} == set(sealed.fields)
                and all(_seal_accepts(v, getattr(value, k)) for k, v in sealed.fields.items()))
    if isinstance(sealed, dict):
        return (isinstance(value, dict) and set(value) == set(sealed)
                and all(_seal_accepts(v, value[k]) for k, v in sealed.items()))
    if isinstance(sealed, (tuple, list)):
        return (isinstance(value, (tuple, list)) and len(value) == len(sealed)
                and all(_seal_accepts(s, v) for s, v in zip(sealed, value)))
    if isinstance(sealed, sealed_cases.SealedTensor):
        return (isinstance(value, torch.Tensor) and value.dtype == sealed.dtype and value.shape == sealed.shape
                and not sealed.mismatch(value).any())
    return sealed.matches(value)


def _tolerances(data) -> set[tuple[float, float]]:
    """The (rtol, atol) pairs that stored seal data (``seals.json``'s ``cases``) compares within
    (an exact seal, of an int or a tuple of them, has none)."""
    if isinstance(data, list):
        return set().union(*map(_tolerances, data))
    if not isinstance(data, dict):
        return set()
    own = {(data["rtol"], data["atol"])} if "rtol" in data else set()
    token = data.get("token", "x")
    if not token.startswith("x"):
        own.add((float(token.split("|")[1]), float(token.split("|")[2])))
    return own.union(*map(_tolerances, data.values()))


def test_the_public_cases_seals_accept_what_the_references_compute_here():
    """``seals.json`` (written by ``python -m grading.seals``; re-run it after changing a public
    case or a reference) holds a seal for every public case that stands for what the references
    compute on this machine."""
    refs = references()
    sealed = sorted(ex_id for ex_id, ex in exercises().items() if ex.kind == "function" and ex_id in refs)
    assert sorted(CASES) == sealed
    for ex_id in sealed:
        ex = get_exercise(ex_id)
        cases = ex.cases
        assert len(CASES[ex_id]) == len(cases), f"{ex_id}: re-seal (python -m grading.seals)"
        # the practice check compares within the seal's tolerance: it must be the exercise's own
        assert _tolerances(CASES[ex_id]) <= {(ex.rtol, ex.atol)}, f"{ex_id}: re-seal (python -m grading.seals)"
        for i, case in enumerate(cases):
            if case.raises is not None:
                assert CASES[ex_id][i] is None
                continue
            stored = sealed_cases.view(CASES[ex_id][i], f"{ex_id}#{i}")
            assert _seal_accepts(stored, refs[ex_id](case)), f"{ex_id}#{i}: re-seal (python -m grading.seals)"


def test_a_stale_seal_is_caught():
    """The check above fails when a reference changes: a result 1 % off, or of another structure."""
    value = {"loss": 2.5, "grad": torch.tensor([1.0, -2.0])}
    stored = sealed_cases.view(sealed_cases.seal("doc#0", value, rtol=1e-4, atol=1e-6), "doc#0")
    assert _seal_accepts(stored, {"loss": 2.5 * (1 + 1e-6), "grad": torch.tensor([1.0, -2.0])})
    assert not _seal_accepts(stored, {"loss": 2.5 * 1.01, "grad": torch.tensor([1.0, -2.0])})
    assert not _seal_accepts(stored, {"loss": 2.5, "grad": torch.tensor([1.0, -2.02])})
    assert not _seal_accepts(stored, {"loss": 2.5})


# ------------------------------------------------------------------ ±1 % of each edge, tensor outputs
#
# For every function exercise whose result holds float tensors compared within a tolerance: an
# answer equal to the expected result but for one element (the largest), moved to 0.99 of the
# tolerance from it is accepted, and to 1.01 of it refused, on either side, by the grader's plain
# comparison on the hidden cases. The practice check compares with the public cases' seals, whose
# edges are the interval's: it accepts 0.99 and refuses 1.01 too.

def _tolerance_of(ex_id: str) -> tuple[float, float]:
    ex = get_exercise(ex_id)
    return ex.rtol, ex.atol


class _Exact(Exception):
    """The part to nudge is 0 with no absolute tolerance: it is compared exactly (no edge to test)."""


def _nudged_tensor(e: torch.Tensor, rtol: float, atol: float, factor: float, sign: int) -> torch.Tensor:
    """``e`` with its largest element moved by ``factor`` × its tolerance, rounded in ``e``'s dtype
    to the side of the edge that ``factor`` names (outside for > 1, inside for < 1)."""
    flat = e.detach().reshape(-1)
    k = int(flat.abs().argmax())
    e64 = float(flat[k])
    tol = max(atol, rtol * abs(e64))
    if tol == 0:
        raise _Exact
    v = torch.tensor(e64 + sign * factor * tol, dtype=e.dtype)
    outward, inward = torch.tensor(sign * math.inf, dtype=e.dtype), torch.tensor(e64, dtype=e.dtype)
    for _ in range(64):
        d = abs(float(v) - e64)
        if factor > 1 and d <= tol * factor:
            v = torch.nextafter(v, outward)
        elif factor < 1 and d > tol * factor:
            v = torch.nextafter(v, inward)
        else:
            break
    assert float(v) != e64
    out = e.detach().clone()
    out.view(-1)[k] = v
    return out


def _nudged_number(e: float, rtol: float, atol: float, factor: float, sign: int) -> float:
    if max(atol, rtol * abs(e)) == 0:
        raise _Exact
    return e + sign * factor * max(atol, rtol * abs(e))


#: how an answer's result is built from an expected result, with one part nudged (``n`` for a tensor,
#: ``f`` for a number)
EDGE_ANSWERS = {
    "precision-log-softmax": lambda e, n, f: n(e),
    "einsum-center-tokens": lambda e, n, f: n(e),
    "einsum-gqa-scores": lambda e, n, f: n(e["scores"]),
    "optim-adamw-step": lambda e, n, f: (n(e[0]), e[1], e[2]),
    "optim-adamw-step (moment)": lambda e, n, f: (e[0], n(e[1]), e[2]),
    "optim-clip-grad-norm": lambda e, n, f: ([n(e[0][0]), *e[0][1:]], e[1]),
    "optim-clip-grad-norm (norm)": lambda e, n, f: (list(e[0]), f(e[1])),
    "optim-rmsprop": lambda e, n, f: {**e, "params": [n(e["params"][0]), *e["params"][1:]]},
    "train-accumulate": lambda e, n, f: n(e),
    "train-resume": lambda e, n, f: (list(e["losses"]), n(e["weight"])),
    "train-resume (loss)": lambda e, n, f: ([*e["losses"][:-1], f(e["losses"][-1])], e["weight"]),
}
_EDGE_ROWS = [(name, factor, sign) for name in EDGE_ANSWERS for factor in (0.99, 1.01) for sign in (+1, -1)]


def _edge_answer(name: str, expected, factor: float, sign: int):
    rtol, atol = _tolerance_of(name.split(" ")[0])
    return EDGE_ANSWERS[name](expected, lambda t: _nudged_tensor(t, rtol, atol, factor, sign),
                              lambda x: _nudged_number(float(x), rtol, atol, factor, sign))


def test_the_edge_rows_cover_every_tensor_exercise_with_a_tolerance():

    def holds_float_tensor(value):
        if isinstance(value, torch.Tensor):
            return value.is_floating_point()
        values = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
        return any(holds_float_tensor(v) for v in values)

    tensor_ones = {ex_id for ex_id, ex in exercises().items() if ex.kind == "function" and (ex.rtol or ex.atol)
                   and _hidden(ex_id) and holds_float_tensor(_hidden(ex_id)[0].expected)}
    assert tensor_ones == {name.split(" ")[0] for name in EDGE_ANSWERS}


@pytest.mark.parametrize("name, factor, sign", _EDGE_ROWS,
                         ids=[f"{n.replace(' ', '')}-{f}-{'up' if s > 0 else 'down'}" for n, f, s in _EDGE_ROWS])
def test_one_element_one_percent_inside_each_edge_passes_and_outside_fails(name, factor, sign):
    ex, tested = get_exercise(name.split(" ")[0]), 0
    for case in _hidden(ex.id):
        try:
            answer = _edge_answer(name, case.expected, factor, sign)
        except _Exact:
            continue
        problem = compare(ex, answer, case.expected)
        assert (problem is None) == (factor < 1), (case.description, problem)
        tested += 1
    assert tested >= 2


@pytest.mark.parametrize("name", [n for n in EDGE_ANSWERS if not n.startswith("train-resume")])
def test_the_practice_check_agrees_at_each_edge(name):
    from grading.case_seals import expected_of

    ex, refs = get_exercise(name.split(" ")[0]), references()
    for case in ex.cases:
        plain = expected_of(refs, ex.id, case)
        for sign in (+1, -1):
            try:
                _edge_answer(name, plain, 0.99, sign)
            except _Exact:
                continue
            assert compare(ex, _edge_answer(name, plain, 0.99, sign), case.expected) is None, case.description
            assert compare(ex, _edge_answer(name, plain, 1.01, sign), case.expected) is not None, case.description
