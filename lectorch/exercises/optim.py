"""Exercises of chapter 08: optimizers and the memory of a training step.

- ``optim-rmsprop`` (implement): RMSProp as a ``torch.optim.Optimizer`` subclass.
- ``optim-adamw-step`` (implement): one AdamW update, with bias correction and decoupled weight
  decay, checked against ``torch.optim.AdamW``.
- ``optim-clip-grad-norm`` (implement): clipping by the global norm, checked against
  ``torch.nn.utils.clip_grad_norm_``.
- ``optim-step-peak`` (predict, then measure): the peak live bytes of one training step.

Every expected result comes from torch itself, on the instructor's side (``grading/topics/optim.py``'s
``REFERENCE``): the package holds the public cases' results only as seals
(``lectorch.exercises.seal``), and the prediction's physics answer as a seal.
"""

from __future__ import annotations

from lectorch.i18n import tr

import inspect

import torch

from lectorch import optim
from lectorch.exercises import Case, Exercise, Sealed, register
from lectorch.exercises.seal import close, public_cases
from lectorch.exercises.refuse import refuse_subclass
from lectorch.models import Cruncher

# --- RMSProp, checked against torch.optim.RMSprop -------------------------------------------------
RMSPROP_STEPS = 15
#: fp32 arithmetic of the chapter's formula, written another way (out of place, another order),
#: drifts from torch's by a few ulps per step: allow 64 ulps of float32 per step, relative and
#: absolute (the parameters are of order 1)
RMSPROP_TOL = RMSPROP_STEPS * 64 * torch.finfo(torch.float32).eps


def optimizer_trainer(optimizer_class):
    """A function ``run(lr, alpha, eps)`` that trains a Cruncher with ``optimizer_class`` and returns
    plain data: the final parameters, the bytes of tensor state for a 5-element parameter, and what
    ``step(closure)`` returned. The checker compares it with the same run of torch.optim.RMSprop.

    >>> run = optimizer_trainer(torch.optim.RMSprop)
    >>> sorted(run(lr=1e-2, alpha=0.9, eps=1e-8))
    ['closure_loss', 'params', 'state_bytes']
    """

    def run(lr: float, alpha: float, eps: float) -> dict:
        if not (inspect.isclass(optimizer_class) and issubclass(optimizer_class, torch.optim.Optimizer)):
            raise TypeError("expected a class that subclasses torch.optim.Optimizer, got "
                            f"{type(optimizer_class).__name__}")
        refuse_subclass(optimizer_class, ["torch.optim.RMSprop", "lectorch.optim.RMSProp"], "RMSProp")
        hyper = dict(lr=lr, alpha=alpha, eps=eps)
        _, model = optim.train_cruncher(optimizer_class, steps=RMSPROP_STEPS, **hyper)
        params = [p.detach().clone() for p in model.parameters()]
        p = torch.nn.Parameter(torch.ones(5))
        opt = optimizer_class([p], **hyper)
        p.grad = torch.ones(5)
        opt.step()
        state = optim.state_bytes(opt, include_scalars=False)
        loss = opt.step(lambda: torch.tensor(3.0))
        return {"params": params, "state_bytes": state,
                "closure_loss": None if loss is None else float(loss)}

    return run


def _start_params() -> list[torch.Tensor]:
    return [p.detach() for p in Cruncher(16, 2, generator=torch.Generator().manual_seed(1)).parameters()]


def _compare_rmsprop(got, expected) -> str | None:
    """``expected``: torch.optim.RMSprop's run of ``optimizer_trainer`` (plain, or its seal)."""
    if not isinstance(got, dict) or set(got) != set(expected):
        return tr("pass your class through optimizer_trainer(...), as in the check cell.")
    ours, ref = got["params"], expected["params"]
    if len(ours) != len(ref) or not all(isinstance(a, torch.Tensor) and tuple(a.shape) == tuple(b.shape)
                                        for a, b in zip(ours, ref)):
        return tr("the trained model's parameters have the wrong number or shapes.")
    if not all(close(a, b, rtol=RMSPROP_TOL, atol=RMSPROP_TOL) for a, b in zip(ours, ref)):
        if all(torch.equal(a, b) for a, b in zip(ours, _start_params())):
            return (tr("the parameters never changed. Update them in place; `p = p - ...` only rebinds a local name."))
        return tr("after {steps} steps your parameters differ from torch.optim.RMSprop's.").format(steps=RMSPROP_STEPS)
    if not close(got["state_bytes"], expected["state_bytes"]):
        return (tr("the parameters match, but your optimizer keeps {state_bytes} bytes of tensor state for a "
               "20-byte parameter: RMSProp needs exactly one buffer the size of the parameter.").format(state_bytes=got['state_bytes']))
    if not close(got["closure_loss"], expected["closure_loss"]):
        return tr("step(closure) must call the closure (under torch.enable_grad()) and return its loss.")
    return None


def rmsprop_case(lr: float, alpha: float, eps: float, expected=None) -> Case:
    """A case: train with these hyper-parameters (``expected``: torch's run, made by the grader)."""
    return Case(kwargs=dict(lr=lr, alpha=alpha, eps=eps), expected=expected,
                description=f"lr={lr}, alpha={alpha}, eps={eps}")


def functional_forms(*names: str) -> tuple[str, ...]:
    """The functional forms of torch's optimizers ``names`` that this torch has: the update itself
    (``torch.optim.adam.adam``) and its single-tensor, multi-tensor and fused kernels. Each does a
    class's update without the class.

    >>> functional_forms("adamw")
    ('torch.optim.adamw.adamw',)
    """
    import importlib

    found = []
    for name in names:
        module = importlib.import_module(f"torch.optim.{name}")
        found += [f"torch.optim.{name}.{kind}{name}" for kind in ("", "_single_tensor_", "_multi_tensor_", "_fused_")
                  if hasattr(module, kind + name)]
    return tuple(found)


register(
    Exercise(
        id="optim-rmsprop",
        title="RMSProp as a torch.optim.Optimizer subclass, matching torch.optim.RMSprop",
        kind="function",
        refuse_what="RMSProp",
        refuse=(
            "torch.optim.RMSprop",
            "lectorch.optim.RMSProp",
            # other optimizers that become RMSProp with the right settings (Adam with beta1 = 0)
            "torch.optim.Adam", "torch.optim.AdamW", "torch.optim.Adamax", "torch.optim.NAdam",
            "torch.optim.RAdam", "torch.optim.SparseAdam", "torch.optim.Adagrad", "torch.optim.Adadelta",
            "lectorch.optim.Adam", "lectorch.optim.AdamW",
            # the updates without their classes (Adam's or NAdam's with beta1 = 0 is RMSProp's, the
            # bias correction folded into lr and eps), and Adam's update on a sparse gradient
            *functional_forms("rmsprop", "adam", "adamw", "nadam", "radam", "adamax", "adagrad", "adadelta"),
            "torch._fused_adam_", "torch._fused_adamw_", "torch._fused_adagrad_",
            "torch.optim._functional.sparse_adam",
        ),
        hint=("Keep one running average per parameter in self.state[p], created the first time the "
              "parameter is seen, and update both it and p in place.",
              "The average weighs the old value by alpha and the squared gradient by 1 - alpha; the "
              "step divides the gradient by (the root of the average) + eps."),
        compare=_compare_rmsprop,
        rtol=RMSPROP_TOL,
        atol=RMSPROP_TOL,
        cases=public_cases("optim-rmsprop", (rmsprop_case(3e-3, 0.9, 1e-3), rmsprop_case(1e-2, 0.99, 1e-8),
                                             rmsprop_case(0.05, 0.5, 1e-8))),
        summary=("trains a Cruncher with your class for 3 settings (hidden ones when graded) and compares "
                 "with torch.optim.RMSprop's run; then checks the state's size and the closure"),
    )
)

# --- one AdamW step, checked against torch.optim.AdamW --------------------------------------------


#: one tolerance: float64 inputs, one update; fp32 arithmetic of the update passes too (a few
#: float32 roundings of values of order 1, relative and absolute)
ADAMW_RTOL, ADAMW_ATOL = 16 * torch.finfo(torch.float32).eps, 16 * torch.finfo(torch.float32).eps


def adamw_case(seed: int, shape: tuple[int, ...], step: int, description: str, *, grad_scale: float = 1.0,
               **hyper) -> Case:
    """A case: one update of a random float64 parameter from a plausible state after ``step - 1``
    steps (its expected result is torch.optim.AdamW's, made on the instructor's side)."""
    hyper = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01, **hyper}
    gen = torch.Generator().manual_seed(seed)
    param = torch.randn(shape, generator=gen, dtype=torch.float64)
    grad = grad_scale * torch.randn(shape, generator=gen, dtype=torch.float64)
    if step == 1:
        exp_avg, exp_avg_sq = torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    else:  # a plausible state: moving averages of earlier gradients
        exp_avg = 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
        exp_avg_sq = 0.01 * torch.rand(shape, generator=gen, dtype=torch.float64)
    return Case(args=(param, grad, exp_avg, exp_avg_sq, step), kwargs=hyper, description=description)


_NAMES = ("the parameter", "exp_avg (m)", "exp_avg_sq (v)")


def _compare_adamw(got, expected) -> str | None:
    """``expected``: torch.optim.AdamW's (param, exp_avg, exp_avg_sq) after the step (or its seal)."""
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return tr("return the triple (new_param, new_exp_avg, new_exp_avg_sq).")
    for name, g, e in zip(_NAMES, got, expected):
        if not isinstance(g, torch.Tensor):
            return tr("{name} should be a tensor, got {type}.").format(name=name, type=type(g).__name__)
        if tuple(g.shape) != tuple(e.shape):
            return tr("{name} has shape {shape}, not the parameter's shape.").format(name=name, shape=tuple(g.shape))
    for name, g, e in zip(_NAMES[1:], got[1:], expected[1:]):
        if not close(g, e, rtol=ADAMW_RTOL, atol=ADAMW_ATOL):
            return tr("{name} differs from torch.optim.AdamW's after this step.").format(name=name)
    if not close(got[0], expected[0], rtol=ADAMW_RTOL, atol=ADAMW_ATOL):
        return tr("the moments match, but the new parameter differs from torch.optim.AdamW's.")
    return None


register(
    Exercise(
        id="optim-adamw-step",
        title="adamw_step(...): one AdamW update with bias correction and decoupled weight decay",
        kind="function",
        refuse_what="the AdamW update",
        refuse=(
            "torch.optim.AdamW",
            "torch.optim.Adam",
            # Adam's relatives, which do the same update with a line or two around them
            "torch.optim.SparseAdam", "torch.optim.NAdam", "torch.optim.RAdam", "torch.optim.Adamax",
            "torch._fused_adamw_", "torch._fused_adam_",
            "lectorch.optim.AdamW",
            "lectorch.optim.Adam",
            *functional_forms("adam", "adamw", "nadam", "radam", "adamax"),  # the updates without their classes
            "torch.optim._functional.sparse_adam",  # Adam's update on a sparse gradient of every index
        ),
        hint=("Check the moments first: does your m and v match on step 1 with weight_decay=0? Then the "
              "parameter on step 1, then on a later step.",
              "Which step number does the bias correction use on the very first update? And does "
              "AdamW's weight decay pass through m and v?"),
        compare=_compare_adamw,
        rtol=ADAMW_RTOL,
        atol=ADAMW_ATOL,
        cases=public_cases("optim-adamw-step", (
            adamw_case(0, (3, 4), 1, "the first step, weight_decay=0", weight_decay=0.0),
            adamw_case(1, (5,), 1, "the first step, weight_decay=0.1", weight_decay=0.1),
            adamw_case(2, (2, 3), 10, "step 10, weight_decay=0.1, lr=0.01", lr=0.01, weight_decay=0.1),
            adamw_case(3, (4,), 1, "gradients of order eps, where eps matters", grad_scale=1e-8),
        )),
        summary=("runs adamw_step on 4 cases (hidden ones when graded: steps, betas, decay) against "
                 "torch.optim.AdamW, within 16 float32 ulps (relative and absolute)"),
    )
)

# --- clipping by the global norm, checked against torch.nn.utils.clip_grad_norm_ ------------------


#: one tolerance: the gradients are float64; fp32 arithmetic of the norm and the factor passes
CLIP_RTOL, CLIP_ATOL = 16 * torch.finfo(torch.float32).eps, 0.0


def clip_case(seed: int, shapes: list[tuple[int, ...]], scale: float, max_norm: float, description: str) -> Case:
    """A case of random float64 gradients (its expected result is torch's, made on the instructor's side)."""
    gen = torch.Generator().manual_seed(seed)
    grads = [scale * torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]
    return Case(args=(grads, max_norm), description=description)


def _compare_clip(got, expected) -> str | None:
    """``expected``: (clipped gradients, total norm) of torch.nn.utils.clip_grad_norm_ (or its seal)."""
    grads, total = expected
    if not isinstance(got, (tuple, list)) or len(got) != 2 or not isinstance(got[0], (tuple, list)):
        return tr("return the pair (list of clipped gradients, total norm before clipping).")
    clipped, norm = got
    if len(clipped) != len(grads):
        return tr("return one clipped gradient per input gradient ({n_grads}), got {n_clipped}.").format(n_grads=len(grads), n_clipped=len(clipped))
    try:
        norm = float(norm)
    except (TypeError, ValueError):
        return tr("the total norm should be a number, got {type}.").format(type=type(norm).__name__)
    if not close(norm, total, rtol=CLIP_RTOL, atol=CLIP_ATOL):
        return tr("the total norm differs from torch's: the norm of all gradients taken together.")
    for i, (g, e) in enumerate(zip(clipped, grads)):
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(e.shape):
            return tr("clipped gradient {i} should be a tensor of its gradient's shape.").format(i=i)
        if not close(g, e, rtol=CLIP_RTOL, atol=CLIP_ATOL):
            return tr("the norm is right, but clipped gradient {i} differs from torch's.").format(i=i)
    return None


register(
    Exercise(
        id="optim-clip-grad-norm",
        title="clip_by_global_norm(grads, max_norm): gradient clipping by the global norm",
        kind="function",
        refuse_what="clipping by the global norm",
        refuse=(
            "torch.nn.utils.clip_grad_norm_",
            "torch.nn.utils.clip_grad_norm",
            "torch.nn.utils.get_total_norm",
            "torch.nn.utils.clip_grads_with_norm_",
            "lectorch.train.grad_norm",
        ),
        hint=("Compare your returned norm first: it is one number for all gradients together. Then "
              "compare the clipped gradients on a case whose norm is below max_norm.",
              "Use one common factor for all gradients, from the global norm and max_norm. What "
              "should happen when the norm is already below max_norm, or when every gradient is 0?"),
        compare=_compare_clip,
        rtol=CLIP_RTOL,
        atol=CLIP_ATOL,
        cases=public_cases("optim-clip-grad-norm", (
            clip_case(0, [(3, 4), (4,), (4, 1)], 1.0, 1.0, "three gradients, norm above max_norm"),
            clip_case(1, [(5,), (2, 2)], 0.01, 1.0, "two small gradients, norm below max_norm"),
            clip_case(2, [(3,)], 1e-5, 1e-6, "a tiny gradient and a tiny max_norm"),
        )),
        summary=("runs clip_by_global_norm on 3 cases (hidden ones when graded) against "
                 "torch.nn.utils.clip_grad_norm_, within 16 float32 ulps (relative)"),
    )
)

# --- predict, then measure: the peak of a training step -------------------------------------------

#: asked as a function of its setting: the page's numbers are the public case (sealed); the grader
#: tries hidden widths, depths and batches (grading/topics/optim.py), each batch at least 4× the width
_STEP_PEAK = Sealed.stored("optim-step-peak")

register(
    Exercise(
        id="optim-step-peak",
        title="step_peak(dim, num_layers, batch): the peak live bytes of one fp32 SGD step of a Cruncher",
        kind="prediction",
        expected=_STEP_PEAK,
        cases=(Case(args=(64, 2, 2048), expected=_STEP_PEAK,
                    description="Cruncher(64, 2) on a batch of 2048"),),
        rtol=_STEP_PEAK.rtol,
        refuse_what="the step's memory",
        no_tensors=True,
        refuse=("lectorch.step_memory.step_timeline", "lectorch.step_memory.predict_step_memory",
                "lectorch.step_memory.measure_step_memory", "lectorch.step_memory.cuda_step_peak"),
        hint=("Walk through the step in time: what is alive at the end of the forward pass, and what "
              "is added and freed while backward runs the last layer?",
              "With B ≫ D the activations and their gradients dominate: count every B×D tensor alive "
              "at the worst moment."),
        slips={
            "elements-not-bytes": "that looks like a count of elements: the question asks for bytes (4 per fp32 value).",
            "every-part-added": ("that is every part added up as if all lived at once; at the worst moment of backward"
                                 " some activations are already freed, but the gradients of the activations, which "
                                 "that sum leaves out, are alive."),
            "resting-memory-parameters": "that is the resting memory (parameters and batch): the step adds to it.",
        },
    )
)
