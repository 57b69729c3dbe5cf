"""lectorch.data: token files on disk, memmap reading, and the batch sampler."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch import data
from lectorch.data import bigram_entropy, get_batch, load_tokens, markov_tokens, tokens_on_disk, write_tokens


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------------------- files


def test_write_then_memmap_round_trip(tmp_path):
    tokens = np.array([0, 1, 65535, 42, 7], dtype=np.int64)
    path = tmp_path / "t.bin"
    assert write_tokens(path, tokens) == 10
    assert path.stat().st_size == 2 * len(tokens)  # flat uint16, no header
    mm = load_tokens(path)
    assert isinstance(mm, np.memmap) and mm.dtype == np.uint16
    assert mm.tolist() == tokens.tolist()
    with pytest.raises(ValueError):  # read-only: the corpus is never modified by accident
        mm[0] = 3


def test_write_rejects_ids_that_do_not_fit(tmp_path):
    with pytest.raises(ValueError, match="do not fit dtype uint16"):
        write_tokens(tmp_path / "t.bin", [0, 70000])
    with pytest.raises(ValueError, match="do not fit"):
        write_tokens(tmp_path / "t.bin", [-1, 3])
    assert write_tokens(tmp_path / "w.bin", [70000], dtype=np.uint32) == 4
    with pytest.raises(ValueError, match="one-dimensional"):
        write_tokens(tmp_path / "t.bin", np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="empty"):
        write_tokens(tmp_path / "t.bin", np.array([], dtype=np.int64))
    with pytest.raises(TypeError, match="integers"):
        write_tokens(tmp_path / "t.bin", [0.5, 1.5])
    with pytest.raises(TypeError, match="dtype"):
        write_tokens(tmp_path / "t.bin", [1], dtype=np.float32)


def test_load_rejects_sizes_that_are_not_a_multiple_of_the_dtype(tmp_path):
    path = tmp_path / "odd.bin"
    path.write_bytes(b"\x01\x00\x02")  # 3 bytes: one and a half uint16
    with pytest.raises(ValueError, match=r"odd\.bin.*3 bytes, not a multiple of 2"):
        load_tokens(path)
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_tokens(tmp_path / "empty.bin")
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        load_tokens(tmp_path / "missing.bin")
    path.write_bytes(b"\x01\x00\x02\x00\x03\x00")  # 6 bytes: fine as uint16, wrong as uint32
    assert load_tokens(path).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="multiple of 4"):
        load_tokens(path, dtype=np.uint32)


def test_tokens_on_disk_llama():
    assert tokens_on_disk(1.4e12) == pytest.approx(2.8e12)  # ≈ 2.8 TB: LLaMA's 1.4 T tokens as uint16
    assert tokens_on_disk(10, dtype=np.uint32) == 40
    with pytest.raises(ValueError, match="num_tokens"):
        tokens_on_disk(0)


# ------------------------------------------------------------------------------------ batches


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300), b=st.integers(1, 8), t=st.integers(1, 40), seed=st.integers(0, 1000))
def test_get_batch_windows_are_shifted_copies_of_the_data(n, b, t, seed):
    t = min(t, n - 1)
    stream = np.random.default_rng(seed).integers(0, 65536, size=n).astype(np.uint16)
    x, y = get_batch(stream, b, t, "cpu", generator=gen(seed))
    assert x.shape == y.shape == (b, t) and x.dtype == y.dtype == torch.int64
    assert x.device.type == "cpu" and x.is_contiguous() and y.is_contiguous()
    assert torch.equal(x[:, 1:], y[:, :-1])  # the targets are the inputs shifted by one
    full = torch.from_numpy(stream.astype(np.int64))
    for row_x, row_y in zip(x, y):
        starts = [s for s in range(n - t) if torch.equal(full[s:s + t], row_x)]
        assert any(torch.equal(full[s + 1:s + t + 1], row_y) for s in starts)  # a real window of the data


def test_get_batch_is_uniform_over_every_valid_start():
    # data[i] = i, so a row's first input is its start. Valid starts: 0 … n - t - 1 inclusive.
    n, t, draws = 20, 5, 15_000
    stream = np.arange(n, dtype=np.uint16)
    x, y = get_batch(stream, draws, t, "cpu", generator=gen(0))
    starts = x[:, 0].numpy()
    assert starts.min() == 0 and starts.max() == n - t - 1  # both ends reached, never beyond
    assert int(y[:, -1].max()) == n - 1  # the last token is used as a target
    counts = np.bincount(starts, minlength=n - t)
    assert len(counts) == n - t
    expected = draws / (n - t)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # chi-square with 14 degrees of freedom: P(chi2 > 36.1) = 0.001
    assert chi2 < 36.1, f"start positions are not uniform: chi2={chi2:.1f}"


def test_get_batch_with_the_smallest_possible_data_uses_its_one_window():
    x, y = get_batch(np.array([3, 4], dtype=np.uint16), 3, 1, "cpu")
    assert x.tolist() == [[3]] * 3 and y.tolist() == [[4]] * 3


def test_get_batch_is_reproducible_with_a_generator_and_reads_a_memmap(tmp_path):
    write_tokens(tmp_path / "t.bin", np.arange(1000) % 500)
    mm = load_tokens(tmp_path / "t.bin")
    a = get_batch(mm, 4, 16, "cpu", generator=gen(3))
    b = get_batch(np.asarray(mm), 4, 16, torch.device("cpu"), generator=gen(3))
    assert all(torch.equal(p, q) for p, q in zip(a, b))


def test_get_batch_bad_input():
    stream = np.arange(10, dtype=np.uint16)
    with pytest.raises(ValueError, match="context_length=10 must be smaller than the data length 10"):
        get_batch(stream, 2, 10, "cpu")
    with pytest.raises(ValueError, match="context_length"):
        get_batch(stream, 2, 0, "cpu")
    for bad in (0, -3):
        with pytest.raises(ValueError, match="batch_size"):
            get_batch(stream, bad, 4, "cpu")
    with pytest.raises(TypeError, match="batch_size"):
        get_batch(stream, 2.0, 4, "cpu")
    with pytest.raises(TypeError, match="1-D numpy array"):
        get_batch(torch.arange(10), 2, 4, "cpu")
    with pytest.raises(TypeError, match="1-D numpy array"):
        get_batch(stream.reshape(2, 5), 2, 4, "cpu")
    with pytest.raises(TypeError, match="generator"):
        get_batch(stream, 2, 4, "cpu", generator=3)
    with pytest.raises(ValueError, match="device"):
        get_batch(stream, 2, 4, "tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_get_batch_on_cuda_lands_on_the_gpu():
    x, y = get_batch(np.arange(100, dtype=np.uint16), 4, 8, "cuda", generator=gen(0))
    assert x.is_cuda and y.is_cuda
    x_cpu, _ = get_batch(np.arange(100, dtype=np.uint16), 4, 8, "cpu", generator=gen(0))
    assert torch.equal(x.cpu(), x_cpu)


# ----------------------------------------------------------------------------------- corpus


def test_markov_tokens_and_their_entropy():
    tokens = markov_tokens(20_000, 32, branching=4, seed=0)
    assert tokens.dtype == np.uint16 and tokens.shape == (20_000,) and tokens.max() < 32
    assert np.array_equal(tokens, markov_tokens(20_000, 32, branching=4, seed=0))
    h = bigram_entropy(tokens)
    assert 0 < h < math.log(4) + 1e-9  # at most 4 successors: below ln 4, far below ln 32
    assert bigram_entropy(markov_tokens(5000, 32, branching=1, seed=1)) == pytest.approx(0.0, abs=1e-12)
    uniform = np.random.default_rng(0).integers(0, 8, 200_000)
    assert bigram_entropy(uniform) == pytest.approx(math.log(8), abs=1e-3)


def _markov_step_by_step(num_tokens, vocab_size, branching, seed):
    """The plain loop markov_tokens replaced: the same draws, one token at a time."""
    rng = np.random.default_rng(seed)
    successors = [rng.choice(vocab_size, branching, replace=False) for _ in range(vocab_size)]
    cumulative = rng.dirichlet(np.ones(branching), size=vocab_size).cumsum(axis=1)
    token, out = int(rng.integers(vocab_size)), []
    for begin in range(0, num_tokens, 1 << 20):
        for u in rng.random(min(1 << 20, num_tokens - begin)):
            out.append(token)
            token = int(successors[token][min(int(np.searchsorted(cumulative[token], u)), branching - 1)])
    return np.array(out, dtype=np.uint16)


@pytest.mark.parametrize("num_tokens, vocab_size, branching, seed", [
    (1, 16, 4, 0), (7, 16, 4, 0), (20_000, 32, 4, 0), (5000, 32, 1, 1), (4001, 2, 2, 9), (3000, 5, 5, 2),
    (30_000, 20_000, 2, 3),  # walks that seldom meet: the step-by-step fallback
])
def test_vectorised_markov_tokens_are_the_step_by_step_ones(num_tokens, vocab_size, branching, seed):
    assert np.array_equal(markov_tokens(num_tokens, vocab_size, branching=branching, seed=seed),
                          _markov_step_by_step(num_tokens, vocab_size, branching, seed))


def test_the_chapters_corpus_is_unchanged():
    """Chapters 09 and 10 store outputs of a model trained on markov_tokens(100_000, 64, seed=0)."""
    tokens = markov_tokens(100_000, 64, branching=4, seed=0)
    assert hashlib.sha256(tokens.tobytes()).hexdigest()[:16] == "9ddc7f0ab4b4470c"


def test_markov_tokens_bad_input():
    with pytest.raises(ValueError, match="branching"):
        markov_tokens(10, 4, branching=5)
    with pytest.raises(ValueError, match="num_tokens"):
        markov_tokens(0, 4)
    with pytest.raises(ValueError, match="vocab_size"):
        markov_tokens(10, 70_000)
    with pytest.raises(ValueError, match="at least two"):
        bigram_entropy([1])


def test_module_exports():
    assert set(data.__all__) <= set(dir(data))
