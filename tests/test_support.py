"""What runs where, stated once: pyproject.toml (torch's range, requires-python) and the committed
result of `make torch-matrix` (benchmarks/torch-matrix.json) are the source; every page that states
which Python or torch the course supports agrees with them, and the chapters' install cell keeps a
supported torch and stops, saying what to do, before pip could replace another."""

from __future__ import annotations

import json
import re
import sys

import pytest
from babel.messages.pofile import read_po

import lock
import sphinx_lectorch
import torch_matrix

from _paths import ROOT
PAGES = {"README.md": ROOT / "README.md", "running": ROOT / "chapters" / "reference" / "running.md",
         "intro": ROOT / "chapters" / "intro.md"}
CATALOGS = {name: ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "chapters" / f"{name}.po"
            for name in ("intro", "reference/running")}


def _result() -> dict:
    if not torch_matrix.RESULT.exists():
        pytest.skip("no committed result of `make torch-matrix` (benchmarks/torch-matrix.json) yet: run it, commit it")
    return torch_matrix.load()


def _minor(text: str) -> tuple[int, int]:
    return tuple(int(x) for x in text.split(".")[:2])


def _phrases() -> dict[str, tuple[str, str]]:
    """The support statements every page makes, in English and 中文, built from the source."""
    (a, b), (c, d) = sphinx_lectorch.torch_range()
    first, last = f"{a}.{b}", f"{c}.{d - 1}"
    patch = lock.FIRST_PATCH
    en = [p + (f" ({patch[p]} or newer)" if p in patch else "") for p in lock.SUPPORTED]
    zh = [p + (f"（{patch[p]} 或更新）" if p in patch else "") for p in lock.SUPPORTED]
    return {
        "python": (f"CPython {', '.join(en[:-1])} or {en[-1]}", f"CPython {'、'.join(zh[:-1])} 或 {zh[-1]}"),
        "torch": (f"torch {first} to {last}", f"torch {first} 至 {last}"),
    }


def test_pyproject_admits_exactly_the_releases_that_passed_the_matrix():
    result = _result()
    tried = {row["release"] for row in result["rows"]}
    assert set(torch_matrix.RELEASES) <= tried, f"releases never run by make torch-matrix: {set(torch_matrix.RELEASES) - tried}"
    passing = torch_matrix.passing_releases(result)
    lo, hi = sphinx_lectorch.torch_range()
    admitted = sorted((r for r in tried if lo <= _minor(r) < hi), key=_minor)
    assert admitted == passing, (f"pyproject.toml admits torch {admitted}, make torch-matrix passed {passing}: "
                                 "the range must be exactly the passing releases")
    # and nothing untested on either side
    assert f"{lo[0]}.{lo[1]}" in tried and f"{hi[0]}.{hi[1] - 1}" in tried
    for row in result["rows"]:
        assert row["chapters"]["of"] == len(torch_matrix.CHAPTERS), "the matrix ran before a chapter was added: rerun it"


def test_requires_python_is_what_the_book_needs():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^requires-python = ">=([\d.]+)"', text, re.M).group(1) == lock.PYTHON
    check = re.search(r"^PY_CHECK := .*\((\d+), (\d+), (\d+)\) <= sys.version_info", (ROOT / "Makefile").read_text(), re.M)
    assert ".".join(check.groups()) == lock.PYTHON
    for row in torch_matrix.load()["rows"]:  # (none before the first run)
        minor = ".".join(row["python"].split(".")[:2])
        assert minor in lock.SUPPORTED, row
        first = lock.FIRST_PATCH.get(minor, f"{minor}.0")
        assert tuple(map(int, row["python"].split("."))) >= tuple(map(int, first.split("."))), row


def test_the_weekly_job_tries_the_newest_torch_on_every_supported_python():
    import yaml

    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "torch-matrix.yml").read_text())
    job = flow["jobs"]["newest-torch"]
    assert tuple(job["strategy"]["matrix"]["python"]) == lock.SUPPORTED
    assert flow[True]["schedule"], "no weekly schedule"  # YAML 1.1 reads the key `on` as True
    assert any("NEWEST=1" in step.get("run", "") for step in job["steps"])


@pytest.mark.parametrize("version, works", [("3.11.4", False), ("3.11.5", True), ("3.12.1", True), ("3.13.0", False),
                                            ("3.13.1", True), ("3.14.0", False), ("3.10.13", False)])
def test_the_matrix_runs_only_on_a_supported_python(version, works):
    why = torch_matrix.unsupported_python(version)
    assert (why is None) == works and (works or "--python" in why)


def test_the_torch_internals_were_checked_on_every_release_that_passed():
    from lectorch.step_memory import _Internals

    for row in _result()["rows"]:
        if torch_matrix.passed(row):  # its unit tests include tests/test_step_memory.py's check of them
            assert row["torch"].split("+")[0] in _Internals.CHECKED_ON, row["torch"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_states_the_one_support(page):
    text = " ".join(PAGES[page].read_text(encoding="utf-8").split())
    for what, (english, _) in _phrases().items():
        assert english in text, f"{page} does not state the supported {what} as the source does: {english!r}"
    lo, hi = sphinx_lectorch.torch_range()  # which test_pyproject_admits_exactly… holds to the matrix
    for match in re.finditer(r"torch\s*(?:≥|>=|version|versions)?\s*(\d+\.\d+)", text):
        assert lo <= _minor(match.group(1)) < hi, f"{page}: {match.group(0)!r} names a torch the course does not support"
    for match in re.finditer(r"Python\s*(3\.\d+)(\+| or newer| and newer)", text):
        assert match.group(1) == ".".join(lock.PYTHON.split(".")[:2]), f"{page}: {match.group(0)!r}"
    assert "Colab's own torch is kept)" not in text  # only a torch inside the range is kept


@pytest.mark.parametrize("catalog", CATALOGS)
def test_the_chinese_pages_state_the_same_support(catalog):
    with open(CATALOGS[catalog], "rb") as f:
        messages = [m for m in read_po(f) if m.id]
    for what, (english, chinese) in _phrases().items():
        found = [m for m in messages if english in " ".join(m.id.split())]
        assert found, f"{catalog}.po: no message states the supported {what} ({english!r})"
        for m in found:
            assert chinese in m.string and not m.fuzzy, f"{catalog}.po: {m.id!r} is translated without {chinese!r}"


def test_the_running_page_shows_the_committed_matrix():
    assert torch_matrix.table(_result())[1:], "the committed result has no row"
    assert "{lectorch-torch-matrix}" in PAGES["running"].read_text(encoding="utf-8")  # rendered by table()
    assert "| torch |" not in PAGES["README.md"].read_text(encoding="utf-8")  # one table, on the running page


# The install cell, run as IPython runs it (its %pip line becomes a call of get_ipython()), in a
# Python where lectorch is not importable and importlib.metadata reports a given torch.
PROBE = """
import importlib.metadata, json, sys
sys.modules["lectorch"] = None  # `import lectorch` raises ImportError
found = json.loads(sys.argv[1])
def version(name):
    if name != "torch" or found is None:
        raise importlib.metadata.PackageNotFoundError(name)
    return found
importlib.metadata.version = version
calls = []
class Shell:
    def run_line_magic(self, name, line):
        calls.append([name, line])
namespace = {"get_ipython": Shell}
try:
    exec(sys.stdin.read(), namespace)
except RuntimeError as err:
    print(json.dumps({"error": str(err), "calls": calls}))
else:
    print(json.dumps({"error": None, "calls": calls, "keep": namespace.get("keep")}))
"""


def _run_install_cell(torch_version: str | None) -> dict:
    import subprocess

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(sphinx_lectorch.install_cell_source())
    probe = subprocess.run([sys.executable, "-c", PROBE, json.dumps(torch_version)], input=code,
                           capture_output=True, text=True, check=True)
    return json.loads(probe.stdout)


@pytest.mark.parametrize("found", ["2.11.0", "2.14.1+cu130", "2.15.0"])
def test_the_install_cell_keeps_a_supported_torch(found):
    done = _run_install_cell(found)
    assert done["error"] is None
    [(magic, line)] = done["calls"]
    assert magic == "pip" and line.endswith("{keep}") and sphinx_lectorch.install_command().split(" ", 2)[2] in line
    assert done["keep"] == f"torch=={found}"  # pip is handed the kernel's torch as a requirement: never another


@pytest.mark.parametrize("found", ["2.10.0", "2.16.0", "3.0.0+cpu"])
def test_the_install_cell_stops_before_pip_with_another_torch(found):
    done = _run_install_cell(found)
    assert done["calls"] == [], "pip ran"
    english = _phrases()["torch"][0]
    assert f"This kernel has torch {found}" in done["error"] and f"supports {english}" in done["error"]
    assert "restart the kernel" in done["error"]


def test_the_install_cell_installs_torch_where_the_kernel_has_none():
    done = _run_install_cell(None)
    assert done["error"] is None and done["keep"] == "" and len(done["calls"]) == 1
