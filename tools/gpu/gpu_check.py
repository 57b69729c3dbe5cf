"""The whole GPU validation of the course in one call: `make gpu-check` (tools/gpu/README.md).

    python3 tools/gpu/gpu_check.py --out OUT [--wheels wheels/gpu-cp312]   # on the GPU box
    python3 tools/gpu/gpu_check.py --cpu --out OUT                          # every step for real, on a CPU
    python tools/gpu/gpu_check.py --dry-run --out OUT                       # the same steps, only collected

On the GPU box (its own ``python3``, itself a venv with a CUDA torch and ~190 packages, no package
registry) it first reads what the run needs besides packages (preflight: GPU and driver, a C
compiler and Python.h for Triton, CUDA_LAUNCH_BLOCKING unset, caches in a temporary folder), then
installs the carried wheels (what the box lacks: tools/gpu/carried.txt) with that same
interpreter's pip into a folder placed first on PYTHONPATH, so that the box's own torch, numpy and
matplotlib stay visible. It asserts that torch sees the GPU, runs the matmul benchmark with
--min-mfu, measures every figure the book shows from a reference GPU, then nbval over every chapter
(riskiest first, each bounded in time) and the CUDA-only tests. Every step, the install included,
is bounded in time and its failure recorded. It writes to OUT (at most 8 files), rewritten after
every step, so that a run stopped at its time limit still returns the steps done so far:

    summary.txt        every step: PASS / FAIL / SKIP, seconds, a note
    reference.json     the run in the schema of benchmarks/reference/ (commit it from a real GPU)
    logs.txt           the output of every step (the tail of each where long)
    notebooks.tar.gz   the chapters as nbval executed them

``--cpu`` (what `make gpu-rehearsal` runs on a replica of the box) runs every step that needs no
CUDA for real on the CPU: the install, nbval over every chapter, the CUDA-only test files (their
CUDA tests skipped with reasons), the benchmark and the measurements at a tiny size. ``--dry-run``
(inside `make test`) only resolves the wheels and collects the tests and chapters. Both mark
reference.json ``"dry_run": true`` (lectorch.reference refuses such a file). Only the standard
library is imported here; the steps run in subprocesses of the box's Python.

pytest runs with the box's auto-loaded plugins off (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1: pytest-cov,
-xdist, -benchmark, -mock, anyio's…, none of which the course's tests are run with elsewhere) and
loads by name the three it needs: nbval, pytest-timeout and hypothesis.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import io
import json
import os
import pathlib
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Riskiest first (most CUDA-only asserts, allocator readings, compile); unlisted chapters follow.
RISK_ORDER = ["09", "08", "02", "05", "03", "04", "10", "06", "07", "01", "00"]
#: Test files holding CUDA-only tests (skipped without a GPU) or the CUDA paths' CPU-side tests.
CUDA_TEST_FILES = ["tests/test_device.py", "tests/test_gpu_readiness.py", "tests/test_roofline.py",
                   "tests/test_transfer.py", "tests/test_step_memory.py", "tests/test_train.py",
                   "tests/test_data.py", "tests/test_bench.py", "tests/test_hardware.py"]
LOG_TAIL = 60_000  # characters of each step's output kept in logs.txt
#: One device command runs at most 10 minutes and is given a 560 s limit; the check keeps a minute of
#: margin inside that for its last files and the transfer back.
DEFAULT_BUDGET_S = 500.0
INSTALL_TIMEOUT_S = 180.0
#: The plugins the check's pytest runs load by name (the box's others stay off: see the docstring).
PYTEST_PLUGINS = ["-p", "nbval.plugin", "-p", "pytest_timeout", "-p", "_hypothesis_pytestplugin"]
#: pip's configuration and environment (find-links, extra indexes, constraint files) have no place
#: in an offline install from the carried folder: all of it off, and no index.
PIP_OFFLINE_ENV = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
STEPS = ["preflight", "install wheels", "torch sees the GPU", "bench_matmul --min-mfu 0.6",
         "reference measurements", "nbval", "CUDA-only tests"]


def chapters() -> list[str]:
    """chapters/[0-9][0-9]_*.ipynb, riskiest first."""
    found = sorted(glob.glob(str(ROOT / "chapters" / "[0-9][0-9]_*.ipynb")))
    rel = [str(pathlib.Path(p).relative_to(ROOT)) for p in found]

    def rank(path: str) -> tuple[int, str]:
        num = pathlib.Path(path).name[:2]
        return (RISK_ORDER.index(num) if num in RISK_ORDER else len(RISK_ORDER), path)

    return sorted(rel, key=rank)


class Interrupted(Exception):
    """SIGTERM (a time limit): stop the running step, record it and write what is known."""


def _on_sigterm(signum, frame):
    raise Interrupted(f"signal {signum}")


def offline_pip_env(env: dict) -> dict:
    """``env`` without any PIP_* variable, with pip's configuration files off and no index."""
    return {k: v for k, v in env.items() if not k.startswith("PIP_")} | PIP_OFFLINE_ENV


class Check:
    """Runs the steps, keeps their results and logs, and knows the time left."""

    def __init__(self, out: pathlib.Path, *, mode: str, budget_s: float, scratch: pathlib.Path) -> None:
        if mode not in ("gpu", "cpu", "dry"):
            raise ValueError(f"mode must be 'gpu', 'cpu' or 'dry', got {mode!r}")
        self.out, self.mode, self.dry_run = out, mode, mode == "dry"
        self.start = time.monotonic()
        self.deadline = self.start + budget_s
        self.results: list[tuple[str, str, float, str]] = []
        self.logs: list[str] = []
        self.info: dict = {}
        self.measurements: dict = {}
        self.nbval: dict[str, str] = {n: "not run" for n in chapters()}
        self.nb_dir = scratch / "notebooks"
        self.nb_dir.mkdir(parents=True, exist_ok=True)
        self.python = sys.executable
        self.env = dict(os.environ)
        # lectorch from the tree, and tools/gpu/ for the nbval capture plugin
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "tools" / "gpu"),
                                                             self.env.get("PYTHONPATH", "")) if p)
        # Exact allocator readings need the default allocator (see lectorch.device.allocator_settings);
        # CUDA_LAUNCH_BLOCKING=1 serialises every kernel launch and so falsifies every timing.
        self.unset = {k: self.env.pop(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                                                   "CUDA_LAUNCH_BLOCKING") if k in self.env}
        self.env["MPLBACKEND"] = "Agg"
        self.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        # Triton's, Inductor's and matplotlib's caches in the scratch folder: nothing of an earlier
        # run, and no read-only home, can change this one.
        for var, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                         ("MPLCONFIGDIR", "matplotlib")):
            (scratch / sub).mkdir(exist_ok=True)
            self.env[var] = str(scratch / sub)
        if mode == "gpu":
            self.env["LECTORCH_REQUIRE_GPU"] = "1"
        else:
            self.env.pop("LECTORCH_REQUIRE_GPU", None)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def record(self, name: str, status: str, seconds: float, note: str = "", log: str = "") -> str:
        """Keep one step's result and rewrite the files in OUT at once: a kill loses no step done."""
        self.results.append((name, status, seconds, note))
        line = f"{status:4s} {seconds:6.1f}s  {name}" + (f"  ({note})" if note else "")
        print(line, flush=True)
        if log:
            tail = log if len(log) <= LOG_TAIL else "[… cut …]\n" + log[-LOG_TAIL:]
            self.logs.append(f"===== {name}: {status} in {seconds:.1f}s\n{tail}\n")
        write_outputs(self, final=False)
        return status

    def run(self, name: str, cmd: list[str], *, timeout: float, ok_codes=(0,), note: str = "",
            judge=None, env: dict | None = None) -> tuple[str, str]:
        """Run ``cmd`` bounded by ``timeout`` and by the budget; PASS on ok_codes, else FAIL.
        ``judge(status, log) -> (status, note)`` may overrule the verdict before it is recorded."""
        timeout = min(timeout, self.left())
        if timeout < 5:
            self.record(name, "SKIP", 0.0, "out of time budget")
            return "SKIP", ""
        t0 = time.monotonic()
        try:
            log, code = bounded(cmd, self.env if env is None else env, timeout)
        except subprocess.TimeoutExpired as err:
            log, code = _text(err.output) + f"\n[timed out after {timeout:.0f}s]", None
        except Interrupted as err:
            self.record(name, "FAIL", time.monotonic() - t0, f"interrupted ({err}) during this step")
            raise
        except OSError as err:  # the interpreter or the program is missing
            log, code = f"{type(err).__name__}: {err}", -1
        seconds = time.monotonic() - t0
        status = "PASS" if code in ok_codes else "FAIL"
        if code is None:
            note = (note + "; " if note else "") + f"timed out after {timeout:.0f}s"
        elif status == "FAIL":
            note = (note + "; " if note else "") + f"exit {code}"
        if judge is not None:
            status, note = judge(status, log)
        return self.record(name, status, seconds, note, f"$ {' '.join(cmd)}\n{log}"), log


def _text(out) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def bounded(cmd: list[str], env: dict, timeout: float) -> tuple[str, int]:
    """Run ``cmd`` in a process group of its own; on a timeout or an interruption kill the whole
    group (a pytest run would leave its kernels behind). Returns (stdout and stderr, exit code)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out, proc.returncode
    except BaseException as err:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
        if isinstance(err, subprocess.TimeoutExpired):
            raise subprocess.TimeoutExpired(cmd, timeout, output=out) from None
        raise


# ------------------------------------------------------------------------------------------------- steps


def step_preflight(c: Check) -> None:
    """What the run needs besides Python packages, read first: one line with every finding."""
    found, problems = [], []
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as err:
            out = ""
            problems.append(f"nvidia-smi failed: {err}")
        (found if out else problems).append(f"GPU, driver: {out.splitlines()[0]}" if out else "nvidia-smi lists no GPU")
    else:
        (problems if c.mode == "gpu" else found).append("no nvidia-smi")
    # torch.compile on CUDA: Triton builds its launcher with a C compiler against Python.h
    cc = next((shutil.which(n) for n in ("cc", "gcc", "clang") if shutil.which(n)), None)
    (found if cc else problems).append(f"C compiler {cc}" if cc else
                                       "no C compiler (cc, gcc, clang): torch.compile on CUDA fails")
    header = pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h"
    (found if header.exists() else problems).append(
        "Python.h" if header.exists() else f"no {header}: Triton cannot build its launcher")
    found.append(f"unset {', '.join(sorted(c.unset))}" if c.unset else "CUDA_LAUNCH_BLOCKING unset")
    found.append("Triton, Inductor and matplotlib caches in a temporary folder")
    status = "FAIL" if problems and c.mode == "gpu" else "PASS"
    c.record("preflight", status, 0.0, "; ".join(problems + found))


def step_install(c: Check, wheels: pathlib.Path, site: pathlib.Path) -> bool:
    """The carried wheels, by the box's own python3's pip, into ``site``, placed first on PYTHONPATH.

    Not a venv: a venv made from the box's python3 (itself a venv) with --system-site-packages sees
    the *base* interpreter's packages, not the box venv's, and so has no torch. ``pip --target``
    keeps the interpreter and with it every package of the box; the carried set holds only what the
    box lacks, so nothing of the box is shadowed."""
    req = wheels / "requirements.txt"
    env = offline_pip_env(c.env)
    if c.dry_run:
        if not req.exists():
            c.record("install wheels", "SKIP", 0.0, f"dry run: no {wheels.name}/ here (make gpu-wheels); "
                     "using the current Python")
            return True
        # Resolve the carried set for the GPU box's interpreter without installing anything.
        plats = [a for v in range(28, 4, -1) for a in ("--platform", f"manylinux_2_{v}_x86_64")]
        with tempfile.TemporaryDirectory() as tmp:
            status, _ = c.run("install wheels", [
                c.python, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(wheels), "--no-deps",
                "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", *plats,
                "--target", tmp, "-r", str(req)], timeout=120, env=env, note="dry run: resolved for cp312, not installed")
        return status == "PASS"
    if not req.exists():
        c.record("install wheels", "FAIL", 0.0, f"no {wheels}/requirements.txt: run `make gpu-wheels` and carry it")
        return False
    shutil.rmtree(site, ignore_errors=True)
    n = len(list(wheels.glob("*.whl")))
    cmd = [c.python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
           "--find-links", str(wheels), "--target", str(site), "-r", str(req)]
    status, _ = c.run("install wheels", cmd, timeout=INSTALL_TIMEOUT_S, env=env,
                      note=f"{n} wheels into {site.name}/, first on PYTHONPATH before the box's own packages")
    if status == "PASS":
        c.env["PYTHONPATH"] = str(site) + os.pathsep + c.env["PYTHONPATH"]
    return status == "PASS"


PROBE = """
import json, platform, torch
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
        "available": torch.cuda.is_available()}
if info["available"]:
    info["device"] = torch.cuda.get_device_name(0)
    info["capability"] = list(torch.cuda.get_device_capability(0))
    x = torch.ones(1024, 1024, device="cuda"); info["sum"] = float((x @ x).sum())
print(json.dumps(info))
"""


def _probe_info(log: str) -> dict:
    for line in reversed(log.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return {}
    return {}


def step_gpu(c: Check) -> dict:
    def judge(status: str, log: str) -> tuple[str, str]:
        info = _probe_info(log)
        if status != "PASS":
            return status, "torch failed to import or run"
        if c.mode != "gpu":
            return "SKIP", (f"{'dry run' if c.dry_run else 'on the CPU'}: torch {info.get('torch')}, "
                            f"CUDA {info.get('cuda')}, no GPU asked for")
        if not info.get("available"):
            return "FAIL", f"torch {info.get('torch')} (CUDA {info.get('cuda')}) sees no CUDA device"
        return "PASS", f"{info['device']}, torch {info['torch']}, CUDA {info['cuda']}"

    _, log = c.run("torch sees the GPU", [c.python, "-c", PROBE], timeout=120, judge=judge)
    return _probe_info(log)


def step_tests(c: Check) -> None:
    files = [f for f in CUDA_TEST_FILES if (ROOT / f).exists()]
    cmd = [c.python, "-m", "pytest", "-q", "-rs", *PYTEST_PLUGINS, "-p", "no:cacheprovider", *files]
    if c.dry_run:
        c.run("CUDA-only tests", cmd + ["--collect-only"], timeout=120, note="dry run: collected only")
        return

    def judge(status: str, log: str) -> tuple[str, str]:
        tally = next((line.strip("= ") for line in reversed(log.splitlines())
                      if re.search(r"\d+ (passed|failed|skipped|error)", line)), "no pytest summary")
        reasons = sorted(set(re.findall(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", log)))
        note = f"{len(files)} files: {tally}"
        if reasons:
            note += f"; skipped because: {'; '.join(reasons)}"[:400]
        if status == "PASS" and c.mode == "cpu" and not reasons:
            return "FAIL", note + "; on the CPU the CUDA tests should skip with reasons"
        return status, note

    c.run("CUDA-only tests", cmd + ["--timeout=120"], timeout=180, judge=judge)


def step_bench(c: Check) -> None:
    if c.mode != "gpu":
        c.run("bench_matmul --min-mfu 0.6", [c.python, "benchmarks/bench_matmul.py", "--device", "cpu", "--sizes", "64",
                                            "--dtypes", "fp32", "--trials", "2", "--timer-min-s", "0.05"],
              timeout=90, note="on the CPU: 64³ fp32, MFU not judged (no datasheet peak)")
    else:
        c.run("bench_matmul --min-mfu 0.6", [c.python, "benchmarks/bench_matmul.py", "--sizes", "8192", "--dtypes", "bf16",
                                            "--min-mfu", "0.6"], timeout=90, note="bf16 8192³")


def step_measure(c: Check, path: pathlib.Path) -> dict:
    cmd = [c.python, str(ROOT / "tools" / "gpu" / "gpu_check.py"), "measure", "--json", str(path)]
    if c.mode != "gpu":
        cmd.append("--dry-run")
    c.run("reference measurements", cmd, timeout=180, note="" if c.mode == "gpu" else "on the CPU, tiny sizes")
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def step_nbval(c: Check, reserve_s: float, chapter_timeout_s: float) -> None:
    if c.dry_run:  # the dry run collects every chapter in one go
        cmd = [c.python, "-m", "pytest", "-q", *PYTEST_PLUGINS, "-p", "no:cacheprovider", "--collect-only", *chapters()]
        c.run("nbval (collect every chapter)", cmd, timeout=120, note="dry run: collected only")
        c.nbval = {n: "not run (dry run)" for n in chapters()}
        return
    env = dict(c.env, GPU_CHECK_NOTEBOOKS=str(c.nb_dir))
    for nb in chapters():
        left = c.left() - reserve_s
        if left < 20:
            c.nbval[nb] = "skipped"
            c.record(f"nbval {nb}", "SKIP", 0.0, "out of time budget")
            continue
        c.nbval[nb] = "interrupted"  # until the run below returns
        status, _ = c.run(f"nbval {nb}", [c.python, "-m", "pytest", "-q", *PYTEST_PLUGINS, "-p", "no:cacheprovider",
                                          "-p", "gpu_check_capture", "--nbval-cell-timeout=90", nb],
                          timeout=min(chapter_timeout_s, left), env=env)
        c.nbval[nb] = "passed" if status == "PASS" else "failed"
        write_notebooks(c)
        write_outputs(c, final=False)


# ---------------------------------------------------------------------------------------- measurements


def measure(dry_run: bool) -> dict:
    """Every figure of lectorch.reference.KEYS that this device can give (GPU sizes; tiny on a CPU)."""
    import torch

    from lectorch import bench, roofline, step_memory, train, transfer
    from lectorch.backprop import make_mlp
    from lectorch.device import get_device, synchronize
    from lectorch.reference import (H2D_COPY_BYTES, KEYS, MATMUL_BF16_SIZES, MATMUL_FP32_SIZE, MLP_SETTING,
                                    STEP_SETTING,
                                    OVERLAP_COPY_BYTES, OVERLAP_MATMULS)

    dev = torch.device("cpu") if dry_run else get_device()
    cuda = dev.type == "cuda"
    m: dict = {}

    def matmul(n: int, p: str) -> dict:
        pt = roofline.measure_matmul(n, n, n, p, dev, trials=10 if cuda else 2, **({} if cuda else {"num_threads": 1}))
        peak = roofline.datasheet_peak(dev, p)
        return {"seconds": pt.seconds, "tflops": pt.flops_per_s / 1e12, "mfu": None if peak is None else pt.flops_per_s / peak}

    for n in MATMUL_BF16_SIZES:
        m[f"matmul_bf16_{n}"] = matmul(n if cuda else 32, "bf16")
    n = MATMUL_FP32_SIZE
    m[f"matmul_fp32_{n}"] = matmul(n if cuda else 32, "fp32")
    m[f"matmul_tf32_{n}"] = matmul(n, "tf32") if cuda else None
    if cuda:
        for pinned in (True, False):
            copy = transfer.measure_copy(H2D_COPY_BYTES, dev, pinned=pinned, trials=5, max_total_s=5)
            m[f"h2d_{'pinned' if pinned else 'pageable'}_1GiB_GBps"] = copy.bytes_per_s / 1e9
    else:
        m["h2d_pinned_1GiB_GBps"] = m["h2d_pageable_1GiB_GBps"] = None

    # backward / forward time of an MLP (chapter 06's setting on a GPU)
    gpu_mlp = (MLP_SETTING["dim"], MLP_SETTING["num_layers"], MLP_SETTING["batch"])
    dim, layers, batch = gpu_mlp if cuda else (64, 2, 64)
    dtype = torch.bfloat16 if cuda else torch.float32
    mlp = make_mlp((dim,) * (layers + 1)).to(device=dev, dtype=dtype)
    x = torch.randn(batch, dim, device=dev, dtype=dtype)
    t_fwd = bench.benchmark(lambda: mlp(x), device=dev, trials=5, max_total_s=3).median_s

    def fwd_bwd() -> None:
        mlp(x).float().sum().backward()

    t_both = bench.benchmark(fwd_bwd, device=dev, trials=5, max_total_s=3).median_s
    m["backward_over_forward_time"] = (t_both - t_fwd) / t_fwd

    # a training step's peak memory: predicted (step_memory) and measured (chapter 08's setting)
    gd, gl, gb = gpu_mlp if cuda else (64, 2, 64)
    timeline = step_memory.step_timeline(gd, gl, gb, optimizer="adam")
    measured = None
    if cuda:
        resting, peak = step_memory.cuda_step_peak(gd, gl, gb, optimizer="adam", device=dev)
        measured = peak - resting
    m["step_peak_bytes"] = {"predicted": timeline.peak - timeline.resting, "measured": measured}

    # TinyLM steps sized for a GPU (the chapter's D=64 model is launch-bound there)
    size = {k: v for k, v in STEP_SETTING.items() if k != "batch_size"} if cuda else \
        dict(dim=16, num_layers=1, vocab_size=32, context_length=8)
    b = STEP_SETTING["batch_size"] if cuda else 2
    t = {}
    for label, kw in {"fp32": {}, "bf16": {"dtype": "bf16"}, "ckpt": {"checkpointing": True}}.items():
        t[label] = train.measure_step(batch_size=b, device=dev, trials=5 if cuda else 1, **kw, **size).step_seconds
    m["bf16_over_fp32_step_time"] = t["bf16"] / t["fp32"]
    m["checkpointing_time_overhead"] = t["ckpt"] / t["fp32"] - 1

    # host→device copy overlapped with compute on another stream, against copy-then-compute
    if cuda:
        count, n = OVERLAP_MATMULS
        host = torch.ones(OVERLAP_COPY_BYTES, dtype=torch.uint8, pin_memory=True)
        dst = torch.empty_like(host, device=dev)
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        side = torch.cuda.Stream(dev)

        def compute() -> None:
            for _ in range(count):
                a @ a

        def serial() -> None:
            dst.copy_(host, non_blocking=True)
            compute()

        def overlapped() -> None:
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                dst.copy_(host, non_blocking=True)
            compute()
            torch.cuda.current_stream(dev).wait_stream(side)

        t_serial = bench.benchmark(serial, device=dev, trials=5, max_total_s=3).median_s
        t_overlap = bench.benchmark(overlapped, device=dev, trials=5, max_total_s=3).median_s
        synchronize(dev)
        m["h2d_overlap_speedup"] = t_serial / t_overlap
    else:
        m["h2d_overlap_speedup"] = None
    assert set(m) == set(KEYS), sorted(set(KEYS) ^ set(m))
    return m


def _git_commit() -> str:
    if os.environ.get("LECTORCH_COMMIT"):
        return os.environ["LECTORCH_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def write_outputs(c: Check, *, final: bool) -> None:
    """summary.txt, logs.txt and reference.json as they stand (each written whole, then renamed)."""
    total = time.monotonic() - c.start
    info = c.info
    reference = {
        "device": info.get("device", "unknown" if c.mode == "gpu" else f"cpu ({'dry run' if c.dry_run else '--cpu'})"),
        "driver": _driver(), "torch": info.get("torch"), "cuda": info.get("cuda"), "python": info.get("python"),
        "date": datetime.date.today().isoformat(), "lectorch_commit": _git_commit(),
        "nbval": c.nbval, "measurements": c.measurements, "check_seconds": round(total, 1),
    }
    if c.unset:
        reference["unset_for_the_check"] = c.unset
    if c.mode != "gpu":
        reference["dry_run"] = True
    if not final:
        reference["partial"] = True
    title = {"gpu": "", "cpu": " (--cpu)", "dry": " DRY_RUN=1"}[c.mode]
    lines = [f"make gpu-check{title}: {reference['device']}, torch {reference['torch']}, {reference['date']}, "
             f"{total:.0f}s{'' if final else ' so far (running, or stopped before its end)'}"]
    lines += [f"{s:4s} {sec:6.1f}s  {name}" + (f"  ({note})" if note else "") for name, s, sec, note in c.results]
    lines.append(tally(c))
    _write(c.out / "reference.json", json.dumps(reference, indent=2) + "\n")
    _write(c.out / "logs.txt", "".join(c.logs))
    _write(c.out / "summary.txt", "\n".join(lines) + "\n")


def tally(c: Check) -> str:
    count = {s: sum(r[1] == s for r in c.results) for s in ("PASS", "FAIL", "SKIP")}
    return f"{count['PASS']} passed, {count['FAIL']} failed, {count['SKIP']} skipped"


def _write(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_notebooks(c: Check) -> None:
    """notebooks.tar.gz: the chapters nbval has executed so far."""
    tmp = c.out / "notebooks.tar.gz.tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        for nb in sorted(c.nb_dir.glob("*.ipynb")):
            tar.add(nb, arcname=f"executed/{nb.name}")
        if not any(c.nb_dir.glob("*.ipynb")):
            note = b"no chapter was executed (dry run: nbval only collected the chapters)\n"
            ti = tarfile.TarInfo("executed/README.txt")
            ti.size = len(note)
            tar.addfile(ti, io.BytesIO(note))
    tmp.replace(c.out / "notebooks.tar.gz")


def run_steps(c: Check, wheels: pathlib.Path, site: pathlib.Path, chapter_timeout_s: float) -> None:
    step_preflight(c)
    if not step_install(c, wheels, site):
        return
    c.info = step_gpu(c)
    if c.mode == "gpu" and not c.info.get("available"):
        for name in ("bench_matmul --min-mfu 0.6", "reference measurements", "nbval", "CUDA-only tests"):
            c.record(name, "SKIP", 0.0, "no usable GPU")
        return
    # what the reference file needs first, then every chapter, then the unit tests
    step_bench(c)
    c.measurements = step_measure(c, c.nb_dir.parent / "measurements.json")
    step_nbval(c, reserve_s=60 if c.mode == "gpu" else 30, chapter_timeout_s=chapter_timeout_s)
    step_tests(c)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="check", choices=["check", "measure"])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "_build" / "gpu-check"))
    parser.add_argument("--wheels", default=str(ROOT / "wheels" / "gpu-cp312"))
    parser.add_argument("--site", "--venv", dest="site", default=str(ROOT / ".venv-gpu"),
                        help="where the carried wheels are installed (first on PYTHONPATH; default .venv-gpu)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--dry-run", action="store_true", help="walk the steps on a CPU, only collecting (CUDA steps SKIP)")
    how.add_argument("--cpu", action="store_true", help="run every step that needs no CUDA for real, on the CPU")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                        help=f"seconds for the whole check (default {DEFAULT_BUDGET_S:.0f}: a minute of margin "
                             "inside one device command run with a 560 s limit)")
    parser.add_argument("--chapter-timeout", type=float, default=150.0, help="seconds for one chapter's nbval")
    parser.add_argument("--json", help="measure mode: where to write the measurements")
    args = parser.parse_args(argv)
    if args.mode == "measure":
        result = measure(args.dry_run)
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return 0

    mode = "dry" if args.dry_run else "cpu" if args.cpu else "gpu"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in ("summary.txt", "reference.json", "logs.txt", "notebooks.tar.gz"):
        (out / old).unlink(missing_ok=True)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
            c = Check(out, mode=mode, budget_s=args.budget, scratch=pathlib.Path(tmp))
            print(f"gpu-check ({mode}): Python {platform.python_version()}, budget {args.budget:.0f}s, "
                  f"writing to {out.name}/ after every step", flush=True)
            try:
                run_steps(c, pathlib.Path(args.wheels), pathlib.Path(args.site), args.chapter_timeout)
            except Interrupted as err:
                c.record("the check", "FAIL", time.monotonic() - c.start, f"interrupted ({err}); the steps above ran")
            finally:
                write_notebooks(c)
                write_outputs(c, final=True)
                print(tally(c), flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 1 if any(s == "FAIL" for _, s, _, _ in c.results) else 0


if __name__ == "__main__":
    sys.exit(main())
