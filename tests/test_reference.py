"""lectorch.reference: reading committed reference GPU runs and showing them beside the reader's numbers."""

import json

import pytest

from lectorch import reference

RUN = {
    "device": "NVIDIA H200", "driver": "580.65", "torch": "2.11.0+cu130", "cuda": "13.0", "python": "3.12.3",
    "date": "2026-12-01", "lectorch_commit": "0123456789abcdef",
    "nbval": {"chapters/00_napkin_math.ipynb": "passed", "chapters/09_training_loop.ipynb": "failed"},
    "measurements": {
        "h2d_pinned_1GiB_GBps": 52.31, "h2d_pageable_1GiB_GBps": 11.9,
        "matmul_bf16_8192": {"seconds": 0.00141, "tflops": 780.2, "mfu": 0.789},
        "step_peak_bytes": {"predicted": 1000, "measured": 1010},
        "checkpointing_time_overhead": 0.3,
    },
}


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "nvidia-h200.json").write_text(json.dumps(RUN))
    other = dict(RUN, device="NVIDIA A100-SXM4-80GB", measurements={"h2d_pinned_1GiB_GBps": 24.0})
    (tmp_path / "nvidia-a100.json").write_text(json.dumps(other))
    return tmp_path


def test_table_labels_every_run_and_formats_values(folder):
    text = reference.table("h2d_pinned_1GiB_GBps", "matmul_bf16_8192", "step_peak_bytes", directory=folder)
    lines = text.splitlines()
    lines = lines[lines.index("reference GPU runs (measured by `make gpu-check`)"):]
    assert lines[1].split() [:3] == ["device", "torch", "date"]
    assert len(lines) == 4  # title, header, two runs
    a100, h200 = lines[2], lines[3]  # sorted by device name
    assert a100.startswith("NVIDIA A100-SXM4-80GB") and "24 GB/s" in a100 and "not measured" in a100
    assert "2.11.0+cu130" in h200 and "2026-12-01" in h200
    assert "52.3 GB/s" in h200 and "780 TFLOP/s, MFU 0.79, 1.41 ms" in h200
    assert "predicted 1000 B, measured 1010 B (×1.01)" in h200


def test_no_run_shows_a_labelled_prediction_and_no_maintainer_steps(tmp_path, capsys):
    reference.show("matmul_bf16_8192", "h2d_pinned_1GiB_GBps", directory=tmp_path)
    out = capsys.readouterr().out
    first, *rows, last = out.strip().splitlines()
    assert "prediction" in first and "H100 SXM" in first and "not a measurement" in first
    assert rows[0].startswith("matmul_bf16_8192") and "989.5 TFLOP/s" in rows[0]
    assert rows[1].startswith("h2d_pinned_1GiB_GBps") and "63 GB/s" in rows[1]
    assert "no GPU run is recorded" in last
    # what a maintainer does lives in the README and the environment page, not in a chapter
    assert "make gpu-check" not in out and "commit" not in out
    assert "make gpu-check" in reference.describe_runs(tmp_path)[0]


def test_every_key_has_a_prediction_from_the_datasheet():
    for key in reference.KEYS:
        assert reference.predict(key), key
    # the roofline of an 8192³ bf16 matmul on an H100: 2·8192³ FLOPs at 989.5 TFLOP/s
    assert "1.11 ms" in reference.predict("matmul_bf16_8192")
    # an A100 sits on PCIe 4.0 (31.5 GB/s) and has 312 TFLOP/s of dense bf16
    assert "31.5 GB/s" in reference.predict("h2d_pinned_1GiB_GBps", gpu="A100")
    assert "312 TFLOP/s" in reference.predict("matmul_bf16_8192", gpu="A100")


def test_with_runs_the_prediction_comes_first(folder):
    text = reference.table("matmul_bf16_8192", directory=folder)
    assert text.index("prediction") < text.index("reference GPU runs") < text.index("NVIDIA H200")


def test_env_variable_chooses_the_folder(folder, monkeypatch):
    monkeypatch.setenv(reference.REFERENCE_DIR_ENV, str(folder))
    assert reference.default_directory() == folder
    assert [r.file for r in reference.load_runs()] == ["nvidia-a100.json", "nvidia-h200.json"]


def test_unknown_key_is_named_with_a_suggestion(folder):
    with pytest.raises(ValueError, match="matmul_bf16_8192"):
        reference.table("matmul_bf16_8129", directory=folder)
    with pytest.raises(TypeError):
        reference.table(3, directory=folder)


def test_malformed_file_is_named(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"device": "x"}))
    with pytest.raises(ValueError, match="bad.json.*lacks torch, date, measurements"):
        reference.load_runs(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        reference.load_runs(tmp_path)


def test_describe_runs_lists_every_run(folder):
    lines = reference.describe_runs(folder)
    assert len(lines) == 2
    h200 = lines[1]
    assert "NVIDIA H200, torch 2.11.0+cu130, 2026-12-01" in h200
    assert "CUDA 13.0" in h200 and "driver 580.65" in h200 and "nbval 1/2 chapters passed" in h200
    assert "commit 0123456789" in h200


def test_every_chapter_key_is_known():
    chapter_keys = ["h2d_pinned_1GiB_GBps", "h2d_pageable_1GiB_GBps", "matmul_bf16_8192", "matmul_fp32_8192",
                    "matmul_tf32_8192", "matmul_bf16_1024", "matmul_bf16_2048", "matmul_bf16_4096",
                    "backward_over_forward_time", "step_peak_bytes", "bf16_over_fp32_step_time",
                    "checkpointing_time_overhead", "h2d_overlap_speedup"]
    assert set(chapter_keys) == set(reference.KEYS)


def test_committed_runs_parse():
    for run in reference.load_runs():  # the repository's benchmarks/reference (none yet is fine)
        assert set(run.measurements) <= set(reference.KEYS), run.file


def test_a_dry_run_file_is_refused(tmp_path):
    (tmp_path / "cpu.json").write_text(json.dumps(dict(RUN, dry_run=True)))
    with pytest.raises(ValueError, match="DRY_RUN=1.*not a reference run"):
        reference.load_runs(tmp_path)


def test_missing_halves_of_a_pair_are_shown_as_unknown():
    text = reference.format_value("step_peak_bytes", {"predicted": 2048, "measured": None})
    assert text == "predicted 2 KiB, measured ?"
