"""The checkers answer in the student's language: every message of lectorch.check and of the
grader's report goes through one catalog (the `checker` context of _ui.po, shipped in the package as
lectorch/locale/*.json); a 中文 notebook sets it, English is the default."""

from __future__ import annotations

import ast
import string

import pytest

from lectorch import i18n
from lectorch.exercises import check, reset_attempts

from _paths import ROOT
import i18n as book_i18n
import sphinx_lectorch_i18n as ui

CJK = "\u4e00-\u9fff"


@pytest.fixture(autouse=True)
def english_after(monkeypatch):
    monkeypatch.delenv(i18n.ENV, raising=False)
    yield
    i18n.set_language(None)


def test_the_package_catalog_is_the_po_files_checker_messages():
    shipped = (ROOT / "lectorch" / "locale" / f"{book_i18n.LANGUAGE}.json").read_text(encoding="utf-8")
    assert shipped == book_i18n.package_text(), "run `python tools/book/i18n.py package` (make translations does)"


def _fields(text: str) -> set[str]:
    return {name.split("!")[0].split(":")[0] for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_translations_keep_the_format_fields():
    """A translation may drop only the English plural's {s}; it never invents a field."""
    catalog = i18n.catalog(book_i18n.LANGUAGE)
    problems = [f"{english!r}: {_fields(english)} vs {_fields(chinese)}" for english, chinese in catalog.items()
                if _fields(chinese) != _fields(english) - {"s"}]
    assert not problems, "\n".join(problems[:20])


def test_tr_is_given_literals_for_the_extractor():
    """``tr(f"…")`` would be looked up after formatting, and extracted as nothing: messages are
    ``tr("… {name} …").format(name=…)``."""
    found = []
    for folder in ("lectorch", "grading"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("tr", "N_") and node.args \
                        and isinstance(node.args[0], ast.JoinedStr):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"tr() of an f-string: {found}"


def test_every_checker_message_is_in_the_catalog():
    missing = [m for m in ui.checker_messages() if m not in i18n.catalog(book_i18n.LANGUAGE)]
    assert not missing, f"{len(missing)} checker messages without a translation (make translations): {missing[:5]}"


def test_the_verdicts_in_chinese_and_english():
    wrong = lambda shape, dim0, dim1: (1,) * len(shape)  # noqa: E731
    i18n.set_language("zh_CN")
    reset_attempts("views-transpose-strides")
    first = check("views-transpose-strides", wrong)
    assert first.status == "failed" and "第 1 个用例" in first.message and "改正后再运行一次检查" in first.message
    again = check("views-transpose-strides", wrong)
    assert "提示：" in again.message, again.message  # the hint, from the exercise's data, in Chinese
    assert check("views-transpose-strides", ...).message.startswith("尚未实现")
    i18n.set_language("en")
    assert check("views-transpose-strides", ...).message.startswith("Not implemented yet")


def test_the_language_from_the_environment_and_bad_names(monkeypatch):
    monkeypatch.setenv(i18n.ENV, "zh-CN")
    assert i18n.get_language() == "zh_CN" and i18n.tr("exactly") == "精确相等"
    i18n.set_language("en")  # the notebook's own choice wins
    assert i18n.tr("exactly") == "exactly"
    with pytest.raises(ValueError, match="set_language"):
        i18n.set_language("klingon")


def test_the_grader_speaks_each_notebooks_language():
    assert i18n.notebook_language({"lectorch": {"language": "zh_CN"}}) == "zh_CN"
    assert i18n.notebook_language({"lectorch": {"language": "xx"}}) == "en"  # a tampered name: the default
    assert i18n.notebook_language(None) == "en"
    with i18n.language(None):
        i18n.switch("zh_CN")
        assert i18n.tr("exactly") == "精确相等"
    assert i18n.tr("exactly") == "exactly"


@pytest.mark.slow
def test_a_chinese_notebooks_exercise_filled_wrong_and_right(tmp_path):
    """The zh reader notebook's setup cell, then an exercise of chapter 03 filled wrong and right,
    run in a plain kernel as a student runs it: the checker's verdicts are Chinese."""
    import nbformat
    from nbclient import NotebookClient

    import plain_notebook

    chapter = ROOT / "chapters" / "03_strides_views.ipynb"
    source = nbformat.read(chapter, as_version=4)
    nb = plain_notebook.reader_notebook(source, chapter.name, "zh_CN")
    setup = next(c for c in nb.cells if c.cell_type == "code")
    solution = next(c.source for c in source.cells if "solution" in c.metadata.get("tags", [])
                    and "def transposed_strides" in c.source)
    call = 'print(lectorch.check("views-transpose-strides", transposed_strides))'
    cells = [setup, nbformat.v4.new_code_cell("def transposed_strides(shape, dim0, dim1):\n    return (1,)\n" + call),
             nbformat.v4.new_code_cell(solution + "\n" + call)]
    run = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    NotebookClient(run, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    wrong, right = ("".join(o.get("text", "") for o in c.outputs) for c in run.cells[1:])
    assert wrong.startswith("❌") and "第 1 个用例" in wrong, wrong
    assert right.startswith("✅") and "正确" in right, right


def test_a_flagged_answer_gets_its_reason_in_chinese():
    """The review's reasons are checker text too: a 中文 practice check of an answer that reads
    another function's closure names the line and says why in Chinese."""
    def peek_closure(fn, sync, clock):
        device = fn.__closure__[0].cell_contents
        return device.steady_s

    i18n.set_language("zh_CN")
    result = check("flops-honest-timer", peek_closure)
    assert result.status == "needs review" and "`.__closure__` 读取了函数的闭包" in result.message, result.message
    i18n.set_language("en")
    assert "`.__closure__` reads a function's closure" in check("flops-honest-timer", peek_closure).message
