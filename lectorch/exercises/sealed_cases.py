"""The comparisons of function exercises, under the name the exercise modules import them by.

Sealing is one engine, :mod:`lectorch.exercises.seal`; this module only re-exports its helpers.
"""

from lectorch.exercises.seal import (MISSING, SealedNumber, SealedRecord, SealedTensor, close, holds_seal, how_far,
                                     is_sealed, mismatch, plain_part, public_cases, seal, view)

__all__ = ["MISSING", "SealedNumber", "SealedRecord", "SealedTensor", "close", "holds_seal", "how_far",
           "is_sealed", "mismatch", "plain_part", "public_cases", "seal", "view"]
