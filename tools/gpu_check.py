"""The whole GPU validation of the course in one call: `make gpu-check` (see README, "On a GPU").

    python3 tools/gpu_check.py --out OUT [--wheels wheels/gpu-cp312]   # on the GPU box
    python tools/gpu_check.py --dry-run --out OUT                      # the same steps on a CPU

On the GPU box (its own Python with a CUDA torch, no package registry) it makes a venv with the
system site packages, installs the carried wheels into it (everything but torch), asserts that torch
sees the GPU, runs the CUDA-only tests, nbval over every chapter (riskiest first, each bounded in
time), the matmul benchmark with --min-mfu, and measures every figure the book shows from a
reference GPU. It writes to OUT (at most 8 files):

    summary.txt        every step: PASS / FAIL / SKIP, seconds, a note
    reference.json     the run in the schema of benchmarks/reference/ (commit it from a real GPU)
    logs.txt           the output of every step (the tail of each where long)
    notebooks.tar.gz   the chapters as nbval executed them

``--dry-run`` walks the same steps on a CPU with the current Python: the CUDA steps are reported
as SKIP, tests and nbval are only collected, the measurements run tiny, and reference.json is marked
``"dry_run": true`` (lectorch.reference refuses such a file). Only the standard library is imported
here; the steps run in subprocesses of the venv's Python.
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
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Riskiest first (most CUDA-only asserts, allocator readings, compile); unlisted chapters follow.
RISK_ORDER = ["09", "08", "02", "05", "03", "04", "10", "06", "07", "01", "00"]
#: Test files holding CUDA-only tests (skipped without a GPU) or the CUDA paths' CPU-side tests.
CUDA_TEST_FILES = ["tests/test_device.py", "tests/test_gpu_readiness.py", "tests/test_roofline.py",
                   "tests/test_transfer.py", "tests/test_step_memory.py", "tests/test_train.py",
                   "tests/test_data.py", "tests/test_bench.py", "tests/test_hardware.py"]
LOG_TAIL = 60_000  # characters of each step's output kept in logs.txt


def chapters() -> list[str]:
    """chapters/[0-9][0-9]_*.ipynb, riskiest first."""
    found = sorted(glob.glob(str(ROOT / "chapters" / "[0-9][0-9]_*.ipynb")))
    rel = [str(pathlib.Path(p).relative_to(ROOT)) for p in found]

    def rank(path: str) -> tuple[int, str]:
        num = pathlib.Path(path).name[:2]
        return (RISK_ORDER.index(num) if num in RISK_ORDER else len(RISK_ORDER), path)

    return sorted(rel, key=rank)


class Check:
    """Runs the steps, keeps their results and logs, and knows the time left."""

    def __init__(self, out: pathlib.Path, *, dry_run: bool, budget_s: float) -> None:
        self.out, self.dry_run = out, dry_run
        self.start = time.monotonic()
        self.deadline = self.start + budget_s
        self.results: list[tuple[str, str, float, str]] = []
        self.logs: list[str] = []
        self.python = sys.executable
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = str(ROOT) + os.pathsep + self.env.get("PYTHONPATH", "")
        # Exact allocator readings need the default allocator (see lectorch.device.allocator_settings).
        self.alloc_conf = {k: self.env.pop(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
                           if k in self.env}
        self.env["MPLBACKEND"] = "Agg"
        if not dry_run:
            self.env["LECTORCH_REQUIRE_GPU"] = "1"

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def record(self, name: str, status: str, seconds: float, note: str = "", log: str = "") -> str:
        self.results.append((name, status, seconds, note))
        line = f"{status:4s} {seconds:6.1f}s  {name}" + (f"  ({note})" if note else "")
        print(line, flush=True)
        if log:
            tail = log if len(log) <= LOG_TAIL else "[… cut …]\n" + log[-LOG_TAIL:]
            self.logs.append(f"===== {name}: {status} in {seconds:.1f}s\n{tail}\n")
        return status

    def run(self, name: str, cmd: list[str], *, timeout: float, ok_codes=(0,), note: str = "",
            judge=None) -> tuple[str, str]:
        """Run ``cmd`` bounded by ``timeout`` and by the budget; PASS on ok_codes, else FAIL.
        ``judge(status, log) -> (status, note)`` may overrule the verdict before it is recorded."""
        timeout = min(timeout, self.left())
        if timeout < 5:
            self.record(name, "SKIP", 0.0, "out of time budget")
            return "SKIP", ""
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)
            log, code = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as err:
            out = err.stdout or b""
            log = (out.decode(errors="replace") if isinstance(out, bytes) else out) + f"\n[timed out after {timeout:.0f}s]"
            code = None
        seconds = time.monotonic() - t0
        status = "PASS" if code in ok_codes else "FAIL"
        if code is None:
            note = (note + "; " if note else "") + f"timed out after {timeout:.0f}s"
        elif status == "FAIL":
            note = (note + "; " if note else "") + f"exit {code}"
        if judge is not None:
            status, note = judge(status, log)
        return self.record(name, status, seconds, note, f"$ {' '.join(cmd)}\n{log}"), log


# ------------------------------------------------------------------------------------------------- steps


def step_install(c: Check, wheels: pathlib.Path, venv: pathlib.Path) -> bool:
    req = wheels / "requirements.txt"
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
                "--target", tmp, "-r", str(req)], timeout=120, note="dry run: resolved for cp312, not installed")
        return status == "PASS"
    if not req.exists():
        c.record("install wheels", "FAIL", 0.0, f"no {wheels}/requirements.txt: run `make gpu-wheels` and carry it")
        return False
    t0 = time.monotonic()
    log = []

    def sh(cmd: list[str]) -> int:
        proc = subprocess.run(cmd, cwd=ROOT, env=c.env, capture_output=True, text=True, timeout=max(5, c.left()))
        log.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        return proc.returncode

    pip_args = ["install", "--quiet", "--no-index", "--no-deps", "--disable-pip-version-check", "--find-links",
                str(wheels), "-r", str(req)]
    n = len(list(wheels.glob("*.whl")))
    if sh([sys.executable, "-m", "venv", "--system-site-packages", "--clear", str(venv)]) == 0:
        if sh([str(venv / "bin" / "python"), "-m", "pip", *pip_args]) == 0:
            c.python = str(venv / "bin" / "python")
            c.record("install wheels", "PASS", time.monotonic() - t0,
                     f"{n} wheels into {venv.name} (system site packages: the machine's torch)", "\n".join(log))
            return True
    # No venv module (python3-venv missing) or no pip in it: the machine's pip installs into a folder
    # that PYTHONPATH puts before the system site packages (the same precedence as the venv).
    target = venv / "site"
    shutil.rmtree(target, ignore_errors=True)
    if sh([sys.executable, "-m", "pip", *pip_args, "--target", str(target)]) == 0:
        c.env["PYTHONPATH"] = str(target) + os.pathsep + c.env["PYTHONPATH"]
        c.record("install wheels", "PASS", time.monotonic() - t0,
                 f"{n} wheels into {venv.name}/site on PYTHONPATH (no venv here)", "\n".join(log))
        return True
    c.record("install wheels", "FAIL", time.monotonic() - t0, "neither a venv nor pip --target worked",
             "\n".join(log))
    return False


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
            return json.loads(line)
    return {}


def step_gpu(c: Check) -> dict:
    def judge(status: str, log: str) -> tuple[str, str]:
        info = _probe_info(log)
        if status != "PASS":
            return status, "torch failed to import or run"
        if c.dry_run:
            return "SKIP", f"dry run: torch {info.get('torch')} on CPU, CUDA {info.get('cuda')}"
        if not info.get("available"):
            return "FAIL", f"torch {info.get('torch')} (CUDA {info.get('cuda')}) sees no CUDA device"
        return "PASS", f"{info['device']}, torch {info['torch']}, CUDA {info['cuda']}"

    _, log = c.run("torch sees the GPU", [c.python, "-c", PROBE], timeout=120, judge=judge)
    return _probe_info(log)


def step_tests(c: Check) -> None:
    files = [f for f in CUDA_TEST_FILES if (ROOT / f).exists()]
    cmd = [c.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
    if c.dry_run:
        c.run("CUDA-only tests", cmd + ["--collect-only"], timeout=120, note="dry run: collected only")
    else:
        c.run("CUDA-only tests", cmd + ["--timeout=120"], timeout=150, note=f"{len(files)} files, LECTORCH_REQUIRE_GPU=1")


def step_bench(c: Check) -> None:
    if c.dry_run:
        c.run("bench_matmul --min-mfu 0.6", [c.python, "benchmarks/bench_matmul.py", "--device", "cpu", "--sizes", "64",
                                            "--dtypes", "fp32", "--trials", "2", "--timer-min-s", "0.05"],
              timeout=90, note="dry run: 64³ fp32 on CPU, MFU not judged (no datasheet peak)")
    else:
        c.run("bench_matmul --min-mfu 0.6", [c.python, "benchmarks/bench_matmul.py", "--sizes", "8192", "--dtypes", "bf16",
                                            "--min-mfu", "0.6"], timeout=90, note="bf16 8192³")


def step_measure(c: Check, path: pathlib.Path) -> dict:
    cmd = [c.python, str(ROOT / "tools" / "gpu_check.py"), "measure", "--json", str(path)]
    if c.dry_run:
        cmd.append("--dry-run")
    status, _ = c.run("reference measurements", cmd, timeout=60 if c.dry_run else 180)
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def step_nbval(c: Check, nb_dir: pathlib.Path, reserve_s: float) -> dict[str, str]:
    results: dict[str, str] = {}
    capture = ["-p", "gpu_check_capture"]
    for nb in chapters():
        if c.dry_run and results:  # the dry run collects every chapter in one go below
            break
        if c.dry_run:
            cmd = [c.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *chapters()]
            status, _ = c.run("nbval (collect every chapter)", cmd, timeout=120, note="dry run: collected only")
            results = {n: "not run (dry run)" for n in chapters()}
            break
        left = c.left() - reserve_s
        if left < 20:
            c.record(f"nbval {nb}", "SKIP", 0.0, "out of time budget")
            results[nb] = "skipped"
            continue
        env_out = dict(c.env, GPU_CHECK_NOTEBOOKS=str(nb_dir))
        saved, c.env = c.env, env_out
        try:
            status, _ = c.run(f"nbval {nb}", [c.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *capture,
                                              "--nbval-cell-timeout=90", nb], timeout=min(150, left))
        finally:
            c.env = saved
        results[nb] = "passed" if status == "PASS" else "failed"
    return results


# ---------------------------------------------------------------------------------------- measurements


def measure(dry_run: bool) -> dict:
    """Every figure of lectorch.reference.KEYS that this device can give (GPU sizes; tiny on a CPU)."""
    import torch

    from lectorch import bench, roofline, step_memory, train, transfer
    from lectorch.backprop import make_mlp
    from lectorch.device import get_device, synchronize
    from lectorch.reference import KEYS

    dev = torch.device("cpu") if dry_run else get_device()
    cuda = dev.type == "cuda"
    m: dict = {}

    def matmul(n: int, p: str) -> dict:
        pt = roofline.measure_matmul(n, n, n, p, dev, trials=10 if cuda else 2, **({} if cuda else {"num_threads": 1}))
        peak = roofline.datasheet_peak(dev, p)
        return {"seconds": pt.seconds, "tflops": pt.flops_per_s / 1e12, "mfu": None if peak is None else pt.flops_per_s / peak}

    for n in (1024, 2048, 4096, 8192):
        m[f"matmul_bf16_{n}"] = matmul(n if cuda else 32, "bf16")
    m["matmul_fp32_8192"] = matmul(8192 if cuda else 32, "fp32")
    m["matmul_tf32_8192"] = matmul(8192, "tf32") if cuda else None
    if cuda:
        m["h2d_pinned_1GiB_GBps"] = transfer.measure_copy(2**30, dev, pinned=True, trials=5, max_total_s=5).bytes_per_s / 1e9
        m["h2d_pageable_1GiB_GBps"] = transfer.measure_copy(2**30, dev, pinned=False, trials=5, max_total_s=5).bytes_per_s / 1e9
    else:
        m["h2d_pinned_1GiB_GBps"] = m["h2d_pageable_1GiB_GBps"] = None

    # backward / forward time of an MLP (chapter 06's setting on a GPU)
    dim, layers, batch = (4096, 8, 4096) if cuda else (64, 2, 64)
    dtype = torch.bfloat16 if cuda else torch.float32
    mlp = make_mlp((dim,) * (layers + 1)).to(device=dev, dtype=dtype)
    x = torch.randn(batch, dim, device=dev, dtype=dtype)
    t_fwd = bench.benchmark(lambda: mlp(x), device=dev, trials=5, max_total_s=3).median_s

    def fwd_bwd() -> None:
        mlp(x).float().sum().backward()

    t_both = bench.benchmark(fwd_bwd, device=dev, trials=5, max_total_s=3).median_s
    m["backward_over_forward_time"] = (t_both - t_fwd) / t_fwd

    # a training step's peak memory: predicted (step_memory) and measured (chapter 08's setting)
    gd, gl, gb = (4096, 8, 4096) if cuda else (64, 2, 64)
    timeline = step_memory.step_timeline(gd, gl, gb, optimizer="adam")
    measured = None
    if cuda:
        resting, peak = step_memory.cuda_step_peak(gd, gl, gb, optimizer="adam", device=dev)
        measured = peak - resting
    m["step_peak_bytes"] = {"predicted": timeline.peak - timeline.resting, "measured": measured}

    # TinyLM steps sized for a GPU (the chapter's D=64 model is launch-bound there)
    size = dict(dim=1024, num_layers=4, vocab_size=8192, context_length=256) if cuda else \
        dict(dim=16, num_layers=1, vocab_size=32, context_length=8)
    b = 32 if cuda else 2
    t = {}
    for label, kw in {"fp32": {}, "bf16": {"dtype": "bf16"}, "ckpt": {"checkpointing": True}}.items():
        t[label] = train.measure_step(batch_size=b, device=dev, trials=5 if cuda else 1, **kw, **size).step_seconds
    m["bf16_over_fp32_step_time"] = t["bf16"] / t["fp32"]
    m["checkpointing_time_overhead"] = t["ckpt"] / t["fp32"] - 1

    # host→device copy overlapped with compute on another stream, against copy-then-compute
    if cuda:
        host = torch.ones(2**28, dtype=torch.uint8, pin_memory=True)  # 256 MiB
        dst = torch.empty_like(host, device=dev)
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        side = torch.cuda.Stream(dev)

        def compute() -> None:
            for _ in range(4):
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


# ------------------------------------------------------------------------------------------------ main


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


def write_outputs(c: Check, info: dict, measurements: dict, nbval: dict, nb_dir: pathlib.Path) -> None:
    total = time.monotonic() - c.start
    reference = {
        "device": info.get("device", "cpu (dry run)" if c.dry_run else "unknown"),
        "driver": _driver(), "torch": info.get("torch"), "cuda": info.get("cuda"), "python": info.get("python"),
        "date": datetime.date.today().isoformat(), "lectorch_commit": _git_commit(),
        "nbval": nbval, "measurements": measurements, "check_seconds": round(total, 1),
    }
    if c.alloc_conf:
        reference["unset_for_the_check"] = c.alloc_conf
    if c.dry_run:
        reference["dry_run"] = True
    (c.out / "reference.json").write_text(json.dumps(reference, indent=2) + "\n")
    lines = [f"make gpu-check{' DRY_RUN=1' if c.dry_run else ''}: {reference['device']}, torch {reference['torch']}, "
             f"{reference['date']}, {total:.0f}s"]
    lines += [f"{s:4s} {sec:6.1f}s  {name}" + (f"  ({note})" if note else "") for name, s, sec, note in c.results]
    fails = sum(s == "FAIL" for _, s, _, _ in c.results)
    lines.append(f"{sum(s == 'PASS' for _, s, _, _ in c.results)} passed, {fails} failed, "
                 f"{sum(s == 'SKIP' for _, s, _, _ in c.results)} skipped")
    (c.out / "summary.txt").write_text("\n".join(lines) + "\n")
    (c.out / "logs.txt").write_text("".join(c.logs))
    with tarfile.open(c.out / "notebooks.tar.gz", "w:gz") as tar:
        for nb in sorted(nb_dir.glob("*.ipynb")):
            tar.add(nb, arcname=f"executed/{nb.name}")
        if not any(nb_dir.glob("*.ipynb")):
            note = b"no chapter was executed (dry run: nbval only collected the chapters)\n"
            ti = tarfile.TarInfo("executed/README.txt")
            ti.size = len(note)
            tar.addfile(ti, io.BytesIO(note))
    print("\n".join(lines[-1:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="check", choices=["check", "measure"])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "_build" / "gpu-check"))
    parser.add_argument("--wheels", default=str(ROOT / "wheels" / "gpu-cp312"))
    parser.add_argument("--venv", default=str(ROOT / ".venv-gpu"), help="the venv the check makes on the GPU box")
    parser.add_argument("--dry-run", action="store_true", help="walk the steps on a CPU (CUDA steps SKIP)")
    parser.add_argument("--budget", type=float, default=510.0, help="seconds for the whole check (default 510)")
    parser.add_argument("--json", help="measure mode: where to write the measurements")
    args = parser.parse_args(argv)
    if args.mode == "measure":
        result = measure(args.dry_run)
        pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
        print(json.dumps(result, indent=2))
        return 0

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in ("summary.txt", "reference.json", "logs.txt", "notebooks.tar.gz"):
        (out / old).unlink(missing_ok=True)
    c = Check(out, dry_run=args.dry_run, budget_s=args.budget)
    print(f"gpu-check{' (dry run)' if args.dry_run else ''}: {platform.python_version()}, budget {args.budget:.0f}s, "
          f"writing to {out.name}/", flush=True)
    if c.alloc_conf:
        print(f"unset for the check: {c.alloc_conf} (exact allocator readings need the default allocator)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        nb_dir = tmp / "notebooks"
        nb_dir.mkdir()
        c.env["PYTHONPATH"] = str(ROOT / "tools") + os.pathsep + c.env["PYTHONPATH"]  # the capture plugin
        info, measurements, nbval = {}, {}, {n: "not run" for n in chapters()}
        if step_install(c, pathlib.Path(args.wheels), pathlib.Path(args.venv)):
            info = step_gpu(c)
            if c.dry_run or info.get("available"):
                # what the reference file needs first, then every chapter, then the unit tests
                step_bench(c)
                measurements = step_measure(c, tmp / "measurements.json")
                nbval = step_nbval(c, nb_dir, reserve_s=60)
                step_tests(c)
            else:
                for name in ("CUDA-only tests", "bench_matmul --min-mfu 0.6", "reference measurements", "nbval"):
                    c.record(name, "SKIP", 0.0, "no usable GPU")
        write_outputs(c, info, measurements, nbval, nb_dir)
    return 1 if any(s == "FAIL" for _, s, _, _ in c.results) else 0


if __name__ == "__main__":
    sys.exit(main())
