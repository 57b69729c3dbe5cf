"""Nothing a student receives holds an answer.

Everything a student gets is scanned: the installed package ``lectorch/``, the student notebooks
(``python -m grading student``'s output) and, when it is built, the class edition of the book
(``_build/class/html``; more folders with ``LECTORCH_SCAN_DIRS``, separated by ``os.pathsep``).
The scan looks for

- every value and prediction exercise's exact answer (from ``grading/``) written with three or
  more significant digits, or its reciprocal;
- a long literal (five or more significant digits) that gives such an answer by one product or
  ratio with a number of the exercise's own page (``10 / 10.03125``, ``19 / 29`` written out);
- the expected results of every function exercise's hidden cases (numbers and tensor elements
  with three or more significant digits),

and finds none. Powers of two (a bf16 256, a 4096-byte block) are left out: every shape in the
course is one, so no scan can hide them; so are numbers that a case's own inputs hold.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from _paths import ROOT
from grading import expected_values, hidden_cases, load_topics
from lectorch.exercises import exercises

#: extra folders to scan, e.g. a class edition built elsewhere
SCAN_ENV = "LECTORCH_SCAN_DIRS"
TEXT_SUFFIXES = {".py", ".ipynb", ".json", ".js", ".html", ".htm", ".txt", ".md", ".csv", ".po", ".yml",
                 ".yaml", ".cfg", ".toml", ".svg", ".xml"}
MAX_FILE = 20 * 2**20

# a decimal literal, not part of a word or a hex digest: 1_384_452, 19,104,477,611, 9.6e21, .5
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d[\d_]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)(?![\w])")


def significant(literal: str) -> int:
    """Significant digits of a literal as written, trailing zeros left out (``10.03125`` → 7,
    ``0.0625`` → 3, ``10.0`` → 1, ``1e3`` → 1)."""
    mantissa = re.split("[eE]", literal)[0].replace(",", "").replace("_", "")
    return len(mantissa.replace(".", "").strip("0"))  # trailing zeros tell nothing: 10.0 is 1 digit


def numbers_in(text: str) -> list[tuple[float, int]]:
    """(value, significant digits) of every decimal literal in ``text``."""
    out = []
    for m in _NUMBER.findall(text):
        try:
            value = float(m.replace(",", "").replace("_", ""))
        except ValueError:
            continue
        if math.isfinite(value) and value != 0:
            out.append((value, significant(m)))
    return out


def _power_of_two(x: float) -> bool:
    return x > 0 and math.log2(abs(x)).is_integer()


def _key(x: float, digits: int) -> str:
    return f"{abs(x):.{digits - 1}e}"


def _leaves(value):
    """The numbers of an expected result (ints, floats, float tensor elements)."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            yield from (float(v) for v in value.detach().double().reshape(-1).tolist())
        else:
            yield from (float(v) for v in value.reshape(-1).tolist())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name))
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def _worth_scanning(x: float, digits: int = 17) -> bool:
    """An answer that a scan can tell from the course's ordinary numbers: three or more
    significant digits, not a power of two."""
    return x != 0 and math.isfinite(x) and not _power_of_two(abs(x)) and significant(f"{abs(x):.15g}") >= 3


# --------------------------------------------------------------------------- what students get


def student_folders(tmp: Path) -> list[Path]:
    """Every folder a student receives: the package, the student notebooks, the class edition."""
    from grading.student import write_student_edition

    write_student_edition(tmp / "student")
    folders = [ROOT / "lectorch", tmp / "student"]  # the class book: test_the_class_edition_holds_no_answer
    folders += [Path(p) for p in os.environ.get(SCAN_ENV, "").split(os.pathsep) if p]
    return folders


def texts(folders: list[Path]):
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and path.stat().st_size <= MAX_FILE:
                yield path, path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def material(tmp_path_factory) -> dict:
    """Every literal of the student material: value → (significant digits, where first seen)."""
    found: dict[tuple[float, int], str] = {}
    files = 0
    for path, text in texts(student_folders(tmp_path_factory.mktemp("scan"))):
        files += 1
        for value, digits in numbers_in(text):
            found.setdefault((abs(value), digits), str(path))
    return {"numbers": found, "files": files}


# --------------------------------------------------------------------------- what must not be there


#: findings that are not leaks, or are another change's to remove, by (what, file name): each says why
KNOWN = {
    # ch09's loss floor (1.06) is another quantity that rounds like scale-ckpt-time's 1.0556
    ("scale-ckpt-time's answer", "09_training_loop.ipynb"): "a coincidence at three digits",
    # the class book's ch06 prints the tied autoencoder's 68,096 parameters; the scan's draw of random
    # allocation events (seed "scan:...") happens to peak at 68,096 bytes: a coincidence at five digits
    ("a hidden case of device-allocated-peak", "06_backward_6x.ipynb"): "a coincidence at five digits",
    # backprop-time-ratio is graded on hidden Crunchers; its public case (D = 4096, 8 layers) is the
    # page's own worked figure: ch06 prints the ratio by depth (1.875 at 8 layers of width 32, the
    # formula 2 - D/(L·D + 1)) and, after the measurement, the GPU run's FLOP ratio (1.88)
    ("backprop-time-ratio's answer", "06_backward_6x.ipynb"): "the page's public case, derived on the page",
    # ch06's FLOP ratio 1.88 (above) and the reciprocal of ch10's HFU, 0.531: a coincidence at three digits
    ("scale-hfu's answer (reciprocal)", "06_backward_6x.ipynb"): "a coincidence at three digits",
}
#: computed from the snippet the student is given (its uninterrupted run): nothing to hide
FROM_THE_STUDENTS_OWN_CODE = {"train-resume"}


@pytest.fixture(scope="module")
def secrets() -> dict:
    topics = load_topics()
    values = {ex_id: v for ex_id, v in expected_values(topics).items()
              if isinstance(v, (int, float)) and not isinstance(v, bool)}
    hidden: dict[str, list[tuple[float, int]]] = {}
    for ex_id, ex in exercises().items():
        if ex.kind != "function" or ex_id in FROM_THE_STUDENTS_OWN_CODE:
            continue
        for case in hidden_cases(topics, ex_id, random.Random(f"scan:{ex_id}")):
            inputs = set(_leaves((case.args, case.kwargs)))
            hidden.setdefault(ex_id, []).extend(
                (x, digits) for x, digits in _hidden_leaves(case.expected) if _worth_scanning(x) and x not in inputs)
    return {"values": values, "hidden": hidden}


#: a tensor of a hidden case holds many numbers: a literal counts as a copy of one of its elements
#: only with this many significant digits (fewer match some element by chance)
TENSOR_DIGITS = 6
#: a whole-number result (a byte or FLOP count) counts as copied with this many, a float with this
INT_DIGITS, FLOAT_DIGITS = 5, 4


def _hidden_leaves(value):
    """(number, digits a literal needs to count as its copy) of a hidden case's expected result."""
    if isinstance(value, torch.Tensor):
        yield from ((x, TENSOR_DIGITS) for x in _leaves(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _hidden_leaves(getattr(value, f.name))
    elif isinstance(value, dict):
        for v in value.values():
            yield from _hidden_leaves(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _hidden_leaves(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
        if not x.is_integer():
            yield x, FLOAT_DIGITS
        elif _odd_part(x) >= 100:  # 98304 = 3·2¹⁵ is any tensor's byte count, not a copied answer
            yield x, INT_DIGITS


def _odd_part(x: float) -> int:
    n = abs(int(x))
    while n and n % 2 == 0:
        n //= 2
    return n


def _page_numbers() -> dict[str, list[float]]:
    """The numbers of each exercise's page: the markdown from its ``{exercise-start}`` to its check."""
    pages: dict[str, list[float]] = {}
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        start = 0
        for i, cell in enumerate(cells):
            if cell.cell_type == "markdown" and "{exercise-start}" in cell.source:
                start = i
            for ex_id in re.findall(r'check\(\s*"([\w-]+)"', cell.source) if cell.cell_type == "code" else ():
                text = "\n".join(c.source for c in cells[start:i + 1] if c.cell_type == "markdown")
                pages.setdefault(ex_id, sorted({abs(v) for v, _ in numbers_in(text) if abs(v) != 1}))
    return pages


def test_numbers_are_read_as_written():
    assert numbers_in("10.03125 and 1_384_452, 19,104,477,611 or 9.6e21; .5") == [
        (10.03125, 7), (1384452.0, 7), (19104477611.0, 11), (9.6e21, 2), (0.5, 1)]
    assert numbers_in("n|1e-09|0c3c9f622dc1,118e0d7d1185") == [(1e-09, 1)]  # hex digests are not numbers
    assert significant("0.0625") == 3 and significant("4096") == 4 and significant("1000") == 1
    assert significant("10.0") == 1


def direct_findings(numbers: dict, secrets: dict) -> list[tuple]:
    """Literals that are an answer (or its reciprocal) or a hidden result, at their own precision."""
    by_digits: dict[int, dict[str, str]] = {}
    for (x, digits), where in numbers.items():
        if digits >= 3:
            by_digits.setdefault(digits, {})[_key(x, digits)] = where
    found = []

    def look(x: float, what: str, at_least: int = 3):
        for digits, keys in by_digits.items():
            where = keys.get(_key(x, digits)) if at_least <= digits <= 17 else None
            # a chapter's page and its notebook are one source (KNOWN names the notebook): the first
            # file a number is seen in may be either, the download notebooks having no outputs
            if where and (what, Path(where).with_suffix(".ipynb").name) not in KNOWN:
                found.append((what, f"{x:.10g}", f"{digits} digits", where))

    for ex_id, value in secrets["values"].items():
        if _worth_scanning(float(value)):
            look(float(value), f"{ex_id}'s answer")
            look(1 / float(value), f"{ex_id}'s answer (reciprocal)")
    for ex_id, leaves in secrets["hidden"].items():
        for x, digits in set(leaves):
            look(x, f"a hidden case of {ex_id}", digits)
    return found


def ratio_findings(numbers: dict, secrets: dict, pages: dict) -> list[tuple]:
    """Long literals (5+ digits) that give an answer by one product or ratio with a page's number."""
    longs = [(x, d, w) for (x, d), w in numbers.items() if d >= 5]
    xs = np.array([x for x, _, _ in longs])
    tol = np.array([0.5 * 10.0 ** (1 - d) for _, d, _ in longs])  # the literal's own precision
    found = []
    for ex_id, value in secrets["values"].items():
        e = abs(float(value))
        if not _worth_scanning(e) or ex_id not in pages or not longs:
            continue
        for p in pages[ex_id]:
            with np.errstate(over="ignore", divide="ignore"):  # a product past 1e308 is inf: no answer, not a warning
                derived_values = (("×", xs * p), ("÷", xs / p), ("into", p / xs))
            for name, derived in derived_values:
                for i in np.flatnonzero(np.abs(derived - e) <= tol * e):
                    found.append((ex_id, f"{longs[i][0]:.10g} {name} {p:g}", longs[i][2]))
    return found


@pytest.mark.slow  # writes the student edition of every chapter and reads all of it: `make test`
def test_student_material_holds_no_answer(material, secrets):
    assert material["files"] > 50  # the package and the notebooks were read
    found = direct_findings(material["numbers"], secrets)
    assert not found, "\n".join(map(str, found))


@pytest.mark.slow  # the same material
def test_no_long_literal_gives_an_answer_with_a_number_of_its_page(material, secrets):
    found = ratio_findings(material["numbers"], secrets, _page_numbers())
    assert not found, "\n".join(map(str, found))


def test_the_scan_finds_planted_answers(secrets):
    """Each kind of leak is found: an answer at 3 digits, a reciprocal, a hidden case's result, a
    ratio with a page's number."""
    values = secrets["values"]
    adam, zero2 = values["napkin-8bit-adam-bytes"], values["napkin-zero2-params"]
    hidden_ex, hidden = next((k, x) for k, v in secrets["hidden"].items() for x, d in v
                             if significant(f"{x:.15g}") >= d)
    text = (f"x = {adam:.4g}  # an answer\ny = {1 / zero2:.4e}  # a reciprocal\n"
            f"z = {hidden:.15g}  # a hidden result\nr = {adam / 7:.12g}  # times 7 of its page\n")
    numbers = {(abs(v), d): "planted.py" for v, d in numbers_in(text)}
    whats = {f[0] for f in direct_findings(numbers, secrets)}
    assert {"napkin-8bit-adam-bytes's answer", "napkin-zero2-params's answer (reciprocal)",
            f"a hidden case of {hidden_ex}"} <= whats, whats
    ratios = ratio_findings(numbers, secrets, {"napkin-8bit-adam-bytes": [7.0]})
    assert any(ex_id == "napkin-8bit-adam-bytes" for ex_id, *_ in ratios), ratios


#: a measured panel's recorded grid (tools/book/sphinx_lectorch.py): thousands of this machine's
#: measurements at four digits, which match some three- or four-digit answer by chance
#: a drawing's geometry (SVG coordinates, sizes and transforms): numbers placed by the plotting
#: library, never computed answers; a figure's words (its <text> content) are kept and read
SVG_GEOMETRY = re.compile(r'\s(?:d|x|y|x1|x2|y1|y2|cx|cy|r|rx|ry|dx|dy|width|height|points|transform|viewBox|style'
                          r'|clip-path|stroke-[a-z]+|font-size)="[^"]*"')
RECORDING_SCRIPT = re.compile(r'<script type="application/json" class="lp-recording">.*?</script>', re.S)


def class_edition_texts(root: Path):
    """The class book's texts as a student reads them, less what cannot hold a computed answer:
    the recorded grids of measured panels (in the pages and in the notebooks' output metadata)
    and third-party assets under _static (theme, fonts, widget manager; lectorch's own are kept)."""
    shown_on = {}  # a figure's file -> the first page that shows it (the chapter it belongs to)
    for page in sorted(root.rglob("*.html")):
        for name in re.findall(r'_images/([^"\'?#]+)', page.read_text(encoding="utf-8", errors="replace")):
            shown_on.setdefault(name, page)
    for path, text in texts([root]):
        if "_static" in path.relative_to(root).parts and not path.name.startswith("lectorch"):
            continue
        if path.parent.name == "_images":
            path = shown_on.get(path.name, path)
        if path.suffix == ".ipynb":
            nb = json.loads(text)
            for cell in nb.get("cells", []):
                for output in cell.get("outputs", []):
                    for meta in output.get("metadata", {}).values():
                        if isinstance(meta, dict):
                            meta.pop("recording", None)
            text = json.dumps(nb)
        yield path, SVG_GEOMETRY.sub("", RECORDING_SCRIPT.sub("", text))


@pytest.mark.book
def test_the_class_edition_holds_no_answer(book_edition, secrets):
    """The class book (``make book EDITION=class``), built (or reused) for this run: no answer in
    its pages, ``_sources`` or download notebooks, directly or by a ratio with a page's number."""
    numbers: dict[tuple[float, int], str] = {}
    files = 0
    for path, text in class_edition_texts(book_edition("class")):
        files += 1
        for value, digits in numbers_in(text):
            numbers.setdefault((abs(value), digits), str(path))
    assert files > 50  # the pages of both languages were read
    found = direct_findings(numbers, secrets) + ratio_findings(numbers, secrets, _page_numbers())
    assert not found, "\n".join(map(str, found))
