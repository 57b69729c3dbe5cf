"""Seeds: make a run repeatable, and keep separate random streams for separate purposes.

>>> seed_everything(0)
>>> a = torch.rand(2); seed_everything(0); bool(torch.equal(a, torch.rand(2)))
True
"""

from __future__ import annotations

import random

import numpy as np
import torch

from lectorch import _validate


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy and torch (every CUDA device included).

    >>> seed_everything(1234)
    """
    seed = _validate.non_negative_int("seed", seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator of its own, e.g. one for data order and another for initialisation.

    >>> g = make_generator(0); torch.randint(10, (3,), generator=g).tolist()
    [4, 9, 3]
    """
    seed = _validate.non_negative_int("seed", seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen
