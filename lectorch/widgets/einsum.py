"""Widget of chapter 04: type an einsum pattern and sizes, read its output shape, summed dims and FLOPs.

>>> p = einsum_panel("i j, j k -> i k", "i=2 j=3 k=4")
>>> "(2, 4)" in p.result.value
True
>>> p.controls["pattern"].value = "i j, j k -> i z"; "appears in no operand" in p.result.value
True
"""

from __future__ import annotations

import html

import ipywidgets as w

from lectorch.contractions import ELLIPSIS, Contraction, analyze, parse_sizes
from lectorch.flops import format_flops
from lectorch.i18n import tr
from lectorch.plots.einsum import ROLE_COLORS, contraction_diagram
from lectorch.widgets import Panel, figure_html


def flops_formula(c: Contraction) -> str:
    """The FLOPs as ``multiplier × sizes = total``, following the course's convention.

    >>> flops_formula(analyze("b s1 h, b s2 h -> b s1 s2", {"b": 2, "s1": 3, "s2": 4, "h": 5}))
    '2 × 2·3·4·5 = 240'
    >>> flops_formula(analyze("i j, j k, k l -> i l", {"i": 2, "j": 3, "k": 4, "l": 5}))
    'pairwise: 2 × 2·3·4 + 2 × 2·4·5 = 128'
    """
    def sizes(dims) -> str:
        factors: list[int] = []
        for dim in dims:
            factors.extend(c.ellipsis_shape if dim == ELLIPSIS else (c.sizes[dim],))
        return "·".join(map(str, factors)) or "1"

    if c.num_operands > 2:
        terms = [f"{2 if s.summed else 1} × {sizes(s.dims)}" for s in c.steps]
        return f"pairwise: {' + '.join(terms)} = {c.flops:,}"
    multiplier = c.num_operands - 1 + (1 if c.contracted else 0)
    if multiplier == 0:
        return "0 (nothing is multiplied or summed: a pure rearrangement)"
    # kept dims in output order, then the summed ones
    return f"{multiplier} × {sizes((*c.pattern.output, *c.contracted))} = {c.flops:,}"


def _dims(c: Contraction, names: tuple[str, ...], role: str) -> str:
    if not names:
        return "none"
    color = ROLE_COLORS[role]
    parts = []
    for d in names:
        size = ("×".join(map(str, c.ellipsis_shape)) or "()") if d == ELLIPSIS else str(c.sizes[d])
        parts.append(f'<span style="color:{color}"><b>{html.escape(d)}</b></span>={size}')
    return ", ".join(parts)


def einsum_report(pattern: str, sizes: str, *, diagram: bool = True) -> str:
    """HTML describing ``pattern`` for ``sizes`` (text like ``"b=2 s=3"``); raises ValueError if invalid.

    >>> "240" in einsum_report("b s1 h, b s2 h -> b s1 s2", "b=2 s1=3 s2=4 h=5", diagram=False)
    True
    """
    c = analyze(pattern, parse_sizes(sizes))
    rows = [
        ("output shape", str(c.output_shape)),
        ("batch dims (kept, in every operand)", _dims(c, c.batch, "batch")),
        ("free dims (kept)", _dims(c, c.free, "free")),
        ("contracted dims (summed)", _dims(c, c.contracted, "contracted")),
        ("FLOPs", f"{html.escape(flops_formula(c))} ({format_flops(c.flops)})"),
        ("torch.einsum equation", f"<code>{html.escape(c.torch_equation)}</code>"),
    ]
    mm = c.matmul
    if mm is not None:
        shapes = f"{mm.batch:,} × ({mm.m:,} × {mm.k:,}) @ ({mm.k:,} × {mm.n:,})"
        rows.append(("as a matmul", f"{shapes}: 2·batch·m·k·n"))
    table = "".join(
        f'<tr><td style="text-align:left;padding-right:1em">{k}</td><td style="text-align:left">{v}</td></tr>'
        for k, v in rows
    )
    out = f"<table>{table}</table>"
    if diagram:
        out += figure_html(contraction_diagram(c), alt=tr("dimensions of {pattern}").format(pattern=c.pattern))
    return out


def einsum_panel(
    pattern: str = "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2",
    sizes: str = "batch=8 seq1=1024 seq2=1024 hidden=64",
    *,
    diagram: bool = True,
) -> Panel:
    """A Panel: an einsum pattern and dimension sizes (as text) -> output shape, summed dims, FLOPs.

    >>> einsum_panel()
    Panel('einsum: shapes and FLOPs', controls: pattern, sizes)
    """
    controls = {
        "pattern": w.Text(value=pattern, description="pattern", continuous_update=False,
                          layout=w.Layout(width="32em")),
        "sizes": w.Text(value=sizes, description="sizes", continuous_update=False, layout=w.Layout(width="32em")),
    }
    return Panel(controls, lambda pattern, sizes: einsum_report(pattern, sizes, diagram=diagram),
                 title="einsum: shapes and FLOPs", live="einsum")
