"""A panel to explore views: pick a shape, a permutation, an index and a follow-up operation, and see
the strides, the contiguity, whether the storage is shared, and which storage cells the result reads.

>>> p = view_panel(shape="4, 4", dims="1, 0", index="", then="(nothing)")
>>> "strides</td><td>(1, 4)" in p.result.value
True
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w
import torch
from matplotlib.figure import Figure

from lectorch import _validate
from lectorch.plots.views import MAX_DRAWN, storage_view_figure
from lectorch.views import Layout, describe_view, shares_storage
from lectorch.widgets import Panel

#: what can follow the permutation and the index (the name shown and the operation)
THEN = {
    "(nothing)": None,
    ".view(-1)": lambda t: t.view(-1),
    ".reshape(-1)": lambda t: t.reshape(-1),
    ".contiguous()": lambda t: t.contiguous(),
    "+ 0": lambda t: t + 0,
}


def parse_ints(text: str, *, name: str) -> tuple[int, ...]:
    """Read ``"4, 4"`` (or ``"(4, 4)"``) as a tuple of ints; an empty text gives ``()``.

    >>> parse_ints("(2, 3, 4)", name="shape")
    (2, 3, 4)
    """
    if not isinstance(text, str):
        raise TypeError(f"{name} must be text such as '4, 4', got {type(text).__name__}")
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    try:
        return tuple(int(part) for part in body.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"{name} must be ints separated by commas, such as '4, 4'; got {text!r}") from None


def parse_index(text: str) -> tuple[Any, ...]:
    """Read an index written as in Python (ints, ``start:stop:step`` slices, ``...``) without ``eval``.

    >>> parse_index(":, 1:3")
    (slice(None, None, None), slice(1, 3, None))
    >>> parse_index("2, ::2")
    (2, slice(None, None, 2))
    """
    if not isinstance(text, str):
        raise TypeError(f"index must be text such as ':, 1:3', got {type(text).__name__}")
    body = text.strip().strip("[]").strip()
    if not body:
        return ()
    entries: list[Any] = []
    for part in body.split(","):
        part = part.strip()
        try:
            if part == "...":
                entries.append(Ellipsis)
            elif ":" in part:
                bounds = part.split(":")
                if len(bounds) > 3:
                    raise ValueError
                entries.append(slice(*(int(b) if b.strip() else None for b in bounds)))
            else:
                entries.append(int(part))
        except ValueError:
            raise ValueError(f"index: cannot read {part!r}; write ints, slices like 1:3 or ::2, or ...") from None
    return tuple(entries)


def _expression(dims: tuple[int, ...], index: tuple[Any, ...], then: str) -> str:
    def one(e: Any) -> str:
        if e is Ellipsis:
            return "..."
        if isinstance(e, slice):
            text = f"{'' if e.start is None else e.start}:{'' if e.stop is None else e.stop}"
            return text + (f":{e.step}" if e.step is not None else "")
        return str(e)

    expr = "x"
    if dims:
        expr += f".permute{dims}" if len(dims) > 1 else f".permute({dims[0]})"
    if index:
        expr += "[" + ", ".join(one(e) for e in index) + "]"
    if then != "(nothing)":
        expr = f"({expr}) + 0" if then == "+ 0" else expr + then
    return expr


#: the dtype of the panel's ``x`` (each element's value is its storage index)
X_DTYPE = torch.float32


def view_result(shape: str, dims: str, index: str, then: str) -> tuple[str, torch.Tensor, torch.Tensor]:
    """What the panel builds: its expression, ``x`` and the result (a view of ``x`` or a copy).

    >>> expr, x, result = view_result("4, 4", "1, 0", "", ".contiguous()")
    >>> expr, result.stride(), shares_storage(x, result)
    ('x.permute(1, 0).contiguous()', (4, 1), False)
    """
    size = _validate.shape("shape", parse_ints(shape, name="shape"))
    if not 1 <= len(size) <= 4:
        raise ValueError(f"shape must have 1 to 4 dims, got {size}")
    numel = Layout.contiguous(size).numel
    if not 1 <= numel <= MAX_DRAWN:  # checked before allocating anything
        raise ValueError(f"shape {size} has {numel} elements: keep it between 1 and {MAX_DRAWN} "
                         "so the drawing stays readable")
    x = torch.arange(numel, dtype=X_DTYPE).view(size)
    order = parse_ints(dims, name="dims")
    idx = parse_index(index)
    if then not in THEN:
        raise ValueError(f"then must be one of {list(THEN)}, got {then!r}")
    predicted = Layout.of(x)
    if order:
        predicted = predicted.permute(*order)  # validates dims with a clear error
    predicted = predicted[idx] if idx else predicted  # validates the index with a clear error
    view = x.permute(*order) if order else x
    view = view[idx] if idx else view
    if Layout.of(view) != predicted:  # lectorch's arithmetic must agree with torch's
        raise AssertionError(f"lectorch predicts {predicted} but torch made {Layout.of(view)}")
    expr = _expression(order, idx, then)
    result = view
    if THEN[then] is not None:
        try:
            result = THEN[then](view)
        except RuntimeError:
            raise ValueError(f"{expr} raises: this view's strides {tuple(view.stride())} cannot be merged into "
                             f"one dimension without copying; .reshape(-1) would copy, .view(-1) refuses") from None
    return expr, x, result


def explore_view(shape: str, dims: str, index: str, then: str) -> tuple[str, Figure]:
    """The panel's computation: an HTML table about the view and a drawing of its storage.

    ``x = torch.arange(numel, dtype=torch.float32).view(shape)``: each element's value is its storage index,
    and each takes 4 bytes.

    >>> table, fig = explore_view("4, 4", "", "1", "(nothing)")
    >>> "offset</td><td>4" in table
    True
    """
    expr, x, result = view_result(shape, dims, index, then)
    info = describe_view(result)
    shared = shares_storage(x, result)
    rows = [
        ("expression", f"<code>{html.escape(expr)}</code>"),
        ("shape", str(info.shape)),
        ("strides", str(info.strides)),
        ("offset", str(info.offset)),
        ("contiguous", "yes" if info.contiguous else "no"),
        ("shares storage with x", "yes (a view: 0 new bytes)" if shared else
         f"no (a copy: {info.storage_bytes} new bytes)"),
        ("storage cells read", f"{len(set(Layout.of(result).cells()))} of {info.storage_elements}"),
    ]
    table = "<table>" + "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"
    return table, storage_view_figure(result, name=expr)


def view_panel(shape: str = "4, 4", dims: str = "1, 0", index: str = ":, 1:3", then: str = "(nothing)") -> Panel:
    """Shape, permutation, index and a follow-up → strides, contiguity, shared storage, cells read.

    >>> p = view_panel(); p.controls["then"].value = ".reshape(-1)"
    >>> "a copy" in p.result.value
    True
    """
    controls = {
        "shape": w.Text(value=shape, description="shape", continuous_update=False),
        "dims": w.Text(value=dims, description="permute", continuous_update=False),
        "index": w.Text(value=index, description="index", continuous_update=False),
        "then": w.Dropdown(options=list(THEN), value=then, description="then"),
    }
    return Panel(controls, explore_view, title="Views of x = torch.arange(numel).view(shape)", live="views")
