"""The trust model's counts (chapters/reference/grading.md, "What stays guessable") are computed
here from the exercise registry and the offline attack (``benchmarks/attack_public_seals.py``),
and pinned against the page, in English and in Chinese: no count of that paragraph is kept by hand.
"""

from __future__ import annotations

import math
import re

import pytest

from _paths import ROOT
import attack_public_seals as attack
from grading import expected_values, load_topics
from lectorch.exercises import Sealed, check, exercises, reset_attempts
from lectorch.exercises.views import COPY_QUIZ

#: the attack's first step, the power of ten: both signs, ±40 (as ``recover`` counts it)
DECADE_TRIES = attack.DECADE_TRIES


def _exact_tries(v: float) -> int:
    """One hash per integer of the answer's power of ten up to it, after the decade's."""
    return DECADE_TRIES + int(abs(v) - 10 ** math.floor(math.log10(abs(v)))) + 1


def _paragraph(text: str, start: str) -> str:
    return text[text.index(start):].split("\n- ")[0]


@pytest.fixture(scope="module")
def counts() -> dict:
    """What the page states, computed: the exercises asked as functions of their setting, how their
    public seals fall, and the most hashes the attack needs for each kind of seal."""
    registry = exercises()
    asked = sorted(i for i, ex in registry.items() if ex.kind != "function" and ex.takes_function)
    numeric = [i for i in asked if isinstance(registry[i].expected, Sealed) and registry[i].expected.numeric]
    tolerant = [i for i in numeric if registry[i].expected.rtol >= 1e-3]
    exact = [i for i in numeric if i not in tolerant]
    tolerant_hashes = {}
    for ex_id in tolerant:  # cheap (buckets): run the attack; its answer, hard-coded, fails practice
        value, tries = attack.recover(ex_id, registry[ex_id].expected)
        reset_attempts(ex_id)
        assert value is not None and registry[ex_id].expected.matches(ex_id, value), ex_id
        assert not check(ex_id, lambda *a, v=value: v).passed, ex_id
        tolerant_hashes[ex_id] = tries
    plain = expected_values(load_topics())
    exact_hashes = {}
    for ex_id in exact:  # one hash per integer of the decade up to the answer
        exact_hashes[ex_id] = _exact_tries(plain[ex_id])
    return {"asked": asked, "whole": [i for i in asked if i not in numeric], "numeric": numeric,
            "tolerant": tolerant, "exact": exact, "tolerant_hashes": tolerant_hashes,
            "exact_hashes": exact_hashes, "plain": plain}


def test_the_exact_answers_hash_count_is_the_attacks_own():
    """The count above is what ``recover`` does, checked on the exact answer that is quick to find."""
    registry, plain = exercises(), expected_values(load_topics())
    for ex_id in ("precision-bf16-257",):  # the others take millions of hashes: counted, not run
        value, tries = attack.recover(ex_id, registry[ex_id].expected)
        v = plain[ex_id]
        assert value == v and tries == _exact_tries(v)


def test_the_trust_models_counts_are_computed(counts):
    text = _paragraph((ROOT / "chapters" / "reference" / "grading.md").read_text(encoding="utf-8"),
                      "- **What stays guessable.**")
    text = re.sub(r"\s+", " ", text)
    biggest = max(counts["exact_hashes"], key=counts["exact_hashes"].get)
    digits = len(str(int(counts["plain"][biggest])))
    for claim in (
        f"{len(counts['asked'])} value and prediction exercises",
        f"for the {len(counts['whole'])} sealed as a whole, " + ", ".join(
            f"`{i}`" for i in counts["whole"][:-1]) + f" and `{counts['whole'][-1]}`",
        f"a set of the {len(COPY_QUIZ)} letters",
        f"recovers the {len(counts['numeric'])} numeric page answers",
        f"the {len(counts['tolerant'])} with a tolerance of ±0.1 % or more take at most "
        f"{max(counts['tolerant_hashes'].values()):,} hashes each",
        f"the {len(counts['exact'])} exact ones",
        f"at most {counts['exact_hashes'][biggest]:,} (the {digits}-digit FLOP count)",
        f"for each of the {len(counts['asked'])},",
    ):
        assert claim in text, claim
    assert biggest == "backprop-tied-flops"  # the FLOP count the page names


def test_the_chinese_trust_model_states_the_same_counts(counts):
    from babel.messages.pofile import read_po

    with open(ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "chapters" / "reference" / "grading.po", "rb") as f:
        message = next(m for m in read_po(f) if m.id.startswith("**What stays guessable.**"))
    assert message.string and not message.fuzzy
    numbers = [len(counts["asked"]), len(counts["whole"]), len(counts["numeric"]), len(counts["tolerant"]),
               f"{max(counts['tolerant_hashes'].values()):,}", len(counts["exact"]),
               f"{max(counts['exact_hashes'].values()):,}"]
    for n in numbers:
        assert re.search(rf"(?<![\d,]){re.escape(str(n))}(?![\d,])", message.string), n
