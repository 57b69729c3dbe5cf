"""Interactive panels: controls on top, a result rendered below, recomputed on every change.

The computation is a plain function of the control values (testable without a browser); the panel
only wires ipywidgets to it. Figures are embedded as PNG images in the result, so the panel's last
state also shows in the static book.

>>> import ipywidgets as w
>>> p = Panel({"n": w.IntSlider(value=2, min=1, max=9)}, lambda n: f"<b>{n * n}</b>", title="squares")
>>> p.result.value
'<b>4</b>'
>>> p.controls["n"].value = 3; p.result.value
'<b>9</b>'
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any, Callable

import ipywidgets as w
from matplotlib.figure import Figure


def figure_html(fig: Figure, *, alt: str = "figure", dpi: int = 96) -> str:
    """A matplotlib figure as an inline ``<img>`` tag (PNG, base64).

    >>> from lectorch.plots import new_figure
    >>> figure_html(new_figure()[0]).startswith("<img")
    True
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" style="max-width:100%" src="data:image/png;base64,{data}"/>'


def _to_html(part: Any) -> str:
    if isinstance(part, Figure):
        return figure_html(part)
    if isinstance(part, (tuple, list)):
        return "".join(_to_html(p) for p in part)
    return str(part)


class Panel(w.VBox):
    """A titled set of ``controls`` and an HTML ``result`` computed by ``render(**values)``.

    ``render`` returns HTML text, a matplotlib Figure, or a tuple of them. A ``ValueError`` or
    ``TypeError`` it raises (bad combination of inputs) is shown in the panel instead of crashing.
    """

    def __init__(self, controls: dict[str, w.Widget], render: Callable[..., Any], *, title: str = "") -> None:
        if not controls:
            raise ValueError("controls must hold at least one widget")
        if not callable(render):
            raise TypeError(f"render must be callable, got {type(render).__name__}")
        self.controls = dict(controls)
        self.render = render
        self.title = title
        self.result = w.HTML()
        header = [w.HTML(f"<b>{html.escape(title)}</b>")] if title else []
        box = w.Box(list(self.controls.values()), layout=w.Layout(display="flex", flex_flow="row wrap"))
        super().__init__(header + [box, self.result])
        for control in self.controls.values():
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def values(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def update(self) -> None:
        try:
            self.result.value = _to_html(self.render(**self.values()))
        except (ValueError, TypeError) as err:
            self.result.value = f'<span style="color:#b00">⚠ {html.escape(str(err))}</span>'

    def __repr__(self) -> str:  # a short, deterministic text form (nbval compares it)
        return f"Panel({self.title!r}, controls: {', '.join(self.controls)})"
