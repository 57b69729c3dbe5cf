"""One vocabulary in the 中文 edition: the glossary (chapters/reference/glossary.md) is the style
sheet, and each concept has one rendering in every catalog (pages, the book's generated text, the
checkers' messages). A rendering the course does not use is rejected with the preferred one; a word
that legitimately means something else is banned only where the English says the concept."""

from __future__ import annotations

import re

import pytest

import i18n  # noqa: E402

#: (banned in a translation, the course's rendering, only where the English matches this, or None)
BANNED = [
    (r"(?<!切片)步长(?!的切片)", "步幅 (stride; 步长 stays for a step size, a slice's step, a quantisation step)",
     r"\bstrides?\b"),
    (r"拷贝", "复制 (copy)", None),
    (r"批大小|批量大小", "批次大小 (batch size; the glossary's 批次)", None),
    (r"重新计算", "重计算 (recomputation)", None),
    (r"拐点", "屋脊点 (the roofline's ridge point)", None),
    (r"词元量", "词元数 (number of tokens)", None),
    (r"步骤", "步 (a training step; 训练步)", None),
    (r"第 0\d", "第 5 章 (chapter numbers without a leading zero)", None),
    (r"(测量|读取|分配) 显存", "测量显存 (no space inside a Chinese phrase)", None),
    (r"Stanford 大学|Spring 学期", "斯坦福大学, 春季学期", None),
    (r"Xavier and Kaiming|running the course", "the English translated", None),
    (r"绝对值", "数值本身 (|x| is 绝对值; 'in absolute units' is not)", r"\babsolute\b(?! value)"),
    (r"列印", "打印 (Taiwan's usage)", None),
    (r"GPU 内存", "显存 (GPU memory; 内存 is the host's)", None),
    (r"掩盖在反向传播之后", "在反向传播期间被掩盖 (the overlap is during the backward pass)", None),
    # 算力 is compute power, FLOP/s; an amount of FLOPs (training compute) is 计算量
    (r"算力", "计算量 (an amount of FLOPs; 算力 only for FLOP/s)", r"^(?![\s\S]*FLOP/s)"),
]
#: (where the English says, the translation must say)
REQUIRED = [
    (r"\blaptop", "笔记本电脑"),  # 笔记本 alone is the notebook
    # activation checkpointing is 激活检查点; a bare 检查点 is the checkpoint file (chapter 9)
    (r"activation checkpoint", "激活检查点"),
    (r"\brecomput", "重计算"),
    (r"crash\w* the kernel|kernel's (memory|connection|torch)|kernel already has|reach the kernel|Jupyter kernel",
     "Jupyter 内核"),  # 内核 alone is a GPU kernel
]


def _messages():
    from babel.messages.pofile import read_po

    for name, path in i18n.catalogs().items():
        with open(path, "rb") as f:
            for m in read_po(f):
                if m.id and m.string:
                    yield name, m.id, m.string


def test_no_banned_variant_in_any_catalog():
    problems = []
    for name, english, chinese in _messages():
        for banned, preferred, where in BANNED:
            if (where is None or re.search(where, english, re.I)) and re.search(banned, chinese):
                problems.append(f"{name}: {re.search(banned, chinese).group(0)!r} → {preferred}: {chinese[:80]!r}")
        for where, required in REQUIRED:
            if re.search(where, english, re.I) and required not in chinese:
                problems.append(f"{name}: the English says {re.search(where, english, re.I).group(0)!r}: "
                                f"write {required!r}: {chinese[:80]!r}")
    assert not problems, f"{len(problems)} renderings outside the course's vocabulary:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("banned, preferred, where", BANNED)
def test_each_rule_is_a_valid_pattern(banned, preferred, where):
    re.compile(banned)
    assert preferred and (where is None or re.compile(where))
