"""One vocabulary in the 中文 edition: the glossary (chapters/reference/glossary.md) is the style
sheet, and each concept has one rendering in every catalog (pages, the book's generated text, the
checkers' messages). A rendering the course does not use is rejected with the preferred one; a word
that legitimately means something else is banned only where the English says the concept.

Each glossary term a chapter uses is glossed once, at its first use in the chapter's prose, in one
form (全角括号: 步幅（stride）), and not again later in that chapter."""

from __future__ import annotations

import re

import pytest

import i18n

from _paths import ROOT

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
    (r"(GPU|设备|显卡) ?的?内存", "显存 (GPU or device memory; 内存 is the host's, 主机内存 where ambiguous)", None),
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


#: English that names the GPU's memory: each gets a 显存 in the translation (内存 is the host's)
GPU_MEMORY = r"\b(GPU|device)('s)? memory\b|\bpeak[- ]memory\b|\bmemory (snapshot|visuali[sz]er)|\ballocator's memory"


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
        said = len(re.findall(GPU_MEMORY, english, re.I))
        if said > chinese.count("显存"):
            problems.append(f"{name}: the English names the GPU's memory {said}× ({re.search(GPU_MEMORY, english, re.I).group(0)!r}): "
                            f"write 显存 each time: {chinese[:80]!r}")
    assert not problems, f"{len(problems)} renderings outside the course's vocabulary:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("banned, preferred, where", BANNED)
def test_each_rule_is_a_valid_pattern(banned, preferred, where):
    re.compile(banned)
    assert preferred and (where is None or re.compile(where))


# --------------------------------------------------------------------------- gloss on first use

GLOSSARY = ROOT / "chapters" / "reference" / "glossary.md"
#: words that contain a glossary term but name another thing (the term's gloss does not go inside them)
COMPOUNDS = ["批次大小", "参数量", "超参数", "连续性", "词元数", "梯度累积", "视图链"]
#: a gloss: the English of a term in parentheses right after it, alone or before a remark
#: (激活值（activations，第 8 章）); the course's form is 全角括号
_GLOSS = re.compile(r"\s?[（(](?P<english>[A-Za-z][\w \-/.']*?)\s*(?P<close>[）)]|[，,；;])")
#: markup whose text is not prose: roles (a {term} or {ref} role shows its text), code, math, HTML tags
_MARKUP = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`|`[^`]*`|\$[^$]*\$|<[^>]+>")


def glossary_terms() -> list[tuple[tuple[str, ...], str]]:
    """(English names, Chinese) of each glossary entry, e.g. (("Strides",), "步幅")."""
    block = GLOSSARY.read_text(encoding="utf-8").split("```{glossary}", 1)[1].split("```", 1)[0]
    found = []
    for line in block.splitlines():
        if line[:1].strip() and " · " in line:
            english, chinese = line.split(" · ", 1)
            found.append((tuple(e.strip() for e in english.split(" (")[0].split(" / ")), chinese.split(" (")[0].strip()))
    return found


def _stem(english: str) -> str:
    english = english.lower()
    return english[:-1] if english.endswith("s") and not english.endswith("ss") else english


def english_use(english: str, names: tuple[str, ...]) -> str | None:
    """The words of ``english`` that say the term (any of ``names``, singular or plural), or None."""
    for name in names:
        found = re.search(rf"\b{re.escape(_stem(name))}(s|es|ing)?\b", english, re.I)
        if found:
            return found.group(0)
    return None


def gloss_text(said: str, names: tuple[str, ...]) -> str:
    """The gloss of a term as the English says it: lower case unless the name is an acronym or a
    proper name (MFU, AdaGrad, Xavier)."""
    proper = any(c.isupper() for name in names for c in name[1:]) or names[0].startswith("Xavier")
    return said if proper else said.lower()


def uses(chinese: str, term: str, compounds: list[str]) -> list[int]:
    """Where each use of ``term`` in a translation ends (where its gloss goes): in the prose or in
    the shown text of a {term}/{ref} role (then after the role); never in code, math, a role's
    target or a longer word of ``compounds``."""
    spans, start = [], 0
    for m in _MARKUP.finditer(chinese):
        spans.append((chinese[start:m.start()], start, None))
        if m.group("role") in ("term", "ref", "doc"):
            spans.append((re.sub(r"\s*<[^>]*>\s*$", "", m.group("body")), None, m.end()))
        start = m.end()
    spans.append((chinese[start:], start, None))
    ends = []
    for shown, offset, role_end in spans:
        for m in re.finditer(re.escape(term), shown):
            inside = any(shown[k:k + len(c)] == c for c in compounds
                         for k in range(max(0, m.end() - len(c)), m.start() + 1))
            if not inside:
                ends.append(offset + m.end() if offset is not None else role_end)
    return ends


def chapter_messages(name: str) -> list[tuple[str, str, bool]]:
    """(English, Chinese, is a heading) of a chapter's translated messages, in reading order: where
    each message's English stands in the notebook's markdown (a message too short to place, a table
    cell or one from an include or a figure's caption, follows the message before it in the catalog)."""
    import json

    from babel.messages.pofile import read_po

    markdown = ["".join(c["source"]) for c in json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
                if c["cell_type"] == "markdown"]
    titles = {m.group(1).strip() for text in markdown for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}
    text = re.sub(r"\s+", " ", " ".join(markdown))
    with open(i18n.catalogs()[name], "rb") as f:
        messages = [m for m in read_po(f) if m.id and m.string]
    placed, where = [], -1.0
    for i, m in enumerate(messages):
        found = text.find(re.sub(r"\s+", " ", m.id)) if len(m.id) >= 25 else -1
        where = found if found >= 0 else where + 1e-3
        placed.append((where, i, (m.id, m.string, m.id in titles)))
    return [message for _, _, message in sorted(placed)]


def gloss_problems(name: str, messages: list[tuple[str, str, bool]]) -> list[str]:
    """Each glossary term a chapter uses is glossed once, at its first use in the prose (a message
    whose English says the term, not a heading), as 步幅（stride）; nowhere else in the chapter."""
    problems = []
    terms = glossary_terms()
    for names, term in terms:
        compounds = [c for c in COMPOUNDS + [t for _, t in terms] if term in c and c != term]
        first = None
        for english, chinese, heading in messages:
            for end in uses(chinese, term, compounds):
                gloss = _GLOSS.match(chinese, end)
                gloss = gloss if gloss and english_use(gloss.group("english"), names) else None
                said = None if heading else english_use(english, names)
                if first is None and said:
                    first = end
                    if not gloss or not gloss.group(0).startswith("（") or gloss.group("close") not in "），；":
                        problems.append(f"{name}: first use of {term} not glossed as {term}（{gloss_text(said, names)}）: "
                                        f"{chinese[max(0, end - 30):end + 20]!r}")
                elif gloss:
                    where = "again" if first is not None else "before its first use in the prose"
                    problems.append(f"{name}: {term} glossed {where}: {chinese[max(0, end - 30):end + 20]!r}")
    return problems


CHAPTERS = sorted(name for name in i18n.catalogs() if re.match(r"chapters/\d\d_", name))


@pytest.mark.parametrize("name", CHAPTERS)
def test_glossary_terms_glossed_once_at_first_use(name):
    problems = gloss_problems(name, chapter_messages(name))
    assert not problems, f"{len(problems)} glosses out of place:\n" + "\n".join(problems[:40])


def test_gloss_rule_on_a_sample():
    messages = [("Strides", "步幅", True), ("The strides of x", "x 的步幅（strides）", False),
                ("Its strides again", "又是步幅", False)]
    assert gloss_problems("sample", messages) == []
    wrong = [("The strides of x", "x 的步幅 (strides)", False), ("strides", "步幅（strides）", False)]
    assert [p.split(":")[1].strip().split(" ")[0:3] for p in gloss_problems("sample", wrong)] == [
        ["first", "use", "of"], ["步幅", "glossed", "again"]]


@pytest.mark.parametrize("english, chinese, ok", [
    ("Read GPU memory with `torch.cuda.memory_allocated`", "用 `torch.cuda.memory_allocated` 读取显存", True),
    ("Read GPU memory with `torch.cuda.memory_allocated`", "用 `torch.cuda.memory_allocated` 读取内存", False),
    ("peak device memory", "设备内存峰值", False),
    ("Ordinary host memory is pageable", "普通的主机内存是可分页的", True),
])
def test_gpu_memory_is_xiancun(english, chinese, ok):
    banned = [b for b, _, where in BANNED if (where is None or re.search(where, english, re.I)) and re.search(b, chinese)]
    short = len(re.findall(GPU_MEMORY, english, re.I)) > chinese.count("显存")
    assert (not banned and not short) == ok


#: an English gloss in half-width parentheses after Chinese (or after a role), e.g. 闭包(closure)
_HALF_WIDTH_GLOSS = re.compile(r"(?<=[\u4e00-\u9fff])\s?\([A-Za-z][A-Za-z \-/]*\)|(?<=>`)\([A-Za-z][A-Za-z \-/]*\)")


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_gloss_in_full_width_parentheses(name):
    found = [f"{m.group(0)!r} in {chinese[:60]!r}" for _, chinese, _ in chapter_messages(name)
             for m in _HALF_WIDTH_GLOSS.finditer(chinese)]
    assert not found, f"{name}: write a gloss as 闭包（closure）:\n" + "\n".join(found)
