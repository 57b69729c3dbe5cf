"""Figures of the course. Each function returns a ``matplotlib.figure.Figure`` built without pyplot,
so nothing is displayed twice and no pyplot state is left behind: end a cell with the figure.

Importing this module in a notebook registers an SVG formatter for figures with IPython (pyplot's
inline backend would otherwise be the only thing that renders a bare ``Figure`` as an image): the
figure's words stay text, in the kernel's language, and the output carries what the Chinese book
needs to translate them (``lectorch.plots._text``). Figures are drawn for a phone first
(``STYLE``): their smallest text stays >= 11 px in a 390 px wide screen.

>>> fig, ax = new_figure()
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lectorch.dtypes import FORMATS
from lectorch import i18n
from lectorch.plots import _text
from lectorch.plots._text import tr

__all__ = ["COLORS", "STYLE", "figure_svg", "new_figure", "smallest_text_px", "styled", "tr"]

#: Colours used for the same concept across chapters.
#: The float formats' colours come from the registry :data:`lectorch.dtypes.FORMATS` (a peak-table
#: key such as "fp8" takes the colour of its first format); tf32 and int8 are not float formats.
COLORS = {
    **{fmt.name: fmt.color for fmt in reversed(FORMATS)},
    **{fmt.flops_key: fmt.color for fmt in reversed(FORMATS)},
    "tf32": "#a6cee3", "int8": "#ff7f00",
    "forward": "#1f78b4", "backward": "#e31a1c", "weights": "#1f78b4", "gradients": "#33a02c",
    "optimizer": "#ff7f00", "activations": "#6a3d9a", "measured": "#000000",
}


#: How a figure is shown on a phone: a 390 px wide screen gives the book's column about 342 px.
PHONE_COLUMN_PX = 342
#: The smallest text a reader should meet there, in CSS pixels.
MIN_TEXT_PX = 11
#: The course's figure style: one text size for everything (ticks and legends included) and figures
#: narrow enough that this size stays >= MIN_TEXT_PX when the figure is shrunk to the phone's column
#: (11.5 pt on a figure at most FIGURE_WIDTH_IN + the saving margin wide: 11.5 * 342 / (4.7 * 72) > 11).
FONT_PT = 11.5
FIGURE_WIDTH_IN = 4.5
STYLE = {
    "font.size": FONT_PT, "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT, "legend.title_fontsize": FONT_PT,
    "figure.titlesize": FONT_PT, "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans"],
    # the saved SVG keeps its text as text (translatable, selectable, sharp) and is the same every run
    "svg.fonttype": "none", "svg.hashsalt": "lectorch",
}


def styled(make):
    """Decorator: ``make`` builds its figure in the course's ``STYLE``."""
    import functools

    import matplotlib

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return make(*args, **kwargs)

    return wrapper


def _plain_log_ticks(fig: Figure) -> None:
    """Log axes labelled "1000" or "1e12" instead of 10 with a superscript, whose small exponent
    would be the figure's smallest text."""
    from matplotlib.ticker import LogFormatter, LogFormatterSciNotation

    class PlainLog(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            if 1e-3 <= abs(x) < 1e5:
                return f"{x:g}"
            mantissa, exponent = f"{x:.0e}".split("e")
            return f"{mantissa}e{int(exponent)}"

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for minor in (False, True):
                old = axis.get_minor_formatter() if minor else axis.get_major_formatter()
                if isinstance(old, LogFormatterSciNotation):
                    new = PlainLog(base=old._base, labelOnlyBase=old.labelOnlyBase,
                                   minor_thresholds=old.minor_thresholds)
                    (axis.set_minor_formatter if minor else axis.set_major_formatter)(new)


def figure_svg(fig: Figure, language: str | None = None) -> tuple[str, dict]:
    """The figure as SVG text (its words as ``<text>``, in ``language``: default the kernel's, see
    ``lectorch.set_language``) and the output metadata that lets the Chinese book
    translate it (``lectorch-texts``: the marked words it shows).

    >>> svg, meta = figure_svg(new_figure()[0]); svg.startswith("<?xml") and "Date" not in svg
    True
    """
    import io

    import matplotlib
    from matplotlib.text import Text

    _plain_log_ticks(fig)
    buf = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.04, metadata={"Date": None})
    shown = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    texts = _text.records(shown)
    svg = buf.getvalue()
    language = language or i18n.get_language()
    if texts and language != i18n.ENGLISH:
        svg = _text.translate_svg(svg, texts, i18n.catalog(language).get)
    return svg, ({_text.METADATA_KEY: texts} if texts else {})


def smallest_text_px(svg: str, shown_px: float = PHONE_COLUMN_PX) -> float:
    """The smallest text of a saved figure, in CSS pixels, when the figure is shown ``shown_px`` wide
    (default: a phone's column) or at its own width if that is smaller.

    >>> smallest_text_px('<svg width="300pt" viewBox="0 0 300 100"><text style="font-size: 12px">a</text></svg>')
    13.68
    """
    import re

    view = re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) [\d.]+"', svg)
    sizes = [float(s) for s in re.findall(r"font-size: ?([\d.]+)px", svg)]
    if not view or not sizes:
        raise ValueError("svg must be a figure saved by matplotlib as SVG with its text as text")
    width_pt = float(view.group(1))  # user units are points: the figure is width_pt * 4/3 px wide
    scale = min(1.0, shown_px / (width_pt * 4 / 3)) * 4 / 3
    return round(min(sizes) * scale, 2)


def _register_svg_formatter() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    formatters["image/svg+xml"].for_type(Figure, figure_svg)
    formatters["image/png"].pop(Figure, None)  # one image per figure: the SVG


_register_svg_formatter()


@styled
def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = FIGURE_WIDTH_IN, height: float = 3.0) -> tuple[Figure, Axes | list]:
    """A figure with a grid of axes, in the course's style.

    >>> fig, axes = new_figure(1, 2); len(axes)
    2
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True)
    for ax in fig.axes:
        ax.grid(True, alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, (list(axes.flat) if hasattr(axes, "flat") else axes)
