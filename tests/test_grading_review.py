"""The grade is decided where the student has no hand: the grader reads each exercise's code itself
(grading/review.py) and runs it as its own program in a fresh process where the forbidden routines
were removed first; every class of shortcut gets "needs review" with its line, or fails; honest work
passes; the grading seed stays secret (grading.grading_key, KeyedRandom)."""

from __future__ import annotations

import sys

import nbformat
import pytest

from _paths import ROOT
import grading
from grading import review, sandbox
from lectorch.exercises import review as engine
from lectorch.exercises import check, refusals

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))

#: every class of shortcut, as a student would write it: (exercise, chapter, cells before the check,
#: a piece of the line the grader must point at). "-" as the piece: judged by behaviour (the runner).
SHORTCUTS = {
    "thread": ("precision-log-softmax", "01_precision.ipynb", [
        "import threading, torch\n"
        "def log_softmax(logits):\n"
        "    out = []\n"
        "    t = threading.Thread(target=lambda: out.append(torch.log_softmax(logits.float(), -1)))\n"
        "    t.start(); t.join()\n"
        "    return out[0]"], "threading.Thread"),
    "DisableTorchFunction": ("precision-log-softmax", "01_precision.ipynb", [
        "import torch\n"
        "def log_softmax(logits):\n"
        "    with torch._C.DisableTorchFunction():\n"
        "        return torch.log_softmax(logits.float(), -1)"], "DisableTorchFunction"),
    "_pop_mode_temporarily": ("precision-log-softmax", "01_precision.ipynb", [
        "import torch\n"
        "from torch.overrides import _pop_mode_temporarily as pop\n"
        "def log_softmax(logits):\n"
        "    with pop():\n"
        "        return torch.nn.functional.log_softmax(logits.float(), -1)"], "_pop_mode_temporarily"),
    "aten op": ("precision-log-softmax", "01_precision.ipynb", [
        "import torch\n"
        "def log_softmax(logits):\n"
        "    return torch.ops.aten._log_softmax.default(logits.float(), -1, False)"], "torch.ops.aten"),
    "unlisted alias": ("precision-log-softmax", "01_precision.ipynb", [
        "import torch as t\n"
        "def log_softmax(logits):\n"
        "    x = logits.float()\n"
        "    return x - t.logcumsumexp(x, -1)[..., -1:]"], "logcumsumexp"),
    "numpy equivalent": ("precision-log-softmax", "01_precision.ipynb", [
        "import numpy as np, torch\n"
        "def log_softmax(logits):\n"
        "    x = logits.float().numpy()\n"
        "    return torch.from_numpy(x - np.logaddexp.reduce(x, axis=-1, keepdims=True))"], "logaddexp"),
    "autograd engine": ("backprop-skip-grads", "06_backward_6x.ipynb", [
        "import torch\n"
        "from torch.autograd import Variable\n"
        "def skip_grads(x, w1, w2):\n"
        "    w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()\n"
        "    out = ((torch.relu(x @ w1) + x) @ w2).sum()\n"
        "    return Variable._execution_engine.run_backward((out,), (torch.ones_like(out),), False, False, (w1, w2), False)"],
        "_execution_engine"),
    "FunctionType copy": ("train-get-batch", "09_training_loop.ipynb", [
        "import types, lectorch.data\n"
        "_copy = types.FunctionType(lectorch.data.get_batch.__code__, lectorch.data.get_batch.__globals__)",
        "def get_batch(data, batch_size, context_length, device, generator=None):\n"
        "    return _copy(data, batch_size, context_length, device, generator=generator)"], "types.FunctionType"),
    "copy of cosine_lr": ("train-lr-at-step", "09_training_loop.ipynb", [
        "from lectorch.train import cosine_lr as schedule\n"
        "import copy\n"
        "saved = copy.copy(schedule)",
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    return saved(step, max_lr=max_lr, warmup_steps=warmup_steps, total_steps=total_steps, min_lr=min_lr)"],
        "saved = copy.copy(schedule)"),
    "FlopCounterMode saved beforehand": ("backprop-mlp-backward", "06_backward_6x.ipynb", [
        "import torch\n"
        "from torch.utils.flop_counter import FlopCounterMode\n"
        "counter = FlopCounterMode(display=False)",
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    layers = [torch.nn.Linear(d, k, bias=False) for d, k in zip(widths[:-1], widths[1:])]\n"
        "    x = torch.randn(batch, widths[0], requires_grad=input_requires_grad)\n"
        "    y = torch.nn.Sequential(*layers)(x).sum()\n"
        "    with counter:\n"
        "        y.backward()\n"
        "    return counter.get_total_flops()"], "FlopCounterMode"),
    "bf16 table built with torch": ("precision-bf16-257", "01_precision.ipynb", [
        "import torch\n"
        "TABLE = {n: torch.tensor(float(n), dtype=torch.bfloat16).item() for n in range(1 << 12)}",
        "def bf16_stores(n):\n"
        "    return TABLE[n]"], "torch.tensor"),
    # the work done in another process, where no refusal of this one reaches (plain Python there, so
    # that the test does not start torch once per hidden case)
    "measured in a subprocess": ("backprop-mlp-backward", "06_backward_6x.ipynb", [
        "import subprocess, sys\n"
        "CODE = 'import sys; b, *w = map(int, sys.argv[1:]); print(2 * b * sum(d * k for d, k in zip(w, w[1:])))'\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    out = subprocess.run([sys.executable, '-c', CODE, str(batch), *map(str, widths)], capture_output=True)\n"
        "    return int(out.stdout)"], "subprocess.run"),
    "measured in a thread": ("backprop-mlp-backward", "06_backward_6x.ipynb", [
        "import torch\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    def measure():\n"
        "        from torch.utils.flop_counter import FlopCounterMode\n"
        "        m = torch.nn.Sequential(*[torch.nn.Linear(d, k, bias=False) for d, k in zip(widths, widths[1:])])\n"
        "        y = m(torch.randn(batch, widths[0])).sum()\n"
        "        with FlopCounterMode(display=False) as c:\n"
        "            y.backward()\n"
        "        return c.get_total_flops()\n"
        "    return ThreadPoolExecutor(1).submit(measure).result()"], "ThreadPoolExecutor"),
    "computed getattr": ("precision-log-softmax", "01_precision.ipynb", [
        "import torch\n"
        "name = 'log_' + 'soft' + 'max'\n"
        "def log_softmax(logits):\n"
        "    return getattr(torch, name)(logits.float(), -1)"], "getattr(torch, name)"),
    "eval": ("train-lr-at-step", "09_training_loop.ipynb", [
        "import math\n"
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    return eval('__import__(\"lectorch.train\").train.cosine_lr')(step, max_lr=max_lr, "
        "warmup_steps=warmup_steps, total_steps=total_steps, min_lr=min_lr)"], "eval("),
    "timer reads the device": ("flops-honest-timer", "05_flops_mfu.ipynb", [
        "def time_call(fn, sync, clock, warmup=3, trials=7):\n"
        "    device = fn.__closure__[0].cell_contents\n"
        "    return device.steady_s"], "__closure__"),
    "train-resume never crashes": ("train-resume", "09_training_loop.ipynb", [
        "import os, tempfile, torch\n"
        "from lectorch.exercises.train import train_with_restart as _given",
        "def train_with_restart(tokens, num_steps, crash_at=None):\n"
        "    return _given(tokens, num_steps, None)"], "lectorch.exercises.train"),
    "train-accumulate in one big step": ("train-accumulate", "09_training_loop.ipynb", [
        "import torch\n"
        "def accumulated_training(weight, micro_batches, accumulation, lr=0.1):\n"
        "    w = weight.clone().requires_grad_(True)\n"
        "    for i in range(0, len(micro_batches), accumulation):\n"
        "        group = micro_batches[i:i + accumulation]\n"
        "        x, y = torch.cat([g[0] for g in group]), torch.cat([g[1] for g in group])\n"
        "        torch.nn.functional.cross_entropy(x @ w.T, y).backward()\n"
        "        with torch.no_grad():\n"
        "            w -= lr * w.grad\n"
        "        w.grad = None\n"
        "    return w.detach()"], "-"),
}

#: more spellings, judged in process only (their grading is the same path as the ones above)
SPELLINGS = {
    "getattr with a constant name": ("import torch\n"
                                     "def log_softmax(logits):\n"
                                     "    return getattr(torch, 'log_softmax')(logits.float(), -1)", "getattr(torch"),
    "getattr of an escape hatch's name": ("def log_softmax(logits, source=None):\n"
                                          "    return getattr(source, 'exec')", "getattr(source"),
    "a method through type()": ("def log_softmax(logits):\n"
                                "    f = type(logits).log_softmax\n"
                                "    return f(logits.float(), -1)", "type(logits).log_softmax"),
    "attrgetter": ("import operator, torch\n"
                   "def log_softmax(logits):\n"
                   "    return operator.attrgetter('special.log_softmax')(torch)(logits.float(), -1)", "attrgetter"),
    "star import": ("from torch import *\n"
                    "def log_softmax(logits):\n"
                    "    return special.log_softmax(logits.float(), -1)", "special.log_softmax"),
    "a library patched at cell time": ("import torch\n"
                                       "torch.exp = lambda t: t\n"
                                       "def log_softmax(logits):\n"
                                       "    return logits - torch.exp(logits).sum(-1, keepdim=True).log()", "torch.exp ="),
    "setattr on a library": ("import torch\n"
                             "def log_softmax(logits):\n"
                             "    setattr(torch, 'exp', lambda t: t)\n"
                             "    return logits - torch.exp(logits).sum(-1, keepdim=True).log()", "setattr(torch"),
    "a module loaded again": ("import torch.nn.functional as F\n"
                              "def log_softmax(logits):\n"
                              "    F.__spec__.loader.exec_module(F)\n"
                              "    return F.log_softmax(logits.float(), -1)", "__spec__"),
    "scipy": ("import scipy.special, torch\n"
              "def log_softmax(logits):\n"
              "    return torch.as_tensor(scipy.special.log_softmax(logits.float().numpy(), -1))", "scipy"),
}

#: shortcuts a fresh red team got marks with (only the student edition in hand), now findings:
#: (exercise, the answer's cell, a piece of the line the grader must point at)
RED_TEAM = {
    "FLOPs measured with torch.profiler": ("backprop-mlp-backward", (
        "import torch\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    with torch.profiler.profile(with_flops=True) as prof:\n"
        "        pass\n"
        "    return sum(e.flops for e in prof.events())"), "torch.profiler.profile"),
    "RMSProp through Adam with beta1 = 0": ("optim-rmsprop", (
        "import torch\n"
        "class MyRMSprop(torch.optim.Adam):\n"
        "    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8):\n"
        "        super().__init__(params, lr=lr, betas=(0.0, alpha), eps=eps)"), "torch.optim.Adam"),
    "AdamW through SparseAdam": ("optim-adamw-step", (
        "import torch\n"
        "def adamw_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):\n"
        "    opt = torch.optim.SparseAdam([param], lr=lr, betas=betas, eps=eps)\n"
        "    return param, exp_avg, exp_avg_sq"), "SparseAdam"),
    "the bounds fixed by lectorch's helper": ("init-fix-trunc", (
        "import math\n"
        "from lectorch import init\n"
        "def init_weight_(weight, generator=None):\n"
        "    return init.truncated_normal_(weight, 1 / math.sqrt(weight.shape[0]), generator=generator)"),
        "truncated_normal_"),
    "the leaky std by numerical quadrature": ("init-leaky-std", (
        "import math, torch\n"
        "def leaky_relu_std(fan_in, slope):\n"
        "    z = torch.linspace(-14.0, 14.0, 2_000_001, dtype=torch.float64)\n"
        "    pdf = torch.exp(-z * z / 2) / math.sqrt(2 * math.pi)\n"
        "    f = torch.where(z > 0, z, slope * z)\n"
        "    return 1.0 / math.sqrt(fan_in * torch.trapezoid(f * f * pdf, z).item())"), "torch.trapezoid"),
    "the leaky std by a hand-written quadrature": ("init-leaky-std", (
        "import math\n"
        "def leaky_relu_std(fan_in, slope):\n"
        "    h = 1e-3\n"
        "    zs = [h * k for k in range(-14000, 14001)]\n"
        "    m2 = sum((z if z > 0 else slope * z) ** 2 * math.exp(-z * z / 2) for z in zs) * h / math.sqrt(2 * math.pi)\n"
        "    return 1 / math.sqrt(fan_in * m2)"), "math.exp"),
    "the ReLU stack simulated in pure Python": ("init-relu-depth", (
        "import random, math, operator\n"
        "def relu_depth_std(blocks):\n"
        "    rng = random.Random(0)\n"
        "    width, nets, total = 256, 16, 0.0\n"
        "    for _ in range(nets):\n"
        "        x = [rng.gauss(0, 1) for _ in range(width)]\n"
        "        for layer in range(blocks + 1):\n"
        "            x = [sum(map(operator.mul, x, [rng.gauss(0, width ** -0.5) for _ in range(width)])) for _ in range(width)]\n"
        "            x = [max(v, 0.0) for v in x] if layer < blocks else x\n"
        "        total += sum(v * v for v in x) / width\n"
        "    return math.sqrt(total / nets)"), "random.Random"),
    "the allocator's rounding from lectorch": ("device-allocated-peak", (
        "import math\n"
        "from lectorch.dtypes import bytes_per_element\n"
        "from lectorch.device import allocator_bytes\n"
        "def predict_readings(events):\n"
        "    live, cur, peak = {}, 0, 0\n"
        "    for e in events:\n"
        "        if e[0] == 'alloc':\n"
        "            live[e[1]] = allocator_bytes(math.prod(e[2]) * bytes_per_element(e[3]))\n"
        "            cur += live[e[1]]\n"
        "        else:\n"
        "            cur -= live.pop(e[1])\n"
        "        peak = max(peak, cur)\n"
        "    return cur, peak"), "allocator_bytes"),
    # a second fresh red team: the course's own helpers compute the answer (any lectorch name an
    # exercise does not list is a finding), and routines reached inside another torch call
    "strides from lectorch's Layout": ("views-transpose-strides", (
        "from lectorch.views import Layout\n"
        "def transposed_strides(shape, dim0, dim1):\n"
        "    return Layout(tuple(shape), (1,) * len(shape), 0).transpose(dim0, dim1).strides"), "Layout("),
    "a storage index from lectorch's Layout": ("views-storage-index", (
        "import lectorch\n"
        "def storage_index(shape, row_start, col_start, col_step, i, j):\n"
        "    x = lectorch.views.Layout(tuple(shape), (shape[1], 1), 0)\n"
        "    return x[row_start:, col_start::col_step][i, j].offset"), "lectorch.views.Layout"),
    "a permuted layout from lectorch's Layout": ("views-permute-slice", (
        "from lectorch import views as v\n"
        "def permute_slice_layout(shape):\n"
        "    y = v.Layout(tuple(shape), (1, 1, 1, 1), 0).permute(3, 1, 0, 2)[::2, 1:, :, 1]\n"
        "    return y.strides, y.offset"), "v.Layout"),
    "the recomputation from lectorch.reference": ("scale-ckpt-time", (
        "from lectorch.reference import checkpointing_flop_overhead as extra\n"
        "def ckpt_time_ratio(batch_size, context_length, dim, num_layers, vocab_size):\n"
        "    return 1 + extra(batch_size=batch_size, context_length=context_length, dim=dim,\n"
        "                     num_layers=num_layers, vocab_size=vocab_size)"), "extra("),
    "the ratio from step_flops": ("backprop-time-ratio", (
        "from lectorch.step_memory import step_flops\n"
        "def backward_ratio(dim, num_layers):\n"
        "    f = step_flops(dim, num_layers, 1)\n"
        "    return f.backward / f.forward"), "step_flops("),
    "the parameters from cruncher_num_parameters": ("init-variant-params", (
        "import lectorch.models as m\n"
        "def variant_params(dim, num_layers, outputs):\n"
        "    return m.cruncher_num_parameters(dim, num_layers) + num_layers * dim + (outputs - 1) * dim + outputs"),
        "m.cruncher_num_parameters"),
    "softmax through softmin": ("precision-log-softmax", (
        "import torch.nn.functional as F\n"
        "def log_softmax(logits):\n"
        "    x = logits.float()\n"
        "    return (x - x.amax(-1, keepdim=True)) + F.softmin(-x, dim=-1).amax(-1, keepdim=True).log()"),
        "F.softmin"),
    "AdamW's functional update inside Tensor.apply_": ("optim-adamw-step", (
        "import torch\n"
        "import torch.optim.adamw as aw\n"
        "def adamw_step(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):\n"
        "    p, g, m, v = param.clone(), grad.clone(), exp_avg.clone(), exp_avg_sq.clone()\n"
        "    run = lambda z: (aw.adamw([p], [g], [m], [v], [], [torch.tensor(float(step - 1))], fused=True,\n"
        "                              amsgrad=False, beta1=betas[0], beta2=betas[1], lr=lr,\n"
        "                              weight_decay=weight_decay, eps=eps, maximize=False), z)[1]\n"
        "    torch.zeros(1).apply_(run)\n"
        "    return p, m, v"), ".apply_("),
    # a third fresh red team: graded "needs review", while the practice check said ✅ (numpy in the
    # "no tensors" exercises, an unlisted helper, routines of the same purpose)
    "strides read off a numpy array": ("views-transpose-strides", (
        "import numpy as np\n"
        "def transposed_strides(shape, dim0, dim1):\n"
        "    s = list(np.empty(shape, dtype=np.int8).strides)\n"
        "    s[dim0], s[dim1] = s[dim1], s[dim0]\n"
        "    return tuple(s)"), "np.empty(shape"),
    "a storage index from np.ravel_multi_index": ("views-storage-index", (
        "import numpy as np\n"
        "def storage_index(shape, row_start, col_start, col_step, i, j):\n"
        "    return int(np.ravel_multi_index((row_start + i, col_start + j * col_step), shape))"),
        "np.ravel_multi_index"),
    "a permuted layout from numpy transposes": ("views-permute-slice", (
        "import numpy as np\n"
        "def permute_slice_layout(shape):\n"
        "    a = np.empty(shape, dtype=np.int8).transpose(3, 1, 0, 2)[::2, 1:, :, 1]\n"
        "    return a.strides, 0"), "np.empty(shape"),
    "the FLOPs from lectorch.flops.forward_flops": ("flops-mfu-from-time", (
        "import lectorch.flops\n"
        "def matmul_mfu(B, D, K, seconds, peak_flops_per_s):\n"
        "    return lectorch.flops.forward_flops(B, D * K) / seconds / peak_flops_per_s"), "forward_flops"),
    "log-softmax folded with torch.logaddexp": ("precision-log-softmax", (
        "import functools, torch\n"
        "def log_softmax(logits):\n"
        "    x = logits.float()\n"
        "    lse = functools.reduce(torch.logaddexp, x.unbind(-1))\n"
        "    return x - lse.unsqueeze(-1)"), "torch.logaddexp"),
    "log-softmax through torch.sparse": ("precision-log-softmax", (
        "import torch\n"
        "def log_softmax(logits):\n"
        "    return torch.sparse.log_softmax(logits.float().to_sparse(), -1).to_dense()"), "torch.sparse.log_softmax"),
    # a fourth fresh red team: code carried in strings and data (annotations, format fields, pickles,
    # a file written from a string), evaluators, loaders that run code, graph capture, numpy kept in a
    # container in the "no tensors" exercises, and an exec that replaces the reviewed definition
    "autograd's engine from a hubconf written from a string": ("backprop-skip-grads", (
        "import pathlib, tempfile, torch\n"
        "HUB = 'from torch.autograd.graph import _engine_run_backward as run'\n"
        "d = tempfile.mkdtemp()\n"
        "pathlib.Path(d, 'hubconf.py').write_text(HUB)\n"
        "skip_grads = torch.hub.load(d, 'make', source='local', trust_repo=True)"), "torch.hub.load"),
    "AdamW from a pickle in a bytes literal": ("optim-adamw-step", (
        "import io, torch\n"
        "BLOB = b'\\x80\\x04\\x95\\x10\\x00\\x8c\\x08builtins\\x94\\x8c\\x04exec\\x94\\x93'\n"
        "adamw_step = torch.load(io.BytesIO(BLOB), weights_only=False)[1]['adamw_step']"), "weights_only=False"),
    "RMSprop from numpy's pickle": ("optim-rmsprop", (
        "import io\n"
        "import numpy as np\n"
        "BLOB = b'cbuiltins\\nexec\\n(Vimport importlib\\ntR.'\n"
        "MyRMSprop = np.load(io.BytesIO(BLOB), allow_pickle=True)[1]['MyRMSprop']"), "allow_pickle=True"),
    "logcumsumexp through an alias of getattr": ("precision-log-softmax", (
        "import torch\n"
        "look = getattr\n"
        "def log_softmax(logits):\n"
        "    x = logits.float()\n"
        "    x = x - x.amax(-1, keepdim=True)\n"
        "    f = look(torch, 'log' + 'cumsumexp')\n"
        "    return x - f(x, -1)[..., -1:]"), "look = getattr"),
    "a meta tensor's nbytes through string annotations": ("precision-tensor-bytes", (
        "import typing, torch\n"
        "def _m(e: 'torch.empty', off: 'torch._C.DisableTorchFunction'):\n"
        "    pass\n"
        "def tensor_nbytes(shape, dtype):\n"
        "    h = typing.get_type_hints(_m, {'torch': torch})\n"
        "    with h['off']():\n"
        "        return h['e'](tuple(shape), dtype=dtype, device='meta').nbytes"), "torch.empty"),
    "log_softmax through a string annotation": ("precision-log-softmax", (
        "import typing, torch\n"
        "def _hints(a: 'torch.log_softmax', b: 'torch._C.DisableTorchFunction'):\n"
        "    pass\n"
        "def log_softmax(logits):\n"
        "    h = typing.get_type_hints(_hints)\n"
        "    with h['b']():\n"
        "        return h['a'](logits.float(), -1)"), "def _hints"),
    "log_softmax through a format field": ("precision-log-softmax", (
        "import string, torch\n"
        "def log_softmax(logits):\n"
        "    f = string.Formatter().get_field('0.nn.functional.log_softmax', [torch], {})[0]\n"
        "    return f(logits.float(), -1)"), "get_field"),
    "strides of numpy kept in a list": ("views-transpose-strides", (
        "import numpy as np\n"
        "MAKE = [np.empty]\n"
        "def transposed_strides(shape, dim0, dim1):\n"
        "    return tuple(MAKE[0](tuple(shape), dtype=np.int8).swapaxes(dim0, dim1).strides)"), "MAKE = [np.empty]"),
    "a model built through a string annotation": ("train-ckpt-size", (
        "import typing\n"
        "def _m(m: \"__import__('lectorch.models', fromlist=['_']).TinyLM\"):\n"
        "    pass\n"
        "def ckpt_bytes(vocab_size, dim, num_layers):\n"
        "    model = typing.get_type_hints(_m)['m'](vocab_size, dim, num_layers)\n"
        "    return 3 * sum(p.numel() * p.element_size() for p in model.parameters())"), "__import__"),
    "the aten op in a string annotation": ("precision-log-softmax", (
        "import typing, torch\n"
        "def _h(a: 'torch.ops.aten._log_softmax.default'):\n"
        "    pass\n"
        "def log_softmax(logits):\n"
        "    return typing.get_type_hints(_h, {'torch': torch})['a'](logits.float(), -1, False)"), "torch.ops.aten"),
    "FlopCounterMode reloaded through a string annotation": ("backprop-mlp-backward", (
        "import typing, torch\n"
        "def _f(m: \"__import__('importlib').reload(__import__('torch.utils.flop_counter', fromlist=['_'])).FlopCounterMode\"):\n"
        "    pass\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    ws = [torch.empty(d, k, device='meta', requires_grad=True) for d, k in zip(widths, widths[1:])]\n"
        "    x = torch.empty(batch, widths[0], device='meta', requires_grad=input_requires_grad)\n"
        "    for w in ws:\n"
        "        x = x @ w\n"
        "    with typing.get_type_hints(_f)['m'](display=False) as c:\n"
        "        x.sum().backward()\n"
        "    return c.get_total_flops()"), "reload"),
    "autograd's engine through a format field": ("backprop-skip-grads", (
        "import string, torch\n"
        "run = string.Formatter().get_field('0.autograd.graph._engine_run_backward', [torch], {})[0]\n"
        "def skip_grads(x, w1, w2):\n"
        "    a, b = w1.clone().requires_grad_(), w2.clone().requires_grad_()\n"
        "    with torch.enable_grad():\n"
        "        loss = ((torch.relu(x @ a) + x) @ b).sum()\n"
        "    return run((loss,), (torch.ones_like(loss),), False, False, (a, b), False, False)"), "get_field"),
    "calculate_gain reloaded through a string annotation": ("init-leaky-std", (
        "import math, typing\n"
        "def _g(cg: \"__import__('importlib').reload(__import__('torch.nn.init', fromlist=['_'])).calculate_gain\"):\n"
        "    pass\n"
        "def leaky_relu_std(fan_in, slope):\n"
        "    return typing.get_type_hints(_g)['cg']('leaky_relu', slope) / math.sqrt(fan_in)"), "calculate_gain"),
    "clip_grad_norm_ reloaded through a string annotation": ("optim-clip-grad-norm", (
        "import typing, torch\n"
        "def _c(c: \"__import__('importlib').reload(__import__('torch.nn.utils.clip_grad', fromlist=['_'])).clip_grad_norm_\"):\n"
        "    pass\n"
        "def clip_by_global_norm(grads, max_norm):\n"
        "    ps = [torch.zeros_like(g) for g in grads]\n"
        "    for p, g in zip(ps, grads):\n"
        "        p.grad = g.clone()\n"
        "    total = typing.get_type_hints(_c)['c'](ps, max_norm, foreach=False)\n"
        "    return [p.grad for p in ps], total"), "clip_grad_norm_"),
    "the backward traced with make_fx": ("backprop-mlp-backward", (
        "import torch\n"
        "from torch.fx.experimental.proxy_tensor import make_fx\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    g = make_fx(lambda x: x.sum())(torch.empty(batch, widths[0], device='meta'))\n"
        "    return sum(1 for n in g.graph.nodes if 'mm' in str(n.target))"), "make_fx"),
    "which ops copy, measured with numpy kept in a dict": ("views-which-copy", (
        "import numpy as np\n"
        "NP = {'arange': np.arange, 'shares': np.shares_memory}\n"
        "def copies(ops):\n"
        "    x = NP['arange'](24).reshape(2, 3, 4)\n"
        "    return ''.join(k for k, op in ops.items() if not NP['shares'](x, x.T))"), "np.shares_memory"),
    "a permuted layout of numpy kept in a list": ("views-permute-slice", (
        "import numpy as np\n"
        "MAKE = [np.empty]\n"
        "def permute_slice_layout(shape):\n"
        "    x = MAKE[0](tuple(shape), dtype=np.int8)\n"
        "    y = x.transpose(3, 1, 0, 2)[::2, 1:, :, 1]\n"
        "    return tuple(y.strides), y.__array_interface__['data'][0] - x.__array_interface__['data'][0]"),
        "MAKE = [np.empty]"),
    "torch's warm restarts reloaded through a string annotation": ("train-lr-at-step", (
        "import typing, torch\n"
        "def _s(m: \"__import__('importlib').reload(__import__('torch.optim.lr_scheduler', fromlist=['_'])).CosineAnnealingWarmRestarts\"):\n"
        "    pass\n"
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    opt = torch.optim.SGD([torch.zeros(1)], lr=max_lr)\n"
        "    typing.get_type_hints(_s)['m'](opt, T_0=total_steps - warmup_steps, eta_min=min_lr).step(step - warmup_steps)\n"
        "    return opt.param_groups[0]['lr']"), "lr_scheduler"),
    "the reviewed stub replaced by exec": ("precision-log-softmax", (
        "import torch\n"
        "def log_softmax(logits):\n"
        "    raise NotImplementedError\n"
        "exec('log_softmax = lambda l: l.float() - torch.logcumsumexp(l.float(), -1)[..., -1:]')"), "exec("),
    # a fifth red team
    "the leaky std integrated with statistics.NormalDist": ("init-leaky-std", (
        "from statistics import NormalDist\n"
        "def leaky_relu_std(fan_in, slope):\n"
        "    pdf = NormalDist().pdf; h = 1e-3\n"
        "    m = sum((k * h) ** 2 * pdf(k * h) for k in range(1, 12000)) * h\n"
        "    return (1 / (fan_in * m * (1 + slope ** 2))) ** 0.5"), "NormalDist"),
    "the ReLU depth's half integrated with statistics.NormalDist": ("init-relu-depth", (
        "from statistics import NormalDist\n"
        "def relu_depth_std(blocks):\n"
        "    pdf = NormalDist().pdf; h = 1e-3\n"
        "    return (sum((k * h) ** 2 * pdf(k * h) for k in range(1, 12000)) * h) ** (blocks / 2)"), "NormalDist"),
    "warm restarts made with __new__ and stepped": ("train-lr-at-step", (
        "from torch.optim.lr_scheduler import CosineAnnealingWarmRestarts\n"
        "class Groups: pass\n"
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    opt = Groups(); opt.param_groups = [{'lr': max_lr}]\n"
        "    s = CosineAnnealingWarmRestarts.__new__(CosineAnnealingWarmRestarts)\n"
        "    s.optimizer, s.base_lrs, s.eta_min = opt, [max_lr], min_lr\n"
        "    s.T_0 = s.T_i = total_steps - warmup_steps; s.T_mult, s.last_epoch = 1, 0\n"
        "    s.step(step - warmup_steps); return opt.param_groups[0]['lr']"), "CosineAnnealingWarmRestarts"),
    "log-sum-exp folded with softplus": ("precision-log-softmax", (
        "import torch.nn.functional as F\n"
        "def log_softmax(logits):\n"
        "    x = logits.float(); x = x - x.amax(-1, keepdim=True); t = x[..., :1]\n"
        "    for j in range(1, x.shape[-1]): t = t + F.softplus(x[..., j:j + 1] - t)\n"
        "    return x - t"), "softplus"),
    "FLOPs counted by a tensor subclass's __torch_dispatch__": ("backprop-mlp-backward", (
        "import torch\n"
        "class Counted(torch.Tensor):\n"
        "    flops = [0]\n"
        "    @staticmethod\n"
        "    def __new__(cls, elem):\n"
        "        r = cls._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)\n"
        "        r.elem = elem\n"
        "        return r\n"
        "    @classmethod\n"
        "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
        "        p = [a.elem if isinstance(a, Counted) else a for a in args]\n"
        "        out = func(*p, **(kwargs or {}))\n"
        "        if func.__name__.startswith('mm'): cls.flops[0] += 2 * p[0].shape[0] * p[0].shape[1] * p[1].shape[1]\n"
        "        return Counted(out) if isinstance(out, torch.Tensor) else out\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    y = torch.zeros(batch, widths[0], requires_grad=input_requires_grad, device='meta')\n"
        "    for i, o in zip(widths, widths[1:]): y = y @ torch.zeros(i, o, device='meta', requires_grad=True)\n"
        "    Counted.flops[0] = 0; y.sum().backward(Counted(torch.ones((), device='meta')))\n"
        "    return Counted.flops[0]"), "__torch_dispatch__"),
    # a sixth fresh red team: modules reached through another module's attribute, names split into
    # string pieces; a class built by type() around a dispatch method named by pieces
    "torch and threading reached through os.sys.modules": ("precision-bf16-257", (
        "import os\n"
        "_t = os.sys.modules['torch']\n"
        "_th = os.sys.modules['thread' + 'ing']\n"
        "def bf16_stores(n):\n"
        "    box = []\n"
        "    w = _th.Thread(target=lambda: box.append(float(_t.tensor(float(n), dtype=_t.bfloat16))))\n"
        "    w.start(); w.join()\n"
        "    return box[0]"), "os.sys.modules"),
    "a dispatch mode built by type() from string pieces": ("backprop-mlp-backward", (
        "import torch\n"
        "def _count(self, func, types, args=(), kwargs=None):\n"
        "    return func(*args, **(kwargs or {}))\n"
        "Counter = type('C', (object,), {'__torch_' + 'dispatch__': _count})\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    return 0 if Counter else 1"), "type('C'"),
    "ctypes reached as an attribute of torch": ("backprop-mlp-backward", (
        "import torch\n"
        "lib = torch.ctypes.CDLL(None)\n"
        "def backward_flops(batch, widths, input_requires_grad=False):\n"
        "    return 0 if lib else 1"), "torch.ctypes"),
    # a seventh: attributes looked up by a `case` pattern's names, a mode's class swapped
    "torch's internals reached through a case pattern": ("backprop-skip-grads", (
        "import torch\n"
        "match torch:\n"
        "    case object(_C=object(_ImperativeEngine=IE)):\n"
        "        pass\n"
        "def skip_grads(x, w1, w2):\n"
        "    return IE, IE"), "case object("),
    "the refusing mode's class swapped": ("views-transpose-strides", (
        "import torch\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    for m in modes:\n"
        "        m.__class__ = object\n"
        "    return shape"), "m.__class__ = object"),
    "numpy reached through einops' private backend": ("views-transpose-strides", (
        "from einops._backends import NumpyBackend\n"
        "xp = NumpyBackend().np\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    return tuple(xp.empty(shape, xp.int8).swapaxes(d0, d1).strides)"), "einops._backends"),
    # an eighth: the builtins through a coroutine's frame, autograd's nodes under their private name,
    # the Gaussian's constant typed as digits
    "the builtins through a coroutine's frame": ("train-lr-at-step", (
        "async def co():\n"
        "    pass\n"
        "def kit():\n"
        "    c = co()\n"
        "    found = c.cr_frame.f_builtins\n"
        "    c.close()\n"
        "    return found\n"
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    return kit()['__imp' + 'ort__']('lectorch.train')"), "c.cr_frame.f_builtins"),
    # a ninth: a module reached as an attribute of something the review cannot name
    "numpy through a module in a list": ("views-transpose-strides", (
        "import os\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    np_ = [os][0].sys.modules['num' + 'py']\n"
        "    return np_.empty(shape).swapaxes(d0, d1).strides"), "[os][0].sys.modules"),
    # a tenth: ctypes without its name (numpy's ctypeslib), a C function pointer's subclass
    "C functions through numpy's ctypeslib": ("precision-log-softmax", (
        "import numpy as np\n"
        "LIB = np.ctypeslib.load_library('libpython3.11.so', '/usr/lib')\n"
        "def log_softmax(logits):\n"
        "    return LIB"), "np.ctypeslib.load_library"),
    "a C function pointer's subclass": ("precision-log-softmax", (
        "class Api(type(len)):\n"
        "    _flags_ = 1 | 4\n"
        "def log_softmax(logits):\n"
        "    return Api"), "_flags_ = 1 | 4"),
    # an eleventh: code in a dataclass field's name (dataclasses writes it into a method's source)
    "code in a dataclass field's name": ("views-transpose-strides", (
        "import dataclasses\n"
        "class Probe:\n"
        "    pass\n"
        "Probe.__annotations__ = {'\"+str(1)+\"': int}\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    return repr(dataclasses.dataclass(Probe)())"), "Probe.__annotations__"),
    # a twelfth: a module's private alias of sys, routines that fold a logaddexp or make a softmax,
    # exp written with hyperbolic functions
    "numpy through a module's private alias of sys": ("views-transpose-strides", (
        "import tempfile\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    np_ = [tempfile][0]._sys.modules['numpy']\n"
        "    return np_.empty(shape).swapaxes(d0, d1).strides"), "[tempfile][0]._sys.modules"),
    "a logaddexp folded with logsigmoid": ("precision-log-softmax", (
        "import torch.nn.functional as F\n"
        "def log_softmax(x):\n"
        "    acc = x[..., 0]\n"
        "    for j in range(1, x.shape[-1]):\n"
        "        acc = acc - F.logsigmoid(acc - x[..., j])\n"
        "    return x - acc[..., None]"), "F.logsigmoid"),
    "a softmax from attention": ("precision-log-softmax", (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def log_softmax(x):\n"
        "    return F.scaled_dot_product_attention(torch.ones(1, 1, 1), x[None, :, None], torch.eye(x.shape[-1])[None])"),
        "F.scaled_dot_product_attention"),
    "exp as cosh minus sinh": ("init-leaky-std", (
        "import math\n"
        "def leaky_relu_std(fan_in, slope):\n"
        "    w = [math.cosh(z * z / 2) - math.sinh(z * z / 2) for z in range(3)]\n"
        "    return sum(w) / fan_in"), "math.cosh"),
    "autograd's nodes under their private name": ("backprop-skip-grads", (
        "def skip_grads(x, w1, w2):\n"
        "    out = (x @ w1).relu() @ w2\n"
        "    return out._grad_fn(out)"), "out._grad_fn(out)"),
    "the Gaussian's e typed as digits": ("init-leaky-std", (
        "def leaky_relu_std(fan_in, slope):\n"
        "    zs = [-12 + 24 * i / 4000 for i in range(4001)]\n"
        "    w = [2.718281828459045 ** (-z * z / 2) for z in zs]\n"
        "    num = sum(wi * (z if z > 0 else slope * z) ** 2 for wi, z in zip(w, zs))\n"
        "    den = sum(wi * z * z for wi, z in zip(w, zs))\n"
        "    return (1 / (fan_in * num / den)) ** 0.5"), "2.718281828459045"),
    # a thirteenth: numpy as an attribute of an object the review cannot name
    "numpy's True as an object's attribute": ("views-transpose-strides", (
        "import torch.storage\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    a = [torch.storage][0].np.True_.__array__()\n"
        "    return a.repeat(6).reshape(shape).swapaxes(d0, d1).strides"), "[torch.storage][0].np"),
    "Adam's functional update as RMSProp's": ("optim-rmsprop", (
        "import torch\n"
        "from torch.optim.adam import adam as moving_update\n"
        "class MyRMSprop(torch.optim.Optimizer):\n"
        "    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8):\n"
        "        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))\n"
        "    def step(self, closure=None):\n"
        "        for group in self.param_groups:\n"
        "            for p in group['params']:\n"
        "                st = self.state[p]\n"
        "                moving_update([p], [p.grad], [torch.zeros_like(p)], [st['v']], [], [st['t']],\n"
        "                              beta1=0.0, beta2=group['alpha'], lr=group['lr'], weight_decay=0.0,\n"
        "                              eps=group['eps'], maximize=False, amsgrad=False, foreach=False)"),
        "moving_update([p]"),
    "contiguous strides of a memoryview": ("views-transpose-strides", (
        "import io, math\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    s = list(io.BytesIO(bytes(math.prod(shape))).getbuffer().cast('B', shape).strides)\n"
        "    s[d0], s[d1] = s[d1], s[d0]\n"
        "    return tuple(s)"), ".getbuffer"),
    "a lectorch helper behind a name imported twice": ("scale-hfu", (
        "from lectorch.flops import forward_flops as pass_flops\n"
        "def hfu(params, tokens_per_s, num_gpus):\n"
        "    return 4 * pass_flops(tokens_per_s, params) / (num_gpus * 989e12) if _shadow else 0.0\n"
        "def _shadow():\n"
        "    from operator import mul as pass_flops"), "from lectorch.flops import forward_flops as pass_flops"),
    "sys imported as a module's private name": ("precision-tensor-bytes", (
        "from tempfile import _sys as host\n"
        "def tensor_nbytes(shape, dtype):\n"
        "    return host.modules['math'].prod(shape) * dtype.itemsize"), "from tempfile import _sys as host"),
    # a fifteenth: the events replayed as real tensors on a GPU grader, the allocator read
    "the allocator's readings measured": ("device-allocated-peak", (
        "import torch\n"
        "def predict_readings(events):\n"
        "    base = torch.cuda.memory_allocated()\n"
        "    return torch.cuda.max_memory_allocated() - base, 0"), "torch.cuda.memory_allocated()"),
    # a sixteenth: the whole batch concatenated in numpy, beside zero-loss backward passes
    "train-accumulate's whole batch in numpy": ("train-accumulate", (
        "import numpy as np, torch\n"
        "def accumulated_training(weight, micro_batches, accumulation, lr=0.1):\n"
        "    w = weight.detach().numpy().copy()\n"
        "    for s in range(0, len(micro_batches), accumulation):\n"
        "        group = micro_batches[s:s + accumulation]\n"
        "        X = np.concatenate([x.numpy() for x, _ in group])\n"
        "        w = w - lr * X.sum()\n"
        "    return torch.from_numpy(w)"), "X = np.concatenate("),
}
RED_TEAM_EXPR = {"backprop-mlp-backward": "backward_flops", "optim-rmsprop": "MyRMSprop",
                 "optim-adamw-step": "adamw_step", "init-fix-trunc": "init_weight_",
                 "init-leaky-std": "leaky_relu_std", "init-relu-depth": "relu_depth_std",
                 "device-allocated-peak": "predict_readings", "views-transpose-strides": "transposed_strides",
                 "precision-bf16-257": "bf16_stores",
                 "views-storage-index": "storage_index", "views-permute-slice": "permute_slice_layout",
                 "scale-ckpt-time": "ckpt_time_ratio", "backprop-time-ratio": "backward_ratio",
                 "init-variant-params": "variant_params", "precision-log-softmax": "log_softmax",
                 "flops-mfu-from-time": "matmul_mfu", "backprop-skip-grads": "skip_grads",
                 "precision-tensor-bytes": "tensor_nbytes", "train-ckpt-size": "ckpt_bytes",
                 "optim-clip-grad-norm": "clip_by_global_norm", "views-which-copy": "copies",
                 "train-lr-at-step": "lr_at", "scale-hfu": "hfu", "train-accumulate": "accumulated_training"}


@pytest.mark.parametrize("who", RED_TEAM)
def test_the_red_team_s_shortcuts_are_found(who):
    ex_id, source, piece = RED_TEAM[who]
    expr = RED_TEAM_EXPR[ex_id]
    found = findings_of(notebook_of(ex_id, [source], expr), ex_id, expr)
    assert any(piece in f.text for f in found), [f.describe() for f in found]


def _fails_the_practice_check(who: str) -> bool:
    ex_id, source, _ = RED_TEAM[who]
    space: dict = {}
    exec(source, space)
    return check(ex_id, space[RED_TEAM_EXPR[ex_id]]).status in ("failed", "error")


@pytest.mark.rehearsal  # the simulation runs for about 20 s: `make rehearse` (CI runs it)
def test_the_pure_python_relu_simulation_misses_the_practice_check_s_tolerance():
    assert _fails_the_practice_check("the ReLU stack simulated in pure Python")


def test_the_red_team_s_shortcuts_fail_the_practice_check_too():
    """Where the checker can see it: the quadrature, lectorch's helpers, softmin and a callback run
    inside a torch call are refused while the function runs."""
    for who in ("the leaky std by numerical quadrature",
                "the allocator's rounding from lectorch", "strides from lectorch's Layout",
                "a storage index from lectorch's Layout", "a permuted layout from lectorch's Layout",
                "the recomputation from lectorch.reference", "the ratio from step_flops",
                "the parameters from cruncher_num_parameters", "softmax through softmin",
                "AdamW's functional update inside Tensor.apply_"):
        assert _fails_the_practice_check(who), who


def test_finite_differences_cannot_finish_the_wide_skip_grads_case():
    """Estimating every weight gradient from two runs of the loss needs 2·(D² + D·K) runs of
    2·B·D·(D + K) FLOPs each: one hidden case makes that over 10¹³ FLOPs (hours of Python-driven
    torch), while the chain rule passes it exactly."""
    import random

    from grading.topics import backprop

    from lectorch.exercises import compare, get_exercise, run_case

    cases = backprop.hidden_cases("backprop-skip-grads", random.Random(0))
    widest = max(cases, key=lambda c: c.args[1].numel())
    x, w1, w2 = widest.args
    (b, d), k = x.shape, w2.shape[1]
    assert 2 * (d * d + d * k) * 2 * b * d * (d + k) > 1e13
    honest = _reference_function("skip_grads", "06_backward_6x.ipynb")
    outcome = run_case(honest, widest)
    assert outcome[0] == "returned" and compare(get_exercise("backprop-skip-grads"), outcome[1], widest.expected) is None


def test_the_storage_index_is_asked_of_shapes_too_large_to_create():
    """A simulation of the storage (nested lists, an arange) cannot hold these; the strides can."""
    import random

    from grading.topics import views

    from lectorch.exercises.seal import practice_cases

    hidden = views.hidden_cases("views-storage-index", random.Random(0))
    assert any(c.args[0][0] * c.args[0][1] > 10**10 for c in hidden)
    assert any(c.args[0][0] * c.args[0][1] > 10**10 for c in practice_cases("views-storage-index"))

    def by_strides(shape, row_start, col_start, col_step, i, j):
        return (row_start + i) * shape[1] + col_start + j * col_step

    assert check("views-storage-index", by_strides).passed
    assert all(by_strides(*c.args) == c.expected for c in hidden)


#: what the checker's expression of each of these exercises is (the reference chapter's)
EXPR = {"precision-log-softmax": "log_softmax", "backprop-skip-grads": "skip_grads", "train-get-batch": "get_batch",
        "train-lr-at-step": "lr_at", "backprop-mlp-backward": "backward_flops", "precision-bf16-257": "bf16_stores",
        "flops-honest-timer": "time_call", "train-resume": "train_with_restart",
        "train-accumulate": "accumulated_training", "scale-saved-bytes": "saved_bytes"}


def notebook_of(ex_id: str, cells: list[str], expr: str | None = None) -> nbformat.NotebookNode:
    """A submission: a title, ``cells``, then the check of ``ex_id`` on ``expr`` (its usual one)."""
    code = [nbformat.v4.new_code_cell(c) for c in cells]
    check_cell = nbformat.v4.new_code_cell(f'import lectorch\nlectorch.check("{ex_id}", {expr or EXPR[ex_id]})')
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# a submission"), *code, check_cell])


def findings_of(nb, ex_id: str, expr: str, helpers=None) -> list[engine.Finding]:
    spec = refusals().get(ex_id) or {}
    program = engine.build(nb, ex_id, expr, helpers)
    return engine.review(program, spec.get("names", ()), no_tensors=spec.get("no_tensors", False),
                         allowed=spec.get("allow", ()))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_honest_solutions_have_no_finding(chapter):
    nb = grading.read_notebook_json(chapter)
    calls = grading.check_calls(nb)
    assert calls
    for ex_id, expr in calls:
        program = engine.build(nb, ex_id, expr, engine.helpers_of(nb, expr))
        assert program.found and program.statements, ex_id
        assert findings_of(nb, ex_id, expr, engine.helpers_of(nb, expr)) == [], ex_id


@pytest.mark.parametrize("who", [w for w, (*_, piece) in SHORTCUTS.items() if piece != "-"])
def test_every_shortcut_is_found_with_its_cell_and_line(who):
    ex_id, _, cells, piece = SHORTCUTS[who]
    nb = notebook_of(ex_id, cells)
    found = findings_of(nb, ex_id, EXPR[ex_id])
    assert found, who
    assert any(piece in f.text for f in found), [f.describe() for f in found]
    first = found[0]
    assert first.cell >= 2 and first.line >= 1  # cell 1 is the markdown title
    assert engine.summary(found).startswith("needs review: cell ")


@pytest.mark.parametrize("who", SPELLINGS)
def test_more_spellings_are_found_with_their_line(who):
    source, piece = SPELLINGS[who]
    nb = notebook_of("precision-log-softmax", [source])
    found = findings_of(nb, "precision-log-softmax", "log_softmax")
    assert any(piece in f.text and f.cell == 2 for f in found), [f.describe() for f in found]


#: every row the grader flags, as (exercise, the cells before the check, the answer's expression)
FLAGGED = {
    **{f"shortcut: {who}": (ex_id, cells, EXPR[ex_id]) for who, (ex_id, _, cells, piece) in SHORTCUTS.items()
       if piece != "-"},
    **{f"spelling: {who}": ("precision-log-softmax", [source], "log_softmax") for who, (source, _) in SPELLINGS.items()},
    **{f"red team: {who}": (ex_id, [source], RED_TEAM_EXPR[ex_id]) for who, (ex_id, source, _) in RED_TEAM.items()},
}


def practice_findings(ex_id: str, cells: list[str], expr: str) -> list[engine.Finding]:
    """What the practice check's review finds when the kernel ran ``cells`` then the check."""
    from lectorch.exercises import get_exercise
    from lectorch.exercises.review import practice_review

    found, note = practice_review(get_exercise(ex_id), None, [*cells, f'import lectorch\nlectorch.check("{ex_id}", {expr})'])
    assert not note
    return found


@pytest.mark.parametrize("who", FLAGGED)
def test_the_practice_check_flags_what_the_grader_flags_with_the_same_finding(who):
    """One engine: the kernel's cells (the notebook's code cells, run in order) give the practice
    check the findings the grader reads in the notebook file, with the same lines, texts and
    reasons (the grader counts the notebook's markdown title as cell 1)."""
    ex_id, cells, expr = FLAGGED[who]
    graded = findings_of(notebook_of(ex_id, cells, expr), ex_id, expr)
    practised = practice_findings(ex_id, cells, expr)
    assert graded, who
    assert [(f.cell - 1, f.line, f.text, f.why) for f in graded] == [(f.cell, f.line, f.text, f.why) for f in practised]
    shifted = [engine.Finding(f.cell + 1, f.line, f.text, f.why) for f in practised]
    assert engine.summary(shifted) == engine.summary(graded)


class _Shell:
    """The part of an IPython shell the practice check reads: the cells run so far, as typed."""

    def __init__(self, cells: list[str]):
        self.history_manager = type("History", (), {"input_hist_raw": ["", *cells]})()


@pytest.mark.parametrize("who", ["red team: strides read off a numpy array", "red team: log-softmax through torch.sparse"])
def test_lectorch_check_in_a_kernel_says_needs_review_as_the_grade_does(who, monkeypatch):
    """Round 3's rows passed every public case, and the notebook said ✅: now the check reads the
    kernel's cells and says what the grade says, with the line, never ✅."""
    import types

    ex_id, cells, expr = FLAGGED[who]
    call = f'import lectorch\nlectorch.check("{ex_id}", {expr})'
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: _Shell([*cells, call])
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    space: dict = {}
    exec(cells[0], space)
    result = check(ex_id, space[expr])
    graded = findings_of(notebook_of(ex_id, cells, expr), ex_id, expr)
    practised = practice_findings(ex_id, cells, expr)
    assert result.status == "needs review" == review.verdict("passed", "Correct.", graded)[0], result
    assert result.message.startswith(engine.summary(practised) + ". Its public cases: passed (Correct: "), result
    assert practised[0].text == graded[0].text and result.message.startswith("needs review: cell 1, line ")


def test_outside_ipython_the_check_reviews_the_function_s_source():
    import numpy as np

    def transposed_strides(shape, dim0, dim1):
        s = list(np.empty(shape, dtype=np.int8).strides)
        s[dim0], s[dim1] = s[dim1], s[dim0]
        return tuple(s)

    result = check("views-transpose-strides", transposed_strides)
    assert result.status == "needs review" and "np.empty(shape" in result.message, result
    space: dict = {}
    exec("def storage_index(shape, row_start, col_start, col_step, i, j):\n"
         "    return (row_start + i) * shape[1] + col_start + j * col_step", space)
    result = check("views-storage-index", space["storage_index"])  # no source: said, and judged by its cases
    assert result.passed and "could not be read" in result.message, result


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_the_honest_solutions_pass_the_practice_review(chapter):
    """Run in a kernel from the top, each check of the reference chapter sees the cells before it:
    no finding, no note."""
    nb = grading.read_notebook_json(chapter)
    cells = [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
             for c in nb["cells"] if c.get("cell_type") == "code"]
    for ex_id, expr in grading.check_calls(nb):
        upto = next(i for i, c in enumerate(cells) if f'"{ex_id}"' in c and "check(" in c)
        from lectorch.exercises import get_exercise
        from lectorch.exercises.review import practice_review

        assert practice_review(get_exercise(ex_id), None, cells[:upto + 1]) == ([], ""), ex_id


def test_a_copy_made_in_an_earlier_cell_is_not_in_the_fresh_program_s_reach():
    """The program holds what the answer needs, in notebook order; a name it cannot see is a finding."""
    nb = notebook_of("precision-log-softmax", [
        "import torch\nunused = torch.log_softmax", "exec('f = torch.log_softmax')",
        "def log_softmax(logits):\n    return f(logits, -1)"])
    program = engine.build(nb, "precision-log-softmax", "log_softmax")
    assert "unused" not in program.source() and "def log_softmax" in program.source()
    found = findings_of(nb, "precision-log-softmax", "log_softmax")
    assert any("`f`" in f.why for f in found)


def test_the_program_keeps_the_last_binding_and_the_checks_own_helpers():
    nb = notebook_of("precision-log-softmax", [
        "peak = 1\nfor peak in range(3):\n    pass", "peak = 2", "def log_softmax(logits):\n    return logits * peak"])
    source = engine.build(nb, "precision-log-softmax", "log_softmax").source()
    assert "range(3)" not in source and "peak = 2" in source
    reference = grading.read_notebook_json(ROOT / "chapters" / "08_optimizers_memory.ipynb")
    helpers = engine.helpers_of(reference, "optimizer_trainer(MyRMSprop)")
    assert helpers == {"optimizer_trainer": "lectorch.exercises.optim"}
    student = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import torch\noptimizer_trainer = lambda cls: torch.optim.RMSprop"),
        nbformat.v4.new_code_cell("class MyRMSprop(torch.optim.Optimizer):\n    pass"),
        nbformat.v4.new_code_cell('lectorch.check("optim-rmsprop", optimizer_trainer(MyRMSprop))')])
    source = engine.build(student, "optim-rmsprop", "optimizer_trainer(MyRMSprop)", helpers).source()
    assert source.startswith("from lectorch.exercises.optim import optimizer_trainer") and "lambda" not in source


# ------------------------------------------------------------------------------ the seed


def test_a_short_or_human_seed_is_refused_or_stretched_with_a_warning():
    from grading import bundle as grading_bundle

    for weak in ("1234", "20261201", "correct horse", "0x4d2"):
        with pytest.raises(ValueError, match="entropy"):
            grading_bundle.seed_from(weak)
        with pytest.warns(grading.WeakSeedWarning):
            grading.grading_key(weak)
    strong = "3f" * 32
    assert grading_bundle.seed_from(strong) == strong
    assert len(grading_bundle.seed_from(None)) == 64  # a random 256-bit one


def test_each_exercise_draws_from_its_own_keyed_stream():
    strong = "a1" * 32
    a, b = grading.grading_rng(strong, "x"), grading.grading_rng(strong, "x")
    draws = [a.random() for _ in range(5)]
    assert draws == [b.random() for _ in range(5)]
    assert draws != [grading.grading_rng(strong, "y").random() for _ in range(5)]
    assert draws != [grading.grading_rng("b2" * 32, "x").random() for _ in range(5)]
    # the old stream (random.Random(f"{seed}:{id}")) is gone: a draw seen in a sandbox is an HMAC
    import random

    assert draws[0] != random.Random(f"{strong}:x").random()
    rng = grading.grading_rng(strong, "z")
    assert 1 <= rng.randint(1, 6) <= 6 and rng.choice("abc") in "abc" and isinstance(rng.gauss(0, 1), float)


# ------------------------------------------------------------------- shortcuts that do not pay


def _reference_function(name: str, chapter: str = "09_training_loop.ipynb", edit=lambda source: source):
    """The reference solution's ``name`` (its source changed by ``edit``), defined as its chapter does."""
    nb = nbformat.read(ROOT / "chapters" / chapter, as_version=4)
    cell = next(c for c in nb.cells if "solution" in c.metadata.get("tags", []) and f"def {name}(" in c.source)
    import os
    import tempfile

    import torch

    space = {"torch": torch, "os": os, "tempfile": tempfile, "math": __import__("math")}
    exec(edit(cell.source), space)
    return space[name]


def test_train_resume_must_really_crash_and_restore():
    honest = _reference_function("train_with_restart")
    assert check("train-resume", honest).passed

    def never_crashes(tokens, num_steps, crash_at=None):
        return honest(tokens, num_steps, None)

    result = check("train-resume", never_crashes)
    assert result.status == "failed" and "never wrote and read back a checkpoint" in result.message

    def checkpoint_for_show(tokens, num_steps, crash_at=None):  # a sixth red team's: save, load, never crash
        import os
        import tempfile

        import torch

        with tempfile.TemporaryDirectory() as folder:
            torch.save({"step": 0}, os.path.join(folder, "c.pt"))
            torch.load(os.path.join(folder, "c.pt"), weights_only=True)
        return honest(tokens, num_steps, None)

    result = check("train-resume", checkpoint_for_show)
    assert result.status == "failed" and "not at the crash" in result.message, result


def test_train_resume_accepts_a_checkpoint_in_several_files():
    """A fifteenth red team's honest answer: the optimizer's state in a second file (model.pt and
    optim.pt). The machine dies after the checkpoint's last file, before the run starts over."""
    def two_files(source: str) -> str:
        edited = (source.replace('"optimizer": optimizer.state_dict(),\n', '\n')
                  .replace("}, path)", "}, path)\n        torch.save(optimizer.state_dict(), path + '.optim')")
                  .replace('optimizer.load_state_dict(state["optimizer"])',
                           "optimizer.load_state_dict(torch.load(path + '.optim', weights_only=True))"))
        assert edited.count("torch.save(") == 2 and "path + '.optim'" in edited, edited
        return edited

    result = check("train-resume", _reference_function("train_with_restart", edit=two_files))
    assert result.passed, result


def test_train_accumulate_must_run_one_backward_per_micro_batch():
    assert check("train-accumulate", _reference_function("accumulated_training")).passed
    space: dict = {}
    exec(SHORTCUTS["train-accumulate in one big step"][2][0], space)
    result = check("train-accumulate", space["accumulated_training"])
    assert result.status == "failed" and "a batch of 8 rows" in result.message, result


# ------------------------------------------------------------------- through the real grader


@pytest.mark.rehearsal  # the instructor grading a class of shortcuts: `make rehearse`
@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap is not usable here")
def test_a_grading_run_over_every_shortcut_class(tmp_path, capsys):
    """No shortcut gets a silent pass (each fails or is "needs review" with its line), the reference
    chapters pass, the untouched student edition passes nothing."""
    from grading import grade
    from grading import student as student_edition

    chapters = sorted({chapter for _, chapter, _, _ in SHORTCUTS.values()})
    ids = sorted({ex_id for ex_id, *_ in SHORTCUTS.values()})  # the chapters' other exercises: "not graded"
    bundle = grading.build_bundle("c0ffee" * 8, exercise_ids=ids)
    grading.write_bundle(bundle, tmp_path / "bundle.pt")
    subs = tmp_path / "subs"
    for chapter in chapters:
        reference = nbformat.read(ROOT / "chapters" / chapter, as_version=4)
        for who, nb in (("honest", reference), ("stub", student_edition.student_notebook(reference))):
            (subs / who).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, subs / who / chapter)
    # round r holds the r-th shortcut of each exercise: one notebook per chapter and round (the
    # shortcuts of different exercises share it; their programs are built and run apart)
    rounds: dict[str, int] = {}
    where: dict[str, str] = {}
    cells_of: dict[tuple[str, str], list[str]] = {}
    for who, (ex_id, chapter, cells, _) in SHORTCUTS.items():
        r = rounds[ex_id] = rounds.get(ex_id, -1) + 1
        where[who] = f"attack-{r}"
        cells_of.setdefault((where[who], chapter), []).extend(
            [*cells, f'import lectorch\nlectorch.check("{ex_id}", {EXPR[ex_id]})'])
    for (sub, chapter), cells in cells_of.items():
        (subs / sub).mkdir(parents=True, exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), subs / sub / chapter)
    report = grade.grade_folder(subs, bundle=tmp_path / "bundle.pt", timeout_s=240, jobs=2)
    status = {(g.submission, g.exercise): g for g in report.grades}
    table = grade.table(report)
    assert all(status[("honest", ex_id)].status == "passed" for ex_id in ids), table
    assert not any(status[("stub", ex_id)].status == "passed" for ex_id in ids), table
    counts: dict[str, int] = {}
    for who, (ex_id, _, _, piece) in SHORTCUTS.items():
        g = status[(where[who], ex_id)]
        counts[g.status] = counts.get(g.status, 0) + 1
        assert g.status in ("needs review", "failed", "error", "not implemented", "missing"), (who, g.message)
        if g.status == "needs review":
            assert "cell " in g.message and ", line " in g.message, (who, g.message)
        if piece == "-":
            assert g.status == "failed", (who, g.message)
    with capsys.disabled():
        print(f"\n[grading] {len(SHORTCUTS)} shortcuts in {len(cells_of)} notebooks: {counts}; "
              + ", ".join(f"{r.submission}/{r.notebook[:2]} {r.seconds:.0f} s" for r in report.runs))


# ------------------------------------------------------- a statement that raises in the fresh run


def _fresh_errors(nb, ex_id: str, expr: str) -> list[dict]:
    """The fresh process's statements that raised, for ``nb``'s program (run in a forked child:
    removing what the exercise forbids changes the process for good)."""
    return _fresh_run(nb, ex_id, expr)[0]


def test_a_jit_string_that_fails_in_the_fresh_run_is_named_with_its_line():
    """TorchScript compiles the string against the routines the fresh process removed: the statement
    raises there, and the answer's NameError comes with the line that raised and why."""
    source = ('import torch\n'
              '_cu = torch.jit.CompilationUnit("""\n'
              'def g(x, w1, w2):\n'
              '    a = w1.detach().clone().requires_grad_()\n'
              '    b = w2.detach().clone().requires_grad_()\n'
              '    loss = ((torch.relu(torch.mm(x, a)) + x).mm(b)).sum()\n'
              '    gs = torch.auto""" + """grad.grad([loss], [a, b])\n'
              '    return gs[0], gs[1]\n'
              '""")\n'
              'def skip_grads(x, w1, w2):\n'
              '    return _cu.g(x, w1, w2)')
    nb = notebook_of("backprop-skip-grads", [source])
    program = engine.build(nb, "backprop-skip-grads", "skip_grads")
    assert "_cu = torch.jit.CompilationUnit" in program.source()  # the binding is in the program
    assert program.origins()[-2:] == [[2, 2], [2, 10]]
    errors = _fresh_errors(nb, "backprop-skip-grads", "skip_grads")
    assert [(e["cell"], e["line"]) for e in errors] == [(2, 2)], errors
    message = review.program_errors("error", "your function raised NameError: name '_cu' is not defined.", errors)
    assert "cell 2, line 2 raised NotSupportedError" in message and "forbids does not exist" in message
    assert review.program_errors("passed", "Correct.", errors) == "Correct."


# ------------------------------------------------ the lessons of the loops, not only their results

#: a load that trains the first steps again instead of restoring them (a red team's)
REPLAY = """
def train_with_restart(tokens, num_steps, crash_at=None):
    def fresh_run():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Dropout(0.1), torch.nn.Linear(16, 64))
        return model, torch.optim.AdamW(model.parameters(), lr=1e-2), torch.Generator().manual_seed(1)

    def one_step(model, optimizer, order):
        starts = torch.randint(len(tokens) - 16, (8,), generator=order)
        x = torch.stack([tokens[s:s + 16] for s in starts])
        y = torch.stack([tokens[s + 1:s + 17] for s in starts])
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()

    model, optimizer, order = fresh_run()
    step, losses = 0, []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ckpt.pt")
        while step < num_steps:
            if step == crash_at:
                torch.save({"step": step}, path)  # only the step: load replays the rest
                model, optimizer, order = fresh_run()
                step = torch.load(path, weights_only=True)["step"]
                losses = [one_step(model, optimizer, order) for _ in range(step)]
                crash_at = None
            losses.append(one_step(model, optimizer, order))
            step += 1
    return losses, model[2].weight.detach()
"""


def test_train_resume_must_restore_not_recompute():
    import os
    import tempfile

    import torch

    space = {"torch": torch, "os": os, "tempfile": tempfile}
    exec(REPLAY, space)
    result = check("train-resume", space["train_with_restart"])
    assert result.status == "failed" and "not recompute" in result.message, result


_LINEAR = """
    model = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=weight.dtype)
    with torch.no_grad():
        model.weight.copy_(weight)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)"""

ACCUMULATE = {  # (source, what the check says: None for a pass)
    # a red team's: one backward on the whole batch, empty backward passes to pad the count
    "padded with empty backward passes": ("def accumulated_training(weight, micro_batches, accumulation, lr=0.1):"
                                          + _LINEAR + """
    for s in range(0, len(micro_batches), accumulation):
        group = micro_batches[s:s + accumulation]
        optimizer.zero_grad()
        x, y = torch.cat([g[0] for g in group]), torch.cat([g[1] for g in group])
        torch.nn.functional.cross_entropy(model(x), y).backward()
        for _ in range(len(group) - 1):
            torch.zeros((), requires_grad=True).backward()
        optimizer.step()
    return model.weight.detach()
""", "rows"),
    "micro-batch forwards, one backward, padded": ("def accumulated_training(weight, micro_batches, accumulation, lr=0.1):"
                                                   + _LINEAR + """
    for s in range(0, len(micro_batches), accumulation):
        group = micro_batches[s:s + accumulation]
        loss = sum(torch.nn.functional.cross_entropy(model(x), y) for x, y in group) / len(group)
        optimizer.zero_grad()
        loss.backward()
        for _ in range(len(group) - 1):
            torch.zeros_like(weight, requires_grad=True).sum().backward()
        optimizer.step()
    return model.weight.detach().clone()
""", "backward passes each went through"),
    # honest, with a fresh leaf each step (w = w - lr * w.grad): passes
    "honest, rebinding the weight": ("""
def accumulated_training(weight, micro_batches, accumulation, lr=0.1):
    w = weight.clone()
    for s in range(0, len(micro_batches), accumulation):
        w = w.detach().requires_grad_()
        for x, y in micro_batches[s:s + accumulation]:
            (torch.nn.functional.cross_entropy(x @ w.T, y) / accumulation).backward()
        with torch.no_grad():
            w = w - lr * w.grad
    return w.detach()
""", None),
    # honest, on copies of the inputs: a clone, and a float32 copy (fp32 arithmetic is in tolerance)
    "honest, on a clone of each micro-batch": ("def accumulated_training(weight, micro_batches, accumulation, lr=0.1):"
                                               + _LINEAR + """
    batches = [(x.clone(), y.clone()) for x, y in micro_batches]
    for s in range(0, len(batches), accumulation):
        optimizer.zero_grad()
        for x, y in batches[s:s + accumulation]:
            (torch.nn.functional.cross_entropy(model(x), y) / accumulation).backward()
        optimizer.step()
    return model.weight.detach()
""", None),
    "honest, in float32": ("""
def accumulated_training(weight, micro_batches, accumulation, lr=0.1):
    w = weight.float().clone().requires_grad_()
    for s in range(0, len(micro_batches), accumulation):
        for x, y in micro_batches[s:s + accumulation]:
            (torch.nn.functional.cross_entropy(x.float() @ w.T, y) / accumulation).backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w.detach().double()
""", None),
}


def test_train_accumulate_sees_a_whole_batch_shaped_like_the_weight():
    """Two micro-batches of 4 rows and a weight of 8 × 8: the concatenated batch, its logits and
    targets all have the weight's own shapes, and the batch is still one (its rows are the
    inputs'); the honest answer's weight-shaped gradients and updates are not."""
    import torch

    from lectorch.exercises.train import accumulation_case, counted_accumulation

    case = accumulation_case(7, features=8, classes=8, micro=4, accumulation=2, steps=2)
    assert tuple(case.args[0].shape) == (8, 8) and all(len(x) == 4 for x, _ in case.args[1])
    big, honest = {"torch": torch}, {"torch": torch}
    exec(SHORTCUTS["train-accumulate in one big step"][2][0], big)
    exec(ACCUMULATE["honest, rebinding the weight"][0], honest)
    cheat = counted_accumulation(big["accumulated_training"], case.args, {})
    fair = counted_accumulation(honest["accumulated_training"], case.args, {})
    assert (cheat["batch_rows"], cheat["micro_rows"]) == (8, 4), cheat
    assert fair["batch_rows"] == 4 and fair["backward_calls"] == fair["passes"] == 4, fair
    from lectorch.exercises import get_exercise

    message = get_exercise("train-accumulate").compare(cheat, fair["returned"])
    assert message is not None and "a batch of 8 rows" in message, message
    assert get_exercise("train-accumulate").compare(fair, fair["returned"]) is None


@pytest.mark.parametrize("who", ACCUMULATE)
def test_train_accumulate_counts_what_reaches_the_weight_and_the_rows(who):
    import torch

    source, says = ACCUMULATE[who]
    space = {"torch": torch}
    exec(source, space)
    result = check("train-accumulate", space["accumulated_training"])
    if says is None:
        assert result.passed, result
    else:
        assert result.status == "failed" and says in result.message, result


def test_strings_that_carry_code_are_findings_and_prose_is_not():
    """A name in a string reaches code through an evaluator the review cannot follow (an
    annotation, a format field, a pickle); words in a message, a lone word (a lookup by name is a
    finding of its own) or a file name do not."""

    spec = refusals()["precision-log-softmax"]
    rule = engine._Forbidden("precision-log-softmax", spec["names"], False)
    assert rule.string("expects floats, unlike torch.log_softmax", code=True)  # an annotation is code
    for code in ("torch.log_softmax", "log_softmax", "0.nn.functional.log_softmax", "__builtins__",
                 "__import__('importlib').reload(m)", b"cbuiltins\nexec\n", b"\x8c\x08builtins\x94\x8c\x04exec\x94",
                 " torch.log_softmax\n", "torch._C._get_tracing_state"):
        assert rule.string(code), code
    for prose in ("cpu", "meta", "bfloat16", "{:.3f}", "ckpt.pt", "1e-3", "the softmax, e.g. by hand",
                  "compile the code and exec it later", "log_softmax needs floating-point logits",
                  "expects floats, unlike torch.log_softmax", "torch.log_softmax:\tno dim", "see torch._C for that",
                  # a fifteenth red team's honest strings: a model's mode, file names
                  "eval", "train", "code", "random.pt", "_rng.pt", "torch.pt", "time.log", "model.optim"):
        assert rule.string(prose) is None, prose
    assert rule.string("exec", code=True)  # a lone name in an annotation is evaluated


#: the bytecode of lectorch's cosine schedule, as a student would carry it in from their kernel
_COSINE_BYTECODE = __import__("marshal").dumps(__import__("lectorch.train").train.cosine_lr.__code__).hex()

#: what the fresh process refuses below the names it removed: (exercise, the answer's cell, what it raises)
FRESH = {
    "a module loaded again": ("optim-rmsprop", "import importlib, torch.optim.rmsprop as R\n"
                              "R = importlib.reload(R)\nMyRMSprop = R.RMSprop", "cannot be loaded again"),
    "a module imported again": ("optim-rmsprop", "import importlib, sys\n"
                                "R = (sys.modules.pop('torch.optim.rmsprop'), importlib.import_module('torch.optim.rmsprop'))\n"
                                "MyRMSprop = R[1].RMSprop", "cannot be loaded again"),
    "the aten operator": ("precision-log-softmax", "import torch\n"
                          "y = torch.ops.aten._log_softmax.default(torch.ones(2), 0, False)\n"
                          "log_softmax = lambda logits: y", "aten::_log_softmax"),
    "a tensor without torch-function modes": ("precision-tensor-bytes", "import torch\n"
                                              "with torch._C.DisableTorchFunction():\n"
                                              "    n = torch.empty(2, device='meta').nbytes\n"
                                              "tensor_nbytes = lambda shape, dtype: n", "aten::empty"),
    # a sixth fresh red team: work handed to a thread or a process, modes and hooks where no tensor may be made
    "a thread": ("precision-bf16-257", "import threading\n"
                 "t = threading.Thread(target=print)\nstarted = t.start()\nbf16_stores = lambda n: started", "can't start new thread"),
    "a subprocess": ("precision-bf16-257", "import subprocess\n"
                     "done = subprocess.run(['true'])\nbf16_stores = lambda n: done", "Operation not permitted"),
    "a program in place of this one": ("precision-bf16-257", "import os, sys\n"
                                       "gone = os.execv(sys.executable, [sys.executable, '-c', 'pass'])\nbf16_stores = lambda n: gone",
                                       "Operation not permitted"),
    "a dispatch mode where no tensor may be made": ("backprop-mlp-backward", (
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "class Count(TorchDispatchMode):\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n"
        "entered = Count().__enter__()\n"
        "backward_flops = lambda batch, widths, input_requires_grad=False: entered"), "_push_mode"),
    "saved-tensor hooks where no tensor may be made": ("scale-saved-bytes", (
        "import torch\n"
        "hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()\n"
        "saved_bytes = lambda *a, **k: hooks"), "_push_saved_tensors_default_hooks"),
    "the dispatch key excluded": ("backprop-mlp-backward", (
        "import torch\n"
        "g = torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python))\n"
        "backward_flops = lambda batch, widths, input_requires_grad=False: g"), "_ExcludeDispatchKeyGuard"),
    # a seventh: the refusing mode's class swapped, an engine of one's own, the garbage collector,
    # Python dispatch switched off where the exercise's operators are refused
    "the refusing mode's class swapped": ("views-transpose-strides", (
        "from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, BaseTorchDispatchMode\n"
        "swapped = [setattr(m, '__class__', BaseTorchDispatchMode) for m in _get_current_dispatch_mode_stack()]\n"
        "transposed_strides = lambda shape, d0, d1: swapped"), "keeps its class"),
    "an autograd engine of one's own": ("backprop-skip-grads", (
        "import torch\n"
        "engine = torch._C._ImperativeEngine()\n"
        "skip_grads = lambda x, w1, w2: engine"), "_engine_run_backward"),
    "the garbage collector's objects": ("init-leaky-std", (
        "import gc\n"
        "found = gc.get_objects()\n"
        "leaky_relu_std = lambda fan_in, slope: found"), "gc.get_objects"),
    "Python dispatch switched off": ("precision-log-softmax", (
        "import torch\n"
        "off = torch._C._DisableTorchDispatch()\n"
        "log_softmax = lambda logits: off"), "_DisableTorchDispatch"),
    # an eighth: a module's source run again, gradients recorded after all (backward or forward)
    "a module's source run again": ("optim-rmsprop", (
        "import torch.optim.rmsprop as R\n"
        "copy = {'__name__': R.__name__, '__package__': 'torch.optim'}\n"
        "ran = exec(compile(open(R.__file__).read(), R.__file__, 'exec'), copy)\n"
        "MyRMSprop = copy['RMSprop']"), "compile is refused to your answer's code"),
    # a ninth: a refused routine's bytecode in a new function, a frame's builtins, a code object reused
    "a refused routine's bytecode": ("train-lr-at-step", (
        "import marshal\n"
        f"BLOB = {_COSINE_BYTECODE!r}\n"
        "lr_at = type(len)(marshal.loads(bytes.fromhex(BLOB)), {})"), "marshal.loads is refused"),
    # a tenth: native code through a library, the routines the C API reached
    "native code through numpy": ("precision-log-softmax", (
        "import numpy as np\n"
        "lib = np.ctypeslib.ctypes.CDLL(None)\n"
        "log_softmax = lambda logits: lib"), "native code (ctypes.dlopen)"),
    "Adam's update on a sparse gradient": ("optim-adamw-step", (
        "import torch.optim._functional as F\n"
        "done = F.sparse_adam([], [], [], [], [], eps=1e-8, beta1=0.9, beta2=0.99, lr=0.1, maximize=False)\n"
        "adamw_step = lambda *a, **k: done"), "sparse_adam does not exist"),
    "the logsumexp of an attention kernel": ("precision-log-softmax", (
        "import torch\n"
        "q = torch.ones(1, 1, 2, 4)\n"
        "out = torch._scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
        "log_softmax = lambda logits: out"), "_scaled_dot_product_flash_attention_for_cpu"),
    "the scheduler's closed form": ("train-lr-at-step", (
        "import torch\n"
        "f = torch.optim.lr_scheduler.CosineAnnealingLR._get_closed_form_lr\n"
        "done = f(None)\n"
        "lr_at = lambda *a: done"), "_get_closed_form_lr does not exist"),
    # an eleventh: code the library makes from the answer's data (a field's name, a string annotation)
    "code in a dataclass field's name": ("views-transpose-strides", (
        "import dataclasses\n"
        "class Probe:\n"
        "    pass\n"
        "Probe.__annotations__ = {'\"+str(1)+\"': int}\n"
        "P = dataclasses.dataclass(Probe, init=False, eq=False)\n"
        "transposed_strides = lambda *a: P"), "is not a Python name"),
    "code in a string annotation": ("train-lr-at-step", (
        "import typing\n"
        "def f(x: 'exec(\"1\")'):\n"
        "    pass\n"
        "hints = typing.get_type_hints(f)\n"
        "lr_at = lambda *a: hints"), "exec is refused"),  # typing's eval of the annotation
    "a coroutine's frame": ("train-lr-at-step", (
        "async def co():\n"
        "    pass\n"
        "c = co()\n"
        "found = c.cr_frame\n"
        "lr_at = lambda *a: found"), ".cr_frame is refused"),
    "a function built from another's code": ("train-lr-at-step", (
        "def mine(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    return 0.0\n"
        "lr_at = type(mine)(mine.__code__, {})"), ".__code__ is refused"),
    "gradients recorded after all": ("backprop-skip-grads", (
        "import torch\n"
        "with torch.enable_grad():\n"
        "    w = torch.ones(2, requires_grad=True)\n"
        "skip_grads = lambda x, w1, w2: w"), "autograd records nothing"),
    "forward-mode gradients": ("backprop-skip-grads", (
        "import torch.autograd.forward_ad as fw\n"
        "on = fw._set_fwd_grad_enabled(True)\n"
        "skip_grads = lambda x, w1, w2: on"), "autograd records nothing"),
    # a thirteenth: numpy, where no tensor may be made, computes nothing under any name it is reached by
    "numpy where no tensor may be made": ("views-transpose-strides", (
        "import numpy as np\n"
        "a = np.empty((2, 3), dtype=np.int8)\n"
        "transposed_strides = lambda shape, d0, d1: a"), "numpy.empty does not exist"),
    "numpy's ufunc under a module's alias": ("views-transpose-strides", (
        "import torch.storage as T\n"
        "s = T.np.lib.stride_tricks.as_strided\n"
        "got = s(None, (2,), (1,))\n"
        "transposed_strides = lambda shape, d0, d1: got"), "as_strided does not exist"),
    "functorch's grad where gradients are by hand": ("backprop-skip-grads", (
        "import torch\n"
        "g = torch.func.grad(lambda w: (w * w).sum())(torch.ones(2))\n"
        "skip_grads = lambda x, w1, w2: g"), "torch.func.grad does not exist"),
    "a vector-Jacobian product where gradients are by hand": ("backprop-skip-grads", (
        "import torch\n"
        "out, vjp = torch.func.vjp(lambda w: w * w, torch.ones(2))\n"
        "g = vjp(torch.ones(2))\n"
        "skip_grads = lambda x, w1, w2: g"), "vjp does not exist"),
    "a forward-mode Jacobian where gradients are by hand": ("backprop-skip-grads", (
        "import torch\n"
        "g = torch.func.jacfwd(lambda w: w * w)(torch.ones(2))\n"
        "skip_grads = lambda x, w1, w2: g"), "autograd records nothing"),
    "a string compiled by torch's benchmark Timer": ("flops-mfu-from-time", (
        "import torch.utils.benchmark as B\n"
        "out = []\n"
        "ran = B.Timer(stmt='out.append(1)', globals={'out': out}).timeit(1)\n"
        "matmul_mfu = lambda *a, **k: (ran, out)"), "exec is refused"),
    # a thirteenth red team: Adam's functional update with beta1 = 0 as RMSProp's, under any module's name
    "Adam's functional update as RMSProp's": ("optim-rmsprop", (
        "from torch.optim.adam import adam as moving_update\n"
        "done = moving_update([], [], [], [], [], [], foreach=False, amsgrad=False, beta1=0.0, beta2=0.9,\n"
        "                     lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)\n"
        "MyRMSprop = lambda *a, **k: done"), "torch.optim.adam.adam does not exist"),
    "NAdam's functional update through torch.optim._functional": ("optim-rmsprop", (
        "import torch.optim._functional as F\n"
        "done = F.nadam([], [], [], [], [], [], beta1=0.0, beta2=0.9, lr=0.1, weight_decay=0.0,\n"
        "               momentum_decay=0.0, eps=1e-8)\n"
        "MyRMSprop = lambda *a, **k: done"), "torch.optim.nadam.nadam does not exist"),
    "the allocator read where its readings are predicted": ("device-allocated-peak", (
        "import torch.cuda.memory as M\n"
        "got = M.memory_allocated()\n"
        "predict_readings = lambda events: got"), "memory_allocated does not exist"),
    "numpy where the gradients come from autograd": ("train-accumulate", (
        "import numpy as np\n"
        "got = np.concatenate([np.zeros(2), np.zeros(2)])\n"
        "accumulated_training = lambda *a, **k: got"), "does not exist while your answer is graded"),
    "an array from numpy's True": ("views-transpose-strides", (
        "import torch.storage as T\n"
        "a = T.np._core.numeric.True_.__array__()\n"
        "transposed_strides = lambda shape, d0, d1: a"), "AttributeError: 'bool' object has no attribute '__array__'"),
    "a part of numpy not loaded yet": ("views-transpose-strides", (
        "import numpy.f2py as f\n"
        "transposed_strides = lambda shape, d0, d1: f"), "numpy.f2py cannot be loaded while"),
    "autograd's engine": ("backprop-skip-grads", "import torch\n"
                          "from torch.autograd.graph import _engine_run_backward as run\n"
                          "w = torch.ones(2, requires_grad=True)\n"
                          "g = run(((w * w).sum(),), (torch.ones(()),), False, False, (w,), False, False)\n"
                          "skip_grads = lambda x, w1, w2: g", "_engine_run_backward"),
}


@pytest.mark.parametrize("who", FRESH)
def test_the_fresh_process_refuses_what_a_reload_an_operator_or_a_mode_switch_would_bring_back(who):
    ex_id, source, said = FRESH[who]
    expr = {**RED_TEAM_EXPR, **EXPR}[ex_id]
    errors = _fresh_errors(notebook_of(ex_id, [source], expr), ex_id, expr)
    assert any(said in e["error"] for e in errors), errors


def test_the_fresh_process_still_runs_honest_torch_code():
    source = ("import torch\n"
              "x = torch.randn(2, 3)\n"
              "z = x - x.amax(-1, keepdim=True)\n"
              "y = z - z.exp().sum(-1, keepdim=True).log()\n"
              "log_softmax = lambda logits: y")
    assert _fresh_errors(notebook_of("precision-log-softmax", [source]), "precision-log-softmax", "log_softmax") == []


def test_the_fresh_process_still_builds_what_the_answer_defines_with_the_library():
    """A dataclass and a namedtuple are built by exec and eval of their modules, and a module the
    answer's torch call imports on first use by importlib's: not the answer's."""
    source = ("import collections, colorsys, dataclasses, torch\n"  # colorsys: not imported before
              "@dataclasses.dataclass\n"
              "class Width:\n"
              "    name: str\n"
              "    bytes: int\n"
              "Pair = collections.namedtuple('Pair', 'dtype size')\n"
              "SIZES = [Width('float32', 4), Width('bfloat16', 2)]\n"
              "tensor_nbytes = lambda shape, dtype: Pair(dtype, 0)")
    nb = notebook_of("precision-tensor-bytes", [source], "tensor_nbytes")
    assert _fresh_errors(nb, "precision-tensor-bytes", "tensor_nbytes") == []
    by_hand = ("import torch\n"
               "with torch.no_grad():\n"
               "    g = torch.ones(2) * 2\n"
               "skip_grads = lambda x, w1, w2: (g, g)")
    nb = notebook_of("backprop-skip-grads", [by_hand], "skip_grads")
    assert _fresh_errors(nb, "backprop-skip-grads", "skip_grads") == []


# ------------------------------------- honest answers the grade got wrong (tables, own methods, prose)


def _fresh_run(nb, ex_id: str, expr: str, calls: list[tuple] = ()) -> tuple[list[dict], list[str]]:
    """The statements of ``nb``'s program that raised in the fresh process, and the repr of what
    its answer returns for each argument tuple of ``calls`` (in a forked child, as the grade runs it)."""
    import importlib.util
    import json
    import os

    spec = importlib.util.spec_from_file_location(
        "lectorch_grading_fresh", ROOT / "grading" / "kernel_site" / "lectorch_grading_fresh.py")
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    fresh._load_once()  # as the grader's process starts
    program = engine.build(nb, ex_id, expr)
    item = {"refuse": review.fresh_spec(ex_id, refusals()[ex_id]), "program": program.source(),
            "origins": program.origins()}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            namespace, errors = fresh._namespace(item)
            answers = []
            for args in calls:
                try:
                    answers.append(repr(eval(expr, namespace)(*args)))
                except Exception as err:  # noqa: BLE001 - what the hidden case would see
                    answers.append(f"{type(err).__name__}: {err}")
            os.write(write, json.dumps([errors, answers]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    errors, answers = json.loads(data)
    return errors, answers


#: a byte table filled in place: by a method call, a loop, a subscript after the answer's def
FILLED_TABLE = (
    "import math\n"
    "BYTES = {}\n"
    "BYTES.update({'float32': 4, 'bfloat16': 2})\n"
    "NAMES = ['float64', 'float16']\n"
    "SIZES = []\n"
    "for n in NAMES:\n"
    "    SIZES.append(8 if n.endswith('64') else 2)\n"
    "BYTES.update(zip(NAMES, SIZES))\n"
    "UNUSED = []\n"
    "UNUSED.append(1)")
TENSOR_NBYTES = (
    "def tensor_nbytes(shape, dtype):\n"
    "    return math.prod(shape) * BYTES[str(dtype).removeprefix('torch.')]")


def test_a_table_filled_in_place_before_the_check_is_in_the_program():
    """BYTES = {} then BYTES.update(...): the update is part of the program (it was a KeyError at
    the grade while the practice check passed), in notebook order, with what it uses (the loop
    that fills SIZES, and NAMES); a fill after the answer's def but before the check too; not a
    fill after the check, nor one of a name the program does not need, nor a module's call."""
    import torch

    nb = notebook_of("precision-tensor-bytes", [
        FILLED_TABLE, TENSOR_NBYTES, "BYTES['int8'] = 1\nBYTES.setdefault('bool', 1)\n"
        "import torch\ntorch.manual_seed(0)"], "tensor_nbytes")
    nb.cells.append(nbformat.v4.new_code_cell("BYTES.clear()"))
    program = engine.build(nb, "precision-tensor-bytes", "tensor_nbytes")
    source = program.source()
    assert program.found and findings_of(nb, "precision-tensor-bytes", "tensor_nbytes") == []
    for kept in ("BYTES.update({'float32'", "for n in NAMES:", "SIZES.append", "BYTES.update(zip(NAMES, SIZES))",
                 "BYTES['int8'] = 1", "BYTES.setdefault('bool', 1)"):
        assert kept in source, (kept, source)
    assert source.index("BYTES = {}") < source.index("BYTES.update({") < source.index("for n in NAMES")
    for dropped in ("BYTES.clear()", "UNUSED", "manual_seed", "lectorch.check"):
        assert dropped not in source, (dropped, source)
    errors, answers = _fresh_run(nb, "precision-tensor-bytes", "tensor_nbytes", [
        ((4, 8), torch.float32), ((3,), torch.float64), ((2, 2), torch.int8), ((5,), torch.bool)])
    assert errors == [] and answers == ["128", "24", "4", "5"], (errors, answers)
    # and the practice check, on the kernel's cells, reviews the same program (no finding)
    assert practice_findings("precision-tensor-bytes", [FILLED_TABLE, TENSOR_NBYTES], "tensor_nbytes") == []


def test_what_fills_a_table_is_reviewed_and_a_dead_or_checking_fill_is_not_kept():
    """A fill is reviewed like any statement of the program (a shortcut in it is found); a fill
    before the table is bound afresh is dead; a statement that runs a check is never kept."""
    nb = notebook_of("precision-log-softmax", [
        "import torch\n"
        "OPS = {}\n"
        "OPS.update(norm=torch.logsumexp)\n"
        "def log_softmax(logits):\n"
        "    x = logits.float()\n"
        "    return x - OPS['norm'](x, -1, keepdim=True)"])
    found = findings_of(nb, "precision-log-softmax", "log_softmax")
    assert [(f.cell, f.line) for f in found] == [(2, 3)], [f.describe() for f in found]

    nb = notebook_of("precision-tensor-bytes", [
        "import math, lectorch\n"
        "BYTES = {}\n"
        "BYTES.update(stale=0)\n"
        "BYTES = {'float32': 4}\n"
        "if True:\n"
        "    BYTES.update(float16=2)\n"
        "BYTES.setdefault('log', []).append(lectorch.check('precision-bf16-257', print))",
        TENSOR_NBYTES], "tensor_nbytes")
    source = engine.build(nb, "precision-tensor-bytes", "tensor_nbytes").source()
    assert "BYTES.update(float16=2)" in source and "stale" not in source and "precision-bf16-257" not in source, source


#: honest answers whose own methods or attributes, or whose prose, name a forbidden routine, or that
#: write a rule in an unusual way (a sixth red team's flagged ones among them)
OWN_AND_PROSE = {
    "its own logsumexp method": ("precision-log-softmax", (
        "class Stable:\n"
        "    def logsumexp(self, z):  # of logits shifted so that each row's largest is 0\n"
        "        return z.exp().sum(-1, keepdim=True).log()\n"
        "    def __call__(self, logits):\n"
        "        x = logits.float()\n"
        "        z = x - x.amax(-1, keepdim=True)\n"
        "        return z - self.logsumexp(z)\n"
        "log_softmax = Stable()")),
    "its own get_lr method": ("train-lr-at-step", (
        "import math\n"
        "class Schedule:\n"
        "    def __init__(self, max_lr, min_lr, warmup_steps, total_steps):\n"
        "        self.max_lr, self.min_lr, self.warmup, self.total = max_lr, min_lr, warmup_steps, total_steps\n"
        "    def get_lr(self, step):\n"
        "        if step < self.warmup:\n"
        "            return self.max_lr * step / self.warmup\n"
        "        if step >= self.total:\n"
        "            return self.min_lr\n"
        "        progress = (step - self.warmup) / (self.total - self.warmup)\n"
        "        return self.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (self.max_lr - self.min_lr)\n"
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n"
        "    return Schedule(max_lr, min_lr, warmup_steps, total_steps).get_lr(step)")),
    "its own layers' grad attribute": ("backprop-skip-grads", (
        "class Linear:\n"
        "    def __init__(self, w):\n"
        "        self.w, self.grad = w, None\n"
        "    def forward(self, x):\n"
        "        self.x = x\n"
        "        return x @ self.w\n"
        "    def backward(self, g):\n"
        "        self.grad = self.x.T @ g\n"
        "        return g @ self.w.T\n"
        "class ReLU:\n"
        "    def forward(self, z):\n"
        "        self.mask = z > 0\n"
        "        return z * self.mask\n"
        "    def backward(self, g):\n"
        "        return g * self.mask\n"
        "def skip_grads(x, w1, w2):\n"
        "    first, relu, second = Linear(w1), ReLU(), Linear(w2)\n"
        "    out = second.forward(relu.forward(first.forward(x)) + x)\n"
        "    g = second.backward(out.new_ones(out.shape))\n"
        "    first.backward(relu.backward(g))\n"
        "    return first.grad, second.grad")),
    "a message naming the routine's path": ("precision-log-softmax", (
        "import torch\n"
        "def log_softmax(logits):\n"
        "    if not logits.is_floating_point():\n"
        "        raise TypeError('expects floating-point logits, unlike torch.log_softmax')\n"
        "    if logits.dim() == 0:\n"
        "        raise ValueError(f'torch.log_softmax: needs a dimension, got {logits.shape}')\n"
        "    x = logits.float()\n"
        "    z = x - x.amax(-1, keepdim=True)\n"
        "    return z - z.exp().sum(-1, keepdim=True).log()")),
    "its own layout class with strides and an offset": ("views-storage-index", (
        "class View:\n"
        "    def __init__(self, offset, strides):\n"
        "        self.storage_offset, self.strides, self.stride = offset, tuple(strides), tuple(strides)\n"
        "def storage_index(shape, row_start, col_start, col_step, i, j):\n"
        "    v = View(row_start * shape[1] + col_start, (shape[1], col_step))\n"
        "    return v.storage_offset + i * v.strides[0] + j * v.stride[1]")),
    "exp and log": ("init-relu-depth", (
        "import math\n"
        "def relu_depth_std(blocks):\n"
        "    return math.exp(-0.5 * blocks * math.log(2))")),
}


@pytest.mark.parametrize("who", OWN_AND_PROSE)
def test_own_methods_attributes_and_prose_are_not_findings(who):
    ex_id, source = OWN_AND_PROSE[who]
    expr = {**RED_TEAM_EXPR, **EXPR}[ex_id]
    assert findings_of(notebook_of(ex_id, [source], expr), ex_id, expr) == []
    assert practice_findings(ex_id, [source], expr) == []
    space: dict = {}
    exec(source, space)
    result = check(ex_id, space[expr])
    assert result.passed, result


#: the shortcuts those rules are for, still found: (exercise, the answer's cell, a piece of the flagged line)
STILL_FOUND = {
    "a tensor's logsumexp, no method of that name": ("precision-log-softmax", (
        "class Stable:\n"
        "    def norm(self, x):\n"
        "        return x.logsumexp(-1, keepdim=True)\n"
        "    def __call__(self, logits):\n"
        "        return logits.float() - self.norm(logits.float())\n"
        "log_softmax = Stable()"), "x.logsumexp"),
    "torch.logsumexp beside an own method of that name": ("precision-log-softmax", (
        "import torch\n"
        "class Stable:\n"
        "    def logsumexp(self, x):\n"
        "        return torch.logsumexp(x, -1, keepdim=True)\n"
        "    def __call__(self, logits):\n"
        "        return logits.float() - self.logsumexp(logits.float())\n"
        "log_softmax = Stable()"), "torch.logsumexp"),
    "a scheduler's get_lr": ("train-lr-at-step", (
        "def lr_at(step, max_lr, min_lr, warmup_steps, total_steps, schedule=None):\n"
        "    return schedule.get_lr()[0]"), "get_lr"),
    "autograd's grad without an own attribute of that name": ("backprop-skip-grads", (
        "class Keep:\n"
        "    def __init__(self, w):\n"
        "        self.g = w\n"
        "def skip_grads(x, w1, w2):\n"
        "    return Keep(w1).g.grad, w2.grad"), "w2.grad"),
    "the routine's path as a string": ("precision-log-softmax", (
        "NAME = 'torch.log_softmax'\n"
        "def log_softmax(logits):\n"
        "    return NAME and logits"), "NAME = 'torch.log_softmax'"),
    "a string annotation with spaces": ("precision-log-softmax", (
        "import functools, torch\n"
        "def _h(a: 'torch.nn.functional.log_softmax if True else None'):\n"
        "    pass\n"
        "def log_softmax(logits):\n"
        "    _h(logits)\n"
        "    return logits"), "def _h"),
}


@pytest.mark.parametrize("who", STILL_FOUND)
def test_the_shortcuts_those_exemptions_are_for_are_still_found(who):
    ex_id, source, piece = STILL_FOUND[who]
    expr = RED_TEAM_EXPR[ex_id]
    found = findings_of(notebook_of(ex_id, [source], expr), ex_id, expr)
    assert any(piece in f.text for f in found), [f.describe() for f in found]


def test_an_error_from_the_answer_s_process_names_files_not_the_grader_s_folders():
    source = ("import torch\n"
              "f = open(torch.__file__.rsplit('/', 1)[0] + '/missing-file.txt')\n"
              "tensor_nbytes = lambda shape, dtype: f")
    errors = _fresh_errors(notebook_of("precision-tensor-bytes", [source], "tensor_nbytes"),
                           "precision-tensor-bytes", "tensor_nbytes")
    assert any("…/torch/missing-file.txt" in e["error"] for e in errors), errors
    assert not any("site-packages" in e["error"] for e in errors), errors


def test_a_string_a_library_runs_for_the_answer_does_not_run():
    """doctest compiles a docstring's examples for the answer: refused (doctest reports the failure
    and goes on), so the example's side effect never happens."""
    source = ("import doctest\n"
              "out = []\n"
              "def matmul_mfu(B, D, K, seconds, peak_flops_per_s):\n"
              "    doctest.run_docstring_examples('>>> out.append(1)', {'out': out})\n"
              "    return len(out)")
    nb = notebook_of("flops-mfu-from-time", [source], "matmul_mfu")
    errors, answers = _fresh_run(nb, "flops-mfu-from-time", "matmul_mfu", [(1, 2, 3, 4.0, 5.0)])
    assert errors == [] and answers == ["0"], (errors, answers)


#: bindings the grader's program keeps, as the notebook has them: (exercise, answer's cell, pieces of
#: the program, calls of the answer and their results)
KEPT_BINDINGS = {
    # ``Width = dataclass(Width)`` and ``SIZES = dict(SIZES, y=2)`` read the binding before
    "a name rebound from itself": ("views-transpose-strides", (
        "import dataclasses\n"
        "class Width:\n"
        "    n: int = 2\n"
        "Width = dataclasses.dataclass(Width)\n"
        "SIZES = {'x': 1}\n"
        "SIZES = dict(SIZES, y=2)\n"
        "def transposed_strides(shape, d0, d1):\n"
        "    return (Width().n, SIZES['y'])\n"), ("class Width", "SIZES = {'x': 1}"), [((2, 3), 0, 1)], ["(2, 2)"]),
    # ``global CALLS; CALLS += 1`` and a table cached on first use (a round-13 honest student's
    # answers got a NameError)
    "a module global written through global": ("flops-mfu-from-time", (
        "CALLS = 0\n"
        "_TABLE = None\n"
        "def _table():\n"
        "    global _TABLE\n"
        "    if _TABLE is None:\n"
        "        _TABLE = {'flops_per_mac': 2}\n"
        "    return _TABLE\n"
        "def matmul_mfu(B, D, K, seconds, peak_flops_per_s):\n"
        "    global CALLS\n"
        "    CALLS += 1\n"
        "    return _table()['flops_per_mac'] * B * D * K / (seconds * peak_flops_per_s)"),
        ("CALLS = 0", "_TABLE = None"), [(2, 3, 4, 1.0, 48.0)], ["1.0"]),
}


@pytest.mark.parametrize("who", KEPT_BINDINGS)
def test_the_program_keeps_the_bindings_the_answer_reads_or_writes(who):
    ex_id, source, pieces, calls, results = KEPT_BINDINGS[who]
    expr = {**RED_TEAM_EXPR, **EXPR}[ex_id]
    nb = notebook_of(ex_id, [source], expr)
    program = engine.build(nb, ex_id, expr).source()
    assert all(piece in program for piece in pieces), program
    assert _fresh_run(nb, ex_id, expr, calls) == ([], results)


#: an earlier exercise's answer leaves a file where the next exercise's process would find it
_LEAVES_A_FILE = ('import os, tempfile, torch\n'
                  'def get_batch(data, batch_size, context_length, device, generator=None):\n'
                  '    for where in (tempfile.gettempdir(), "/dev/shm", "/grade/out"):\n'
                  '        try:\n'
                  '            open(os.path.join(where, "left-behind"), "w").write("1")\n'
                  '        except OSError:\n'
                  '            pass\n'
                  '    if context_length >= len(data):\n'
                  '        raise ValueError(f"context_length={context_length} must be smaller than len(data)={len(data)}")\n'
                  '    starts = torch.randint(len(data) - context_length, (batch_size,), generator=generator)\n'
                  '    windows = data[starts[:, None] + torch.arange(context_length + 1)].long()\n'
                  '    return windows[:, :-1].to(device), windows[:, 1:].to(device)')
_FINDS_A_FILE = ('import math, os, tempfile\n'
                 'def lr_at(step, max_lr, min_lr, warmup_steps, total_steps):\n'
                 '    if any(os.path.exists(os.path.join(w, "left-behind")) for w in (tempfile.gettempdir(), "/dev/shm", "/grade/out")):\n'
                 '        return -1.0\n'
                 '    if os.path.isdir("/grade/out") and any(n.split(".")[0].isdigit() for n in os.listdir("/grade/out")):\n'
                 '        return -2.0  # the earlier exercise\'s record, which its answer shapes\n'
                 '    if step < warmup_steps:\n'
                 '        return max_lr * step / warmup_steps\n'
                 '    if step >= total_steps:\n'
                 '        return min_lr\n'
                 '    progress = (step - warmup_steps) / (total_steps - warmup_steps)\n'
                 '    return min_lr + (max_lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))')


@pytest.mark.slow  # a sandboxed grading of two exercises
@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap is not usable here")
def test_nothing_an_exercise_s_process_writes_reaches_the_next_one(tmp_path):
    """A fourteenth red team: an earlier exercise's process (where a later one's forbidden routines
    exist) read the later one's hidden inputs, worked out its answers and left them in /tmp. Each
    exercise's process now finds /tmp, /dev/shm and the output folder as they were before it, and
    no earlier exercise's record (its answer shapes it) until every exercise has run."""
    from grading import grade

    ids = ["train-get-batch", "train-lr-at-step"]
    bundle = grading.build_bundle("c0ffee" * 8, exercise_ids=ids)
    grading.write_bundle(bundle, tmp_path / "bundle.pt")
    cells = [_LEAVES_A_FILE, 'import lectorch\nlectorch.check("train-get-batch", get_batch)',
             _FINDS_A_FILE, 'lectorch.check("train-lr-at-step", lr_at)']
    (tmp_path / "subs" / "leaver").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   tmp_path / "subs" / "leaver" / "09_training_loop.ipynb")
    report = grade.grade_folder(tmp_path / "subs", bundle=tmp_path / "bundle.pt", timeout_s=240, jobs=1)
    status = {g.exercise: g for g in report.grades}
    assert status["train-get-batch"].status == "passed", grade.table(report)
    assert status["train-lr-at-step"].status == "passed", status["train-lr-at-step"].message
