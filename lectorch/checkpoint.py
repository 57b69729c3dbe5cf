"""Checkpoints: everything a run needs to continue bit for bit, written atomically and loaded safely.

A checkpoint holds the model, the optimizer (its moments are state too), the LR scheduler, the
step, the gradient scaler, and every random state: torch's (CPU and each GPU), NumPy's, Python's and
the data-order generator's. It is written to a temporary file in the same folder, flushed to disk
(fsync) and renamed over the old one with ``os.replace``, which is atomic: a crash at any moment
leaves either the old checkpoint or the new one, never a torn file. It is read with
``torch.load(weights_only=True)``, which unpickles only tensors and plain containers (no code), so
every state here is stored as tensors, numbers, strings, lists, tuples and dicts.

torch does not check its zip's CRCs on load, so a flipped bit would load silently: the state is
serialised first and its SHA-256 stored beside it, and a load verifies it (:class:`CheckpointError`).
A restore checks everything (names, shapes, dtypes, optimizer type, saved parts) before it changes
the model, and rolls back if loading fails half way. A save first removes the temporary files of
earlier saves that were killed, and refuses up front when the disk cannot hold the file.

>>> import tempfile
>>> model = torch.nn.Linear(2, 2)
>>> with tempfile.TemporaryDirectory() as d:
...     _ = save_checkpoint(pathlib.Path(d) / "ckpt.pt", model=model, step=7)
...     restore_checkpoint(pathlib.Path(d) / "ckpt.pt", model=model)["step"]
7
"""

from __future__ import annotations

import copy
import errno
import glob
import hashlib
import io
import os
import pathlib
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

import torch

from lectorch import _validate
from lectorch.memory import format_bytes
from lectorch.randomness import get_rng_state, set_rng_state

if TYPE_CHECKING:  # for annotations only: the API docs then show a plain "Path" they need not resolve
    from pathlib import Path

#: Marks a file as a lectorch checkpoint; ``VERSION`` changes if the layout does.
FORMAT = "lectorch-checkpoint"
VERSION = 2  # 2: the state is stored serialised, with its SHA-256


class CheckpointError(ValueError):
    """A checkpoint file is truncated, corrupt, foreign, or does not fit the model it is loaded into."""


# ------------------------------------------------------------------------------------ save / load


def atomic_save(obj: Any, path: str | Path) -> int:
    """``torch.save(obj)`` to ``path`` atomically: temp file in the same folder, fsync, ``os.replace``.

    Returns the file's size in bytes. If anything fails (or the process dies) before the rename, the
    old file at ``path`` is untouched; on a Python exception the temp file is removed as well, and the
    temp files that killed saves left behind are removed by the next save to the same path. A disk
    without room for the file raises ``OSError`` (ENOSPC) naming the folder and the bytes needed,
    before anything is written.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     atomic_save({"x": torch.zeros(2)}, pathlib.Path(d) / "a.pt") > 0
    True
    """
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return _write_atomically(buffer.getbuffer(), pathlib.Path(path))


def _temp_prefix(path: pathlib.Path) -> str:
    return f".{path.name}."


def _free_bytes(folder: pathlib.Path) -> int:
    return shutil.disk_usage(folder).free


def _write_atomically(data: memoryview | bytes, path: pathlib.Path) -> int:
    if path.is_dir():
        raise IsADirectoryError(f"checkpoint path {str(path)!r} is a folder; pass a file name such as {str(path / 'ckpt.pt')!r}")
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {str(folder)!r} of checkpoint {str(path)!r} does not exist")
    for stale in folder.glob(f"{glob.escape(_temp_prefix(path))}*.tmp"):  # left by saves that were killed
        try:
            stale.unlink()
        except OSError:
            pass
    need = len(data)
    free = _free_bytes(folder)
    if need > free:
        raise _disk_full(path, need, free)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic (POSIX): readers see the old file or the new one, never half
    except BaseException as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_full(path, need, _free_bytes(folder)) from None
        raise
    _fsync_folder(folder)  # make the rename itself durable
    return path.stat().st_size


def _disk_full(path: pathlib.Path, need: int, free: int) -> OSError:
    return OSError(errno.ENOSPC, f"not enough disk space to write checkpoint {path}: it needs {format_bytes(need)}, "
                                 f"the disk of {path.parent} has {format_bytes(free)} free; free some space "
                                 "or save elsewhere")


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
    _check_plain(extra or {}, "extra")
    _check_parts(optimizer=optimizer, scheduler=scheduler, scaler=scaler)
    model = getattr(model, "module", model)  # a DistributedDataParallel wrapper saves its inner model
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "optimizer_type": None if optimizer is None else type(optimizer).__name__,
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "scaler": None if scaler is None else scaler.state_dict(),
        "rng": get_rng_state(generator),
        "extra": dict(extra or {}),
    }
    payload = io.BytesIO()
    torch.save(state, payload)
    data = payload.getvalue()
    outer = io.BytesIO()
    torch.save({"format": FORMAT, "version": VERSION, "sha256": hashlib.sha256(data).hexdigest(),
                "payload": torch.frombuffer(bytearray(data), dtype=torch.uint8)}, outer)
    return _write_atomically(outer.getbuffer(), pathlib.Path(path))


_PLAIN = (type(None), bool, int, float, str, torch.Tensor)


def _check_parts(**parts: Any) -> None:
    """Raise TypeError for a part (optimizer, scheduler, scaler) that has no state dict to save or load."""
    for name, obj in parts.items():
        if obj is not None and not (callable(getattr(obj, "state_dict", None))
                                    and callable(getattr(obj, "load_state_dict", None))):
            raise TypeError(f"{name} must be an object with state_dict() and load_state_dict() "
                            f"(a torch.optim.Optimizer, an LR scheduler, a GradScaler) or None, got {type(obj).__name__}")


def _check_plain(value: Any, where: str) -> None:
    """Raise TypeError if ``value`` holds anything ``torch.load(weights_only=True)`` would refuse."""
    if isinstance(value, _PLAIN):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"{where} has a key {key!r} of type {type(key).__name__}; use str keys")
            _check_plain(item, f"{where}[{key!r}]")
        return
    raise TypeError(f"{where} is a {type(value).__name__}: a checkpoint holds only tensors, numbers, strings, "
                    "None, lists, tuples and dicts (the safe loader refuses other objects); convert it first")


def load_checkpoint(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint with ``torch.load(weights_only=True)`` and check that it is one of ours.

    A missing file raises ``FileNotFoundError``; a truncated, corrupt (digest mismatch) or foreign
    file raises :class:`CheckpointError` naming the file and the problem. Nothing is modified.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (pathlib.Path(d) / "junk.pt").write_bytes(b"not a checkpoint")
    ...     load_checkpoint(pathlib.Path(d) / "junk.pt")
    Traceback (most recent call last):
    ...
    lectorch.checkpoint.CheckpointError: checkpoint ...junk.pt is truncated or corrupt (torch.load failed: ...)
    """
    path = pathlib.Path(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a folder, not a checkpoint file")
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
    payload = state.get("payload")
    if not isinstance(payload, torch.Tensor) or payload.dtype != torch.uint8 or not isinstance(state.get("sha256"), str):
        raise CheckpointError(f"checkpoint {path} is corrupt (its payload or digest is missing)")
    data = payload.numpy().tobytes()
    if hashlib.sha256(data).hexdigest() != state["sha256"]:
        raise CheckpointError(f"checkpoint {path} is corrupt: the SHA-256 digest of its contents does not match the "
                              "one stored when it was written (a changed byte); use an older checkpoint")
    try:
        inner = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as err:  # noqa: BLE001 - a digest match makes this unlikely; name the file anyway
        raise CheckpointError(f"checkpoint {path} is corrupt (torch.load failed: {type(err).__name__}: {_reason(err)})") from None
    return {"format": FORMAT, "version": VERSION, **inner}


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
    """Raise :class:`CheckpointError` unless ``state['model']`` has exactly ``model``'s names, shapes and dtypes.

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
        elif got[name].dtype != want[name].dtype:
            problems.append(f"{name!r} is {str(got[name].dtype).removeprefix('torch.')} in the file but "
                            f"{str(want[name].dtype).removeprefix('torch.')} in the model (loading would convert it "
                            f"silently: convert the model first, e.g. model.to({got[name].dtype}))")
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
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _check_parts(optimizer=optimizer, scheduler=scheduler, scaler=scaler)
    state = load_checkpoint(path)
    where = f"checkpoint {pathlib.Path(path)}"
    check_fits(state, model, source=where)
    if optimizer is not None:
        saved = state["optimizer"]
        if saved is None:
            raise CheckpointError(f"{where} holds no optimizer state")
        if state["optimizer_type"] != type(optimizer).__name__:
            raise CheckpointError(f"{where} holds the state of a {state['optimizer_type']} optimizer, not of this "
                                  f"{type(optimizer).__name__}: make the optimizer the run was saved with")
        sizes = [len(g["params"]) for g in saved["param_groups"]]
        have = [len(g["params"]) for g in optimizer.param_groups]
        if sizes != have:
            raise CheckpointError(f"{where} has an optimizer with parameter groups of sizes "
                                  f"{sizes}, but this optimizer has {have}")
    for name, obj in (("scheduler", scheduler), ("scaler", scaler)):
        if obj is not None and state[name] is None:
            raise CheckpointError(f"{where} holds no {name} state")
    if generator is not None and state["rng"]["generator"] is None:
        raise CheckpointError(f"{where} holds no data-generator state to restore")
    inner = getattr(model, "module", model)
    targets = [(inner, state["model"]), (optimizer, state["optimizer"]), (scheduler, state["scheduler"]),
               (scaler, state["scaler"])]
    targets = [(obj, saved) for obj, saved in targets if obj is not None]
    backups = [(obj, copy.deepcopy(obj.state_dict())) for obj, _ in targets]
    loaded = []
    try:
        for obj, saved in targets:
            loaded.append(obj)
            obj.load_state_dict(saved)
        if restore_rng:
            set_rng_state(state["rng"], generator)
        elif generator is not None:
            generator.set_state(state["rng"]["generator"])
    except Exception as err:  # noqa: BLE001 - put everything back as it was, then say what failed
        for obj, backup in backups[: len(loaded)]:  # the failing one too: it may be half loaded
            try:
                obj.load_state_dict(backup)
            except Exception:  # noqa: BLE001 - its own loader is what failed; the others are restored
                pass
        raise CheckpointError(f"{where} could not be restored ({type(err).__name__}: {err}); "
                              "the model and optimizer were left as they were") from None
    return state


__all__ = ["FORMAT", "VERSION", "CheckpointError", "atomic_save", "save_checkpoint", "load_checkpoint", "check_fits",
           "restore_checkpoint"]
