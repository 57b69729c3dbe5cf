"""Try lectorch's public API with bad inputs, as a careless user would, and count what happens.

Each case is a call that must be refused. The outcome is classified as
  clear       a ValueError/TypeError/LookupError/OSError whose message names the expected word
  obscure     any other exception, or one whose message does not name the argument
  silent      the call returned (silent nonsense)
  hang        the call ran past the time limit
  allocation  the call tried to allocate more than the address-space limit allows (unguarded)

Run: ``python tools/probe_inputs.py [--list]`` (one process, an address-space limit of 4 GiB, of
which lectorch's memory checks are told 2 GiB are free, and a 10 s alarm per case; about 30 s).
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import resource
import shutil
import signal
import sys
import tempfile
import time
import warnings

import numpy as np
import torch

from lectorch import (backprop, bench, checkpoint, contractions, data, device, dtypes, flops, hardware, init,
                      memory, models, napkin, optim, quantize, randomness, roofline, step_memory, train,
                      transfer, views)
from lectorch import exercises

TIME_LIMIT_S = 10
ADDRESS_LIMIT = 4 * 2**30
#: What lectorch's memory checks are told is free on the CPU: what the address-space limit leaves.
PRETEND_FREE = 2 * 2**30

_tmp = pathlib.Path(tempfile.mkdtemp(prefix="lectorch-probe-"))
_tokens = np.arange(100, dtype=np.uint16)
_nan = float("nan")


def _endless():
    while True:
        yield 2


def _saved(name: str, **kw) -> pathlib.Path:
    path = _tmp / name
    checkpoint.save_checkpoint(path, step=1, **kw)
    return path


def _flipped() -> pathlib.Path:
    """A checkpoint with one byte of its payload changed (the middle of the first tensor's data)."""
    model = torch.nn.Linear(64, 64)
    path = _saved("flip.pt", model=model)
    raw = bytearray(path.read_bytes())
    weight = model.weight.detach().numpy().tobytes()
    at = bytes(raw).find(weight[:64]) + 1000
    raw[at] ^= 0x10
    path.write_bytes(bytes(raw))
    return path


def _sgd_into_adamw():
    model = torch.nn.Linear(4, 4)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(2, 4)).sum().backward()
    sgd.step()
    path = _saved("sgd.pt", model=model, optimizer=sgd)
    target = torch.nn.Linear(4, 4)
    adamw = torch.optim.AdamW(target.parameters())
    target(torch.ones(2, 4)).sum().backward()
    adamw.step()
    checkpoint.restore_checkpoint(path, model=target, optimizer=adamw)


def _fp64_into_fp32():
    path = _saved("fp64.pt", model=torch.nn.Linear(4, 4).double())
    checkpoint.restore_checkpoint(path, model=torch.nn.Linear(4, 4))


def _tiny_lm(*args, **kwargs):
    return (getattr(models, "TinyLM", None) or train.TinyLM)(*args, **kwargs)


def _measure_cruncher(*args, **kwargs):
    fn = getattr(step_memory, "measure_step_memory", None) or step_memory.measure_step
    return fn(*args, **kwargs)


def _weights_only_rng():
    """Chapter 07's advice: the state must survive torch.load(weights_only=True); then this raises clearly."""
    torch.save(randomness.get_rng_state(), _tmp / "r.pt")
    randomness.set_rng_state(torch.load(_tmp / "r.pt", weights_only=True))
    randomness.set_rng_state({"rng": "not a state"})


def _bounded(thunk, seconds):
    """For an input whose right handling is a bounded run time: a prompt return counts as clear."""
    start = time.perf_counter()
    thunk()
    if time.perf_counter() - start <= seconds:
        raise ValueError("max_total_s bounded the run")


def _value_exercise() -> str:
    """The id of an exercise that takes a number (ids change as chapters change)."""
    return next(i for i, ex in sorted(exercises.exercises().items()) if ex.kind == "value")


def _slow():
    time.sleep(0.01)


def cases():
    """(label, word the error must name, thunk)."""
    t = torch.ones(3, 4)
    cfg = dict(vocab_size=16, dim=8, num_layers=1, batch_size=4, context_length=8, total_steps=2, warmup_steps=0)
    yield from [
        # data
        ("get_batch 10**7 x 50", "batch_size", lambda: data.get_batch(_tokens, 10**7, 50, "cpu")),
        ("get_batch 10**7 x 256 on long data", "batch_size",
         lambda: data.get_batch(np.zeros(1000, np.uint16), 10**7, 256, "cpu")),
        ("get_batch float data", "data", lambda: data.get_batch(np.linspace(0, 9, 100), 2, 4, "cpu")),
        ("get_batch negative ids", "data", lambda: data.get_batch(np.arange(-50, 50), 2, 4, "cpu")),
        ("get_batch bool data", "data", lambda: data.get_batch(np.ones(100, bool), 2, 4, "cpu")),
        ("get_batch list data", "data", lambda: data.get_batch(list(range(100)), 2, 4, "cpu")),
        ("get_batch 2-D data", "data", lambda: data.get_batch(np.zeros((10, 10), np.uint16), 2, 4, "cpu")),
        ("get_batch batch_size 0", "batch_size", lambda: data.get_batch(_tokens, 0, 4, "cpu")),
        ("get_batch batch_size 2.5", "batch_size", lambda: data.get_batch(_tokens, 2.5, 4, "cpu")),
        ("get_batch context too long", "context_length", lambda: data.get_batch(_tokens, 2, 100, "cpu")),
        ("get_batch context 0", "context_length", lambda: data.get_batch(_tokens, 2, 0, "cpu")),
        ("get_batch device tpu", "device", lambda: data.get_batch(_tokens, 2, 4, "tpu")),
        ("get_batch device cuda:7", "device", lambda: data.get_batch(_tokens, 2, 4, "cuda:7")),
        ("get_batch generator int", "generator", lambda: data.get_batch(_tokens, 2, 4, "cpu", generator=3)),
        ("get_batch empty data", "data", lambda: data.get_batch(np.zeros(0, np.uint16), 2, 4, "cpu")),
        ("markov_tokens 3e8", "num_tokens", lambda: data.markov_tokens(3 * 10**8, 16)),
        ("markov_tokens float count", "num_tokens", lambda: data.markov_tokens(3e8, 16)),
        ("markov_tokens vocab 0", "vocab_size", lambda: data.markov_tokens(10, 0)),
        ("markov_tokens vocab 70000", "vocab_size", lambda: data.markov_tokens(10, 70000)),
        ("markov_tokens branching > vocab", "branching", lambda: data.markov_tokens(10, 4, branching=5)),
        ("markov_tokens seed -1", "seed", lambda: data.markov_tokens(10, 4, seed=-1)),
        ("bigram_entropy negative ids", "tokens", lambda: data.bigram_entropy(np.array([-1, 2, -1, 2, 3]))),
        ("bigram_entropy ids near 2**40", "tokens", lambda: data.bigram_entropy(np.array([2**40, 1, 2**40, 3, 2**40]))),
        ("bigram_entropy floats", "tokens", lambda: data.bigram_entropy(np.array([0.5, 1.5, 0.5]))),
        ("bigram_entropy one token", "tokens", lambda: data.bigram_entropy([1])),
        ("bigram_entropy 2-D", "tokens", lambda: data.bigram_entropy(np.zeros((3, 3), int))),
        ("write_tokens float", "tokens", lambda: data.write_tokens(_tmp / "f.bin", [0.5, 1.5])),
        ("write_tokens too big for uint16", "tokens", lambda: data.write_tokens(_tmp / "b.bin", [70000])),
        ("write_tokens missing folder", "path", lambda: data.write_tokens(_tmp / "no" / "t.bin", [1, 2])),
        ("write_tokens dtype float32", "dtype", lambda: data.write_tokens(_tmp / "d.bin", [1], dtype="float32")),
        ("load_tokens missing", "token file", lambda: data.load_tokens(_tmp / "missing.bin")),
        ("load_tokens odd size", "token file", lambda: (_tmp.joinpath("odd.bin").write_bytes(b"abc"),
                                                        data.load_tokens(_tmp / "odd.bin"))),
        ("tokens_on_disk negative", "num_tokens", lambda: data.tokens_on_disk(-5)),
        ("tokens_on_disk nan", "num_tokens", lambda: data.tokens_on_disk(_nan)),
        # train
        ("TrainConfig weight_decay nan", "weight_decay", lambda: train.TrainConfig(weight_decay=_nan)),
        ("TrainConfig weight_decay str", "weight_decay", lambda: train.TrainConfig(weight_decay="0.1")),
        ("TrainConfig dropout nan", "dropout", lambda: train.TrainConfig(dropout=_nan)),
        ("TrainConfig min_lr_ratio nan", "min_lr_ratio", lambda: train.TrainConfig(min_lr_ratio=_nan)),
        ("TrainConfig max_lr inf", "max_lr", lambda: train.TrainConfig(max_lr=float("inf"))),
        ("TrainConfig grad_clip -1", "grad_clip", lambda: train.TrainConfig(grad_clip=-1)),
        ("TrainConfig dtype fp7", "dtype", lambda: train.TrainConfig(dtype="fp7")),
        ("TrainConfig dtype int8", "dtype", lambda: train.TrainConfig(dtype="int8")),
        ("TrainConfig batch 0", "batch_size", lambda: train.TrainConfig(batch_size=0)),
        ("TrainConfig warmup > total", "warmup_steps", lambda: train.TrainConfig(warmup_steps=10, total_steps=5)),
        ("TrainConfig activation_checkpointing str", "activation_checkpointing",
         lambda: train.TrainConfig(activation_checkpointing="no")),
        ("train ids >= vocab", "vocab_size", lambda: train.train(train.TrainConfig(**cfg), np.arange(100, dtype=np.uint16), progress=False)),
        ("train data list", "data", lambda: train.train(train.TrainConfig(**cfg), list(range(100)), progress=False)),
        ("train config dict", "config", lambda: train.train(cfg, _tokens, progress=False)),
        ("train data too short", "context_length", lambda: train.train(train.TrainConfig(**cfg), _tokens[:5], progress=False)),
        ("TinyLM ids >= vocab", "vocab_size", lambda: _tiny_lm(8, 4, 1)(torch.tensor([[9]]))),
        ("TinyLM negative ids", "ids", lambda: _tiny_lm(8, 4, 1)(torch.tensor([[-1]]))),
        ("TinyLM float ids", "ids", lambda: _tiny_lm(8, 4, 1)(torch.zeros(1, 2))),
        ("TinyLM dropout 1.0", "dropout", lambda: _tiny_lm(8, 4, 1, dropout=1.0)),
        ("TinyLM dim 0", "dim", lambda: _tiny_lm(8, 0, 1)),
        ("lm_loss shape mismatch", "logits", lambda: train.lm_loss(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))),
        ("lm_loss targets >= V", "targets", lambda: train.lm_loss(torch.zeros(1, 2, 5), torch.full((1, 2), 7))),
        ("lm_loss float targets", "targets", lambda: train.lm_loss(torch.zeros(1, 2, 5), torch.zeros(1, 2))),
        ("cosine_lr min > max", "min_lr", lambda: train.cosine_lr(1, max_lr=1e-3, warmup_steps=1, total_steps=10, min_lr=1)),
        ("cosine_lr step -1", "step", lambda: train.cosine_lr(-1, max_lr=1e-3, warmup_steps=1, total_steps=10)),
        ("cosine_lr nan max", "max_lr", lambda: train.cosine_lr(1, max_lr=_nan, warmup_steps=1, total_steps=10)),
        ("cosine_lr min nan", "min_lr", lambda: train.cosine_lr(1, max_lr=1.0, warmup_steps=1, total_steps=10, min_lr=_nan)),
        ("cosine_schedule not optimizer", "optimizer", lambda: train.cosine_schedule("adam", warmup_steps=1, total_steps=3)),
        ("grad_norm of a tensor", "parameters", lambda: train.grad_norm(torch.ones(3))),
        ("autocast fp16 on cpu", "fp16", lambda: train.autocast_context("cpu", "fp16")),
        ("autocast fp8", "dtype", lambda: train.autocast_context("cpu", "fp8_e4m3")),
        ("autocast device gpu", "device", lambda: train.autocast_context("gpu", "bf16")),
        ("predicted_saved_bytes 0", "batch_size", lambda: train.predicted_saved_bytes(0, 1, 1, 1, 1)),
        ("measure_step batch 0", "batch_size", lambda: train.measure_step(batch_size=0)),
        ("measure_step fp16 cpu", "fp16", lambda: train.measure_step(batch_size=1, dtype="fp16")),
        ("measure_step trials 0", "trials", lambda: train.measure_step(batch_size=1, trials=0)),
        ("measure_step huge", "batch_size", lambda: train.measure_step(batch_size=10**6, dim=512, context_length=512)),
        ("saved_tensors one tensor as parameters", "parameters",
         lambda: step_memory.saved_tensors(lambda: None, parameters=torch.ones(2))),
        # step_memory
        ("measure step_memory 60000x1x8", "dim", lambda: _measure_cruncher(60000, 1, 8)),
        ("predict_step_memory dtype int8", "dtype", lambda: step_memory.predict_step_memory(4, 1, 2, dtype="int8")),
        ("predict_step_memory optimizer lion", "optimizer", lambda: step_memory.predict_step_memory(4, 1, 2, optimizer="lion")),
        ("predict_step_memory dim 0", "dim", lambda: step_memory.predict_step_memory(0, 1, 2)),
        ("step_timeline batch 1.5", "batch", lambda: step_memory.step_timeline(4, 1, 1.5)),
        ("step_flops negative", "num_layers", lambda: step_memory.step_flops(4, -1, 2)),
        ("cuda_step_peak on cpu", "cuda", lambda: step_memory.cuda_step_peak(4, 1, 2, device="cpu")),
        ("track_memory not callable", "fn", lambda: step_memory.track_memory(None)),
        ("step_memory saved_tensors not callable", "fn", lambda: step_memory.saved_tensors("x")),
        ("measure step_memory dtype fp8", "dtype", lambda: _measure_cruncher(4, 1, 2, dtype="fp8_e4m3")),
        ("measure step_memory device tpu", "device", lambda: _measure_cruncher(4, 1, 2, device="tpu")),
        # bench
        ("benchmark min_trial_s 100 max_total_s 1", "max_total_s",
         lambda: _bounded(lambda: bench.benchmark(_slow, device="cpu", min_trial_s=100, max_total_s=1), 5)),
        ("benchmark trials 0", "trials", lambda: bench.benchmark(lambda: None, device="cpu", trials=0)),
        ("benchmark fn not callable", "fn", lambda: bench.benchmark(3, device="cpu")),
        ("benchmark warmup -1", "warmup", lambda: bench.benchmark(lambda: None, device="cpu", warmup=-1)),
        ("benchmark device tpu", "device", lambda: bench.benchmark(lambda: None, device="tpu")),
        ("benchmark max_total_s nan", "max_total_s", lambda: bench.benchmark(lambda: None, device="cpu", max_total_s=_nan)),
        ("format_seconds negative", "seconds", lambda: bench.format_seconds(-0.002)),
        ("format_seconds nan", "seconds", lambda: bench.format_seconds(_nan)),
        ("format_seconds str", "seconds", lambda: bench.format_seconds("1")),
        ("mfu zero seconds", "seconds", lambda: bench.mfu(1e12, 0, 1e15)),
        ("mfu negative flops", "flops", lambda: bench.mfu(-1, 1, 1e15)),
        ("achieved_flops_per_s nan", "flops", lambda: bench.achieved_flops_per_s(_nan, 1)),
        # napkin
        ("BytesPerParam negative", "weights", lambda: napkin.BytesPerParam(weights=-2, gradients=4, optimizer_state=8)),
        ("BytesPerParam nan", "gradients", lambda: napkin.BytesPerParam(weights=2, gradients=_nan, optimizer_state=8)),
        ("BytesPerParam str", "optimizer_state", lambda: napkin.BytesPerParam(weights=2, gradients=2, optimizer_state="8")),
        ("training_days mfu 50", "mfu", lambda: napkin.training_days(1e9, 1e9, num_gpus=1, mfu=50)),
        ("training_days num_gpus 0", "num_gpus", lambda: napkin.training_days(1e9, 1e9, num_gpus=0, mfu=0.5)),
        ("training_days gpu unknown", "gpu", lambda: napkin.training_days(1e9, 1e9, num_gpus=1, mfu=0.5, gpu="H900")),
        ("training_flops negative params", "params", lambda: napkin.training_flops(-1, 1e9)),
        ("max_trainable_params zero memory", "memory_bytes", lambda: napkin.max_trainable_params(0)),
        ("summarize bytes_per_param -1", "bytes_per_param", lambda: napkin.summarize(1e9, 1e9, gpu="A100", num_gpus=1, mfu=0.5, bytes_per_param=-1)),
        ("summarize mfu 0", "mfu", lambda: napkin.summarize(1e9, 1e9, gpu="A100", num_gpus=1, mfu=0)),
        # quantize
        ("dequantize flattened scale", "scale", lambda: quantize.dequantize_int8(*(lambda q, s: (q, s.flatten()))(
            *quantize.quantize_int8(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)))))),
        ("dequantize float q", "q", lambda: quantize.dequantize_int8(torch.zeros(2, 2), torch.ones(2, 1))),
        ("dequantize int scale", "scale", lambda: quantize.dequantize_int8(torch.zeros(2, 2, dtype=torch.int8), torch.ones(2, 1, dtype=torch.int8))),
        ("quantize 1-D", "weight", lambda: quantize.quantize_int8(torch.ones(4))),
        ("quantize axis 2", "axis", lambda: quantize.quantize_int8(torch.ones(2, 2), axis=2)),
        ("quantize nan weight", "weight", lambda: quantize.quantize_int8(torch.tensor([[_nan, 1.0]]))),
        ("quantize list", "weight", lambda: quantize.quantize_int8([[1.0]])),
        ("quantization_error int weight", "weight", lambda: quantize.quantization_error(torch.ones(2, 2, dtype=torch.int64))),
        # dtypes
        ("as_dtype fp7", "dtype", lambda: dtypes.as_dtype("fp7")),
        ("as_dtype int", "dtype", lambda: dtypes.as_dtype(3)),
        ("float_format int8", "dtype", lambda: dtypes.float_format("int8")),
        ("float_bits str value", "value", lambda: dtypes.float_bits("0.1", "fp16")),
        ("float_bits tensor of 2", "value", lambda: dtypes.float_bits(torch.ones(2), "fp16")),
        ("from_fields exponent too big", "exponent", lambda: dtypes.from_fields(0, 32, 0, "fp16")),
        ("next_up nan", "nan", lambda: dtypes.next_up(_nan, "fp16")),
        ("spacing inf", "infinite", lambda: dtypes.spacing(float("inf"), "fp16")),
        ("bracket 1e6 fp16", "value", lambda: dtypes.bracket(1e6, "fp16")),
        ("relative_error nan", "value", lambda: dtypes.relative_error(_nan, "bf16")),
        ("summary_table int dtype", "dtype", lambda: dtypes.summary_table(["int8"])),
        ("bytes_per_element None", "dtype", lambda: dtypes.bytes_per_element(None)),
        # memory
        ("tensor_bytes endless iterator", "shape", lambda: memory.tensor_bytes(_endless())),
        ("tensor_bytes negative", "shape", lambda: memory.tensor_bytes((2, -3))),
        ("tensor_bytes float dims", "shape", lambda: memory.tensor_bytes((2.5, 3))),
        ("tensor_bytes dtype fp7", "dtype", lambda: memory.tensor_bytes((2, 3), "fp7")),
        ("format_bytes negative", "n", lambda: memory.format_bytes(-1)),
        ("format_bytes nan", "n", lambda: memory.format_bytes(_nan)),
        ("bytes_of list", "tensor", lambda: memory.bytes_of([1, 2])),
        ("ensure_fits 10**15", "needs", lambda: memory.ensure_fits(10**15, "cpu")),
        ("ensure_fits fraction 2", "fraction", lambda: memory.ensure_fits(1, "cpu", fraction=2)),
        # views
        ("contiguous_strides endless", "shape", lambda: views.contiguous_strides(_endless())),
        ("contiguous_strides negative", "shape", lambda: views.contiguous_strides((2, -1))),
        ("element_offset length mismatch", "index", lambda: views.element_offset((1, 2), (4,))),
        ("Layout negative shape", "shape", lambda: views.Layout((2, -1), (1, 1))),
        ("describe_view list", "tensor", lambda: views.describe_view([1, 2])),
        ("flat_storage int", "tensor", lambda: views.flat_storage(3)),
        ("shares_storage list", "tensor", lambda: views.shares_storage(t, [1])),
        # flops / contractions
        ("matmul_flops 0", "m", lambda: flops.matmul_flops(0, 2, 2)),
        ("matmul_flops float", "k", lambda: flops.matmul_flops(2, 2.5, 2)),
        ("linear_flops negative", "batch", lambda: flops.linear_flops(-1, 2, 2)),
        ("format_flops negative", "value", lambda: flops.format_flops(-5)),
        ("format_flops nan", "value", lambda: flops.format_flops(_nan)),
        ("format_flops inf", "value", lambda: flops.format_flops(float("inf"))),
        ("count_flops not callable", "fn", lambda: flops.count_flops(3)),
        ("forward_flops tokens 0", "tokens", lambda: flops.forward_flops(0, 10)),
        ("elementwise_flops 0", "numel", lambda: flops.elementwise_flops(0)),
        ("parse_pattern no arrow", "pattern", lambda: contractions.parse_pattern("ij,jk")),
        ("parse_pattern bad char", "pattern", lambda: contractions.parse_pattern("i$,jk->ik")),
        ("analyze wrong operand count", "operand", lambda: contractions.analyze("ij,jk->ik", (2, 3))),
        ("analyze size mismatch", "j", lambda: contractions.analyze("ij,jk->ik", shapes=[(2, 3), (4, 5)])),
        ("analyze negative size", "i", lambda: contractions.analyze("ij,jk->ik", {"i": -2, "j": 3, "k": 4})),
        ("parse_sizes garbage", "sizes", lambda: contractions.parse_sizes("i=two")),
        # hardware
        ("get_gpu unknown", "H900", lambda: hardware.get_gpu("H900")),
        ("get_gpu int", "name", lambda: hardware.get_gpu(100)),
        ("flops_key complex", "dtype", lambda: hardware.flops_key(torch.complex64)),
        ("peak_flops fp8 on A100", "fp8", lambda: hardware.get_gpu("A100").peak_flops("fp8")),
        # device
        ("assert_on_device tpu", "device", lambda: device.assert_on_device(t, "tpu")),
        ("assert_on_device list", "tensor", lambda: device.assert_on_device([1], "cpu")),
        ("assert_on_device wrong", "cpu", lambda: device.assert_on_device(t, "cuda")),
        ("check_device int", "device", lambda: device.check_device(3.5)),
        ("check_device cuda:9", "cuda", lambda: device.check_device("cuda:9")),
        ("get_device prefer tpu", "prefer", lambda: device.get_device("tpu")),
        ("free_memory_bytes tpu", "device", lambda: device.free_memory_bytes("tpu")),
        ("allocator_bytes negative", "nbytes", lambda: device.allocator_bytes(-1)),
        ("synchronize tpu", "device", lambda: device.synchronize("tpu")),
        # transfer / roofline
        ("measure_bandwidth 16e9", "nbytes", lambda: roofline.measure_bandwidth("cpu", nbytes=16 * 10**9)),
        ("measure_bandwidth float 16e9", "nbytes", lambda: roofline.measure_bandwidth("cpu", nbytes=16e9)),
        ("measure_copy 10**12", "copying", lambda: transfer.measure_copy(10**12, "cpu")),
        ("measure_copy pinned on cpu", "pinned", lambda: transfer.measure_copy(2**10, "cpu", pinned=True)),
        ("pcie generation 9", "generation", lambda: transfer.pcie_bytes_per_s(9)),
        ("transfer_seconds negative", "nbytes", lambda: transfer.transfer_seconds(-1, 1e9)),
        ("sweep_sizes smallest > largest", "smallest", lambda: transfer.sweep_sizes("cpu", smallest=2**20, largest=2**10)),
        ("matmul_operands 10**6 cube", "matmul", lambda: roofline.matmul_operands(10**6, 10**6, 10**6, "fp32", "cpu")),
        ("as_precision fp8", "fp8", lambda: roofline.as_precision("fp8")),
        ("matmul_intensity dtype fp7", "dtype", lambda: roofline.matmul_intensity(2, 2, 2, "fp7")),
        ("cpu_threads 0", "num_threads", lambda: getattr(bench, "cpu_threads", getattr(roofline, "cpu_threads", None))(0).__enter__()),
        ("precision_mode tf32 on cpu", "tf32", lambda: roofline.precision_mode("tf32", "cpu").__enter__()),
        # models / optim / init / backprop
        ("Cruncher dim 0", "dim", lambda: models.Cruncher(0, 1)),
        ("Cruncher wrong input width", "dim", lambda: models.Cruncher(4, 1)(torch.ones(2, 5))),
        ("Cruncher 10**6 wide", "dim", lambda: models.Cruncher(10**6, 1)),
        ("Linear generator int", "generator", lambda: models.Linear(2, 2, generator=3)),
        ("num_parameters list", "model", lambda: models.num_parameters([1])),
        ("make_optimizer lion", "lion", lambda: optim.make_optimizer("lion", [torch.zeros(1, requires_grad=True)])),
        ("SGD lr -1", "lr", lambda: optim.SGD([torch.zeros(1, requires_grad=True)], lr=-1)),
        ("Adam betas (1, 1)", "betas", lambda: optim.Adam([torch.zeros(1, requires_grad=True)], betas=(1.0, 1.0))),
        ("Momentum momentum nan", "momentum", lambda: optim.Momentum([torch.zeros(1, requires_grad=True)], momentum=_nan)),
        ("regression_problem dim 10**7 batch 10**4", "batch", lambda: optim.regression_problem(10**7, 10**4)),
        ("train_cruncher steps 0", "steps", lambda: optim.train_cruncher("sgd", steps=0)),
        ("trajectory unknown", "lion", lambda: optim.trajectory("lion", optim.rosenbrock, (0.0, 0.0))),
        ("state_bytes not optimizer", "optimizer", lambda: optim.state_bytes(3)),
        ("init_std scheme unknown", "scheme", lambda: init.init_std("he", 4)),
        ("init_std fan_in 0", "fan_in", lambda: init.init_std("lecun", 0)),
        ("init_weight 10**6 x 10**6", "fan_in", lambda: init.init_weight(10**6, 10**6)),
        ("truncated_normal_ num_std -1", "num_std", lambda: init.truncated_normal_(torch.empty(3), 1.0, -1)),
        ("layer_outputs batch 10**6 width 10**4", "batch", lambda: init.layer_outputs(10**4, "lecun", batch=10**6)),
        ("mlp_flops widths 1", "widths", lambda: backprop.mlp_flops(2, (4,))),
        ("make_mlp widths empty", "widths", lambda: backprop.make_mlp(())),
        ("attention shape mismatch", "k", lambda: backprop.attention(torch.ones(2, 3, 4), torch.ones(2, 3, 5), torch.ones(2, 3, 4))),
        ("measured_flops model int", "model", lambda: backprop.measured_flops(3, torch.ones(2, 2))),
        # randomness
        ("seed_everything -1", "seed", lambda: randomness.seed_everything(-1)),
        ("seed_everything 2**64", "seed", lambda: randomness.seed_everything(2**64)),
        ("make_generator 1.5", "seed", lambda: randomness.make_generator(1.5)),
        ("make_generator device tpu", "device", lambda: randomness.make_generator(0, "tpu")),
        ("derive_seed purpose 3", "purpose", lambda: randomness.derive_seed(0, 3)),
        ("set_rng_state garbage", "state", lambda: randomness.set_rng_state({"python": 1, "numpy": 2, "torch": 3})),
        ("get_rng_state through weights_only", "rng", lambda: _weights_only_rng()),
        # checkpoint
        ("save_checkpoint missing folder", "folder", lambda: checkpoint.save_checkpoint(_tmp / "x" / "c.pt", model=torch.nn.Linear(2, 2), step=0)),
        ("save_checkpoint step -1", "step", lambda: checkpoint.save_checkpoint(_tmp / "c.pt", model=torch.nn.Linear(2, 2), step=-1)),
        ("save_checkpoint model dict", "model", lambda: checkpoint.save_checkpoint(_tmp / "c.pt", model={}, step=0)),
        ("save_checkpoint extra with object", "extra", lambda: checkpoint.save_checkpoint(_tmp / "c.pt", model=torch.nn.Linear(2, 2), step=0, extra={"f": object()})),
        ("load_checkpoint flipped byte", "digest", lambda: checkpoint.load_checkpoint(_flipped())),
        ("restore SGD state into AdamW", "optimizer", _sgd_into_adamw),
        ("restore fp64 into fp32", "float64", _fp64_into_fp32),
        ("load_checkpoint a folder", "checkpoint", lambda: checkpoint.load_checkpoint(_tmp)),
        ("save_checkpoint onto a folder", "folder", lambda: checkpoint.save_checkpoint(_tmp, model=torch.nn.Linear(2, 2), step=0)),
        ("save_checkpoint optimizer 3", "optimizer", lambda: checkpoint.save_checkpoint(_tmp / "o.pt", model=torch.nn.Linear(2, 2), step=0, optimizer=3)),
        ("restore into a dict", "model", lambda: checkpoint.restore_checkpoint(_saved("d.pt", model=torch.nn.Linear(2, 2)), model={})),
        ("benchmark label 3", "label", lambda: bench.benchmark(lambda: None, device="cpu", trials=1, label=3)),
        ("restore wrong model", "fit", lambda: checkpoint.restore_checkpoint(_saved("w.pt", model=torch.nn.Linear(2, 3)), model=torch.nn.Linear(2, 2))),
        # exercises
        ("check nan answer", "nan", lambda: _expect_failed(exercises.check(_value_exercise(), _nan))),
        ("check unknown id", "exercise", lambda: exercises.check("no-such-exercise", 1)),
        ("check id int", "exercise", lambda: exercises.check(3, 1)),
    ]


class _Failed(Exception):
    pass


def _expect_failed(result):
    """A checker must say clearly that a NaN is not a number (not that it is 'too small')."""
    message = str(result.message).lower()
    if "not a number" in message or ("nan" in message and "too small" not in message and "too large" not in message):
        raise ValueError(f"nan answer: {result.message}")
    raise _Failed(f"unclear: {result.message}")


def classify(word: str, thunk) -> tuple[str, str]:
    def alarm(signum, frame):
        raise TimeoutError("probe time limit")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            thunk()
    except TimeoutError as err:
        if str(err) == "probe time limit":
            return "hang", ""
        return "obscure", f"{type(err).__name__}: {err}"
    except (MemoryError, RuntimeError) as err:
        text = str(err)
        if isinstance(err, MemoryError) and not isinstance(err, ValueError):
            return "allocation", f"{type(err).__name__}: {text[:80]}"
        if "alloc" in text.lower() and not isinstance(err, ValueError):
            return "allocation", f"{type(err).__name__}: {text[:80]}"
        if isinstance(err, ValueError) and word.lower() in text.lower():
            return "clear", text[:100]
        return "obscure", f"{type(err).__name__}: {text[:100]}"
    except (ValueError, TypeError, LookupError, OSError, AssertionError) as err:
        text = str(err)
        if word.lower() in text.lower():
            return "clear", text[:100]
        return "obscure", f"{type(err).__name__}: {text[:100]}"
    except Exception as err:  # noqa: BLE001 - classifying is the point
        return "obscure", f"{type(err).__name__}: {str(err)[:100]}"
    finally:
        signal.alarm(0)
    return "silent", ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print every case and its outcome")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
    torch.set_num_threads(1)
    # A machine with 4 GiB: ensure_fits must see the memory this process may use, not the host's.
    real_free = device.free_memory_bytes
    device.free_memory_bytes = lambda dev: PRETEND_FREE if str(dev) == "cpu" else real_free(dev)
    roofline.free_memory_bytes = device.free_memory_bytes
    # Import what the first optimizer step imports (torch._dynamo), so that no time limit interrupts it.
    warm = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(warm.parameters())
    warm(torch.ones(1, 2)).sum().backward()
    opt.step()
    exercises.check(_value_exercise(), 1.0)
    counts: collections.Counter = collections.Counter()
    start = time.perf_counter()
    all_cases = list(cases())
    for label, word, thunk in all_cases:
        outcome, detail = classify(word, thunk)
        counts[outcome] += 1
        if args.list or outcome != "clear":
            print(f"{outcome:<10} {label:<45} {detail}")
    shutil.rmtree(_tmp, ignore_errors=True)
    print(f"\n{len(all_cases)} bad inputs in {time.perf_counter() - start:.0f} s: " +
          ", ".join(f"{counts[k]} {k}" for k in ("clear", "obscure", "silent", "hang", "allocation")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
