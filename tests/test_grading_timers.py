"""The grader judges the debug timers (flops-honest-timer, device-timing-debug) by the calls they
make, as the practice check does: the sandbox runs the answer through the exercise's runner, and the
verdict comes from the logged calls (warm-up and a sync before the clock is read), never from a
number the simulated device holds."""

from __future__ import annotations

import inspect

import pytest

import grading
from grading import grader, harness
from grading.judge import judge
from grading.topics.device import time_copy
from lectorch.exercises import get_exercise
from _answers.flops import time_call  # the honest timer the flops tests use


# the honest answers: the reference timers the other tests use (one definition each)
honest_timer = time_call
honest_copy_timing = time_copy


def peek_closure(fn, sync, clock, *rest, **kw):  # reads the simulated device's own number
    device = fn.__closure__[0].cell_contents if fn.__closure__ else fn.__self__
    return getattr(device, "steady_s", None) or device.work_s + device.launch_s / kw.get("repeats", 1)


def peek_and_time(fn, sync, clock, *rest, **kw):  # times honestly, then returns the device's number
    honest_timer(fn, sync, clock)
    return peek_closure(fn, sync, clock, *rest, **kw)


def mean_of_warm_trials(fn, sync, clock):  # warm, synchronised, but a plain mean over a hiccup
    for _ in range(3):
        fn()
    sync()
    start = clock()
    for _ in range(5):
        fn()
    sync()
    return (clock() - start) / 5


def no_final_sync(copy, synchronize, clock, repeats=10):
    copy()
    synchronize()
    start = clock()
    for _ in range(repeats):
        copy()
    return (clock() - start) / repeats


_BUNDLE: dict = {}


def bundle_entry(ex_id: str) -> dict:
    if not _BUNDLE:  # built once: loading the grading modules costs seconds
        _BUNDLE.update(grading.build_bundle(7, exercise_ids=["flops-honest-timer", "device-timing-debug"]))
    return _BUNDLE["exercises"][ex_id]


def grade_in_harness(ex_id: str, answer) -> tuple[str, str]:
    """Grade ``answer`` on the bundle's cases as the sandbox's kernel and the grader do: the plan's
    refusals and runner, inputs decoded from the bundle's plain data, the verdict by ``judge``."""
    ex = get_exercise(ex_id)
    entry = bundle_entry(ex_id)
    refuse, runner = grader._refusals().get(ex_id), grader._runners().get(ex_id)
    results = []
    for case in entry["cases"]:
        args, kwargs = harness.from_inputs(case["call"]) if case.get("call") else (
            harness.from_inputs(case["args"]), harness.from_inputs(case["kwargs"]))
        results.append(harness._call(answer, args, kwargs, 0, refuse, runner))
    record = {"found": True, "callable": True, "cases": results}
    return judge(ex, entry, record, "answer")


def test_the_plan_carries_each_timers_runner():
    runners = grader._runners()
    assert runners["flops-honest-timer"] == "lectorch.exercises.flops:traced_call"
    assert runners["device-timing-debug"] == "lectorch.exercises.device:traced_copy_timing"
    with pytest.raises(ValueError, match="lectorch.exercises"):
        harness._runner("os:system")


def test_the_bundle_holds_no_number_of_the_simulated_devices():
    for ex_id in ("flops-honest-timer", "device-timing-debug"):
        entry = bundle_entry(ex_id)
        assert entry["cases"] and all(case["expected"] is None for case in entry["cases"])


@pytest.mark.parametrize("ex_id, honest, wrong", [
    ("flops-honest-timer", honest_timer, [peek_closure, peek_and_time, mean_of_warm_trials]),
    ("device-timing-debug", honest_copy_timing, [peek_closure, peek_and_time, no_final_sync]),
])
def test_the_grader_judges_timers_by_the_calls_made(ex_id, honest, wrong):
    status, message = grade_in_harness(ex_id, honest)
    assert status == "passed", message
    for answer in wrong:
        status, message = grade_in_harness(ex_id, answer)
        assert status == "failed", (answer.__name__, message)


# --------------------------------------------------------------------- through the real sandbox

TIMER_OK = "import statistics\n" + inspect.getsource(time_call)  # the honest timer, as a student writes it
TIMER_PEEK = '''def time_call(fn, sync, clock):
    device = fn.__closure__[0].cell_contents if fn.__closure__ else fn.__self__
    return device.steady_s'''


@pytest.mark.skipif(not grading.sandbox.bwrap_works(), reason="bubblewrap is not usable here")
@pytest.mark.slow  # a grading run: two sandboxed kernels
def test_in_the_sandbox_an_honest_timer_passes_and_reading_the_devices_number_fails(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    def notebook(body: str):
        return new_notebook(cells=[new_code_cell("import lectorch"), new_code_cell(body),
                                   new_code_cell('lectorch.check("flops-honest-timer", time_call)')])

    ex_id = "flops-honest-timer"
    (tmp_path / "chapters").mkdir()
    nbformat.write(notebook(TIMER_OK), tmp_path / "chapters" / "timer.ipynb")
    for student, body in (("honest", TIMER_OK), ("peeker", TIMER_PEEK)):
        (tmp_path / "subs" / student).mkdir(parents=True)
        nbformat.write(notebook(body), tmp_path / "subs" / student / "timer.ipynb")
    bundle_entry(ex_id)
    bundle = {**_BUNDLE, "exercises": {ex_id: bundle_entry(ex_id)}}
    report = grader.grade_folder(tmp_path / "subs", bundle=bundle, reference_dir=tmp_path / "chapters",
                                 registry={ex_id: get_exercise(ex_id)}, timeout_s=120, memory_gb=2.0,
                                 jobs=2, workdir=tmp_path)
    grades = {g.submission: (g.status, g.message) for g in report.grades}
    assert grades["honest"][0] == "passed", grades
    # its line is found (fn.__closure__), and its cases fail too: the device lives outside its process
    assert grades["peeker"][0] == "needs review" and "__closure__" in grades["peeker"][1], grades
    assert "Its hidden cases: error" in grades["peeker"][1] and "steady_s" in grades["peeker"][1], grades
