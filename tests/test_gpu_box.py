"""The GPU box's package list and the carried list: every module the course imports is on one of them.

No wheels (a fresh clone has no wheels/ folder). The guard's import probe of everything the course
imports (about 20 s) runs in `make rehearse`, which CI runs; the full proof is `make gpu-rehearsal`
(a replica of the box), which `make test` does not run.
"""

from __future__ import annotations

import re
import sys
import tomllib

import pytest
from packaging.specifiers import SpecifierSet

from _paths import ROOT

import gpu_box

pytestmark = pytest.mark.slow


@pytest.mark.rehearsal
def test_every_module_the_course_imports_is_on_the_box_or_carried():
    problems = gpu_box.guard()
    assert problems == [], "\n".join(problems)


@pytest.mark.rehearsal
@pytest.mark.parametrize("dropped", ["beartype", "nbval", "myst-nb", "ipykernel"])
def test_the_guard_fails_when_a_needed_package_is_not_carried(tmp_path, dropped):
    reduced = tmp_path / "carried.txt"
    reduced.write_text("\n".join(p for p in gpu_box.pins(gpu_box.CARRIED)
                                 if gpu_box.norm(p.split("==")[0]) != dropped) + "\n")
    problems = gpu_box.guard(carried=reduced)
    assert problems and all("nor carried (carried.txt)" in p for p in problems)
    assert any(f"from {dropped.replace('-', '_')}" in p.lower().replace("-", "_") for p in problems), problems


@pytest.mark.rehearsal
def test_the_guard_sees_what_a_package_imports_at_run_time():
    # matplotlib 3.11 imports fontTools with pyplot: a list of direct imports alone would miss it
    found = gpu_box.loaded_modules(sys.executable)  # as guard() calls it: the probe's result is cached
    assert "fontTools" in found and "myst_nb" in found and "beartype" in found


def test_the_box_list_is_pinned_and_from_the_image():
    pins = gpu_box.box_pins()
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.+]+", p) for p in pins), pins
    assert {"torch==2.11.0", "numpy==2.5.2", "triton==3.6.0"} <= set(pins)
    names = {gpu_box.norm(p.split("==")[0]) for p in pins}
    assert names <= gpu_box.image_names(), names - gpu_box.image_names()
    assert len(gpu_box.image_names()) > 180
    assert not {"nbval", "ipykernel", "beartype", "myst-nb", "nbclient"} & gpu_box.image_names()


def test_the_carried_list_is_pinned_and_shadows_nothing_of_the_box():
    carried = gpu_box.pins(gpu_box.CARRIED)
    assert all("==" in p for p in carried)
    names = gpu_box.carried_names()
    assert {gpu_box.norm(n) for n in gpu_box.NEEDS} <= names
    assert not names & gpu_box.image_names(), names & gpu_box.image_names()
    assert not names & {gpu_box.norm(n) for n in gpu_box.OPTIONAL}


@pytest.mark.skipif(not (ROOT / "wheels" / "gpu-cp312").is_dir(), reason="no `make gpu-wheels` folder here")
def test_the_wheels_folder_is_the_carried_list():
    folder = ROOT / "wheels" / "gpu-cp312"
    assert gpu_box.pins(folder / "requirements.txt") == gpu_box.pins(gpu_box.CARRIED)
    got = {(gpu_box.norm(w.name.split("-")[0]), w.name.split("-")[1]) for w in folder.glob("*.whl")}
    want = {(gpu_box.norm(p.split("==")[0]), p.split("==")[1]) for p in gpu_box.pins(gpu_box.CARRIED)}
    assert got == want


def test_the_supported_torch_versions_are_the_tested_ones():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    dep = next(d for d in deps if d.startswith("torch"))
    spec = SpecifierSet(dep[len("torch"):])
    locked = next(p for p in gpu_box.pins(ROOT / "requirements.txt") if p.startswith("torch=="))
    tested = {"2.11.0", locked.split("==")[1].split("+")[0]}  # the box (rehearsed) and the locks
    assert all(v in spec for v in tested), (spec, tested)
    assert "2.10.0" not in spec  # the range itself is held to the torch matrix's result (tests/test_support.py)
    assert f"`{dep}`" in (ROOT / "README.md").read_text()  # stated where readers look
