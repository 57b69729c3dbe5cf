"""Exercises of chapter 09: the training loop.

- ``train-get-batch`` (implement): sample (inputs, targets) windows, honouring a generator.
- ``train-lr-at-step`` (implement, the warm-up): cosine decay with linear warm-up.
- ``train-accumulate`` (debug): gradient accumulation with ``zero_grad`` in the wrong place.
- ``train-resume`` (debug): a checkpoint that forgets state, so the resumed run drifts.
- ``train-ckpt-size`` (predict, then measure): the bytes of a checkpoint of another model.

Expected results come from torch itself (the generator's own draw, torch's cosine scheduler, one
SGD step on the concatenated batch), computed on the instructor's side (``grading/topics/train.py``'s
``REFERENCE``: the package holds the public cases' results only as seals), or from the snippet's
own uninterrupted run; the prediction's physics answer is sealed.

>>> batch_case(GeneratorSeed(3), n=20, batch_size=2, context_length=4).expected["n"]
20
"""

from __future__ import annotations

from lectorch.i18n import tr

import gc
import math
import os
import tempfile
from typing import Any

import torch
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook

from lectorch.exercises import Case, Exercise, GeneratorSeed, Sealed, register
from lectorch.exercises.sealed_cases import close, public_cases

# ------------------------------------------------------------------------------------ get_batch

OFFSET = 1000  #: data[i] = OFFSET + i: every token is unique, so a row's first token tells its start


def stream(n: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """``n`` token ids ``OFFSET, OFFSET + 1, …`` as a 1-D tensor (a stand-in for a token file).

    >>> stream(3).tolist()
    [1000, 1001, 1002]
    """
    return (OFFSET + torch.arange(n)).to(dtype)


def batch_case(seed: GeneratorSeed | None, *, n: int, batch_size: int, context_length: int,
               dtype: torch.dtype = torch.int64, description: str = "") -> Case:
    """A case of ``train-get-batch``: ``stream(n)`` with a seeded generator; the expected part is
    a spec of the sizes, to which the grader adds the starts that generator draws (``starts``) and
    those of the slip that leaves out the last start (``short_starts``), sealed in the package."""
    spec: dict[str, Any] = {"n": n, "batch_size": batch_size, "context_length": context_length,
                            "device": "cpu"}
    if seed is not None:
        spec["seed"] = seed.seed
    return Case(args=(stream(n, dtype), batch_size, context_length, "cpu"),
                kwargs={"generator": seed}, expected=spec, description=description)


def check_batch(got: Any, spec: dict) -> str | None:
    """None if ``got`` is the batch ``spec`` describes; else what is wrong (never the answer)."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return tr("return a pair (inputs, targets).")
    x, y = got
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        return tr("inputs and targets must both be torch tensors.")
    b, t, n = spec["batch_size"], spec["context_length"], spec["n"]
    if tuple(x.shape) != (b, t) or tuple(y.shape) != (b, t):
        return (tr("inputs and targets must have shape (batch_size, context_length); yours have {shape} and {shape2}.").format(shape=tuple(x.shape), shape2=tuple(y.shape)))
    if x.dtype != torch.int64 or y.dtype != torch.int64:
        return (tr("token ids must be int64 (what nn.Embedding and cross_entropy expect); yours are {dtype} and "
               "{dtype2}.").format(dtype=x.dtype, dtype2=y.dtype))
    if x.device.type != spec["device"] or y.device.type != spec["device"]:
        return tr("the batch must be on the requested device; yours is on {device}.").format(device=x.device)
    x, y = x.cpu(), y.cpu()
    if not torch.equal(x[:, 1:], y[:, :-1]):
        return tr("the targets must be the inputs shifted by one position (the next tokens).")
    starts = x[:, 0] - OFFSET
    if int(starts.min()) < 0 or int(starts.max()) > n - t - 1:
        return tr("a window starts outside the data (or so late that its last target does not exist).")
    windows = starts[:, None] + torch.arange(t + 1) + OFFSET
    if not torch.equal(x, windows[:, :-1]) or not torch.equal(y, windows[:, 1:]):
        return tr("each row must be a window of consecutive tokens, each target the token after its input.")
    if "starts" in spec and not close(starts, spec["starts"]):
        drawn = set(starts.tolist())
        short = n - t > 1 and spec.get("short_starts") is not None and close(starts, spec["short_starts"])
        if short or (b >= 20 * (n - t) and (n - t - 1) not in drawn):
            return (tr("your starts come from one position fewer than there are: the last valid start is never drawn. "
                   "Count the valid starts again."))
        return (tr("your windows are valid, but they are not the ones the given generator draws: the same "
               "generator seed must give the same batch, a different seed another one."))
    return None


GET_BATCH_CASES = public_cases("train-get-batch", (
    batch_case(GeneratorSeed(11), n=100, batch_size=4, context_length=8,
               description="4 windows of 8 tokens from 100 tokens"),
    batch_case(GeneratorSeed(1), n=12, batch_size=400, context_length=8,
               description="400 draws from 12 tokens: every valid start must come up"),
    batch_case(GeneratorSeed(5), n=50, batch_size=2, context_length=49,
               description="windows as long as the data allows"),
    batch_case(GeneratorSeed(3), n=30, batch_size=1, context_length=6,
               description="a batch of one: still (1, context_length)"),
    Case(args=(stream(8), 2, 8, "cpu"), kwargs={"generator": GeneratorSeed(0)}, raises=ValueError,
         description="context_length equal to the data length must raise ValueError"),
))

register(
    Exercise(
        id="train-get-batch",
        title="get_batch(data, batch_size, context_length, device, generator=None)",
        kind="function",
        refuse_what="get_batch",
        refuse=(
            "lectorch.data.get_batch",
        ),
        hint=("a window holds context_length + 1 tokens: count the valid starts, the last one "
              "included, and draw them all with the generator you are given.",
              "inputs are a window without its last token, targets without its first; int64, on "
              "device; raise ValueError when context_length >= len(data)."),
        compare=check_batch,
        cases=GET_BATCH_CASES,
        summary=("runs your function on 5 cases (hidden ones when graded): shapes, dtype, the shift, real "
                 "windows, every valid start, the generator's own draw, a batch of one, the ValueError"),
    )
)

# ------------------------------------------------------------------------------------ the LR


def lr_case(args: tuple, description: str) -> Case:
    """A case; its expected result (the rate over max_lr, from torch's CosineAnnealingLR) is the
    grader's, sealed in the package."""
    return Case(args=args, expected={"max_lr": args[1]}, description=description)


#: fp32 arithmetic of the formula (torch.cos on a float32 tensor, say) is off by a few ulps of
#: max_lr: accept 8 ulps of float32, relative to max_lr
LR_TOL = 8 * torch.finfo(torch.float32).eps


def _compare_lr(got: Any, expected: dict) -> str | None:
    """``expected``: ``max_lr`` and ``lr_over_max``, the schedule's rate over max_lr (plain or sealed):
    one tolerance, 8 float32 ulps of max_lr."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
        return tr("return the learning rate as a number, got {type}.").format(type=type(got).__name__)
    scale, want = expected["max_lr"], expected["lr_over_max"]
    if close(got / scale, want, atol=LR_TOL):
        return None
    if got and close(got / scale / 2, want, atol=LR_TOL / 2):
        return tr("{got!r} is twice the schedule's rate at this step.").format(got=got)
    return tr("{got!r} is not the schedule's rate at this step (allowed: 8 float32 ulps of max_lr).").format(got=got)


_LR_CASES = (
    ((0, 1e-3, 1e-4, 100, 1000), "the very first step"),
    ((50, 1e-3, 1e-4, 100, 1000), "half-way through the warm-up"),
    ((100, 1e-3, 1e-4, 100, 1000), "the end of the warm-up"),
    ((325, 6e-4, 6e-5, 100, 1000), "a quarter of the way through the decay"),
    ((1000, 1e-3, 1e-4, 100, 1000), "the last step"),
    ((1500, 1e-3, 1e-4, 100, 1000), "past the end of the schedule"),
    ((7, 3e-4, 0.0, 0, 10), "no warm-up at all"),
)


register(
    Exercise(
        id="train-lr-at-step",
        title="lr_at(step, max_lr, min_lr, warmup_steps, total_steps): cosine with linear warm-up",
        kind="function",
        refuse_what="the schedule",
        refuse=(
            "lectorch.train.cosine_lr",
            "lectorch.train.cosine_schedule",
            "lectorch.train.CosineSchedule",
            "torch.optim.lr_scheduler.LRScheduler",
            "torch.optim.lr_scheduler.CosineAnnealingLR._get_closed_form_lr",
        ),
        compare=_compare_lr,
        hint=("look at the step where the warm-up ends and at the steps after total_steps: "
              "what should the learning rate be there?",
              "the decay's progress runs from 0 at warmup_steps to 1 at total_steps, and the "
              "cosine goes from max_lr down to min_lr, not to 0."),
        rtol=0.0,
        atol=LR_TOL,
        cases=public_cases("train-lr-at-step", tuple(lr_case(a, d) for a, d in _LR_CASES)),
        summary=("runs your function on 7 cases (hidden ones when graded; against torch's "
                 "CosineAnnealingLR, within 8 float32 ulps of max_lr): warm-up, its last step, the "
                 "decay, the floor, past the end"),
    )
)

# ------------------------------------------------------------------ debug: gradient accumulation


def accumulation_case(seed: int, *, features: int, classes: int, micro: int, accumulation: int,
                      steps: int, lr: float = 0.5, description: str = "") -> Case:
    """A case of ``train-accumulate``: float64 micro-batches. The expected weight (the grader's,
    sealed in the package) is torch's: ``steps`` plain SGD steps, each on the mean cross-entropy of
    ``accumulation`` micro-batches concatenated into one batch."""
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(classes, features, generator=g, dtype=torch.float64)
    batches = [(torch.randn(micro, features, generator=g, dtype=torch.float64),
                torch.randint(classes, (micro,), generator=g)) for _ in range(steps * accumulation)]
    return Case(args=(weight, batches, accumulation, lr),
                description=description or f"{steps} steps of {accumulation} micro-batches of {micro}")


#: one tolerance: float64 data; fp32 arithmetic of a few steps passes (relative and absolute)
ACCUMULATE_TOL = 64 * torch.finfo(torch.float32).eps


class _Rows(torch.overrides.TorchFunctionMode):
    """Notes the most rows of any batch-like tensor a torch call returns: (n, D) inputs, (n, K)
    logits, n targets. A tensor of one of the weight's own shapes (K × D, D × K, K, D) is the
    weight's (a gradient, an update), unless its rows are the micro-batches' input rows: a whole
    batch that happens to have K rows."""

    def __init__(self, weight_shape: tuple[int, int], inputs: list[torch.Tensor]) -> None:
        super().__init__()
        k, d = weight_shape
        self.d = d
        self.not_batches = {(k, d), (d, k), (k,), (d,)}
        self.trailing = {(d,), (k,), ()}
        # the input rows as float64 tuples, also as rounded to float32 (an answer computing in fp32)
        self.rows = {tuple(r) for x in inputs for dtype in (torch.float64, torch.float32)
                     for r in x.detach().to(dtype).double().tolist()}
        self.micro = max((len(x) for x in inputs), default=0)
        self.most = 0

    def _batch(self, t: torch.Tensor) -> int:
        """The rows of ``t`` if it is a batch, else 0 (called with this mode off)."""
        if t.dim() < 1 or tuple(t.shape[1:]) not in self.trailing:
            return 0
        if tuple(t.shape) not in self.not_batches:
            return int(t.shape[0])
        if t.dim() == 2 and t.shape[1] == self.d and t.is_floating_point() and t.device.type != "meta":
            same = sum(tuple(r) in self.rows for r in t.detach().double().tolist())
            return same if same > self.micro else 0
        return 0

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(t, torch.Tensor):
                self.most = max(self.most, self._batch(t))
        return out


def counted_accumulation(answer: Any, args: tuple, kwargs: dict) -> dict:
    """Run the student's ``accumulated_training`` and watch the lesson, not only the weight:

    - how many micro-batches each backward pass (``torch.autograd``'s ``backward`` and ``grad``,
      which ``loss.backward()`` goes through) differentiates: the micro-batch inputs its graph
      holds. One per pass is the lesson; an empty ``backward()`` holds none, and one backward over
      several micro-batches' losses holds them all;
    - the most rows of any batch a torch call makes (inputs, logits, targets): never more than a
      micro-batch's, since the whole batch is what does not fit in memory."""
    weight, micro_batches = args[0], args[1]
    inputs = [x for x, _ in micro_batches if isinstance(x, torch.Tensor)]

    # nested: the module's functions are switched off while the answer runs
    def held(roots: Any) -> int:
        """How many of the micro-batch inputs the graph of ``roots`` saved for its backward pass."""
        roots = [roots] if isinstance(roots, torch.Tensor) else list(roots) if isinstance(roots, (list, tuple)) else []
        todo = [t.grad_fn for t in roots if isinstance(t, torch.Tensor)]
        seen, found = set(), set()
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            for name in dir(node):
                if not name.startswith("_saved_"):
                    continue
                try:
                    saved = getattr(node, name)
                except RuntimeError:  # freed by an earlier backward
                    continue
                if isinstance(saved, torch.Tensor) and saved.dim() == 2:
                    for k, x in enumerate(inputs):
                        # a copy counts (a clone, or a round trip through float32): compared in
                        # float32 too, so a rounded copy matches the input it was made of
                        if k not in found and saved.shape == x.shape and saved.dtype.is_floating_point \
                                and (torch.equal(saved.detach(), x.to(saved.dtype))
                                     or torch.equal(saved.detach().float(), x.float())):
                            found.add(k)
            todo += [n for n, _ in node.next_functions]
        return len(found)

    passes: list[int] = []  # per outermost backward pass, the micro-batches its graph holds
    depth = [0]
    real = torch.autograd.backward, torch.autograd.grad

    def counting(fn, keyword: str):
        def call(*a, **k):  # the outermost call only (one may go through the other)
            if depth[0] == 0:
                passes.append(held(a[0] if a else k.get(keyword, ())))
            depth[0] += 1
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
        return call

    rows = _Rows(tuple(weight.shape), inputs)
    torch.autograd.backward, torch.autograd.grad = counting(real[0], "tensors"), counting(real[1], "outputs")
    try:
        with rows:
            got = answer(*args, **kwargs)
    finally:
        torch.autograd.backward, torch.autograd.grad = real
    return {"returned": got, "backward_calls": sum(n == 1 for n in passes), "passes": len(passes),
            "micro_batches": len(micro_batches), "batch_rows": rows.most,
            "micro_rows": max((len(x) for x in inputs), default=0)}


def _compare_weight(got: Any, expected: torch.Tensor) -> str | None:
    counted = None
    if isinstance(got, dict) and "returned" in got:  # through counted_accumulation
        counted, got = got, got["returned"]
    if not isinstance(got, torch.Tensor):
        return tr("return the final weight tensor, not a {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != tuple(expected.shape):
        return tr("the returned weight has shape {shape}, not the starting weight's.").format(shape=tuple(got.shape))
    if close(got, expected, rtol=ACCUMULATE_TOL, atol=ACCUMULATE_TOL):
        if counted is not None and counted.get("batch_rows", 0) > counted.get("micro_rows", 0):
            return (tr("the weight is right, but your function made a batch of {rows} rows where a micro-batch has "
                       "{micro}: accumulation never builds the whole batch (it is what does not fit in memory); run "
                       "each micro-batch through the model on its own.").format(
                           rows=counted.get("batch_rows"), micro=counted.get("micro_rows")))
        if counted is not None and not (counted.get("backward_calls") == counted.get("passes")
                                        == counted.get("micro_batches")):
            return (tr("the weight is right, but only {backward} of your {passes} backward passes each went through "
                       "one micro-batch, for {micro} micro-batches: accumulation means one backward per micro-batch "
                       "(a batch that fits in memory), adding up the gradients before each step.").format(
                           backward=counted.get("backward_calls"), passes=counted.get("passes"),
                           micro=counted.get("micro_batches")))
        return None
    return (tr("after your steps the weight differs from what the same number of steps on the concatenated "
           "micro-batches gives."))


register(
    Exercise(
        id="train-accumulate",
        title="gradient accumulation: one SGD step per `accumulation` micro-batches",
        kind="function",
        # the gradients come from torch's autograd: numpy (the review's NUMPY_OFF) would make the
        # concatenated batch where the batch watcher does not look
        refuse=("torch.Tensor.numpy",),
        refuse_what="gradient accumulation",
        hint=("when are the gradients of the earlier micro-batches of a group thrown away, and "
              "when are those of the previous group?",
              "the gradient of a mean over the whole group is the mean of the micro-batches' "
              "gradients, not their sum."),
        compare=_compare_weight,
        runner=counted_accumulation,
        rtol=ACCUMULATE_TOL,
        atol=ACCUMULATE_TOL,
        cases=public_cases("train-accumulate", (
            accumulation_case(1, features=5, classes=3, micro=4, accumulation=2, steps=2),
            accumulation_case(2, features=3, classes=4, micro=2, accumulation=4, steps=3),
            accumulation_case(3, features=4, classes=2, micro=8, accumulation=1, steps=2,
                              description="no accumulation at all (one micro-batch per step)"))),
        summary=("runs your function on 3 cases (hidden ones when graded) and compares the trained "
                 "weight with SGD steps on the concatenated micro-batches"),
    )
)

# ------------------------------------------------------------------------ debug: resume exactly

VOCAB, DIM, CONTEXT, BATCH = 64, 16, 16, 8


#: the debug snippets as the student receives them (buggy): not refused while a check runs
SNIPPETS = ("train_with_restart",)


def train_with_restart(tokens, num_steps, crash_at=None):
    """The snippet of ``train-resume``, as the student receives it (its checkpoint misses state).

    Without a crash it trains correctly, so its uninterrupted run is the expected result of a
    case: a fixed version must give the same losses and weights *with* a crash.

    >>> losses, weight = train_with_restart(tokens_for(0), 3)
    >>> len(losses), tuple(weight.shape)
    (3, (64, 16))
    """

    def fresh_run():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, DIM), torch.nn.Dropout(0.1),
                                    torch.nn.Linear(DIM, VOCAB))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        order = torch.Generator().manual_seed(1)
        return model, optimizer, order

    def save(path, model, optimizer, order, step, losses):
        torch.save({"model": model.state_dict(), "step": step, "losses": losses}, path)

    def load(path, model, optimizer, order):
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        return state["step"], state["losses"]

    model, optimizer, order = fresh_run()
    step, losses = 0, []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ckpt.pt")
        while step < num_steps:
            if step == crash_at:
                save(path, model, optimizer, order, step, losses)
                model, optimizer, order = fresh_run()  # the machine died: start over
                step, losses = load(path, model, optimizer, order)
                crash_at = None
            starts = torch.randint(len(tokens) - CONTEXT, (BATCH,), generator=order)
            x = torch.stack([tokens[s:s + CONTEXT] for s in starts])
            y = torch.stack([tokens[s + 1:s + CONTEXT + 1] for s in starts])
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            step += 1
    return losses, model[2].weight.detach()


def tokens_for(seed: int, n: int = 2000) -> torch.Tensor:
    """Random token ids (int64) for a resume case."""
    return torch.randint(VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


def resume_case(seed: int, num_steps: int, crash_at: int) -> Case:
    """A case of ``train-resume``: crash at ``crash_at``; expected = the run that never crashed."""
    tokens = tokens_for(seed)
    with torch.random.fork_rng(devices=[]):
        losses, weight = train_with_restart(tokens, num_steps)
    return Case(args=(tokens, num_steps, crash_at),
                expected={"losses": losses, "weight": weight, "crash_at": crash_at},
                description=f"{num_steps} steps, crash after step {crash_at}")


#: one tolerance for every loss and every element of the final weight: within 1e-6 of the run that
#: never crashed (times the value, for a value above 1: ``close(rtol=RESUME_TOL, atol=RESUME_TOL)``).
#: A complete checkpoint repeats the same fp32 operations, so it agrees to the last bit; a state left
#: out moves the losses by far more
RESUME_TOL = 1e-6


#: the garbage collector's walk, taken when this module loads: the grader's process takes gc's own
#: away from an answer before it runs (grading/kernel_site), and this runner still needs it
_LIVE_OBJECTS = gc.get_objects


def crashed_run(answer: Any, args: tuple, kwargs: dict) -> dict:
    """Run the student's ``train_with_restart`` as a machine that dies would: right after the
    checkpoint is written (its last ``torch.save``, in however many files, before the run starts
    over: a new model or optimizer, a seed set, or a load), everything the run built in memory is lost (each module,
    optimizer, generator and tensor made during the run so far is scrambled, and so is torch's global
    generator), so only what is rebuilt and what ``load`` reads back counts. Counts the checkpoints
    written and read back (``torch.load``), and the optimizer steps and backward passes of the whole
    run: one each per step, so a ``load`` that trains the first steps again (recomputing instead of
    restoring) shows. Torch's global random state is the caller's again after."""
    import secrets

    kinds = (torch.nn.Module, torch.optim.Optimizer, torch.Generator, torch.Tensor)
    before: set[int] = set()
    log = {"saves": 0, "loads": 0, "optimizer_steps": 0, "backward_calls": 0, "num_steps": args[1] if len(args) > 1 else None,
           "crash_at": args[2] if len(args) > 2 else kwargs.get("crash_at"),
           "saved_after": [], "loaded_after": []}  # the optimizer steps taken at each save and load
    real_save, real_load, real_backward = torch.save, torch.load, torch.autograd.backward
    real_seed, module_init, optimizer_init = torch.manual_seed, torch.nn.Module.__init__, torch.optim.Optimizer.__init__
    written = []  # a checkpoint is on disk and the machine has not died yet

    def lose_memory() -> None:
        with torch.no_grad():
            for obj in _LIVE_OBJECTS():
                if id(obj) in before or not issubclass(type(obj), kinds):
                    continue
                try:
                    if isinstance(obj, torch.Tensor):
                        if obj.is_floating_point():
                            obj.uniform_(-1, 1)
                        elif obj.dtype != torch.bool and not obj.is_complex():
                            obj.random_(0, 100)
                    elif isinstance(obj, torch.optim.Optimizer):
                        obj.state.clear()
                    elif isinstance(obj, torch.Generator):
                        obj.manual_seed(secrets.randbits(62))
                except (RuntimeError, TypeError, AttributeError):  # one that cannot be written: left as it is
                    pass
        real_seed(secrets.randbits(62))

    def dies() -> None:  # once the checkpoint is on disk, before the run starts over
        if written:
            written.clear()
            lose_memory()

    def save(*a, **k):
        log["saves"] += 1
        log["saved_after"].append(log["optimizer_steps"])
        done = real_save(*a, **k)
        written.append(True)
        return done

    def load(*a, **k):
        dies()
        log["loads"] += 1
        log["loaded_after"].append(log["optimizer_steps"])
        return real_load(*a, **k)

    def seed(*a, **k):
        dies()
        return real_seed(*a, **k)

    def new_module(self, *a, **k):
        dies()
        module_init(self, *a, **k)

    def new_optimizer(self, *a, **k):
        dies()
        optimizer_init(self, *a, **k)

    def backward(*a, **k):
        log["backward_calls"] += 1
        return real_backward(*a, **k)

    def stepped(*_):
        log["optimizer_steps"] += 1

    with torch.random.fork_rng(devices=[]):
        # what exists now (the caller's, and the state fork_rng puts back) is not the run's
        before.update(id(o) for o in _LIVE_OBJECTS() if issubclass(type(o), kinds))
        torch.save, torch.load, torch.autograd.backward, torch.manual_seed = save, load, backward, seed
        torch.nn.Module.__init__, torch.optim.Optimizer.__init__ = new_module, new_optimizer
        hook = register_optimizer_step_post_hook(stepped)
        try:
            got = answer(*args, **kwargs)
        finally:
            torch.save, torch.load, torch.autograd.backward, torch.manual_seed = real_save, real_load, real_backward, real_seed
            torch.nn.Module.__init__, torch.optim.Optimizer.__init__ = module_init, optimizer_init
            hook.remove()
    return {"returned": got, **log}


def _compare_resume(got: Any, expected: dict) -> str | None:
    if isinstance(got, dict) and "returned" in got:  # through crashed_run
        if not got.get("loads") or not got.get("saves"):
            return (tr("your run never wrote and read back a checkpoint: at step crash_at it must save (torch.save), "
                   "start over from a fresh model, optimizer and generators, and load (torch.load), as the snippet "
                   "does."))
        crash = got.get("crash_at")
        if isinstance(crash, int) and "saved_after" in got and (
                crash not in got["saved_after"] or crash not in got.get("loaded_after", ())):
            return (tr("your run wrote and read back a checkpoint, but not at the crash: the machine dies right after "
                       "the checkpoint of step crash_at = {crash} is written (after {crash} optimizer steps), and the "
                       "run must go on from what load reads back.").format(crash=crash))
        steps = got.get("num_steps")
        if isinstance(steps, int) and (got.get("optimizer_steps", steps) > steps or got.get("backward_calls", steps) > steps):
            return (tr("your run took {optimizer} optimizer steps and {backward} backward passes for {steps} steps: "
                       "load must restore the state the checkpoint holds, not recompute it by training again.").format(
                           optimizer=got.get("optimizer_steps"), backward=got.get("backward_calls"), steps=steps))
        got = got["returned"]
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return tr("return the pair (losses, final weight), as the snippet does.")
    losses, weight = got
    want, k = expected["losses"], expected["crash_at"]
    if not isinstance(losses, (list, tuple)) or len(losses) != len(want):
        n = len(losses) if isinstance(losses, (list, tuple)) else "no"
        return (tr("the run returned {n} losses instead of one per step: does the resumed run carry on from the "
               "step it saved?").format(n=n))
    try:
        agree = [close(float(a), float(b), rtol=RESUME_TOL, atol=RESUME_TOL) for a, b in zip(losses, want)]
    except (TypeError, ValueError, RuntimeError):
        return tr("return the losses as plain numbers (loss.item()), one per step, as the snippet does.")
    if not all(agree):
        first = agree.index(False)
        if first < k:
            return tr("the losses differ before the crash already: change only what is saved and loaded.")
        if first == k:
            return (tr("the first step after the crash (step {step}) already differs from the run that never crashed: "
                   "something that decides that step's batch or its dropout was not restored.").format(step=k + 1))
        return (tr("the first step after the crash matches, but step {step} differs: some state that the updates "
               "build up over steps was not restored.").format(step=first + 1))
    if not isinstance(weight, torch.Tensor) or not close(weight, expected["weight"], rtol=RESUME_TOL, atol=RESUME_TOL):
        return tr("every loss matches, but the final weight differs from the run that never crashed.")
    return None


register(
    Exercise(
        id="train-resume",
        title="a checkpoint that resumes exactly",
        kind="function",
        hint=("list everything the next step depends on, and check that save() writes each of "
              "them and load() puts each one back.",
              "random numbers come from two places here: the data order's generator and torch's "
              "global generator (dropout); both have a state you can get and set."),
        compare=_compare_resume,
        runner=crashed_run,
        rtol=RESUME_TOL,
        atol=RESUME_TOL,
        cases=(),
        generate=lambda rng: [resume_case(rng.randrange(10**6), 12, rng.randint(1, 10))],
        summary=("crashes your run at random steps and compares every loss and the final weight "
                 "with a run that never crashed, within 1e-6"),
    )
)

# ------------------------------------------------------------------------ predict: checkpoint size

CKPT_MODEL = {"vocab_size": 64, "dim": 96, "num_layers": 3}  #: the model of ``train-ckpt-size``
_CKPT_SIZE = Sealed.stored("train-ckpt-size")

register(
    Exercise(
        id="train-ckpt-size",
        title="ckpt_bytes(vocab_size, dim, num_layers): the bytes of a TinyLM's checkpoint with AdamW",
        kind="prediction",
        expected=_CKPT_SIZE,
        # the page's model is the public case (sealed); the grader tries hidden models (grading/topics/train.py)
        cases=(Case(args=(64, 96, 3), expected=_CKPT_SIZE, description="V = 64, D = 96, 3 blocks"),),
        rtol=_CKPT_SIZE.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        hint=("count the parameters first (embedding, blocks, head), then the bytes each one "
              "costs in the checkpoint.",
              "a checkpoint holds the weights and everything AdamW remembers about them; the "
              "gradients are not in it."),
    )
)

__all__ = ["OFFSET", "stream", "batch_case", "check_batch",
           "lr_case", "accumulation_case", "train_with_restart", "tokens_for", "resume_case",
           "CKPT_MODEL"]
