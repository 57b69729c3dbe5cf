"""Data: token ids in a flat binary file, read lazily with ``numpy.memmap``, sampled into batches.

A pretraining corpus is terabytes of token ids (the lecture quotes ≈ 2.8 TB for LLaMA's), far more
than RAM, so it lives on disk as one flat array and ``np.memmap`` pages in only the windows a batch
touches. A batch is ``batch_size`` random windows of ``context_length + 1`` tokens: the inputs are the
first ``context_length`` tokens, the targets the same window shifted by one (the next tokens).

>>> data = np.arange(100, dtype=np.uint16)
>>> x, y = get_batch(data, 4, 8, "cpu", generator=torch.Generator().manual_seed(0))
>>> x.shape, y.dtype
(torch.Size([4, 8]), torch.int64)
>>> bool((y[:, :-1] == x[:, 1:]).all())
True
"""

from __future__ import annotations

import bisect
import math
import pathlib
from typing import TYPE_CHECKING

import numpy as np
import torch
from tqdm.auto import tqdm

from lectorch import _validate
from lectorch.device import check_device
from lectorch.memory import ensure_fits

if TYPE_CHECKING:  # for annotations only: the API docs then show a plain "Path" they need not resolve
    from pathlib import Path

class DeviceUnavailable(ValueError, RuntimeError):
    """The device asked for cannot be used here. A ``ValueError`` (a bad argument) and the
    ``RuntimeError`` that code written against torch catches for a missing device."""


#: The dtype of token ids on disk: 2 bytes, enough for vocabularies below 65 536 (GPT-2, LLaMA 1/2).
TOKEN_DTYPE = np.uint16


def _np_dtype(dtype: str | np.dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numpy integer dtype such as np.uint16, got {dtype!r}") from None
    if dt.kind not in "ui":
        raise TypeError(f"dtype must be a numpy integer dtype such as np.uint16, got {dt}")
    return dt


def write_tokens(path: str | Path, tokens: np.ndarray | list[int], dtype: str | np.dtype = "uint16") -> int:
    """Write ``tokens`` (a 1-D sequence of ids) to ``path`` as a flat array of ``dtype``; return the byte count.

    The file has no header: its size is ``len(tokens) × itemsize``. Ids that do not fit ``dtype`` raise.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_tokens(pathlib.Path(d) / "t.bin", [1, 2, 3])
    6
    """
    dt = _np_dtype(dtype)
    arr = np.asarray(tokens)
    if arr.ndim != 1:
        raise ValueError(f"tokens must be one-dimensional (a flat stream of ids), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("tokens is empty; write at least one token id")
    if arr.dtype.kind not in "ui":
        raise TypeError(f"tokens must hold integers (token ids), got dtype {arr.dtype}")
    info = np.iinfo(dt)
    lo, hi = int(arr.min()), int(arr.max())
    if lo < info.min or hi > info.max:
        raise ValueError(f"tokens has ids in [{lo}, {hi}], which do not fit dtype {dt} ([{info.min}, {info.max}]); "
                         "use a wider dtype such as np.uint32")
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"folder {str(path.parent)!r} of the token file path {str(path)!r} does not exist")
    arr.astype(dt).tofile(path)
    return arr.size * dt.itemsize


def load_tokens(path: str | Path, dtype: str | np.dtype = "uint16") -> np.memmap:
    """Open a token file written by :func:`write_tokens` as a read-only ``np.memmap`` (nothing is read yet).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = write_tokens(pathlib.Path(d) / "t.bin", [5, 6, 7])
    ...     load_tokens(pathlib.Path(d) / "t.bin").tolist()
    [5, 6, 7]
    """
    dt = _np_dtype(dtype)
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"token file {str(path)!r} does not exist")
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"token file {str(path)!r} is empty")
    if size % dt.itemsize:
        raise ValueError(
            f"token file {str(path)!r} has {size} bytes, not a multiple of {dt.itemsize} (the size of {dt}): "
            "it is truncated or was written with another dtype"
        )
    return np.memmap(path, dtype=dt, mode="r")


def get_batch(
    data: np.ndarray,
    batch_size: int,
    context_length: int,
    device: str | torch.device,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample ``batch_size`` windows of ``data``: (inputs, targets), each (batch_size, context_length) int64.

    Starts are uniform over every valid start ``0 … len(data) - context_length - 1`` (a window needs
    ``context_length + 1`` tokens). ``generator`` (a CPU ``torch.Generator``) makes the order
    reproducible and checkpointable. On CUDA the batch is copied from pinned (page-locked) host memory
    with ``non_blocking=True``, so the copy overlaps with the GPU's work.

    >>> x, y = get_batch(np.arange(10, dtype=np.uint16), 2, 9, "cpu")
    >>> x.tolist(), y.tolist()
    ([[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5, 6, 7, 8]], [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8, 9]])
    """
    if not isinstance(data, np.ndarray) or data.ndim != 1:
        raise TypeError(f"data must be a 1-D numpy array or np.memmap of token ids, got {type(data).__name__}"
                        + (f" of shape {data.shape}" if isinstance(data, np.ndarray) else ""))
    if data.dtype.kind not in "ui":
        raise TypeError(f"data must hold integer token ids (e.g. uint16), got dtype {data.dtype}: "
                        "floats would be truncated into ids")
    batch_size = _validate.positive_int("batch_size", batch_size)
    context_length = _validate.positive_int("context_length", context_length)
    try:
        dev = check_device(device)
    except ValueError as err:
        raise DeviceUnavailable(str(err)) from None
    elements = batch_size * (context_length + 1)
    what = f"a batch of batch_size={batch_size} windows of context_length + 1 = {context_length + 1} tokens"
    ensure_fits(3 * 8 * elements, "cpu", what=what)  # the index, the window and its copies, int64, on the host
    if context_length >= len(data):
        raise ValueError(
            f"context_length={context_length} must be smaller than the data length {len(data)}: "
            f"a window needs context_length + 1 tokens"
        )
    if generator is not None and (not isinstance(generator, torch.Generator) or generator.device.type != "cpu"):
        raise TypeError("generator must be a CPU torch.Generator (indices are drawn on the host)")
    starts = torch.randint(len(data) - context_length, (batch_size,), generator=generator)
    index = starts.numpy()[:, None] + np.arange(context_length + 1)
    if data.dtype.kind == "i" and int(data[index].min()) < 0:
        raise ValueError(f"data holds negative token ids (e.g. {int(data[index].min())}); ids are >= 0")
    if dev.type == "cuda":
        # One contiguous page-locked buffer of whole windows, filled straight from the data, copied to
        # the GPU once, sliced there. (Pinning a non-contiguous slice would make the DMA go through a
        # pageable temporary, and the copy would not overlap with the GPU's work.)
        host = _pinned_buffer(index.shape)
        host.numpy()[...] = data[index]  # reads only these pages of a memmap
        window = _upload(host, dev)
        return window[:, :-1].contiguous(), window[:, 1:].contiguous()  # two separate tensors
    window = torch.from_numpy(data[index].astype(np.int64))  # reads only these pages of a memmap
    inputs, targets = window[:, :-1], window[:, 1:]
    return inputs.clone().to(dev), targets.clone().to(dev)  # two separate tensors


def _pinned_buffer(shape: tuple[int, ...]) -> torch.Tensor:
    """An uninitialised int64 host tensor in page-locked memory (the source of an asynchronous copy)."""
    return torch.empty(shape, dtype=torch.int64, pin_memory=True)


def _upload(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy a pinned host tensor to ``device`` without waiting for it (ordered on the current stream)."""
    return host.to(device, non_blocking=True)


def markov_tokens(num_tokens: int, vocab_size: int, *, branching: int = 4, seed: int = 0) -> np.ndarray:
    """A synthetic "language": a random Markov chain in which each token has ``branching`` likely successors.

    The best any next-token model can reach is the chain's conditional entropy, which
    :func:`bigram_entropy` measures on the data: a known floor for the training loss. Vectorised
    (``_walk``, about ten times the speed of a step-by-step loop, the very same tokens); beyond 16 M
    tokens it shows a progress bar.

    >>> markov_tokens(8, 16, seed=0).dtype
    dtype('uint16')
    """
    num_tokens = _validate.positive_int("num_tokens", num_tokens)
    vocab_size = _validate.positive_int("vocab_size", vocab_size)
    branching = _validate.positive_int("branching", branching)
    if vocab_size > np.iinfo(TOKEN_DTYPE).max + 1:
        raise ValueError(f"vocab_size={vocab_size} does not fit uint16 token ids (at most 65536)")
    if branching > vocab_size:
        raise ValueError(f"branching={branching} must be <= vocab_size={vocab_size}")
    seed = _validate.non_negative_int("seed", seed)
    # the output (2 bytes a token) and the working set of a chunk (uniforms, states, copies)
    ensure_fits(2 * num_tokens + 24 * min(num_tokens, _CHUNK * _CHUNKS_PER_WALK), "cpu",
                what=f"markov_tokens(num_tokens={num_tokens}) (2 bytes a token)")
    rng = np.random.default_rng(seed)
    successors = np.stack([rng.choice(vocab_size, branching, replace=False) for _ in range(vocab_size)])
    probs = rng.dirichlet(np.ones(branching), size=vocab_size)
    cumulative = probs.cumsum(axis=1)
    out = np.empty(num_tokens, dtype=TOKEN_DTYPE)
    token = int(rng.integers(vocab_size))
    if branching == 1:  # no choice to make: a fixed walk, which ends in a cycle
        return _fixed_walk(token, successors[:, 0], out)
    # The uniforms are drawn in chunks of _CHUNK, as they always were (the same draws, so the same
    # tokens for a seed), and walked _CHUNKS_PER_WALK chunks at a time (about a second each).
    walk_size = _CHUNK * _CHUNKS_PER_WALK
    with tqdm(total=num_tokens, unit="token", unit_scale=True, desc="markov_tokens",
              disable=num_tokens <= walk_size) as progress:
        for begin in range(0, num_tokens, walk_size):
            end = min(begin + walk_size, num_tokens)
            u = np.concatenate([rng.random(min(_CHUNK, end - b)) for b in range(begin, end, _CHUNK)])
            out[begin:end], token = _walk(token, u, cumulative, successors)
            progress.update(end - begin)
    return out


_CHUNK = 1 << 20  # uniforms per draw (8 bytes each)
_CHUNKS_PER_WALK = 16


def _step(state: np.ndarray, u: np.ndarray, thresholds: list[np.ndarray], successors: np.ndarray) -> np.ndarray:
    """The next token of every lane: successor number ``bisect_left(cumulative[state], u)`` of ``state``.

    ``thresholds[j]`` is column j of the cumulative probabilities (the last column is left out: u
    never passes it, and a rounded-down 1.0 must not be passed either); ``successors`` is flattened."""
    choice = state * (len(thresholds) + 1)
    for column in thresholds:
        choice += u > column.take(state)  # one more successor passed
    return successors.take(choice)


def _walk(start: int, u: np.ndarray, cumulative: np.ndarray, successors: np.ndarray) -> tuple[np.ndarray, int]:
    """The chain's tokens for the uniforms ``u`` from token ``start``, and the token after them.

    A chain is sequential, so it is cut into K blocks of B steps walked side by side, each from a
    guessed first token. Two walks that read the same uniforms stay together once they meet, so a
    block whose guess was wrong is walked again from the right token (its predecessor's last
    successor) only until it meets its first walk; rounds repeat until every block starts right.
    Exact: the tokens are those of the step-by-step loop.
    """
    n = u.size
    thresholds = [np.ascontiguousarray(column) for column in cumulative.T[:-1]]
    successor_table = successors.ravel().astype(np.int64)
    steps = max(1, math.isqrt(n))  # B; K = ceil(n / B) blocks
    blocks = -(-n // steps)
    uniforms = np.zeros(blocks * steps)
    uniforms[:n] = u  # the padding's tokens (after the last) are dropped
    uniforms = uniforms.reshape(blocks, steps).T.copy()  # [t, block]: one step of every block is contiguous
    states = np.empty((steps, blocks), dtype=np.int64)
    nxt = np.zeros(blocks, dtype=np.int64)  # the guesses: token 0, except the known start of block 0
    nxt[0] = start
    for t in range(steps):
        states[t] = nxt
        nxt = _step(nxt, uniforms[t], thresholds, successor_table)
    ends = nxt  # ends[k]: the token after block k
    for _ in range(_ROUNDS):
        wrong = np.flatnonzero(states[0, 1:] != ends[:-1]) + 1  # blocks whose first token is not right
        if wrong.size == 0:
            break
        lanes, state = wrong, ends[wrong - 1]
        for t in range(steps):
            apart = states[t, lanes] != state  # lanes that met their first walk are right from here on
            lanes, state = lanes[apart], state[apart]
            if lanes.size == 0:
                break
            states[t, lanes] = state
            state = _step(state, uniforms[t, lanes], thresholds, successor_table)
        else:
            ends[lanes] = state
    else:  # walks that seldom meet (large vocabularies): the blocks from the first wrong one, step by step
        wrong = np.flatnonzero(states[0, 1:] != ends[:-1]) + 1
        if wrong.size:
            first = int(wrong[0])  # every block before it started right, so it is right
            head = states[:, :first].T.reshape(-1).astype(TOKEN_DTYPE)
            tail, after = _loop(int(ends[first - 1]), u[first * steps:], cumulative, successors)
            return np.concatenate([head, tail]), after
    flat = states.T.reshape(-1)
    after = int(ends[-1]) if blocks * steps == n else int(flat[n])
    return flat[:n].astype(TOKEN_DTYPE), after


_ROUNDS = 4  # rounds of re-walks before the rest of a walk goes step by step


def _loop(token: int, u: np.ndarray, cumulative: np.ndarray, successors: np.ndarray) -> tuple[np.ndarray, int]:
    """The step-by-step walk (about 1 µs a token): what ``_walk`` computes, kept for chains whose
    walks do not meet."""
    cumulative_rows, successor_rows, last = cumulative.tolist(), successors.tolist(), successors.shape[1] - 1
    walk = []
    for x in u.tolist():
        walk.append(token)
        token = successor_rows[token][min(bisect.bisect_left(cumulative_rows[token], x), last)]
    return np.array(walk, dtype=TOKEN_DTYPE), token


def _fixed_walk(start: int, successor: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` with the walk start, successor[start], …: it repeats once a token comes back."""
    first_seen: dict[int, int] = {}
    path: list[int] = []
    token = start
    while token not in first_seen and len(path) < out.size:
        first_seen[token] = len(path)
        path.append(token)
        token = int(successor[token])
    out[:len(path)] = path
    if len(path) < out.size:
        cycle = np.array(path[first_seen[token]:], dtype=out.dtype)
        rest = out[len(path):]
        rest[:] = np.resize(cycle, rest.size)  # np.resize repeats the cycle
    return out


def bigram_entropy(tokens: np.ndarray | list[int]) -> float:
    """Conditional entropy H(next | current) in nats, measured on ``tokens``: the loss floor of a bigram model.

    >>> round(bigram_entropy(np.array([0, 1, 0, 1, 0, 1])), 6)   # fully predictable
    0.0
    """
    arr = np.asarray(tokens)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError("tokens must be a 1-D sequence of at least two ids")
    if arr.dtype.kind not in "ui":
        raise TypeError(f"tokens must hold integer ids, got dtype {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= 2**31:
        raise ValueError(f"tokens must be ids in [0, 2**31), got ids in [{low}, {high}] "
                         "(the pair code id·(max + 1) + next would overflow int64)")
    arr = arr.astype(np.int64)
    pairs = arr[:-1] * (high + 1) + arr[1:]
    _, pair_counts = np.unique(pairs, return_counts=True)
    _, first_counts = np.unique(arr[:-1], return_counts=True)
    n = arr.size - 1
    # H(X, Y) - H(X), from counts
    h_joint = -np.sum(pair_counts / n * np.log(pair_counts / n))
    h_first = -np.sum(first_counts / n * np.log(first_counts / n))
    return float(max(h_joint - h_first, 0.0))


def tokens_on_disk(num_tokens: float, dtype: str | np.dtype = "uint16") -> float:
    """Bytes of ``num_tokens`` token ids stored as ``dtype``.

    >>> tokens_on_disk(1.4e12) / 1e12     # LLaMA's 1.4 T training tokens as uint16, in TB
    2.8
    """
    dt = _np_dtype(dtype)
    num_tokens = _validate.positive_number("num_tokens", num_tokens)
    return num_tokens * dt.itemsize


__all__ = ["TOKEN_DTYPE", "DeviceUnavailable", "write_tokens", "load_tokens", "get_batch", "markov_tokens", "bigram_entropy",
           "tokens_on_disk"]
