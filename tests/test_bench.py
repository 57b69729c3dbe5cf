"""The timing harness (lectorch.bench) and the matmul benchmark script (benchmarks/bench_matmul.py)."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest
import torch
import torch.utils.benchmark as torch_benchmark

from lectorch import bench
from lectorch.bench import Timing, achieved_flops_per_s, benchmark, format_seconds, mfu

from _paths import ROOT


# --- statistics --------------------------------------------------------------------------------

def test_timing_statistics_are_the_textbook_ones():
    t = Timing(times_s=(1.0, 2.0, 3.0, 4.0, 100.0), number=7, label="x")
    assert t.trials == 5
    assert t.median_s == 3.0  # the outlier does not move the median
    assert t.min_s == 1.0 and t.max_s == 100.0
    assert t.iqr_s == 2.0  # inclusive quartiles of 1..4,100 are 2 and 4
    assert "median 3 s" in str(t) and "5 trials × 7 calls" in str(t)


def test_a_single_trial_has_no_spread():
    assert Timing(times_s=(0.5,), number=1).iqr_s == 0.0


def test_benchmark_reports_per_call_seconds_and_the_requested_trials(fake_clock):
    clock = fake_clock(0.001)
    t = benchmark(clock.work, device="cpu", warmup=1, trials=4, min_trial_s=0.02)
    assert t.trials == 4
    assert t.number == 20  # a 1 ms call is repeated to fill a 20 ms trial
    assert t.median_s == pytest.approx(0.001)  # per call, not per trial
    assert t.min_s <= t.median_s <= t.max_s


def test_benchmark_on_a_real_clock_reports_per_call_seconds():
    """The same on the real clock, asserting only what a busy machine cannot break."""
    start = time.perf_counter()
    t = benchmark(lambda: time.sleep(0.001), device="cpu", warmup=1, trials=4, min_trial_s=0.02)
    wall = time.perf_counter() - start
    assert t.trials == 4 and t.number >= 2
    assert 0.001 <= t.min_s <= t.median_s <= t.max_s  # a sleep never returns early
    assert t.min_s * t.number * t.trials <= wall  # per call: the trials fit in the wall time


def test_benchmark_stops_early_after_max_total_with_three_trials_when_they_fit(fake_clock):
    clock = fake_clock(0.001)
    t = benchmark(clock.work, device="cpu", warmup=0, trials=100, min_trial_s=0.001, max_total_s=0.05)
    assert 3 <= t.trials < 100


def test_max_total_s_bounds_the_calibration_too(fake_clock):
    """min_trial_s=100 used to calibrate for minutes; max_total_s now bounds everything."""
    clock = fake_clock(0.01)
    t = benchmark(clock.work, device="cpu", warmup=0, trials=10, min_trial_s=100, max_total_s=0.5)
    assert clock.now <= 0.5 + t.number * 0.01  # the budget plus at most one trial
    assert t.trials >= 1 and t.median_s == pytest.approx(0.01)


@pytest.mark.parametrize("bad", [-0.002, float("nan"), "1"])
def test_format_seconds_refuses_what_is_not_a_duration(bad):
    with pytest.raises((ValueError, TypeError), match="seconds"):
        format_seconds(bad)


def test_warmup_calls_happen_and_are_not_timed():
    calls = []
    benchmark(lambda: calls.append(1), device="cpu", warmup=5, trials=3, min_trial_s=1e-4)
    assert len(calls) > 5


# --- synchronisation ---------------------------------------------------------------------------

def test_synchronize_frames_every_trial(monkeypatch):
    events = []
    monkeypatch.setattr(bench, "synchronize", lambda device: events.append("sync"))
    benchmark(lambda: events.append("fn"), device="cpu", warmup=2, trials=5, min_trial_s=1e-4)
    assert events[:2] == ["fn", "fn"] and events[2] == "sync"  # warm-up, then wait for it to finish
    timed = events[3:]
    assert timed[-1] == "sync"  # the last timed call is waited for before the clock stops
    # Every timed batch of calls is between two synchronisations.
    runs = "".join("s" if e == "sync" else "f" for e in timed).split("s")
    assert all(r == "" or set(r) == {"f"} for r in runs)
    assert timed.count("sync") >= 2 * 5


def test_timing_includes_the_work_a_synchronize_waits_for(monkeypatch, fake_clock):
    """A fake asynchronous device: calls return at once, the work happens at synchronisation.

    Without the synchronisation inside the timed region the harness would report ~0 s per call."""
    clock = fake_clock(0.0)
    pending = []

    def fake_sync(device):
        clock.now += 0.002 * len(pending)  # the queued work finishes while the host waits
        pending.clear()

    monkeypatch.setattr(bench, "synchronize", fake_sync)
    t = benchmark(lambda: pending.append(1), device="cpu", warmup=1, trials=5, min_trial_s=0.01)
    assert t.median_s == pytest.approx(0.002, rel=1e-9)


# --- agreement with torch.utils.benchmark -------------------------------------------------------

def test_harness_agrees_with_torch_utils_benchmark_on_the_same_work(fake_clock):
    """Both tools, reading the same clock, must report the same per-call time. (The chapter compares
    them on the real clock, alternating the two; a test on a shared machine cannot.)"""
    clock = fake_clock(0.004)
    ours = benchmark(clock.work, device="cpu", warmup=1, trials=10, min_trial_s=0.02).median_s
    timer = torch_benchmark.Timer(stmt="work()", globals={"work": clock.work}, timer=clock)
    assert ours == pytest.approx(timer.blocked_autorange(min_run_time=0.2).median, rel=1e-9)
    assert ours == pytest.approx(0.004, rel=1e-9)


# --- the small helpers and bad input ------------------------------------------------------------

def test_flop_rates_and_mfu():
    assert achieved_flops_per_s(1e12, 0.5) == 2e12
    assert mfu(989.5e12, 1.0, 989.5e12) == 1.0
    assert mfu(2 * 8192**3, 1.6e-3, 989.5e12) == pytest.approx(0.6945, rel=1e-3)


@pytest.mark.parametrize("seconds, text", [(2.5, "2.5 s"), (0.00123, "1.23 ms"), (4.5e-6, "4.5 µs"), (3e-9, "3 ns")])
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_bad_input_is_refused_with_the_argument_named():
    with pytest.raises(TypeError, match="fn"):
        benchmark(42, device="cpu")
    with pytest.raises(ValueError, match="warmup"):
        benchmark(lambda: None, device="cpu", warmup=-1)
    with pytest.raises(ValueError, match="trials"):
        benchmark(lambda: None, device="cpu", trials=0)
    with pytest.raises(ValueError, match="min_trial_s"):
        benchmark(lambda: None, device="cpu", min_trial_s=0)
    with pytest.raises(ValueError, match="device"):
        benchmark(lambda: None, device="tpu")
    with pytest.raises(ValueError, match="flops"):
        achieved_flops_per_s(0, 1.0)
    with pytest.raises(ValueError, match="seconds"):
        achieved_flops_per_s(1.0, -1.0)
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        mfu(1.0, 1.0, 0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_asking_for_a_missing_gpu_fails_early():
    with pytest.raises(ValueError, match="no CUDA GPU"):
        benchmark(lambda: None, device="cuda")


# --- benchmarks/bench_matmul.py -----------------------------------------------------------------

@pytest.fixture(scope="module")
def bench_matmul():
    spec = importlib.util.spec_from_file_location("bench_matmul", ROOT / "benchmarks" / "bench_matmul.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_script_runs_on_cpu_and_writes_json(bench_matmul, tmp_path, capsys):
    out = tmp_path / "rows.json"
    rows = bench_matmul.main(["--device", "cpu", "--sizes", "16", "32", "--dtypes", "fp32", "--trials", "3",
                              "--timer-min-s", "0.02", "--threads", "1", "--json", str(out)])
    printed = capsys.readouterr().out
    assert [r["n"] for r in rows] == [16, 32]
    assert all(r["flops"] == 2 * r["n"] ** 3 for r in rows)
    assert all(r["mfu"] is None for r in rows)  # a CPU has no datasheet peak
    assert all(r["diff_pct"] == pytest.approx(100 * (r["median_s"] / r["timer_median_s"] - 1)) for r in rows)
    assert "diff" in printed and "no datasheet peak" in printed
    saved = json.loads(out.read_text())
    assert saved["gpu_spec"] is None and len(saved["rows"]) == 2


def test_bench_script_defaults_and_refusals(bench_matmul, capsys):
    cpu = torch.device("cpu")
    assert bench_matmul.default_dtypes(cpu) == ["fp32", "bf16"]
    assert max(bench_matmul.default_sizes(cpu, "fp32")) <= 512  # small on a CPU
    assert bench_matmul.default_sizes(torch.device("cuda"), "bf16")[-1] == 8192  # the hardware's regime
    rows = bench_matmul.main(["--device", "cpu", "--sizes", "8", "--dtypes", "tf32", "--no-compare"])
    assert rows == [] and "tensor-core" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--dtypes"):
        bench_matmul.main(["--device", "cpu", "--dtypes", "fp7"])
    with pytest.raises(SystemExit, match="min-mfu"):
        bench_matmul.main(["--device", "cpu", "--sizes", "8", "--dtypes", "fp32", "--no-compare", "--min-mfu", "0.5"])
