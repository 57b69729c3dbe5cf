"""Chapter 10's exercises: reference solutions pass, classic wrong variants are rejected, feedback
never gives the answer away, and the grading data agree with the package's seals and with torch."""

from __future__ import annotations

import random

import pytest
import torch

from grading.topics import scale as grading
from lectorch import hardware
from lectorch.exercises import check, compare, get_exercise, run_case
from lectorch.exercises import scale as ex
from lectorch.train import measure_step, predicted_saved_bytes
from _practice import practised
from _answers.scale import saved_bytes




def _const(value):
    """The page's answer as a function of the setting (these exercises take one): right on the
    public case only."""
    return lambda *args, **kwargs: value


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------- saved activation bytes


def test_saved_bytes_reference_passes_and_stub_is_not_implemented():
    assert check("scale-saved-bytes", saved_bytes).passed

    def stub(batch_size, context_length, dim, num_layers, vocab_size, checkpointing=False):
        raise NotImplementedError

    assert check("scale-saved-bytes", stub).status == "not implemented"


@pytest.mark.parametrize("variant", ["blocks_only", "ignores_checkpointing", "forgets_ids",
                                     "bf16_bytes", "checkpoint_keeps_nothing"])
def test_saved_bytes_wrong_variants_are_rejected(variant):
    def blocks_only(b, t, d, n, v, checkpointing=False):
        return 4 * b * t * d * n * (1 if checkpointing else 9)

    def ignores_checkpointing(b, t, d, n, v, checkpointing=False):
        return saved_bytes(b, t, d, n, v)

    def forgets_ids(b, t, d, n, v, checkpointing=False):
        return saved_bytes(b, t, d, n, v, checkpointing) - 16 * b * t

    def bf16_bytes(b, t, d, n, v, checkpointing=False):
        return (saved_bytes(b, t, d, n, v, checkpointing) - 16 * b * t - 4) // 2 + 16 * b * t + 4

    def checkpoint_keeps_nothing(b, t, d, n, v, checkpointing=False):
        return saved_bytes(b, t, d, n, v) - (36 * b * t * d * n if checkpointing else 0)

    wrong = locals()[variant]
    result = check("scale-saved-bytes", wrong)
    assert result.status == "failed"
    index = int(result.message.split()[1]) - 1  # "Case k of n (...): ..."
    case = get_exercise("scale-saved-bytes").cases[index]
    assert str(case.expected) not in result.message  # the answer is never shown


def test_saved_bytes_measured_cases_agree_with_the_formula():
    for case in grading.random_saved_cases(random.Random(3), 4):
        assert case.expected == predicted_saved_bytes(*case.args, **case.kwargs)


def test_saved_bytes_hidden_cases_pass_with_the_reference():
    exercise = get_exercise("scale-saved-bytes")
    for case in grading.hidden_cases("scale-saved-bytes", random.Random(5)):
        outcome, got = run_case(saved_bytes, case)
        assert outcome == "returned" and compare(exercise, got, case.expected) is None


# ------------------------------------------------------------------------- values and predictions


def test_grading_values_match_the_seals():
    for exercise_id, value in grading.EXPECTED.items():
        assert get_exercise(exercise_id).expected.matches(exercise_id, value), exercise_id


def test_ckpt_time_is_the_flop_ratio_and_rejects_the_usual_guesses():
    m = ex.CKPT_TIME_MODEL
    plain = measure_step(checkpointing=False, trials=1, **m).flops
    ckpt = measure_step(checkpointing=True, trials=1, **m).flops
    assert grading.EXPECTED["scale-ckpt-time"] == ckpt / plain
    tokens, d, n, v = m["batch_size"] * m["context_length"], m["dim"], m["num_layers"], m["vocab_size"]
    up = 2 * tokens * d * 4 * d
    assert ckpt / plain == 1 + n * up / (3 * (2 * n * up + 2 * tokens * d * v))  # only W1 recomputed
    result = check("scale-ckpt-time", practised("scale-ckpt-time", ckpt / plain), measured=1.3)
    assert result.passed and "measured on this machine" in result.message
    for guess in (8 / 6, 1 + 1 / 6, 1.148):  # whole layers; no head; the chapter's own model
        assert check("scale-ckpt-time", lambda *model: guess).status == "failed"


def test_hfu_value_and_its_slips():
    h100 = hardware.get_gpu("H100 SXM")
    mfu = 6 * 7e9 * 0.6e6 / (64 * h100.peak_flops("bf16"))  # the page's run
    assert check("scale-hfu", practised("scale-hfu", mfu * 8 / 6)).passed
    assert "recomputation" in check("scale-hfu", _const(mfu)).message  # MFU, not HFU
    assert "sparsity" in check("scale-hfu", _const(mfu * 8 / 6 / 2)).message  # the 2:4-sparse peak
    assert check("scale-hfu", _const(1.0)).status == "failed"


def test_int4_bytes_value_and_its_slips():
    right = 70e9 * 4.5 / 8
    assert check("scale-int4-bytes", practised("scale-int4-bytes", right)).passed
    assert "zero point" in check("scale-int4-bytes", _const(70e9 * 4.25 / 8)).message
    assert "cost bytes too" in check("scale-int4-bytes", _const(70e9 * 4 / 8)).message
    assert "bits or bytes" in check("scale-int4-bytes", _const(70e9 * 4.5)).message
    for wrong in (70e9 * 4.25 / 8, 70e9 / 2):
        assert str(int(right)) not in check("scale-int4-bytes", _const(wrong)).message
