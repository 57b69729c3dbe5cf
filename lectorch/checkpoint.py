"""Checkpoints: everything a run needs to continue bit for bit, written atomically and loaded safely.

A checkpoint holds the model, the optimizer (its moments are state too), the LR scheduler, the
step, the gradient scaler, and every random state: torch's (CPU and each GPU), NumPy's, Python's and
the data-order generator's. It is written to a temporary file in the same folder, flushed to disk
(fsync) and renamed over the old one with ``os.replace``, which is atomic: a crash at any moment
leaves either the old checkpoint or the new one, never a torn file. It is read with
``torch.load(weights_only=True)``, which unpickles only tensors and plain containers (no code), so
every state here is stored as tensors, numbers, strings, lists, tuples and dicts.

>>> import tempfile
>>> model = torch.nn.Linear(2, 2)
>>> with tempfile.TemporaryDirectory() as d:
...     _ = save_checkpoint(pathlib.Path(d) / "ckpt.pt", model=model, step=7)
...     restore_checkpoint(pathlib.Path(d) / "ckpt.pt", model=model)["step"]
7
"""

from __future__ import annotations

import os
import random
import tempfile
import pathlib
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lectorch import _validate

if TYPE_CHECKING:  # for annotations only: the API docs then show a plain "Path" they need not resolve
    from pathlib import Path

#: Marks a file as a lectorch checkpoint; ``VERSION`` changes if the layout does.
FORMAT = "lectorch-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint file is truncated, corrupt, foreign, or does not fit the model it is loaded into."""


# --------------------------------------------------------------------------------------------- RNG


def rng_state(generator: torch.Generator | None = None) -> dict[str, Any]:
    """Every random state of the process as tensors and plain values (so ``weights_only`` loads it).

    >>> sorted(rng_state())
    ['cuda', 'generator', 'numpy', 'python', 'torch']
    """
    keys_name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {"name": keys_name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "python": {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64),
                   "gauss_next": gauss_next},
        "generator": None if generator is None else generator.get_state(),
    }


def set_rng_state(state: dict[str, Any], generator: torch.Generator | None = None) -> None:
    """Restore what :func:`rng_state` captured (and the state of ``generator``, if given).

    >>> s = rng_state(); a = torch.rand(1); set_rng_state(s); bool(torch.equal(a, torch.rand(1)))
    True
    """
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"] and torch.cuda.is_available():
        if len(state["cuda"]) != torch.cuda.device_count():
            raise CheckpointError(f"the checkpoint has RNG states of {len(state['cuda'])} GPUs, "
                                  f"but {torch.cuda.device_count()} are visible")
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    p = state["python"]
    random.setstate((p["version"], tuple(int(v) for v in p["internal"].tolist()), p["gauss_next"]))
    if generator is not None:
        if state["generator"] is None:
            raise CheckpointError("the checkpoint holds no data-generator state to restore")
        generator.set_state(state["generator"].cpu())


# ------------------------------------------------------------------------------------ save / load


def atomic_save(obj: Any, path: str | Path) -> int:
    """``torch.save(obj)`` to ``path`` atomically: temp file in the same folder, fsync, ``os.replace``.

    Returns the file's size in bytes. If anything fails (or the process dies) before the rename, the
    old file at ``path`` is untouched; on a Python exception the temp file is removed as well.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     atomic_save({"x": torch.zeros(2)}, pathlib.Path(d) / "a.pt") > 0
    True
    """
    path = pathlib.Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {str(folder)!r} of checkpoint {str(path)!r} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic (POSIX): readers see the old file or the new one, never half
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)  # make the rename itself durable
    return path.stat().st_size


def _fsync_folder(folder: pathlib.Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open a folder; the rename is still atomic there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save_checkpoint(
    path: str | Path,
    *,
    model: torch.nn.Module,
    step: int,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    scaler: Any | None = None,
    generator: torch.Generator | None = None,
    extra: dict[str, Any] | None = None,
) -> int:
    """Write a checkpoint of a run after ``step`` steps; return its size in bytes.

    ``extra`` holds anything else of plain types (the loss history, the config).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     save_checkpoint(pathlib.Path(d) / "c.pt", model=torch.nn.Linear(4, 4, bias=False), step=0) > 4 * 16
    True
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    step = _validate.non_negative_int("step", step)
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(f"extra must be a dict of plain values, got {type(extra).__name__}")
    model = getattr(model, "module", model)  # a DistributedDataParallel wrapper saves its inner model
    state = {
        "format": FORMAT,
        "version": VERSION,
        "step": step,
        "model": model.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "scaler": None if scaler is None else scaler.state_dict(),
        "rng": rng_state(generator),
        "extra": dict(extra or {}),
    }
    return atomic_save(state, path)


def load_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint with ``torch.load(weights_only=True)`` and check that it is one of ours.

    A missing file raises ``FileNotFoundError``; a truncated, corrupt or foreign file raises
    :class:`CheckpointError` naming the file and the problem. Nothing is modified.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "junk.pt").write_bytes(b"not a checkpoint")
    ...     load_checkpoint(pathlib.Path(d) / "junk.pt")
    Traceback (most recent call last):
    ...
    lectorch.checkpoint.CheckpointError: checkpoint ...junk.pt is truncated or corrupt (torch.load failed: ...)
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint {path} is truncated or corrupt (the file is empty)")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many types for a bad file; name the file
        if "Unsupported global" in str(err):
            raise CheckpointError(
                f"checkpoint {path} contains Python objects other than tensors and plain containers; "
                "refusing to unpickle it (weights_only=True runs no code). Re-save it with plain state dicts."
            ) from None
        raise CheckpointError(
            f"checkpoint {path} is truncated or corrupt (torch.load failed: {type(err).__name__}: {_reason(err)})"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        what = f"a {type(state).__name__}" + (f" with keys {sorted(map(str, state))[:5]}" if isinstance(state, dict) else "")
        raise CheckpointError(f"checkpoint {path} is not a lectorch checkpoint (it holds {what})")
    if state.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path} has layout version {state.get('version')}, this lectorch reads {VERSION}")
    return state


def _reason(err: Exception) -> str:
    """The informative part of torch.load's error message, on one short line."""
    text = str(err)
    if "WeightsUnpickler error:" in text:  # the weights-only unpickler wraps the real reason in advice
        text = text.split("WeightsUnpickler error:", 1)[1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "no message"
    first = first.split(". ")[0].rstrip(".")
    return first if len(first) <= 120 else first[:117] + "..."


def check_fits(state: dict[str, Any], model: torch.nn.Module, *, source: str = "checkpoint") -> None:
    """Raise :class:`CheckpointError` unless ``state['model']`` has exactly ``model``'s names and shapes.

    Done *before* loading anything, because ``load_state_dict`` copies the entries that fit before it
    complains about the rest, which would leave a half-loaded model.

    >>> check_fits({"model": torch.nn.Linear(2, 3).state_dict()}, torch.nn.Linear(2, 2))
    Traceback (most recent call last):
    ...
    lectorch.checkpoint.CheckpointError: checkpoint does not fit this model: 'weight' has shape (3, 2) in the file but (2, 2) in the model; 'bias' has shape (3,) in the file but (2,) in the model
    """
    model = getattr(model, "module", model)
    want = model.state_dict()
    got = state["model"]
    problems = []
    for name in want:
        if name not in got:
            problems.append(f"{name!r} is missing from the file")
        elif tuple(got[name].shape) != tuple(want[name].shape):
            problems.append(f"{name!r} has shape {tuple(got[name].shape)} in the file but {tuple(want[name].shape)} in the model")
    problems += [f"{name!r} in the file is not in the model" for name in got if name not in want]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise CheckpointError(f"{source} does not fit this model: {'; '.join(problems[:3])}{more}")


def restore_checkpoint(
    path: str | Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    scaler: Any | None = None,
    generator: torch.Generator | None = None,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Load ``path`` into the given objects (after checking it fits) and return the checkpoint dict.

    Continue training at ``state["step"]``; ``state["extra"]`` holds what was saved with it.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = save_checkpoint(pathlib.Path(d) / "c.pt", model=torch.nn.Linear(2, 3), step=1)
    ...     restore_checkpoint(pathlib.Path(d) / "c.pt", model=torch.nn.Linear(2, 2))
    Traceback (most recent call last):
    ...
    lectorch.checkpoint.CheckpointError: checkpoint ...c.pt does not fit this model: 'weight' has shape (3, 2) in the file but (2, 2) in the model; 'bias' has shape (3,) in the file but (2,) in the model
    """
    state = load_checkpoint(path)
    check_fits(state, model, source=f"checkpoint {pathlib.Path(path)}")
    if optimizer is not None:
        saved = state["optimizer"]
        if saved is None:
            raise CheckpointError(f"checkpoint {pathlib.Path(path)} holds no optimizer state")
        sizes = [len(g["params"]) for g in saved["param_groups"]]
        have = [len(g["params"]) for g in optimizer.param_groups]
        if sizes != have:
            raise CheckpointError(f"checkpoint {pathlib.Path(path)} has an optimizer with parameter groups of sizes "
                                  f"{sizes}, but this optimizer has {have}")
    for name, obj in (("scheduler", scheduler), ("scaler", scaler)):
        if obj is not None and state[name] is None:
            raise CheckpointError(f"checkpoint {pathlib.Path(path)} holds no {name} state")
    getattr(model, "module", model).load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if scaler is not None:
        scaler.load_state_dict(state["scaler"])
    if restore_rng:
        set_rng_state(state["rng"], generator)
    elif generator is not None:
        generator.set_state(state["rng"]["generator"])
    return state


__all__ = ["FORMAT", "VERSION", "CheckpointError", "rng_state", "set_rng_state", "atomic_save", "save_checkpoint",
           "load_checkpoint", "check_fits", "restore_checkpoint"]
