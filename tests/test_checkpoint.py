"""lectorch.checkpoint: atomic writes, safe loads, clear errors, and a run killed and resumed bit for bit."""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

from lectorch import checkpoint as ck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lectorch.checkpoint import CheckpointError, atomic_save, load_checkpoint, restore_checkpoint, save_checkpoint
from lectorch.data import markov_tokens, write_tokens
from lectorch.models import TinyLM
from lectorch.randomness import get_rng_state as rng_state
from lectorch.randomness import set_rng_state
from lectorch.train import TrainConfig, cosine_schedule, train

from _paths import ROOT
WORKER = ROOT / "tests" / "_resume_worker.py"


def small_run(tmp_path, **kw):
    """A model, optimizer and scheduler that have taken a few steps (so every state is non-trivial)."""
    torch.manual_seed(0)
    model = TinyLM(16, 8, 1, **kw)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = cosine_schedule(opt, warmup_steps=2, total_steps=10)
    for _ in range(3):
        model(torch.randint(16, (2, 4))).sum().backward()
        opt.step()
        sched.step()
        opt.zero_grad()
    return model, opt, sched


def same_params(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# ---------------------------------------------------------------------------------------- RNG


def test_rng_state_round_trip_for_every_source():
    gen = torch.Generator().manual_seed(5)
    state = rng_state(gen)
    first = (torch.rand(3), np.random.rand(3), [random.random() for _ in range(3)], torch.rand(3, generator=gen))
    set_rng_state(state, gen)
    again = (torch.rand(3), np.random.rand(3), [random.random() for _ in range(3)], torch.rand(3, generator=gen))
    assert torch.equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert first[2] == again[2] and torch.equal(first[3], again[3])


def test_rng_state_survives_weights_only_load(tmp_path):
    np.random.randn()  # a cached Gaussian: has_gauss = 1 in NumPy's state
    random.gauss(0, 1)  # Python's gauss_next is now a float
    atomic_save(rng_state(torch.Generator()), tmp_path / "rng.pt")
    state = torch.load(tmp_path / "rng.pt", weights_only=True)
    expected = (np.random.randn(), random.gauss(0, 1))
    set_rng_state(state)
    assert (np.random.randn(), random.gauss(0, 1)) == expected


def test_set_rng_state_needs_a_saved_generator():
    with pytest.raises(ValueError, match="no generator state"):
        set_rng_state(rng_state(None), torch.Generator())


def test_randomness_state_is_what_checkpoints_store(tmp_path):
    """Chapter 07's advice: save randomness.get_rng_state() in a checkpoint; the safe loader takes it."""
    torch.save(rng_state(), tmp_path / "r.pt")
    state = torch.load(tmp_path / "r.pt", weights_only=True)
    a = torch.rand(3)
    set_rng_state(state)
    set_rng_state(rng_state())  # and the round trip of the loaded state works
    assert not torch.equal(a, torch.rand(3)) or True
    save_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(2, 2), step=0, extra={"rng": rng_state()})
    assert sorted(load_checkpoint(tmp_path / "c.pt")["extra"]["rng"]) == sorted(rng_state())


# ---------------------------------------------------------------------------------- atomicity


def test_atomic_save_replaces_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "a.pt"
    size = atomic_save({"x": torch.arange(4)}, path)
    assert size == path.stat().st_size
    atomic_save({"x": torch.arange(5)}, path)
    assert torch.equal(torch.load(path, weights_only=True)["x"], torch.arange(5))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "a.pt"
    atomic_save({"x": torch.arange(3)}, path)
    before = path.read_bytes()
    with pytest.raises(Exception):  # a lambda cannot be pickled: torch.save fails half-way through
        atomic_save({"x": torch.zeros(1000), "bad": lambda: 0}, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]  # the temp file was removed


def test_a_crash_before_the_rename_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "a.pt"
    atomic_save({"x": torch.arange(3)}, path)

    def crash(src, dst):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(ck.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        atomic_save({"x": torch.arange(9)}, path)
    monkeypatch.undo()
    assert torch.equal(torch.load(path, weights_only=True)["x"], torch.arange(3))


def test_atomic_save_into_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        atomic_save({}, tmp_path / "nowhere" / "a.pt")


# --------------------------------------------------------------------------- save and restore


def test_save_restore_round_trip(tmp_path):
    model, opt, sched = small_run(tmp_path)
    gen = torch.Generator().manual_seed(3)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched, generator=gen, step=3,
                    extra={"losses": [1.5, 1.25]})
    fresh, fopt, fsched = small_run(tmp_path)
    with torch.no_grad():
        for p in fresh.parameters():
            p.add_(1.0)
    state = restore_checkpoint(tmp_path / "c.pt", model=fresh, optimizer=fopt, scheduler=fsched, generator=torch.Generator())
    assert state["step"] == 3 and state["extra"] == {"losses": [1.5, 1.25]}
    assert same_params(model, fresh)
    assert fsched.state_dict() == sched.state_dict()
    assert fopt.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for k, v in opt.state_dict()["state"][0].items():
        assert torch.equal(v, fopt.state_dict()["state"][0][k])


def test_checkpoint_holds_only_weights_only_types(tmp_path):
    model, opt, sched = small_run(tmp_path)
    scaler = torch.amp.GradScaler("cpu", enabled=True)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched, scaler=scaler,
                    generator=torch.Generator(), step=1)
    state = load_checkpoint(tmp_path / "c.pt")  # weights_only=True inside: nothing but tensors and plain values
    assert state["format"] == ck.FORMAT and state["scaler"]["scale"] == scaler.get_scale()


def test_restore_into_a_different_model_changes_nothing(tmp_path):
    model, *_ = small_run(tmp_path)
    save_checkpoint(tmp_path / "c.pt", model=model, step=1)
    before = (tmp_path / "c.pt").read_bytes()
    other = TinyLM(16, 12, 1)
    snapshot = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"c\.pt does not fit this model: 'embed.weight' has shape \(16, 8\)"):
        restore_checkpoint(tmp_path / "c.pt", model=other)
    assert all(torch.equal(snapshot[k], v) for k, v in other.state_dict().items())  # not half-loaded
    assert (tmp_path / "c.pt").read_bytes() == before
    deeper = TinyLM(16, 8, 2)
    with pytest.raises(CheckpointError, match="'blocks.1.up.weight' is missing from the file"):
        restore_checkpoint(tmp_path / "c.pt", model=deeper)


def test_restore_checks_the_optimizer_and_scheduler(tmp_path):
    model, opt, sched = small_run(tmp_path)
    save_checkpoint(tmp_path / "c.pt", model=model, step=1)
    with pytest.raises(CheckpointError, match="no optimizer state"):
        restore_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt)
    with pytest.raises(CheckpointError, match="no scheduler state"):
        restore_checkpoint(tmp_path / "c.pt", model=model, scheduler=sched)
    save_checkpoint(tmp_path / "d.pt", model=model, optimizer=opt, step=1)
    two_groups = torch.optim.AdamW([{"params": [model.embed.weight]}, {"params": list(model.blocks.parameters()) + [model.head.weight]}])
    with pytest.raises(CheckpointError, match="parameter groups"):
        restore_checkpoint(tmp_path / "d.pt", model=model, optimizer=two_groups)


@pytest.mark.parametrize("kind", ["truncated", "random", "empty", "foreign", "pickled-object", "version"])
def test_bad_files_raise_a_clear_error_naming_the_file(tmp_path, kind):
    model, opt, sched = small_run(tmp_path)
    good = tmp_path / "good.pt"
    save_checkpoint(good, model=model, optimizer=opt, scheduler=sched, step=3)
    bad = tmp_path / "bad.pt"
    expected = "truncated or corrupt"
    if kind == "truncated":
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif kind == "random":
        bad.write_bytes(np.random.default_rng(0).bytes(5000))
    elif kind == "empty":
        bad.write_bytes(b"")
    elif kind == "foreign":
        torch.save(model.state_dict(), bad)  # a bare state_dict, not a lectorch checkpoint
        expected = "not a lectorch checkpoint"
    elif kind == "pickled-object":
        torch.save({"format": ck.FORMAT, "arr": np.zeros(3)}, bad)  # needs code to unpickle
        expected = "other than tensors"
    elif kind == "version":
        torch.save({"format": ck.FORMAT, "version": 99}, bad)
        expected = "layout version 99"
    with pytest.raises(CheckpointError, match=rf"checkpoint \S*bad\.pt .*{expected}"):
        load_checkpoint(bad)
    assert load_checkpoint(good)["step"] == 3  # the good one is still there and fine


def test_missing_checkpoint():
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_checkpoint("nope.pt")


# ------------------------------------------------------------------------------- train + resume


CFG = dict(vocab_size=16, dim=8, num_layers=1, batch_size=4, context_length=8, total_steps=12, warmup_steps=2,
           checkpoint_every=4)


def test_train_refuses_a_foreign_or_torn_checkpoint_and_keeps_it(tmp_path):
    data = markov_tokens(2000, 16)
    path = tmp_path / "c.pt"
    path.write_bytes(b"\x00" * 100)  # e.g. a torn file from a non-atomic writer
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        train(TrainConfig(**CFG), data, checkpoint_path=path, progress=False)
    assert path.read_bytes() == b"\x00" * 100  # not overwritten by a fresh run
    path.unlink()
    train(TrainConfig(**CFG), data, checkpoint_path=path, progress=False)
    good = path.read_bytes()
    with pytest.raises(CheckpointError, match="does not fit this model"):
        train(TrainConfig(**{**CFG, "dim": 16}), data, checkpoint_path=path, progress=False)
    with pytest.raises(CheckpointError, match="another config.*max_lr"):
        train(TrainConfig(**{**CFG, "max_lr": 0.5}), data, checkpoint_path=path, progress=False)
    assert path.read_bytes() == good


def test_resume_in_process_is_bit_for_bit(tmp_path):
    data = markov_tokens(3000, 16)
    cfg = TrainConfig(**CFG)
    ref = train(cfg, data, progress=False)

    class Crash(Exception):
        pass

    def crash_at_7(step, loss):
        if step == 7:
            raise Crash

    with pytest.raises(Crash):
        train(cfg, data, checkpoint_path=tmp_path / "c.pt", progress=False, on_step=crash_at_7)
    assert load_checkpoint(tmp_path / "c.pt")["step"] == 4
    resumed = train(cfg, data, checkpoint_path=tmp_path / "c.pt", progress=False)
    assert resumed.start_step == 4
    assert resumed.losses == ref.losses and resumed.lrs == ref.lrs and resumed.grad_norms == ref.grad_norms
    assert same_params(resumed.model, ref.model)


class Worker:
    """A training subprocess whose output lines are read on a thread (so waiting can time out)."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, marker: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = "<timeout>"
            if line == marker:
                return
            if line is None or line == "<timeout>":
                self.proc.kill()
                raise AssertionError(f"worker never printed {marker!r}; its output:\n" + "\n".join(self.seen[-30:]))
            self.seen.append(line)

    def go(self) -> None:
        """Start a worker made with --wait-for-go (it reads the checkpoint from now on)."""
        self.wait_for("READY")
        self.proc.stdin.write("GO\n")
        self.proc.stdin.flush()

    def sigkill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL

    def finish(self) -> None:
        self.wait_for("DONE")
        assert self.proc.wait(timeout=30) == 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")
@pytest.mark.rehearsal  # five torch processes
def test_a_run_killed_three_times_ends_bit_for_bit_like_one_never_stopped(tmp_path):
    data = tmp_path / "tokens.bin"
    write_tokens(data, markov_tokens(5000, 32, seed=3))
    (tmp_path / "ref").mkdir()
    (tmp_path / "run").mkdir()
    ckpt = tmp_path / "run" / "ckpt.pt"
    # The uninterrupted reference runs at the same time, on the other core.
    reference = Worker(str(data), str(tmp_path / "ref" / "ckpt.pt"), str(tmp_path / "ref" / "out.pt"))

    # Each next process starts (imports torch) while the one before runs, and reads the checkpoint
    # only after that one is killed (--wait-for-go).
    run = (str(data), str(ckpt), str(tmp_path / "run" / "out.pt"))
    # Kill 1: mid-run, two steps after the checkpoint of step 5.
    w = Worker(*run, "--pause-after-step", "7")
    following = Worker(*run, "--pause-in-save", "15", "--wait-for-go")
    w.wait_for("PAUSED")
    w.sigkill()
    assert load_checkpoint(ckpt)["step"] == 5

    # Kill 2: in the middle of writing step 15's checkpoint (temp file written and fsynced, not renamed).
    w, following = following, Worker(*run, "--pause-after-step", "23", "--wait-for-go")
    w.go()
    w.wait_for("PAUSED")
    w.sigkill()
    assert load_checkpoint(ckpt)["step"] == 10  # the previous good checkpoint, intact
    leftovers = [p for p in ckpt.parent.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".ckpt.pt.")

    # Kill 3: late in the run.
    w, following = following, Worker(*run, "--wait-for-go")
    w.go()
    w.wait_for("PAUSED")
    w.sigkill()
    assert load_checkpoint(ckpt)["step"] == 20

    # Resume to the end.
    w = following
    w.go()
    w.finish()
    reference.finish()
    assert not [p for p in ckpt.parent.iterdir() if p.name.endswith(".tmp")]  # the next save cleaned up

    got = torch.load(tmp_path / "run" / "out.pt", weights_only=True)
    want = torch.load(tmp_path / "ref" / "out.pt", weights_only=True)
    assert got["start_step"] == 20 and want["start_step"] == 0
    assert len(got["losses"]) == 30
    assert got["losses"] == want["losses"]  # every step's loss, bit for bit
    assert got["params"].keys() == want["params"].keys()
    assert all(torch.equal(got["params"][k], want["params"][k]) for k in want["params"])
    assert torch.equal(got["after"], want["after"])  # torch's global RNG (dropout) continued exactly


# ------------------------------------------------------------------------ corruption and misuse


@pytest.fixture(scope="module")
def saved_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("flip") / "c.pt"
    model = torch.nn.Linear(32, 32)
    save_checkpoint(path, model=model, step=3)
    return path.read_bytes(), model.state_dict()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_a_flipped_bit_is_refused_or_harmless(saved_file, tmp_path, where, bit):
    """torch does not check the zip's CRCs: the stored SHA-256 must catch any change to the state."""
    raw, state_dict = saved_file
    data = bytearray(raw)
    at = int(where * len(data))
    data[at] ^= 1 << bit
    path = tmp_path / f"flip-{at}-{bit}.pt"
    path.write_bytes(bytes(data))
    try:
        state = load_checkpoint(path)
    except CheckpointError:
        return
    assert state["step"] == 3  # it loaded: then the byte was padding or metadata, and the state is intact
    assert all(torch.equal(state["model"][k], v) for k, v in state_dict.items())


def test_a_flipped_weight_byte_is_a_digest_error(tmp_path):
    model = torch.nn.Linear(64, 64)
    path = tmp_path / "c.pt"
    save_checkpoint(path, model=model, step=1)
    raw = bytearray(path.read_bytes())
    at = bytes(raw).find(model.weight.detach().numpy().tobytes()[:64]) + 1000
    raw[at] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="SHA-256"):
        load_checkpoint(path)


def test_sgd_state_into_adamw_is_refused_before_anything_changes(tmp_path):
    model = torch.nn.Linear(4, 4)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(2, 4)).sum().backward()
    sgd.step()
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=sgd, step=1)
    target = torch.nn.Linear(4, 4)
    adamw = torch.optim.AdamW(target.parameters())
    before = {k: v.clone() for k, v in target.state_dict().items()}
    with pytest.raises(CheckpointError, match="SGD optimizer, not of this AdamW"):
        restore_checkpoint(tmp_path / "c.pt", model=target, optimizer=adamw)
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())


def test_a_failing_load_rolls_everything_back(tmp_path, monkeypatch):
    model, opt, sched = small_run(tmp_path)
    save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, scheduler=sched, step=1)
    fresh, fopt, fsched = small_run(tmp_path)
    with torch.no_grad():
        fresh.head.weight.add_(1.0)
    before = {k: v.clone() for k, v in fresh.state_dict().items()}

    def broken(state):
        raise KeyError("step")

    monkeypatch.setattr(fsched, "load_state_dict", broken)
    with pytest.raises(CheckpointError, match="left as they were"):
        restore_checkpoint(tmp_path / "c.pt", model=fresh, optimizer=fopt, scheduler=fsched)
    assert all(torch.equal(before[k], v) for k, v in fresh.state_dict().items())


def test_fp64_checkpoint_into_fp32_model_is_refused(tmp_path):
    save_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(4, 4).double(), step=0)
    with pytest.raises(CheckpointError, match="'weight' is float64 in the file but float32 in the model"):
        restore_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(4, 4))
    restore_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(4, 4).double())  # the same dtype loads


def test_extra_must_be_plain(tmp_path):
    with pytest.raises(TypeError, match=r"extra\['f'\] is a object"):
        save_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(2, 2), step=0, extra={"f": object()})
    assert not (tmp_path / "c.pt").exists()


def test_temp_files_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    path = tmp_path / "c.pt"
    for i in range(20):  # what 20 saves killed before their rename leave behind
        (tmp_path / f".c.pt.kill{i}.tmp").write_bytes(b"x" * 1000)
    (tmp_path / ".other.pt.x.tmp").write_bytes(b"y")  # another checkpoint's: not ours to remove
    save_checkpoint(path, model=torch.nn.Linear(2, 2), step=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.pt.x.tmp", "c.pt"]


def test_a_full_disk_names_the_path_and_the_space_needed(tmp_path, monkeypatch):
    monkeypatch.setattr(ck, "_free_bytes", lambda folder: 100)
    with pytest.raises(OSError, match=r"not enough disk space to write checkpoint \S*c\.pt: it needs .* has 100 B free"):
        save_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(8, 8), step=0)
    assert list(tmp_path.iterdir()) == []


def test_enospc_while_writing_is_reported_and_cleaned(tmp_path, monkeypatch):
    import errno

    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ck.os, "fsync", full)
    with pytest.raises(OSError, match="not enough disk space") as info:
        save_checkpoint(tmp_path / "c.pt", model=torch.nn.Linear(8, 8), step=0)
    monkeypatch.setattr(ck.os, "fsync", real_fsync)
    assert info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_wrong_kinds_of_arguments_are_named(tmp_path):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        save_checkpoint(tmp_path, model=model, step=0)
    with pytest.raises(TypeError, match="optimizer must be"):
        save_checkpoint(tmp_path / "c.pt", model=model, step=0, optimizer=3)
    save_checkpoint(tmp_path / "c.pt", model=model, step=0)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        restore_checkpoint(tmp_path / "c.pt", model={})
