"""pytest at the repository root (tests, doctests and nbval alike).

``LECTORCH_REQUIRE_GPU=1`` turns a machine where torch sees no CUDA device into an immediate error,
before anything is collected: without it every chapter would quietly take its CPU branch and a
"GPU" run would prove nothing.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("LECTORCH_REQUIRE_GPU", "").strip() in ("", "0"):
        return  # the usual case: nothing to import before collection
    from lectorch.device import REQUIRE_GPU_ENV, cuda_problem, gpu_required

    if gpu_required():
        problem = cuda_problem()
        if problem is not None:
            raise pytest.UsageError(f"{REQUIRE_GPU_ENV}=1 but no CUDA GPU is usable: {problem}")
