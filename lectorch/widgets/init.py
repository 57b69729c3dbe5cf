"""The initialisation panel of chapter 07: input width and init scheme → the outputs' histogram and std."""

from __future__ import annotations

import ipywidgets as w
from matplotlib.figure import Figure

from lectorch import init
from lectorch.plots.init import output_histogram_figure
from lectorch.widgets import Panel, Recording

#: Widths offered by the panel.
WIDTHS = tuple(2**k for k in range(2, 13))


def render_init(width: int, scheme: str) -> tuple[str, Figure]:
    """The panel's result: a line of numbers (measured and predicted std) and the histogram.

    >>> text, fig = render_init(1024, "standard"); "32" in text
    True
    """
    measured = init.output_std(width, scheme)
    predicted = init.predicted_output_std(width, scheme)
    text = (f"<p>weight std = {init.SCHEMES[scheme]} = {init.init_std(scheme, width):.4g}; "
            f"output std measured <b>{measured:.3g}</b>, predicted sqrt({width}) × {init.init_std(scheme, width):.4g}"
            f" = <b>{predicted:.3g}</b></p>")
    return text, output_histogram_figure(width, scheme)


#: Bins of the histogram (as the notebook's figure draws it).
HISTOGRAM_BINS = 60


def init_numbers(width: int, scheme: str) -> dict:
    """One recorded setting of the init panel: the std's and the histogram the figure draws.

    >>> n = init_numbers(1024, "standard"); round(n["predicted_std"]), len(n["density"])
    (32, 60)
    """
    import numpy as np

    out = init.layer_outputs(width, scheme).flatten().numpy()
    density, edges = np.histogram(out, bins=HISTOGRAM_BINS, density=True)
    return {"weight_std": init.init_std(scheme, width), "measured_std": init.output_std(width, scheme),
            "predicted_std": init.predicted_output_std(width, scheme), "formula": init.SCHEMES[scheme],
            "edges": [float(f"{e:.4g}") for e in edges], "density": [float(f"{d:.4g}") for d in density]}


def init_panel(width: int = 256, scheme: str = "standard") -> Panel:
    """Choose the input width and the init scheme; see the outputs' histogram and std.

    >>> p = init_panel(); p.controls["scheme"].value = "lecun"; "predicted sqrt(256)" in p.result.value
    True
    """
    init.check_scheme(scheme)
    if width not in WIDTHS:
        raise ValueError(f"width must be one of {WIDTHS}, got {width!r}")
    controls = {
        "width": w.SelectionSlider(options=list(WIDTHS), value=width, description="input width"),
        "scheme": w.Dropdown(options=list(init.SCHEMES), value=scheme, description="init"),
    }
    recording = Recording("init", {"width": list(WIDTHS), "scheme": list(init.SCHEMES)}, init_numbers)
    return Panel(controls, render_init, title="One layer's outputs: width and init scheme", record=recording)
