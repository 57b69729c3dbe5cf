"""`make gpu-check`: its dry run on this CPU (so the script cannot rot), the locks, the GPU guard."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time

import nbformat
import pytest
import torch

from _paths import ROOT

import gpu_box
import gpu_check
import lock

from lectorch import reference

pytestmark = pytest.mark.rehearsal  # a user's whole path, run for real: `make rehearse`

needs_no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the failure without a GPU")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    proc = subprocess.run(["make", "--no-print-directory", "gpu-check", "DRY_RUN=1", f"OUT={out}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    return proc, out


def test_dry_run_passes_and_writes_the_same_files_as_a_gpu_run(dry_run):
    proc, out = dry_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    files = sorted(p.name for p in out.iterdir())
    assert files == ["logs.txt", "notebooks.tar.gz", "reference.json", "summary.txt"] and len(files) <= 8
    summary = (out / "summary.txt").read_text()
    steps = ["preflight", "install wheels", "torch sees the GPU", "bench_matmul --min-mfu 0.6", "reference measurements",
             "nbval", "CUDA-only tests"]
    for step in steps:
        assert re.search(rf"^(PASS|SKIP) +[\d.]+s  {re.escape(step)}", summary, re.M), (step, summary)
    assert "FAIL" not in summary
    assert re.search(r"^SKIP .* torch sees the GPU  \(dry run", summary, re.M)  # the CUDA step is skipped
    with tarfile.open(out / "notebooks.tar.gz") as tar:
        assert tar.getnames()


def test_dry_run_reference_json_has_the_schema_and_is_marked(dry_run):
    _, out = dry_run
    run = json.loads((out / "reference.json").read_text())
    for key in ("device", "driver", "torch", "cuda", "python", "date", "lectorch_commit", "nbval", "measurements"):
        assert key in run, key
    assert run["dry_run"] is True
    assert sorted(run["nbval"]) == sorted(gpu_check.chapters())
    assert set(run["measurements"]) == set(reference.KEYS)
    assert run["measurements"]["h2d_pinned_1GiB_GBps"] is None  # no number a CPU cannot give
    with pytest.raises(ValueError, match="not a reference run"):
        reference.load_runs(out)


def test_chapters_come_from_the_folder_riskiest_first():
    found = gpu_check.chapters()
    on_disk = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("chapters/[0-9][0-9]_*.ipynb"))
    assert sorted(found) == on_disk
    assert found[0].startswith("chapters/09_") and found.index("chapters/00_napkin_math.ipynb") == len(found) - 1


def test_nbval_capture_plugin_writes_the_executed_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb.cells[0].execution_count = 1
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    executed = tmp_path / "executed"
    executed.mkdir()
    env = dict(os.environ, GPU_CHECK_NOTEBOOKS=str(executed),
               PYTHONPATH=str(ROOT / "tools" / "gpu") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "gpu_check_capture", "-p", "no:cacheprovider",
                           "--nbval", "--nbval-current-env", "-o", "addopts=", str(path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = nbformat.read(executed / "tiny.ipynb", as_version=4)
    assert got.cells[0].outputs[0]["text"] == "42\n"


@needs_no_cuda
def test_require_gpu_fails_fast_naming_cuda():
    env = dict(os.environ, LECTORCH_REQUIRE_GPU="1")
    # "fast" is "before anything is collected" (nothing passed), not a time: pytest and torch take
    # over a minute to start on a machine whose cores are busy, so the limit only catches a hang
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/test_reference.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "LECTORCH_REQUIRE_GPU=1" in proc.stdout + proc.stderr and "CUDA" in proc.stdout + proc.stderr
    assert "passed" not in proc.stdout  # nothing ran


# --- the locks ------------------------------------------------------------------------------------------

def _pins(path):
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def test_the_cpu_lock_is_a_cpu_lock():
    pins = _pins(ROOT / "requirements.txt")
    lock.check("cpu", pins)
    assert any(p.startswith("torch==") and p.endswith("+cpu") for p in pins)
    assert not any(lock.TORCH_STACK.match(p) and not p.startswith("torch==") for p in pins)


def test_the_cuda_lock_pins_the_whole_cuda_stack_and_agrees_with_the_cpu_lock():
    cpu, cuda = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements-cuda.txt")
    lock.check("cuda", cuda)
    names = {p.split("==")[0] for p in cuda}
    assert {"torch", "triton"} <= names and sum(n.startswith("nvidia-") for n in names) >= 10
    strip = lambda pins: {p for p in pins if not lock.TORCH_STACK.match(p)}  # noqa: E731
    assert strip(cpu) == strip(cuda)


def test_lock_headers_say_how_they_were_made():
    for path in (ROOT / "requirements.txt", ROOT / "requirements-cuda.txt"):
        header = path.read_text().split("\n\n")[0]
        assert "make lock" in header and "requirements.in" in header and "uv" in header, path.name


def test_lock_check_rejects_a_cuda_stack_in_the_cpu_lock_and_unpinned_lines():
    with pytest.raises(SystemExit, match="cpu lock"):
        lock.check("cpu", ["torch==2.13.0", "nvidia-cublas==13.1.1.3"])
    with pytest.raises(SystemExit, match="cuda lock"):
        lock.check("cuda", ["torch==2.13.0+cpu"])
    with pytest.raises(SystemExit, match="unpinned"):
        lock.check("cpu", ["torch==2.13.0+cpu", "numpy"])


def test_the_environment_has_what_the_chinese_edition_and_the_lint_need():
    names = {p.split("==")[0].lower() for p in _pins(ROOT / "requirements.txt")}
    assert {"sphinx-intl", "jieba", "brotli", "ruff"} <= names


def test_installed_torch_is_the_locked_build():
    assert lock.check_install("cpu" if torch.version.cuda is None else "cuda").startswith("torch ")


def test_system_torch_mode_keeps_the_machines_torch():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    plan = subprocess.run(["make", "-n", "--no-print-directory", "install", "SYSTEM_TORCH=1", "ACCEL=cuda",
                           "VENV=/nonexistent-venv"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60).stdout
    assert "--system-site-packages" in plan and "requirements-without-torch.txt" in plan
    assert "check-install cuda --system-torch" in plan
    kept = [p for p in _pins(ROOT / "requirements-cuda.txt") if not re.match(r"(torch|triton|nvidia-|cuda-)", p)]
    assert len(kept) == len(_pins(ROOT / "requirements.txt")) - 1  # everything but torch


def test_the_real_path_without_a_gpu_fails_clearly_and_still_writes_every_file(tmp_path):
    """The GPU box's path (venv with system site packages, offline wheels), run here: the install
    works, then torch is missing or sees no GPU, so the check fails and skips the GPU steps."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "requirements.txt").write_text("# nothing to install for this test\n")
    out = tmp_path / "out"
    code = gpu_check.main(["--wheels", str(wheels), "--out", str(out), "--budget", "200",
                           "--site", str(tmp_path / "site")])
    assert code == 1
    summary = (out / "summary.txt").read_text()
    assert re.search(r"^FAIL .*preflight  \(no nvidia-smi", summary, re.M), summary
    assert re.search(r"^PASS .*install wheels", summary, re.M), summary
    assert re.search(r"^FAIL .*torch sees the GPU", summary, re.M), summary
    assert re.search(r"^SKIP .*nbval  \(no usable GPU\)", summary, re.M), summary
    assert sorted(p.name for p in out.iterdir()) == ["logs.txt", "notebooks.tar.gz", "reference.json", "summary.txt"]
    assert json.loads((out / "reference.json").read_text())["nbval"]  # every chapter listed, none run


@pytest.mark.skipif(not (ROOT / "wheels" / "gpu-cp312").is_dir(), reason="no `make gpu-wheels` folder here")
def test_the_working_tree_and_the_wheels_fit_what_the_gpu_box_receives():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True).stdout.split("\n")
    tree = sum((ROOT / f).stat().st_size for f in listed if f and (ROOT / f).is_file())
    wheels = sum(p.stat().st_size for p in (ROOT / "wheels" / "gpu-cp312").iterdir())
    assert wheels < gpu_box.GPU_WHEELS_MAX_MIB * 2**20
    assert tree + wheels < 64 * 2**20, f"{(tree + wheels) / 2**20:.1f} MiB: over the 64 MiB sent to the GPU box"


# --- a run stopped at its time limit still returns what it did ------------------------------------------

def _start_check(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "requirements.txt").write_text("# nothing to install for this test\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "tools/gpu/gpu_check.py", "--cpu", "--wheels", str(wheels), "--out", str(out),
                             "--site", str(tmp_path / "site")], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, out / "summary.txt"


def _wait_for(path, text, proc, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and text in path.read_text():
            return True
        time.sleep(0.1)
    return False


def test_a_check_killed_midway_leaves_the_summary_of_the_steps_done(tmp_path):
    proc, summary = _start_check(tmp_path)
    try:
        assert _wait_for(summary, "install wheels", proc), "no step recorded within 30 s"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no handler runs: what is there was written step by step
        proc.wait()
    text = summary.read_text()
    assert re.search(r"^PASS .*preflight  \(.*CUDA_LAUNCH_BLOCKING", text, re.M), text
    assert re.search(r"^PASS .*install wheels", text, re.M) and "so far" in text.splitlines()[0]
    run = json.loads((summary.parent / "reference.json").read_text())
    assert run["partial"] is True and run["dry_run"] is True
    assert not list(summary.parent.glob("*.tmp"))


def test_a_terminated_check_records_the_interrupted_step_and_stops_its_child(tmp_path):
    proc, summary = _start_check(tmp_path)
    try:
        assert _wait_for(summary, "install wheels", proc), "no step recorded within 30 s"
        proc.send_signal(signal.SIGTERM)  # what `timeout` sends at a time limit
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = summary.read_text()
    assert proc.returncode == 1 and "so far" not in text.splitlines()[0], text
    assert re.search(r"^FAIL .*interrupted \(signal 15\)", text, re.M), text
    assert (summary.parent / "notebooks.tar.gz").exists()


def test_the_default_budget_leaves_a_minute_inside_a_560_s_command():
    assert gpu_check.DEFAULT_BUDGET_S + 60 <= 560
    assert gpu_check.INSTALL_TIMEOUT_S < gpu_check.DEFAULT_BUDGET_S


# --- the rehearsal's pieces (the whole of it is `make gpu-rehearsal`, not run here) --------------------

def test_the_check_installs_offline_whatever_pip_is_configured_with():
    env = gpu_check.offline_pip_env({"PIP_FIND_LINKS": "/opt/wheels", "PIP_EXTRA_INDEX_URL": "file:///x", "PATH": "/bin"})
    assert env == {"PATH": "/bin", "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
                   "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_the_rehearsal_runs_the_check_as_the_box_would(tmp_path, monkeypatch):
    import gpu_rehearsal

    monkeypatch.setenv("PIP_FIND_LINKS", "/somewhere")
    monkeypatch.setenv("VIRTUAL_ENV", "/some/venv")
    python = tmp_path / "box-venv" / "bin" / "python"
    env = gpu_rehearsal.box_env(python, tmp_path / "home")
    assert env["PATH"].split(os.pathsep)[0] == str(python.parent)  # the replica is python3
    assert {k for k in env if k.startswith("PIP_")} == {"PIP_CONFIG_FILE", "PIP_NO_INDEX"}
    assert env["PIP_CONFIG_FILE"] == os.devnull and env["HOME"] == str(tmp_path / "home")
    assert "VIRTUAL_ENV" not in env and "PYTHONPATH" not in env
    sent = gpu_rehearsal.sent_files()  # what the device tool sends: no venv, no ignored build output
    assert "tools/gpu/gpu_check.py" in sent and "tools/gpu/carried.txt" in sent
    assert not any(f.startswith((".venv/", "wheels/", "_build/")) for f in sent)
