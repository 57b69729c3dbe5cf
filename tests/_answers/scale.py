"""Chapter 10 (scale-saved-bytes): a reference answer and the classic wrong ones, as a student hands them in."""

from __future__ import annotations


def saved_bytes(batch_size, context_length, dim, num_layers, vocab_size, checkpointing=False):
    tokens = batch_size * context_length
    per_block = dim if checkpointing else 9 * dim
    floats = tokens * (num_layers * per_block + dim + vocab_size)
    return 4 * floats + 8 * tokens + 8 * tokens + 4

