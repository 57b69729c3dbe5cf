"""The same training loop under DistributedDataParallel: two CPU processes (gloo) launched by torchrun
end where one process on the same global batch ends (up to float rounding of the gradient all-reduce)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

from lectorch.checkpoint import load_checkpoint
from lectorch.data import load_tokens, markov_tokens, write_tokens
from lectorch.train import TrainConfig, train
from _paths import ROOT

pytestmark = pytest.mark.rehearsal  # a user's whole path, run for real: `make rehearse`


CONFIG = dict(vocab_size=16, dim=8, num_layers=1, batch_size=8, context_length=8, total_steps=6, warmup_steps=1,
              checkpoint_every=3)


def cli_args(config: dict) -> list[str]:
    return [x for k, v in config.items() for x in (f"--{k.replace('_', '-')}", str(v))]


@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()), reason="torch.distributed with gloo needed")
@pytest.mark.slow  # two torch processes and a reference: `make test`, not `make unit`
def test_two_processes_match_one_on_the_same_global_batch(tmp_path):
    data = tmp_path / "tokens.bin"
    write_tokens(data, markov_tokens(3000, 16, seed=0))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}  # CPU processes, gloo backend
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "lectorch.train", "--data", str(data), "--checkpoint", str(tmp_path / "ckpt.pt"),
           "--save-params", str(tmp_path / "ddp.pt"), *cli_args(CONFIG)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("final loss") == 1  # only rank 0 reports

    ddp = torch.load(tmp_path / "ddp.pt", weights_only=True)
    single = train(TrainConfig(**CONFIG), load_tokens(data), progress=False)
    assert torch.allclose(ddp["losses"], torch.tensor(single.losses), rtol=1e-5, atol=1e-6)
    for name, value in single.model.state_dict().items():
        assert torch.allclose(ddp[name], value, rtol=1e-5, atol=1e-6), name
    assert not all(torch.equal(ddp[n], v) for n, v in build_fresh().items())  # it did train

    state = load_checkpoint(tmp_path / "ckpt.pt")  # written by rank 0 only, of the unwrapped model
    assert state["step"] == CONFIG["total_steps"]
    assert set(state["model"]) == set(single.model.state_dict())


def build_fresh() -> dict[str, torch.Tensor]:
    from lectorch.train import build_model

    return build_model(TrainConfig(**CONFIG)).state_dict()
