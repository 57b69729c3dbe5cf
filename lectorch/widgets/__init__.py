"""Interactive panels: controls on top, a result rendered below, recomputed on every change.

The computation is a plain function of the control values (testable without a browser); the panel
only wires ipywidgets to it. Figures are embedded as PNG images in the result, so the panel's last
state also shows in the static book. In a kernel whose language is not English
(``lectorch.set_language("zh_CN")``) a panel speaks it: its title, control labels and word choices
come from the package's catalog (:mod:`lectorch.i18n`), and its figures are embedded as SVG with
their words translated like the chapters' figures (:func:`lectorch.plots.figure_svg`; the browser
draws the CJK text, which matplotlib's own fonts cannot).

For the static book a panel also describes itself as plain data (the mime type
:data:`PANEL_MIME`, which Jupyter ignores): ``live`` names the computation that
``lectorch.widgets.live`` exports to the page (the book recomputes it in the browser); a panel
without one is shown as a snapshot of its last run on ``device``, with its controls disabled. A
panel that measures (timings, training runs) can carry a :class:`Recording` instead: a small grid of
control settings, measured once when the notebook displays the panel and stored in the cell's output
metadata with the machine and the date, so the page's controls switch between the recorded results.

>>> import ipywidgets as w
>>> p = Panel({"n": w.IntSlider(value=2, min=1, max=9)}, lambda n: f"<b>{n * n}</b>", title="squares")
>>> p.result.value
'<b>4</b>'
>>> p.controls["n"].value = 3; p.result.value
'<b>9</b>'
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import itertools
import json
import platform
from dataclasses import dataclass
from typing import Any, Callable

import ipywidgets as w
from matplotlib.figure import Figure

from lectorch import i18n


def figure_html(fig: Figure, *, alt: str = "figure", dpi: int = 96, language: str | None = None) -> str:
    """A matplotlib figure as an inline ``<img>`` tag: PNG in English, SVG with its words translated
    in another ``language`` (default: the kernel's).

    >>> from lectorch.plots import new_figure
    >>> figure_html(new_figure()[0]).startswith("<img"), "image/svg" in figure_html(new_figure()[0], language="zh_CN")
    (True, True)
    """
    language = language or i18n.get_language()
    if language != i18n.ENGLISH:
        from lectorch.plots import figure_svg

        svg, _ = figure_svg(fig, language)
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return f'<img alt="{html.escape(alt)}" style="max-width:100%" src="data:image/svg+xml;base64,{data}"/>'
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" style="max-width:100%" src="data:image/png;base64,{data}"/>'


def figure_alt(fig: Figure) -> str:
    """A description of a panel's figure from its titles and axis labels (its alt text).

    >>> from lectorch.plots import new_figure
    >>> fig, ax = new_figure(); _ = ax.set(title="loss", xlabel="step", ylabel="loss")
    >>> figure_alt(fig)
    'figure: loss (loss against step)'
    """
    from lectorch.i18n import tr

    shown = _shown
    parts = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.append(shown(fig._suptitle.get_text()))
    for ax in fig.axes:
        what = shown(ax.get_title())
        axes = (tr("{y} against {x}").format(y=shown(ax.get_ylabel()), x=shown(ax.get_xlabel()))
                if ax.get_xlabel() and ax.get_ylabel() else "")
        parts.append(f"{what} ({axes})" if what and axes else what or axes)
    text = "; ".join(p for p in parts if p)
    return tr("figure: {text}").format(text=text) if text else tr("figure of the panel's result")


def _shown(text: str) -> str:
    """A figure's text as the figure shows it in the kernel's language (a text marked with
    :func:`lectorch.plots.tr`, translated through the package's catalog)."""
    from lectorch.plots import _text

    language = i18n.get_language()
    if language == i18n.ENGLISH or text not in _text._MARKED:
        return text
    template, args = _text._MARKED[text]
    return _text.render(template, args, i18n.catalog(language).get)


def translate_controls(controls: dict[str, w.Widget]) -> None:
    """Label ``controls`` in the kernel's language: each description (context :data:`lectorch.i18n.CONTROL`)
    and each word choice of a drop-down (:data:`lectorch.i18n.OPTION`); values are kept. English: unchanged.

    >>> c = {"o": w.Dropdown(options=["sgd", "adam"], value="adam", description="optimizer")}
    >>> with i18n.language("zh_CN"): translate_controls(c)
    >>> c["o"].description != "optimizer", c["o"].value
    (True, 'adam')
    """
    if i18n.get_language() == i18n.ENGLISH:
        return
    for control in controls.values():
        if getattr(control, "description", ""):
            control.description = i18n.tr(control.description, i18n.CONTROL)
        if isinstance(control, (w.Dropdown, w.ToggleButtons, w.RadioButtons)):
            labels = [i18n.tr(str(label), i18n.OPTION) for label in control._options_labels]
            if labels != list(control._options_labels):
                value = control.value
                control.options = list(zip(labels, [v for _, v in control._options_full]))
                control.value = value


def _to_html(part: Any) -> str:
    if isinstance(part, Figure):
        return figure_html(part, alt=figure_alt(part))
    if isinstance(part, (tuple, list)):
        return "".join(_to_html(p) for p in part)
    return str(part)


#: The mime type of a panel's self-description for the static book (see the module docstring).
PANEL_MIME = "application/vnd.lectorch.panel+json"


def control_spec(name: str, control: w.Widget) -> dict[str, Any]:
    """A control as plain data, for the static book to draw it.

    >>> control_spec("n", w.IntSlider(value=2, min=1, max=9))["kind"]
    'int-slider'
    """
    spec: dict[str, Any] = {"name": name, "label": getattr(control, "description", "") or name}
    if isinstance(control, (w.SelectionSlider, w.Dropdown, w.ToggleButtons, w.RadioButtons)):
        kind = "selection-slider" if isinstance(control, w.SelectionSlider) else "select"
        values = [v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
                  for _, v in control._options_full]
        spec.update(kind=kind, labels=list(control._options_labels), values=values, index=control.index)
    elif isinstance(control, w.FloatLogSlider):
        spec.update(kind="log-slider", min=control.min, max=control.max, step=control.step, base=control.base,
                    value=control.value)
    elif isinstance(control, (w.IntSlider, w.FloatSlider)):
        kind = "int-slider" if isinstance(control, w.IntSlider) else "float-slider"
        spec.update(kind=kind, min=control.min, max=control.max, step=control.step, value=control.value)
    elif isinstance(control, w.Checkbox):
        spec.update(kind="checkbox", value=bool(control.value))
    elif isinstance(control, (w.IntText, w.BoundedIntText, w.FloatText, w.BoundedFloatText)):
        spec.update(kind="number", value=control.value, min=getattr(control, "min", None),
                    max=getattr(control, "max", None))
    else:
        spec.update(kind="text", value=str(control.value))
    return spec


def si_count(x: float) -> str:
    """A large count the way people say it: 3 significant digits and K, M, B or T.

    >>> si_count(5.12e12), si_count(7e10), si_count(1024), si_count(300)
    ('5.12T', '70B', '1.02K', '300')
    """
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def amount(x: float) -> str:
    """A quantity with the precision a reader needs: three significant digits, and whole numbers with
    thousands separators from 100 up (the napkin panel's days and GPU-hours; the page script's
    ``amount`` in tools/book/static/lectorch-live.js is the same rule).

    >>> amount(0.0382), amount(7.644), amount(76.44), amount(144.2), amount(18342.6), amount(0.0)
    ('0.0382', '7.64', '76.4', '144', '18,343', '0')
    """
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def round_values(low: float, high: float, mantissas: tuple[float, ...] = (1, 1.5, 2, 3, 5, 7)) -> list[float]:
    """Round slider stops from ``low`` to ``high``: each mantissa times each power of ten.

    >>> round_values(1e9, 1e10)
    [1000000000.0, 1500000000.0, 2000000000.0, 3000000000.0, 5000000000.0, 7000000000.0, 10000000000.0]
    """
    import math

    out = []
    for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in mantissas:
            v = float(f"{m}e{e}")
            if low <= v <= high:
                out.append(v)
    return out


def device_label(device: Any) -> str:
    """How the snapshot line names a device: "CPU" or the GPU's name.

    >>> device_label("cpu")
    'CPU'
    """
    import torch

    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(dev)
    return "CPU" if dev.type == "cpu" else str(dev)


def machine_label(device: Any) -> str:
    """The machine a recording ran on: the GPU's name, or the CPU's model name where the OS tells it.

    >>> machine_label("cpu") != ""
    True
    """
    import torch

    dev = torch.device(device)
    if dev.type != "cpu":
        return device_label(dev)
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


@dataclass(frozen=True)
class Recording:
    """A measured panel's grid for the static book: ``measure(**values)`` at every setting of ``grid``.

    ``kind`` names the page's renderer of the recorded numbers (``RECORDED`` in
    ``tools/book/static/lectorch-live.js``); ``grid`` maps control names to the values to record
    (keep it small: every setting runs when the notebook displays the panel); controls it does
    not name are recorded at their current value. ``measure`` returns JSON-ready numbers.

    >>> r = Recording("squares", {"n": [1, 2]}, lambda n: {"square": n * n})
    >>> [row["numbers"]["square"] for row in r.run({"n": 5}, device="cpu")["results"]]
    [1, 4]
    """

    kind: str
    grid: dict[str, list]
    measure: Callable[..., dict[str, Any]]

    def settings(self, current: dict[str, Any]) -> list[dict[str, Any]]:
        """Every combination of the grid (controls outside it at their ``current`` value)."""
        unknown = set(self.grid) - set(current)
        if unknown:
            raise ValueError(f"grid names {sorted(unknown)}, which are not controls ({', '.join(current)})")
        axes = {name: list(self.grid.get(name, [value])) for name, value in current.items()}
        return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]

    def run(self, current: dict[str, Any], *, device: Any) -> dict[str, Any]:
        """Measure every setting; the result names the machine and the day (UTC)."""
        results = [{"values": values, "numbers": self.measure(**values)} for values in self.settings(current)]
        return {"kind": self.kind, "machine": machine_label(device),
                "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
                "grid": {name: list(dict.fromkeys(row["values"][name] for row in results)) for name in current},
                "results": results}


class Panel(w.VBox):
    """A titled set of ``controls`` and an HTML ``result`` computed by ``render(**values)``.

    ``render`` returns HTML text, a matplotlib Figure, or a tuple of them. A ``ValueError`` or
    ``TypeError`` it raises (bad combination of inputs) is shown in the panel instead of crashing.
    ``live`` names the in-browser computation of the static book (a key of
    ``lectorch.widgets.live.LIVE``); ``record`` is a measured panel's :class:`Recording` (run once,
    when the panel is first displayed); without either the book shows a snapshot of the run on ``device``.
    """

    def __init__(self, controls: dict[str, w.Widget], render: Callable[..., Any], *, title: str = "",
                 live: str | None = None, device: Any = "cpu", record: Recording | None = None) -> None:
        if not controls:
            raise ValueError("controls must hold at least one widget")
        if not callable(render):
            raise TypeError(f"render must be callable, got {type(render).__name__}")
        self.controls = dict(controls)
        self.render = render
        self.title = title
        self.live = live
        self.record = record
        self._device = device
        self._recorded: dict[str, Any] | None = None
        self.device = device_label(device)
        self.result = w.HTML()
        translate_controls(self.controls)  # the title, repr and book data stay English: nbval compares them
        header = [w.HTML(f"<b>{html.escape(i18n.tr(title))}</b>")] if title else []
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

    def _repr_mimebundle_(self, **kwargs: Any):
        """The widget view plus :data:`PANEL_MIME`: deterministic data, machine facts in metadata."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = (bundle if isinstance(bundle, tuple) else (bundle, {}))
        data = dict(data or {})
        metadata = dict(metadata or {})
        data[PANEL_MIME] = {"live": self.live, "title": self.title}
        metadata[PANEL_MIME] = {
            "device": self.device,
            "controls": [control_spec(n, c) for n, c in self.controls.items()],
            "result_model": self.result.model_id,
        }
        if self.record is not None:  # the kind is deterministic (nbval compares it); the measurements are not
            data[PANEL_MIME]["recorded"] = self.record.kind
            # one compact line of JSON: the notebook's diff stays readable after a re-execution
            metadata[PANEL_MIME]["recording"] = json.dumps(self.recording(), separators=(",", ":"), sort_keys=True)
        return data, metadata

    def recording(self) -> dict[str, Any] | None:
        """The measured grid of ``record`` (measured on the first call, then kept)."""
        if self.record is not None and self._recorded is None:
            self._recorded = self.record.run(self.values(), device=self._device)
        return self._recorded

    def __repr__(self) -> str:  # a short, deterministic text form (nbval compares it)
        return f"Panel({self.title!r}, controls: {', '.join(self.controls)})"
