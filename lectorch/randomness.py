"""Seeds: make a run repeatable, and keep separate random streams for separate purposes.

>>> seed_everything(0)
>>> a = torch.rand(2); seed_everything(0); bool(torch.equal(a, torch.rand(2)))
True
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

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


def derive_seed(seed: int, purpose: str) -> int:
    """A seed of its own for each ``purpose`` ("data", "model", "dropout"…), derived from one ``seed``.

    Stable across runs, machines and Python versions (a SHA-256 of the two, not Python's ``hash``).

    >>> derive_seed(0, "data") == derive_seed(0, "data") != derive_seed(0, "model")
    True
    """
    seed = _validate.non_negative_int("seed", seed)
    if not isinstance(purpose, str) or not purpose:
        raise TypeError(f"purpose must be a non-empty str such as 'data', got {purpose!r}")
    digest = hashlib.sha256(f"{seed}:{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1  # < 2**63, a valid torch seed


def make_generators(seed: int, purposes: tuple[str, ...] = ("data", "model"),
                    device: str | torch.device = "cpu") -> dict[str, torch.Generator]:
    """One generator per purpose, seeded with :func:`derive_seed`: changing how the data is drawn
    then leaves the model's initialisation alone, and a difference between two runs can be traced.

    >>> gens = make_generators(0)
    >>> sorted(gens)
    ['data', 'model']
    """
    if isinstance(purposes, str):
        raise TypeError("purposes must be a tuple of names such as ('data', 'model'), not one str")
    purposes = tuple(purposes)
    if len(set(purposes)) != len(purposes) or not purposes:
        raise ValueError(f"purposes must be distinct and at least one, got {purposes!r}")
    return {p: make_generator(derive_seed(seed, p), device) for p in purposes}


def get_rng_state() -> dict[str, Any]:
    """The state of every global random stream (Python, NumPy, torch CPU, each CUDA device).

    Save it in a checkpoint and restore it with :func:`set_rng_state` to resume a run exactly.

    >>> state = get_rng_state(); a = torch.rand(2); set_rng_state(state)
    >>> bool(torch.equal(a, torch.rand(2)))
    True
    """
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the global random streams saved by :func:`get_rng_state`.

    >>> set_rng_state(get_rng_state())
    """
    if not isinstance(state, dict) or not {"python", "numpy", "torch"} <= set(state):
        raise ValueError("state must be the dict returned by get_rng_state() (keys 'python', 'numpy', 'torch')")
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
