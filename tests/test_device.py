"""Tests of chapter 02's device code: choosing/checking devices, GPU memory readings, ensure_fits, exercises."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lectorch import device as D
from lectorch.memory import NotEnoughMemory, ensure_fits, tensor_bytes

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (runs on the GPU box)")
needs_no_cuda = pytest.mark.skipif(CUDA, reason="checks the CPU-only behaviour")


# --- choosing and checking devices --------------------------------------------------------------

@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "", "tpu:0"])
def test_check_device_rejects_bad_strings(bad):
    with pytest.raises(ValueError, match="device="):
        D.check_device(bad)


def test_check_device_names_the_argument():
    with pytest.raises(ValueError, match="prefer="):
        D.get_device("gpu")
    with pytest.raises(TypeError, match="device must be a str or torch.device"):
        D.check_device(0)


def test_check_device_rejects_unsupported_types():
    with pytest.raises(ValueError, match="supports 'cpu', 'cuda' and 'mps'"):
        D.check_device("meta")


@needs_no_cuda
def test_missing_gpu_is_a_clear_value_error():
    with pytest.raises(ValueError, match="no CUDA GPU"):
        D.check_device("cuda")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        D.get_device("cuda:0")
    assert D.list_gpus() == []


@needs_cuda
def test_gpu_index_out_of_range_is_a_clear_value_error():
    with pytest.raises(ValueError, match="GPU\\(s\\) are visible"):
        D.check_device(f"cuda:{torch.cuda.device_count()}")


def test_get_device_honours_the_environment(monkeypatch):
    monkeypatch.setenv(D.DEVICE_ENV, "cpu")
    assert D.get_device() == torch.device("cpu")
    monkeypatch.setenv(D.DEVICE_ENV, "gpu")
    with pytest.raises(ValueError, match="not a device string"):
        D.get_device()


def test_assert_on_device():
    x = torch.zeros(3)
    D.assert_on_device(x, "cpu")
    D.assert_on_device(x, torch.device("cpu"))
    with pytest.raises(AssertionError, match="tensor is on cpu, expected cuda"):
        D.assert_on_device(x, "cuda")
    with pytest.raises(TypeError, match="tensor must be a torch.Tensor"):
        D.assert_on_device([1, 2], "cpu")


def test_to_same_device_is_a_no_op_and_creation_on_device():
    x = torch.zeros(32, 32)
    assert x.to("cpu") is x
    z = torch.zeros(32, 32, device="cpu")
    D.assert_on_device(z, "cpu")


def test_describe_device_cpu():
    info = D.describe_device("cpu")
    assert info.device == "cpu" and info.total_memory_bytes > 0
    assert str(info).startswith("cpu: ")


@needs_cuda
def test_list_gpus_and_describe_on_cuda():
    gpus = D.list_gpus()
    assert len(gpus) == torch.cuda.device_count() >= 1
    assert gpus[0].compute_capability is not None and gpus[0].multiprocessors > 0


# --- GPU memory readings -------------------------------------------------------------------------

@given(st.integers(min_value=0, max_value=2**40))
def test_allocator_bytes_rounds_up_to_512(n):
    got = D.allocator_bytes(n)
    assert got % 512 == 0
    assert n <= got < n + 512


def test_allocator_bytes_examples_and_errors():
    assert D.allocator_bytes(2 * 32 * 32 * 4) == 8192
    assert 2 * D.allocator_bytes(32 * 32 * 4) == 8192
    assert D.allocator_bytes(1) == 512
    assert D.allocator_bytes(0) == 0
    assert D.allocator_bytes(513) == 1024
    with pytest.raises(ValueError, match="nbytes"):
        D.allocator_bytes(-1)
    with pytest.raises(TypeError, match="nbytes"):
        D.allocator_bytes(1.5)
    with pytest.raises(ValueError, match="block"):
        D.allocator_bytes(10, block=0)


def test_the_192_byte_claim_is_wrong():
    assert 2 * tensor_bytes((32, 32), "float32") == 8192 != 192


@needs_no_cuda
def test_track_allocated_refuses_without_cuda():
    with pytest.raises(ValueError, match="need a CUDA GPU"):
        D.track_allocated("cpu")


@needs_cuda
def test_two_32x32_fp32_matrices_add_exactly_8192_bytes():
    dev = D.get_device("cuda")
    with D.track_allocated(dev) as m:
        a = torch.zeros(32, 32, device=dev)
        b = torch.zeros(32, 32, device=dev)
    assert m.delta_bytes == 8192 and m.peak_bytes == 8192
    del a, b


@needs_cuda
def test_peak_counts_freed_temporaries():
    dev = D.get_device("cuda")
    torch.cuda.empty_cache()  # no cached large block slightly bigger than 4 MiB may serve the request
    with D.track_allocated(dev) as m:
        t = torch.empty(1024, 1024, device=dev)
        del t
        u = torch.empty(256, device=dev)
    assert m.delta_bytes == 1024
    assert m.peak_bytes == 4 * 2**20
    del u


# --- ensure_fits ---------------------------------------------------------------------------------

def test_ensure_fits_accepts_small_and_refuses_huge():
    assert ensure_fits(4096, "cpu") == 4096
    with pytest.raises(NotEnoughMemory, match="needs 1.00 PB"):
        ensure_fits(10**15, "cpu")
    # a refusal is both a ValueError (widgets show it) and a MemoryError
    with pytest.raises(ValueError):
        ensure_fits(10**15, "cpu")
    with pytest.raises(MemoryError):
        ensure_fits(10**15, "cpu")


def test_ensure_fits_message_names_size_and_free_memory():
    with pytest.raises(NotEnoughMemory) as err:
        ensure_fits(3000, "cpu", free_bytes=2000, what="a slider's tensor")
    msg = str(err.value)
    assert "a slider's tensor needs 3.00 kB" in msg and "2.00 kB (1.95 KiB) free" in msg and "90%" in msg


@given(st.integers(0, 2**45), st.integers(0, 2**45), st.sampled_from([0.5, 0.9, 1.0]))
@settings(max_examples=200)
def test_ensure_fits_is_exactly_the_fraction_rule(nbytes, free, fraction):
    fits = nbytes <= int(fraction * free)
    if fits:
        assert ensure_fits(nbytes, "cpu", fraction=fraction, free_bytes=free) == nbytes
    else:
        with pytest.raises(NotEnoughMemory):
            ensure_fits(nbytes, "cpu", fraction=fraction, free_bytes=free)


def test_ensure_fits_bad_arguments():
    with pytest.raises(ValueError, match="nbytes"):
        ensure_fits(-1)
    with pytest.raises(ValueError, match="fraction"):
        ensure_fits(1, fraction=90)
    with pytest.raises(ValueError, match="device="):
        ensure_fits(1, "gpu")
    with pytest.raises(ValueError, match="free_bytes"):
        ensure_fits(1, free_bytes=-5)


# --- robustness of the allocator readings (what a real GPU box may differ in) -----------------------

class _FakeCuda:
    """torch.cuda's counters, simulated: allocations bump ``allocated``; a first matmul adds a workspace."""

    WORKSPACE = 32 * 2**20

    def __init__(self):
        self.allocated = 1000
        self.peak = 1000
        self.cublas_ready = False

    def matmul(self):
        if not self.cublas_ready:  # the first matmul allocates cuBLAS's workspace, kept for good
            self.cublas_ready = True
            self.alloc(self.WORKSPACE)

    def alloc(self, n):
        self.allocated += n
        self.peak = max(self.peak, self.allocated)


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = _FakeCuda()
    cuda = torch.device("cuda", 0)
    monkeypatch.setattr(D, "check_device", lambda device, **kw: cuda)
    monkeypatch.setattr(D, "synchronize", lambda device: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: fake.allocated)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: fake.peak)

    def reset(device=None):
        fake.peak = fake.allocated

    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset)
    monkeypatch.setattr(D, "warm_up_cublas", lambda device: fake.matmul())
    for name in D.ALLOC_CONF_ENVS:
        monkeypatch.delenv(name, raising=False)
    return fake


def test_track_allocated_ignores_the_first_call_cublas_workspace(fake_cuda):
    with D.track_allocated("cuda") as m:
        fake_cuda.matmul()  # the code under study does the process's first matmul
        fake_cuda.alloc(8192)
    assert m.delta_bytes == 8192 and m.peak_bytes == 8192 and m.exact


def test_without_warm_up_the_workspace_would_be_counted(fake_cuda):
    with D.track_allocated("cuda", warm_up=False) as m:
        fake_cuda.matmul()
        fake_cuda.alloc(8192)
    assert m.delta_bytes == 8192 + _FakeCuda.WORKSPACE


@pytest.mark.parametrize("env", D.ALLOC_CONF_ENVS)
def test_a_configured_allocator_is_named_or_refused(fake_cuda, monkeypatch, env):
    monkeypatch.setenv(env, "backend:cudaMallocAsync")
    assert D.allocator_settings() == f"{env}=backend:cudaMallocAsync" and not D.exact_allocator_readings()
    with D.track_allocated("cuda") as m:
        fake_cuda.alloc(12)
    assert not m.exact and "not the default allocator" in str(m) and env in str(m)
    with pytest.raises(ValueError, match=f"{env}=backend:cudaMallocAsync is set.*unset it"):
        D.track_allocated("cuda", require_default_allocator=True)


def test_default_allocator_is_exact(monkeypatch):
    for name in D.ALLOC_CONF_ENVS:
        monkeypatch.delenv(name, raising=False)
    assert D.allocator_settings() is None and D.exact_allocator_readings()
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "")  # set but empty: still the default
    assert D.exact_allocator_readings()


def test_warm_up_cublas_runs_on_cpu():
    D.warm_up_cublas("cpu")
