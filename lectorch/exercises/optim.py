"""Exercises of chapter 08: RMSProp as an Optimizer subclass, optimizer-state bytes, a step's memory and FLOPs."""

from __future__ import annotations

import inspect

import torch

from lectorch import optim, step_memory
from lectorch.exercises import Case, Exercise, register
from lectorch.models import Cruncher, cruncher_num_parameters

# --- RMSProp, checked against torch.optim.RMSprop -------------------------------------------------
_RMSPROP_CASES = [dict(lr=1e-2, alpha=0.99, eps=1e-8), dict(lr=3e-3, alpha=0.9, eps=1e-6), dict(lr=0.05, alpha=0.5, eps=1e-8)]
_RMSPROP_STEPS = 15


def _compare_rmsprop(got, expected) -> str | None:
    if not (inspect.isclass(got) and issubclass(got, torch.optim.Optimizer)):
        return f"expected a class that subclasses torch.optim.Optimizer, got {type(got).__name__}."
    for i, hyper in enumerate(expected, start=1):
        where = f"Run {i} of {len(expected)} (alpha={hyper['alpha']})"
        try:
            _, ours = optim.train_cruncher(got, steps=_RMSPROP_STEPS, **hyper)
        except NotImplementedError:
            raise
        except Exception as err:  # the student's code failed: say so, never crash the notebook
            return f"{where}: your optimizer raised {type(err).__name__}: {err}."
        _, ref = optim.train_cruncher(lambda ps, **kw: torch.optim.RMSprop(ps, **kw), steps=_RMSPROP_STEPS, **hyper)
        with torch.no_grad():
            pairs = list(zip(ours.parameters(), ref.parameters()))
            if all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in pairs):
                continue
            init = Cruncher(16, 2, generator=torch.Generator().manual_seed(1))  # train_cruncher's init (seed 0)
            if all(torch.equal(a, b) for a, b in zip(ours.parameters(), init.parameters())):
                return (f"{where}: the parameters never changed. Update them in place (p.addcdiv_(...)); "
                        "`p = p - ...` only rebinds a local name.")
            return f"{where}: after {_RMSPROP_STEPS} steps your parameters differ from torch.optim.RMSprop's."
    # memory: one parameter-sized buffer of state per parameter
    p = torch.nn.Parameter(torch.ones(5))
    opt = got([p], lr=1e-2, alpha=0.9, eps=1e-8)
    p.grad = torch.ones(5)
    opt.step()
    state = optim.state_bytes(opt, include_scalars=False)
    if state != 20:
        return (f"the parameters match, but your optimizer keeps {state} bytes of tensor state for a 20-byte "
                "parameter: RMSProp needs exactly one buffer the size of the parameter.")
    closure_loss = opt.step(lambda: torch.tensor(3.0))
    if closure_loss is None or float(closure_loss) != 3.0:
        return "step(closure) must call the closure (under torch.enable_grad()) and return its loss."
    return None


register(
    Exercise(
        id="optim-rmsprop",
        title="RMSProp as a torch.optim.Optimizer subclass, matching torch.optim.RMSprop",
        kind="value",
        expected=tuple(_RMSPROP_CASES),
        compare=_compare_rmsprop,
        hint="s ← alpha·s + (1-alpha)·g² (in place, kept in self.state[p]); p ← p - lr·g/(sqrt(s) + eps), in place.",
    )
)

# --- optimizer state bytes of Adam ---------------------------------------------------------------
_D, _L = 1024, 8
_P = cruncher_num_parameters(_D, _L)
register(
    Exercise(
        id="optim-adam-state-bytes",
        title="bytes of Adam's state for Cruncher(1024, 8) in float32",
        kind="value",
        expected=2 * 4 * _P,
        hint="Adam keeps two tensors per parameter tensor (m and v), each the size and dtype of the parameter.",
        slips={0.5: "Adam keeps two moments, m and v.", 0.25: "those are elements; each float32 is 4 bytes.",
               0.125: "those are the elements of one moment; Adam keeps two, of 4 bytes each.",
               2.0: "that is parameters + gradients + state (16 bytes per parameter); only the state was asked.",
               1.5: "gradients are not optimizer state.", _D * _D * _L / _P: "the D×1 head has parameters (and state) too."},
    )
)

# --- the memory of a training step ---------------------------------------------------------------
def _step_bytes(batch, dim, num_layers, bytes_per_element, state_tensors):
    p = cruncher_num_parameters(dim, num_layers)
    acts = batch * dim * num_layers + batch
    inputs = batch * dim + batch
    return ((2 + state_tensors) * p + acts + inputs) * bytes_per_element


register(
    Exercise(
        id="optim-step-memory",
        title="step_memory_bytes(batch, dim, num_layers, bytes_per_element, state_tensors)",
        kind="function",
        hint=("parameters + gradients + state_tensors × parameters + saved activations (B·D per D×D layer, "
              "plus the head's B outputs) + the batch (B·D inputs, B targets), all × bytes_per_element."),
        cases=tuple(
            Case(args=args, expected=_step_bytes(*args), description=desc)
            for args, desc in [((128, 256, 4, 4, 2), "fp32 Adam, a small Cruncher"),
                               ((1024, 4096, 8, 2, 2), "bf16 Adam, a big Cruncher"),
                               ((64, 512, 3, 4, 0), "fp32 SGD"),
                               ((4096, 1024, 16, 4, 1), "fp32 momentum, a large batch")]
        ),
    )
)

# --- the FLOPs of a training step ----------------------------------------------------------------
_B, _FD, _FL = 512, 1024, 4
_FLOPS = step_memory.step_flops(_FD, _FL, _B).total
_FP = cruncher_num_parameters(_FD, _FL)
register(
    Exercise(
        id="optim-step-flops",
        title="matmul FLOPs of one training step of Cruncher(1024, 4) on a batch of 512",
        kind="value",
        expected=_FLOPS,
        hint="forward 2·B·P; backward 2·B·P for the weights' gradients plus the inputs' gradients — which layer needs none?",
        slips={6 * _B * _FP / _FLOPS: "that is the 6·B·P rule; the first layer's input (the data) needs no gradient.",
               2 * _B * _FP / _FLOPS: "that is the forward pass alone.",
               4 * _B * _FP / _FLOPS: "that counts the backward pass as 2× the forward, and leaves out the forward."},
    )
)
