"""Helper of tests/test_checkpoint.py (not a test): one training process that the test kills.

    python tests/_resume_worker.py DATA CHECKPOINT OUT [--pause-after-step N] [--pause-in-save N] [--wait-for-go]

Trains ``CONFIG`` on the token file DATA, checkpointing to CHECKPOINT (and resuming from it if it
exists). ``--pause-after-step N`` prints ``PAUSED`` after step N and waits to be killed;
``--pause-in-save N`` does so in the middle of writing the checkpoint of step N: after the temporary
file is complete and fsynced, before ``os.replace`` renames it. ``--wait-for-go``: once imported,
print ``READY`` and start (read CHECKPOINT) only when a line ``GO`` arrives on stdin, so the test
can start the next process while the current one runs. A run that finishes writes its parameters
and loss history to OUT.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

from lectorch.checkpoint import load_checkpoint
from lectorch.data import load_tokens
from lectorch.randomness import seed_everything
from lectorch.train import TrainConfig, train

# dropout > 0: training draws from torch's global RNG, so a resume is exact only if it is restored.
CONFIG = TrainConfig(vocab_size=32, dim=16, num_layers=2, batch_size=4, context_length=16, total_steps=30,
                     warmup_steps=3, checkpoint_every=5, dropout=0.1, max_lr=1e-2)


def pause() -> None:
    print("PAUSED", flush=True)
    while True:  # wait for SIGKILL
        time.sleep(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("checkpoint")
    parser.add_argument("out")
    parser.add_argument("--pause-after-step", type=int, default=None)
    parser.add_argument("--pause-in-save", type=int, default=None)
    parser.add_argument("--wait-for-go", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same arithmetic in every process, and frugal on a shared CI machine

    if args.pause_in_save is not None:
        real_replace = os.replace

        def slow_replace(src, dst):
            if load_checkpoint(src)["step"] == args.pause_in_save:
                pause()
            real_replace(src, dst)

        os.replace = slow_replace  # lectorch.checkpoint calls os.replace through the os module

    def on_step(step: int, loss: float) -> None:
        print(f"step {step} loss {loss!r}", flush=True)
        if step == args.pause_after_step:
            pause()

    if args.wait_for_go:  # imported and ready; the checkpoint is read only after the test says GO
        print("READY", flush=True)
        if sys.stdin.readline().strip() != "GO":
            return 1
    seed_everything(1234)  # a fresh run starts here; a resumed one restores the saved RNG states
    result = train(CONFIG, load_tokens(args.data), checkpoint_path=args.checkpoint, progress=False, on_step=on_step)
    torch.save({"params": result.model.state_dict(), "losses": result.losses, "start_step": result.start_step,
                "after": torch.rand(4)}, args.out)
    print("DONE", flush=True)


if __name__ == "__main__":
    sys.exit(main())
