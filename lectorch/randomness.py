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


def _seed(seed: int) -> int:
    seed = _validate.non_negative_int("seed", seed)
    if seed >= 2**64:
        raise ValueError(f"seed must be < 2**64 (torch keeps 64 bits), got {seed}")
    return seed


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy and torch (every CUDA device included).

    >>> seed_everything(1234)
    """
    seed = _seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch generator of its own, e.g. one for data order and another for initialisation.

    >>> g = make_generator(0); torch.randint(10, (3,), generator=g).tolist()
    [4, 9, 3]
    """
    from lectorch.device import check_device

    seed = _seed(seed)
    gen = torch.Generator(device=check_device(device))
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


def get_rng_state(generator: torch.Generator | None = None) -> dict[str, Any]:
    """The state of every global random stream (Python, NumPy, torch CPU, each CUDA device) and, if
    given, of ``generator`` (e.g. the data-order one), as tensors and plain values only.

    Save it in a checkpoint and restore it with :func:`set_rng_state` to resume a run exactly: it
    holds nothing that ``torch.load(weights_only=True)`` refuses (no NumPy arrays, no tuples of
    624 Python ints), so it survives the safe loader that :mod:`lectorch.checkpoint` uses.

    >>> state = get_rng_state(); a = torch.rand(2); set_rng_state(state)
    >>> bool(torch.equal(a, torch.rand(2)))
    True
    >>> sorted(state)
    ['cuda', 'generator', 'numpy', 'python', 'torch']
    """
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    keys_name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {"name": str(keys_name), "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "python": {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64),
                   "gauss_next": gauss_next},
        "generator": None if generator is None else generator.get_state(),
    }


def set_rng_state(state: dict[str, Any], generator: torch.Generator | None = None) -> None:
    """Restore the random streams saved by :func:`get_rng_state` (and ``generator``'s, if given).

    The state is checked whole before any stream is changed.

    >>> set_rng_state(get_rng_state())
    >>> set_rng_state({"torch": torch.get_rng_state()})
    Traceback (most recent call last):
    ...
    ValueError: state must be the dict returned by get_rng_state() (keys 'cuda', 'generator', 'numpy', 'python', 'torch'); missing: cuda, generator, numpy, python
    """
    keys = ("cuda", "generator", "numpy", "python", "torch")
    if not isinstance(state, dict) or not set(keys) <= set(state):
        missing = ", ".join(k for k in keys if not isinstance(state, dict) or k not in state)
        raise ValueError(f"state must be the dict returned by get_rng_state() (keys {', '.join(map(repr, keys))}); "
                         f"missing: {missing}")
    try:
        n, p = state["numpy"], state["python"]
        numpy_state = (n["name"], n["keys"].numpy().astype(np.uint32), int(n["pos"]), int(n["has_gauss"]),
                       float(n["cached_gaussian"]))
        python_state = (int(p["version"]), tuple(int(v) for v in p["internal"].tolist()), p["gauss_next"])
        torch_state = state["torch"].cpu()
        if not isinstance(torch_state, torch.Tensor) or torch_state.dtype != torch.uint8:
            raise TypeError("the torch state is not a uint8 tensor")
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"state is not a state returned by get_rng_state(): {err}") from None
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        if state["generator"] is None:
            raise ValueError("state holds no generator state to restore (it was saved without a generator)")
    cuda = state["cuda"]
    if cuda and torch.cuda.is_available() and len(cuda) != torch.cuda.device_count():
        raise ValueError(f"state has RNG states of {len(cuda)} GPUs, but {torch.cuda.device_count()} are visible")
    torch.set_rng_state(torch_state)
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in cuda])
    np.random.set_state(numpy_state)
    random.setstate(python_state)
    if generator is not None:
        generator.set_state(state["generator"].cpu())
