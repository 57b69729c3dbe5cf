"""The per-chapter grading data: one module per chapter topic (named after the exercise module in
``lectorch/exercises``), each ending in ``TOPIC = Topic(...)``. :func:`grading.load_topics` lists this
package and returns every module's ``TOPIC``; the engine around it (the bundle, the grader) lives
one folder up.

>>> import random
>>> demo = Topic(expected={"demo-value": 16}, hidden={"demo-fn": lambda rng: ["a case"]})
>>> demo.hidden_cases("demo-fn", random.Random(0)), demo.hidden_cases("demo-value", random.Random(0))
(['a case'], [])
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any, Callable, Iterable, Mapping

#: a topic's hidden cases: a case maker per exercise id, or one function of (exercise id, rng)
Hidden = Mapping[str, Callable[[random.Random], Iterable]] | Callable[[str, random.Random], Iterable]


def _none(exercise_id: str, rng: random.Random) -> list:
    return []


@dataclasses.dataclass(frozen=True)
class Topic:
    """What one chapter's grading module gives the grader (all by exercise id).

    * ``expected``: the plain answers of value and prediction exercises;
    * ``hidden``: hidden cases of function exercises (see :data:`Hidden`; ``rng`` is a
      ``random.Random`` drawn from the grading seed);
    * ``reference``: ``expected_of(case)``, the plain result of a public case (whose package copy
      holds only its seal), for ``python -m grading.seals`` and the bundle;
    * ``slips``: the wrong answers that reveal a known slip, by slip name (sealed in the package);
    * ``practice``: ``make()`` → the public practice settings with their plain answers.
    """

    expected: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    hidden: Hidden = _none
    reference: Mapping[str, Callable[[Any], Any]] = dataclasses.field(default_factory=dict)
    slips: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    practice: Mapping[str, Callable[[], list]] = dataclasses.field(default_factory=dict)

    def hidden_cases(self, exercise_id: str, rng: random.Random) -> list:
        """The hidden cases of ``exercise_id`` (none when the topic has none for it)."""
        if callable(self.hidden):
            return list(self.hidden(exercise_id, rng) or [])
        maker = self.hidden.get(exercise_id)
        return [] if maker is None else list(maker(rng))


__all__ = ["Hidden", "Topic"]
