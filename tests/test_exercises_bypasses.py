"""Only the student's own work passes, graded as the page says.

- library shortcuts are refused while the student's function runs, with a message that teaches;
- every sealed number is accepted exactly within its stated interval (a value 1 % outside either
  edge is refused by the practice check and by the grader's plain comparison alike);
- correct fp32 arithmetic passes; slips fire only near the wrong value they name;
- debug timers are judged by the calls they make, not by a number an object holds;
- the package holds no expected value of a sealed exercise, nor a slip ratio that gives one away.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

import lectorch
from lectorch.exercises import Sealed, check, compare, exercises, get_exercise, within
from lectorch.exercises.refuse import RefusedShortcut, refusing
from lectorch.train import cosine_lr as _alias_cosine_lr
from grading import expected_values, load_topics
from grading.topics.device import time_copy
from _answers.flops import time_call  # the honest timer the flops tests use
from _paths import ROOT

PLAIN = expected_values(load_topics())


def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value


def _refused(result, what):
    # refused while it runs; "needs review" where the review of its code finds the line too
    return result.status in ("failed", "needs review") and (f"asks you to write {what} yourself" in result.message or
                                          f"asks for {what} without creating a tensor" in result.message)


# --- the context manager ----------------------------------------------------------------------------

def test_refusing_catches_every_name_and_restores_them():
    from lectorch import train

    alias = _alias_cosine_lr
    x = torch.randn(3, 4)
    with refusing(["torch.log_softmax", "torch.Tensor.log_softmax", "torch.nn.functional.log_softmax",
                   "lectorch.train.cosine_lr", "torch.optim.AdamW"], "it"):
        for call in (lambda: torch.log_softmax(x, -1), lambda: x.log_softmax(-1),
                     lambda: torch.nn.functional.log_softmax(x, -1), lambda: train.cosine_lr(1, 1e-3, 0, 0, 10),
                     lambda: _alias_cosine_lr(1, 1e-3, 0, 0, 10),  # a module-level alias
                     lambda: torch.optim.AdamW([torch.nn.Parameter(x)])):
            with pytest.raises(RefusedShortcut, match="asks you to write it yourself"):
                call()
        assert torch.softmax(x, -1).shape == x.shape  # what is not named still works
    assert torch.log_softmax(x, -1).shape == x.shape
    kw = dict(max_lr=1e-3, warmup_steps=0, total_steps=10)
    assert train.cosine_lr(1, **kw) == alias(1, **kw)
    torch.optim.AdamW([torch.nn.Parameter(x)])


def test_no_tensors_refuses_any_torch_call_and_allows_plain_python():
    with refusing(no_tensors=True, what="the strides"):
        assert torch.Size((2, 3)).numel() == 6 and torch.float16.itemsize == 2
        with pytest.raises(RefusedShortcut):
            torch.empty(2, 3, device="meta")


@pytest.mark.parametrize("name, says", [
    ("torch.log_softmx", "torch has no 'log_softmx'; did you mean torch.log_softmax"),
    ("lectorch.views.contigous_strides", "did you mean lectorch.views.contiguous_strides"),
    ("lectorch.viewz.element_offset", "lectorch has no 'viewz'; did you mean lectorch.views"),
    ("lectorch.views.qqq", "lectorch.views has no 'qqq'; it has "),
    ("no_such_module.f", "no module 'no_such_module' can be imported"),
    ("lectorch.views", "it names a module, not a function"),
])
def test_refusing_a_name_that_names_nothing_is_a_clear_error(name, says):
    """A typo would refuse nothing: it raises when ``refusing`` is called, naming it and what exists."""
    with pytest.raises(ValueError, match=re.escape(f"cannot refuse {name!r}: ") + ".*" + re.escape(says)):
        refusing(["torch.softmax", name], "it")


def test_a_library_model_under_no_tensors_says_what_was_refused_and_why():
    """TinyLM checks its device with ``except RuntimeError``: the refusal is no RuntimeError, so it
    reaches the student as itself, naming the model, the torch call and the reason."""
    from lectorch.exercises import reset_attempts
    from lectorch.models import TinyLM

    def count_by_building(vocab_size, dim, num_layers):
        return 16 * sum(p.numel() for p in TinyLM(vocab_size, dim, num_layers).parameters())

    reset_attempts("train-ckpt-size")
    result = check("train-ckpt-size", count_by_building)
    assert result.status == "needs review" and "lectorch.models.TinyLM" in result.message.split(". Its public")[0], result
    assert ("without creating a tensor: building lectorch.models.TinyLM (called by your function) uses "
            "torch.device, and every torch call is switched off") in result.message
    assert "plain Python" in result.message and "device string" not in result.message
    assert not issubclass(RefusedShortcut, RuntimeError)


# --- bypasses, one per implement exercise -------------------------------------------------------------

def _optimizer_bypass():
    from lectorch.exercises.optim import optimizer_trainer

    class Mine(torch.optim.RMSprop):
        pass

    return optimizer_trainer(Mine)


def _adamw_bypass(param, grad, exp_avg, exp_avg_sq, step, *, lr, betas, eps, weight_decay):
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    opt.state[p] = {"step": torch.tensor(float(step - 1)), "exp_avg": exp_avg.clone(), "exp_avg_sq": exp_avg_sq.clone()}
    p.grad = grad.clone()
    opt.step()
    return p.detach(), opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]


def _clip_bypass(grads, max_norm):
    params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad for p in params], float(total)


def _skip_bypass(x, w1, w2):
    w1, w2 = w1.clone().requires_grad_(True), w2.clone().requires_grad_(True)
    ((torch.relu(x @ w1) + x) @ w2).sum().backward()
    return w1.grad, w2.grad


BYPASSES = {
    "precision-log-softmax": (lambda x: torch.log_softmax(x.float(), dim=-1), "the stable log-softmax"),
    "precision-tensor-bytes": (lambda shape, dtype: torch.empty(shape, dtype=dtype, device="meta").nbytes,
                               "the byte count"),
    "views-transpose-strides": (lambda s, a, b: torch.empty(s, device="meta").transpose(a, b).stride(), "the strides"),
    "optim-rmsprop": (_optimizer_bypass(), "RMSProp"),
    "optim-adamw-step": (_adamw_bypass, "the AdamW update"),
    "optim-clip-grad-norm": (_clip_bypass, "clipping by the global norm"),
    "train-lr-at-step": (lambda *a: lectorch.train.cosine_lr(*a), "the schedule"),
    "flops-mfu-from-time": (lambda B, D, K, s, peak: lectorch.bench.mfu(lectorch.flops.matmul_flops(B, D, K), s, peak),
                            "the FLOP count and MFU"),
    "backprop-mlp-backward": (lambda b, w, input_requires_grad=False: lectorch.backprop.mlp_flops(
        b, w, input_requires_grad=input_requires_grad).backward, "the backward FLOP count"),
    "backprop-skip-grads": (_skip_bypass, "the gradients by hand"),
    "scale-saved-bytes": (lambda *a, **k: lectorch.train.predicted_saved_bytes(*a, **k), "the count of saved bytes"),
}


@pytest.mark.parametrize("exercise_id", BYPASSES)
def test_library_bypass_is_refused_with_a_teaching_message(exercise_id):
    answer, what = BYPASSES[exercise_id]
    result = check(exercise_id, answer)
    assert _refused(result, what), result


# --- one tolerance: exactly the stated interval ---------------------------------------------------------

SEALED = sorted(i for i, ex in exercises().items() if isinstance(ex.expected, Sealed) and ex.expected.numeric)


@pytest.mark.parametrize("exercise_id", SEALED)
def test_accepted_interval_is_the_stated_one(exercise_id):
    ex = get_exercise(exercise_id)
    e, (rtol, atol) = float(PLAIN[exercise_id]), ex.tolerance
    half = max(rtol * abs(e), atol)
    assert ex.expected.matches(exercise_id, e)
    inside = [e, e - 0.75 * half, e + 0.75 * half] if half else [e]
    outside = [e - half - 0.01 * abs(e) - 1e-12, e + half + 0.01 * abs(e) + 1e-12]
    for x in inside:
        assert ex.expected.matches(exercise_id, x), (x, e)
        assert compare(ex, x, e) is None  # the grader's plain comparison
    for x in outside:
        assert not within(x, e, rtol, atol)
        assert not ex.expected.matches(exercise_id, x), (x, e)
        assert compare(ex, x, e) is not None


def _rounded_at_the_page(plain, page_args, rounded):
    """The right rule, but the page's answer as the page rounds it."""
    return lambda *a: rounded if a == page_args else plain(*a)


def test_rounded_answers_at_the_pages_precision_pass():
    from grading.topics import napkin as g

    assert check("napkin-two-weeks", _rounded_at_the_page(g.node_flops, (8, 14), 9.6e21)).passed  # the page's 9.58e21
    assert check("napkin-zero2-params", _rounded_at_the_page(g.zero2_params, (64, 80e9), 3.6e10)).passed
    assert check("napkin-8bit-adam-bytes", _rounded_at_the_page(g.bytes_8bit_adam, (256,), 10.03)).passed
    # the slip: no block scales
    assert not check("napkin-8bit-adam-bytes", _rounded_at_the_page(g.bytes_8bit_adam, (256,), 10.0)).passed


def test_how_far_off_names_no_factor():
    """"How far off" is a direction and a power of ten, never a factor to multiply by."""
    close = check("flops-time-ratio", _const(1)).message  # the answer is 8: the same power of ten
    assert "not within ±25 % of the answer" in close
    far = check("flops-time-ratio", _const(100)).message
    assert "too large: the answer has a smaller power of ten" in far
    stall = check("precision-bf16-stall", _const(32.0)).message  # the answer is 4
    assert "too large: the answer has a smaller power of ten" in stall
    for message in (close, far, stall, check("flops-time-ratio", _const(4.4)).message):
        assert "factor of" not in message and "×" not in message


def test_slips_fire_only_near_the_value_they_name():
    assert "one week instead of two" in check("napkin-two-weeks", lambda n, d: PLAIN["napkin-two-weeks"] / 2).message
    assert "not right" not in check("napkin-two-weeks", lambda n, d: PLAIN["napkin-two-weeks"] / 2.3).message
    peak = PLAIN["optim-step-peak"]
    assert "count of elements" in check("optim-step-peak", lambda d, n, b: peak / 4).message
    assert "resting memory" not in check("optim-step-peak", lambda d, n, b: peak / 4).message
    assert "count the matmuls each layer's backward does" in check("backprop-time-ratio", _const(1.0)).message


# --- fp32 and other correct forms ------------------------------------------------------------------------

def test_fp32_and_other_operations_pass():
    def lr_fp32(step, max_lr, min_lr, warmup_steps, total_steps):
        if step < warmup_steps:
            return max_lr * step / warmup_steps
        if step >= total_steps:
            return min_lr
        progress = torch.tensor((step - warmup_steps) / (total_steps - warmup_steps), dtype=torch.float32)
        return float(min_lr + 0.5 * (max_lr - min_lr) * (1 + torch.cos(torch.pi * progress)))

    assert check("train-lr-at-step", lr_fp32).passed

    def mfu_fp32(B, D, K, seconds, peak):
        return float(2 * torch.tensor(float(B)) * D * K / torch.tensor(seconds, dtype=torch.float32) / peak)

    assert check("flops-mfu-from-time", mfu_fp32).passed

    def log_softmax_by_hand(x):
        x = x.float()
        m = x.max(dim=-1, keepdim=True).values
        return x - m - (x - m).exp().sum(dim=-1, keepdim=True).log()

    assert check("precision-log-softmax", log_softmax_by_hand).passed


# --- debug timers: judged by the calls made ------------------------------------------------------------

def test_honest_timer_passes_and_introspection_fails():
    assert check("flops-honest-timer", time_call).passed

    def peek(fn, sync, clock):
        return fn.__self__.steady_s

    def peek_closure(fn, sync, clock):
        device = fn.__closure__[0].cell_contents
        return device.steady_s

    assert not check("flops-honest-timer", peek).passed
    result = check("flops-honest-timer", peek_closure)
    assert result.status == "needs review" and "`.__closure__` reads a function's closure" in result.message

    def plain_mean(fn, sync, clock, warmup=3, trials=7):
        for _ in range(warmup):
            fn()
        sync()
        start = clock()
        for _ in range(trials):
            fn()
        sync()
        return (clock() - start) / trials

    assert not check("flops-honest-timer", plain_mean).passed


def test_copy_timing_is_judged_by_the_calls_made():
    assert check("device-timing-debug", time_copy).passed  # the reference solution

    def peek(copy, synchronize, clock, repeats=10):
        stream = copy.__closure__[0].cell_contents
        return (stream.launch_s + repeats * stream.work_s) / repeats

    assert not check("device-timing-debug", peek).passed


# --- nothing in the package gives an answer away ---------------------------------------------------------

def _numbers_in(text):
    """Numeric literals of three or more significant digits in ``text``."""
    out = []
    for m in re.findall(r"(?<![\w.])\d[\d_]*\.?\d*(?:e[-+]?\d+)?", text):
        digits = m.split("e")[0].replace(".", "").replace("_", "").strip("0")
        if len(digits) >= 3:
            out.append(float(m.replace("_", "")))
    return out


def test_package_holds_no_sealed_answer_nor_a_ratio_that_gives_one():
    sources = {p: p.read_text(encoding="utf-8") for p in (ROOT / "lectorch" / "exercises").glob("*.py")}
    found = []
    for ex_id in SEALED:
        e = float(PLAIN[ex_id])
        digits = f"{e:.3g}"
        if e > 0 and math.log2(e).is_integer():
            continue  # a power of two (bf16's 256) is every tensor shape's size: no scan can hide it
        for path, text in sources.items():
            for x in _numbers_in(text):
                if x and math.isclose(x, e, rel_tol=1e-3) and len(digits.replace(".", "").replace("-", "")) >= 3:
                    found.append((ex_id, path.name, x))
                if x and (math.isclose(x * e, 1, rel_tol=1e-6) or math.isclose(x, 1 / e, rel_tol=1e-6)):
                    found.append((ex_id, path.name, x))
    assert not found, found
    # the named slips' wrong values live in grading/, sealed in the package
    for ex_id in SEALED:
        assert all(isinstance(k, str) for k in get_exercise(ex_id).slips), ex_id


# --- debug exercises show their code on the page -------------------------------------------------------

def _debug_exercises():
    import nbformat

    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for i, cell in enumerate(cells):
            if cell.cell_type == "markdown" and "{exercise-start}" in cell.source and "**Debug" in cell.source:
                solution = next(c for c in cells[i + 1:] if "solution" in c.metadata.get("tags", []))
                yield path.name, cell.source, solution.metadata["lectorch"]["stub"]


@pytest.mark.parametrize("chapter, page, stub", list(_debug_exercises()),
                         ids=[f"{c}:{s.split('(')[0][4:]}" for c, _, s in _debug_exercises()])
def test_debug_exercise_shows_the_code_to_fix(chapter, page, stub):
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    first = stub.strip().splitlines()[0]
    assert any(first in b for b in blocks), f"{chapter}: the page does not show {first!r}"
    if chapter.startswith("09_"):  # the page shows the student's code itself (one source: the stub)
        assert any(b.strip() == stub.strip() for b in blocks)


def test_seals_are_in_step_with_grading():
    """``seals.json`` is what ``python -m grading.seals`` writes from ``grading/`` now."""
    import json

    from grading.seals import seals_data
    from lectorch.exercises.seal import stored_data

    fresh = json.loads(json.dumps(seals_data()))
    stored = stored_data()
    for part in ("values", "slips", "practice"):
        assert fresh[part] == stored[part], f"{part}: re-seal (python -m grading.seals)"
