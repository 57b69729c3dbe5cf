"""Exercises of chapter 07: parameters, initialisation and the Cruncher.

- ``init-fix-trunc`` (debug): an init function that truncates at ±3 *absolute* and reads fan_in
  from the wrong axis; the student fixes it, the checker runs it and tests the draws.
- ``init-relu-depth`` (predict, then measure): the output std of a LeCun-initialised ReLU stack.
- ``init-leaky-std`` (derive): the weight std that keeps the second moment through leaky ReLUs.
- ``init-variant-params`` (derive): the parameter count of a Cruncher variant with biases.

Expected values are sealed; the plain values, the references that compute the function cases'
results and the hidden cases live in ``grading/topics/init.py`` (``REFERENCE``).
"""

from __future__ import annotations

from lectorch.i18n import tr

import math
import numbers

import torch

from lectorch import init
from lectorch.exercises import Case, Exercise, GeneratorSeed, Sealed, register
from lectorch.exercises.seal import close, public_cases

# the ReLU-depth prediction and the variant's parameter count are functions of their setting: the
# page's numbers are the public case (sealed); the grader tries hidden ones (grading/topics/init.py)
_RELU_DEPTH = Sealed.stored("init-relu-depth")
_VARIANT = Sealed.stored("init-variant-params")

# --- debug: truncate at ±3 standard deviations, fan_in from the right axis ------------------------

#: The relative tolerance on the draws' std (the samples have >= 65 536 elements: noise < 0.5 %).
STD_RTOL = 0.03


def _compare_trunc(got, expected) -> str | None:
    if not isinstance(got, torch.Tensor):
        return tr("return the filled weight tensor, got {type}.").format(type=type(got).__name__)
    if tuple(got.shape) != expected["shape"]:
        return tr("the weight's shape changed to {shape}: fill it in place.").format(shape=tuple(got.shape))
    w = got.detach().double()
    sample_std, largest = w.std().item(), w.abs().max().item()
    if not math.isfinite(sample_std) or sample_std == 0:
        return tr("the weight is not filled with random draws.")
    # the cut, in units of the draws' own std (a normal cut at ±3 has std 0.987 of its own)
    cut = largest / (sample_std / init.truncated_std_factor(3.0))
    if cut > 3.1:
        return (tr("some draws lie {cut:.1f} of their own standard deviations from 0: the truncation does not cut "
               "at ±3 standard deviations.").format(cut=cut))
    at_cut = int((w.abs() >= largest * (1 - 1e-6)).sum())
    if at_cut > 4:  # a normal draw has no repeated extremes; a clamp piles every outlier on the cut
        return (tr("{at_cut} draws sit exactly on the cut: clamping moves each draw beyond the cut onto it (a pile "
               "at the edge); a truncated normal draws those again instead.").format(at_cut=at_cut))
    if cut < 2.8:
        return tr("no draw comes near 3 standard deviations: the truncation cuts too early.")
    if not close(sample_std, expected["truncated_std"], rtol=STD_RTOL):
        return (tr("the draws are truncated at ±3 of their own standard deviations, but their spread is not "
               "1/sqrt(fan_in): check the std, and which axis of the weight is fan_in."))
    return None


def trunc_case(shape: tuple[int, int], seed: int, description: str) -> Case:
    """A case: fill an empty weight of ``shape``; the expected std of the draws is the grader's
    (sealed in the package)."""
    return Case(args=(torch.empty(shape), GeneratorSeed(seed)), expected={"shape": tuple(shape)},
                description=description)


register(
    Exercise(
        id="init-fix-trunc",
        title="init_weight_(weight, generator): N(0, 1/fan_in) truncated at ±3 standard deviations",
        kind="function",
        refuse_what="lectorch's truncated initialisation",
        refuse=("lectorch.init.truncated_normal_", "lectorch.init.trunc_normal_bounds", "lectorch.init.init_weight"),
        hint=("Print the largest |w| of a filled weight in units of its std, and the std itself next to "
              "1/sqrt(fan_in). Which one is off?",
              "Two bugs: one in trunc_normal_'s bounds (what units are a and b in?), one in fan_in "
              "(lectorch's Linear stores its weight as (in_dim, out_dim))."),
        compare=_compare_trunc,
        rtol=STD_RTOL,
        atol=0.0,
        cases=public_cases("init-fix-trunc", (
            trunc_case((256, 256), 0, "a square 256×256 weight"),
            trunc_case((4096, 16), 1, "a 4096×16 weight: fan_in 4096"),
            trunc_case((65536, 1), 2, "a head: 65536 inputs, 1 output"),
        )),
        summary=("runs init_weight_ on 3 weight shapes (hidden ones when graded) and tests the draws: "
                 "largest |w| ≤ 3 std, no draw cut early, std from fan_in (within ±3 %)"),
    )
)

# --- predict, then measure: the std after a ReLU stack -------------------------------------------

register(
    Exercise(
        id="init-relu-depth",
        title="relu_depth_std(blocks): the output std of LeCun-initialised Linear → ReLU blocks and a final Linear",
        kind="prediction",
        expected=_RELU_DEPTH,
        cases=(Case(args=(8,), expected=_RELU_DEPTH, description="8 blocks"),),
        rtol=_RELU_DEPTH.rtol,
        refuse_what="the prediction",
        no_tensors=True,
        hint=("Follow the second moment E[z²] (not the variance) of each layer's output: what does a "
              "ReLU do to it, and what does the next LeCun layer do?",),
        slips={
            "relus-matter-each": "the ReLUs matter: each one zeroes about half of its inputs.",
            "count-relus-between": "count the ReLUs between the input and the output: there are 8.",
            "count-relus-between-2": "count the ReLUs between the input and the output: there are 8.",
            "relu-halves-second": "a ReLU halves the second moment (the mean square), not the std: what does that do to the std?",
            "relu-s-output": ("a ReLU's output has a positive mean: the next layer's output variance is fan_in · "
                              "std² · E[a²], the second moment of its input, not its variance."),
        },
    )
)

# --- derive: the std for leaky ReLU ---------------------------------------------------------------


#: one tolerance: a relative 1e-6 (fp32 arithmetic of the formula passes)
LEAKY_RTOL = 1e-6


def _compare_std(got, expected) -> str | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        return tr("expected a number (the std), got {type}.").format(type=type(got).__name__)
    got = float(got)
    if close(got, expected, rtol=LEAKY_RTOL):
        return None
    if got > 0 and close(math.sqrt(got), expected, rtol=LEAKY_RTOL / 2):
        return tr("that looks like a variance; the std is its square root.")
    return tr("{got:.4g} is not the std that keeps E[z²] (allowed: a relative ±1e-6).").format(got=got)


def leaky_case(fan_in: int, slope: float, description: str) -> Case:
    """A case; its expected std (torch's calculate_gain over sqrt(fan_in)) is the grader's."""
    return Case(args=(fan_in, slope), description=description)


register(
    Exercise(
        id="init-leaky-std",
        title="leaky_relu_std(fan_in, slope): the weight std that keeps E[z²] through leaky ReLUs",
        kind="function",
        refuse_what="the standard deviation",
        refuse=(
            "torch.nn.init.calculate_gain",
            "torch.nn.init.kaiming_normal_",
            "torch.nn.init.kaiming_uniform_",
            "lectorch.init.init_std",
        ),
        hint=("Split E[leaky(z)²] into the half of the draws where z > 0 and the half where z < 0; "
              "the second half is multiplied by slope before squaring.",
              "Check your formula at the two ends you know: slope 0 is a plain ReLU (He's std), "
              "slope 1 is no non-linearity at all (LeCun's std)."),
        compare=_compare_std,
        rtol=LEAKY_RTOL,
        no_tensors=True,
        cases=public_cases("init-leaky-std", (
            leaky_case(1024, 0.01, "fan_in 1024, slope 0.01 (torch's default)"),
            leaky_case(256, 0.2, "fan_in 256, slope 0.2"),
            leaky_case(100, 0.5, "fan_in 100, slope 0.5"),
        )),
        summary=("runs leaky_relu_std on 3 (fan_in, slope) pairs (hidden ones when graded), against "
                 "torch's calculate_gain, within a relative ±1e-6; a formula: no tensors, no "
                 "numerical integration, no random draws"),
    )
)

# --- derive: the parameters of a Cruncher variant ------------------------------------------------

register(
    Exercise(
        id="init-variant-params",
        title="variant_params(dim, num_layers, outputs): the parameters of a Cruncher variant with biases",
        kind="value",
        expected=_VARIANT,
        cases=(Case(args=(768, 12, 10), expected=_VARIANT, description="Cruncher(768, 12), a 10-way head"),),
        rtol=_VARIANT.rtol,
        refuse_what="the parameter count",
        no_tensors=True,
        refuse=("lectorch.models.cruncher_num_parameters",),
        hint=("Count layer by layer: a linear layer from D_in to D_out with a bias has a D_in×D_out "
              "weight and D_out biases.",),
        slips={
            "plain-cruncher-variant": "that is the plain Cruncher; the variant has biases and a 10-way head.",
            "head-biases-too": "the head has biases too.",
            "variant-s-head": "the variant's head has 10 outputs.",
        },
    )
)
