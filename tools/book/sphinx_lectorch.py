"""A small Sphinx extension for the book.

1. Hide the ``# NBVAL_IGNORE_OUTPUT`` marker line and the ``glue(...)`` calls of code cells: they are
   for the test suite and the prose, not the reader (the notebooks keep them).
2. Let the widgets typeset with MathJax 3: ipywidgets 8 controls call the MathJax 2 API
   (``MathJax.Hub.Queue``) whenever ``window.MathJax`` exists, which throws under MathJax 3
   ("Cannot read properties of undefined (reading 'Queue')"). A two-line adapter maps it onto
   ``MathJax.typesetPromise``.
3. Drop the unused thebe scripts:

jupyter-book 1 always loads sphinx-thebe, which registers its configuration script twice under
Sphinx 7 ("Identifier 'THEBE_JS_URL' has already been declared" in the console) and points at a
CDN. The book has no thebe button (launch_buttons.thebe is false), so the scripts are removed.

4. Render lectorch's own mime types. A panel (``application/vnd.lectorch.panel+json``) becomes
   plain HTML controls: live ones are recomputed in the page by ``static/lectorch-live.js``
   from the data that :func:`lectorch.widgets.live.export_data` exports at build time; measured
   panels carry a grid of results recorded when the notebook ran (``recording`` in the output's
   metadata), and their controls switch between those, labelled with the machine and the date; the
   others show their last result with disabled controls and a "snapshot" line. A checker result
   (``application/vnd.lectorch.check+json``) shows what the checker tests, never "Correct".
   myst-nb sends a mime type it does not know to ``NbElementRenderer.render_unhandled``; its
   plugin mechanism needs an entry point of an installed package, which would put book tooling
   into lectorch, so this extension extends ``render_unhandled`` instead (``patches.py``; it raises the two
   mime types above the widget view in the html builders' priority list).
   Stored progress bars (tqdm) become plain HTML too. A page whose widgets are all rendered so
   loads no widget manager (3.6 MB) and no widget state.
5. The install line of the chapters' first cell and of the running page (``{lectorch-install}``),
   built from the one setting ``repository.url`` of ``_config.yml``.
6. ``static/lectorch-nav.js``: the theme's sidebar buttons work at every width (see that file).
7. A light first visit (``book_light.py``, ``layout/layout.html``): Font Awesome once, as
   webfonts cut to the icons the book shows; the search index on the search page only; the CJK font
   where CJK text is.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.transforms.post_transforms import SphinxPostTransform

from lectorch.exercises import CHECK_MIME
from lectorch.widgets import PANEL_MIME

import patches
import plain_notebook
from languages import ZH_FOLDER, is_chinese, ui_gettext
from sphinx_lectorch_i18n import CONTROL, GPU_MARK_TITLE, OPTION, live_messages

ROOT = Path(__file__).resolve().parents[2]

#: The marker comment that opens every chapter's install cell (a test finds the cell by it).
INSTALL_MARKER = "# Install lectorch (the course's helper package) where it is missing, e.g. on Colab."


def repository_url(root: Path = ROOT) -> str:
    """The repository's URL: the one setting ``repository.url`` of ``_config.yml``."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    return config["repository"]["url"].rstrip("/")


def lectorch_version(root: Path = ROOT) -> str:
    """lectorch's version from ``pyproject.toml`` (the install line pins the tag ``v<version>``)."""
    text = (root / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def install_command(root: Path = ROOT) -> str:
    """The one pinned install line of lectorch, e.g. ``pip install "lectorch @ git+URL@v0.1.0"``."""
    return f'pip install "lectorch @ git+{repository_url(root)}@v{lectorch_version(root)}"'


def torch_range(root: Path = ROOT) -> tuple[tuple[int, int], tuple[int, int]]:
    """The torch releases lectorch supports, from ``pyproject.toml``: ``torch>=2.11,<2.16`` gives
    ``((2, 11), (2, 16))``, the first minor release supported and the first one not."""
    text = (root / "pyproject.toml").read_text()
    m = re.search(r'"torch>=(\d+)\.(\d+),<(\d+)\.(\d+)"', text)
    if m is None:
        raise ValueError('pyproject.toml must state torch as one range of minor releases, "torch>=X.Y,<X.Z"')
    a, b, c, d = map(int, m.groups())
    return (a, b), (c, d)


def install_cell_source(root: Path = ROOT) -> str:
    """The first code cell of every chapter: install lectorch when it is not importable, keeping the
    kernel's torch; a torch outside the supported range stops the cell with what to do, before pip
    could replace it (a multi-GB download that may no longer match the kernel's torchvision)."""
    (lo_major, lo_minor), (hi_major, hi_minor) = torch_range(root)
    last = f"{hi_major}.{hi_minor - 1}" if hi_minor else None
    if last is None:
        raise ValueError("pyproject.toml's torch range must end below a minor release X.Y with Y > 0")
    supported = f"{lo_major}.{lo_minor} to {last}"
    return (f"{INSTALL_MARKER}\n"
            "try:\n"
            "    import lectorch\n"
            "except ImportError:\n"
            "    from importlib.metadata import PackageNotFoundError, version\n"
            "    try:\n"
            "        found = version(\"torch\")\n"
            "    except PackageNotFoundError:\n"
            "        found = None\n"
            f"    if found and not ({lo_major}, {lo_minor}) <= tuple(map(int, found.split(\".\")[:2])) "
            f"< ({hi_major}, {hi_minor}):\n"
            "        raise RuntimeError(\n"
            f"            f\"This kernel has torch {{found}}; the course supports torch {supported}\"\n"
            "            \" (each tested). Install one of those, e.g. \"\n"
            f"            \"%pip install torch=={last}.*, restart the kernel and run this cell again.\")\n"
            "    keep = f\"torch=={found}\" if found else \"\"  # pip keeps this kernel's torch\n"
            f"    %{install_command(root).replace('pip install', 'pip install -q', 1)} {{keep}}")

MARKERS = ("# NBVAL_IGNORE_OUTPUT",)


def strip_bookkeeping(code: str) -> str:
    r"""A code cell's source without its top-level ``glue(...)`` calls (even over several lines).

    ``glue`` hands a computed value to the prose; the reader sees the value in the text, so the
    call is bookkeeping. The notebook keeps it.

    >>> strip_bookkeeping('x = 2\nglue("x", x)\nglue(\n    "y", 3\n)\nprint(x)')
    'x = 2\nprint(x)'
    """
    kept, depth = [], 0
    for line in code.split("\n"):
        if depth == 0 and not re.match(r"glue\(", line):
            kept.append(line)
            continue
        depth += line.count("(") - line.count(")")  # glue's arguments are plain names and literals
        depth = max(depth, 0)
    return "\n".join(kept).rstrip("\n")


def _hide_test_markers(app, doctree) -> None:
    """Hide the test-suite marker line and the ``glue(...)`` bookkeeping from the reader."""
    for block in doctree.findall(nodes.literal_block):
        text = block.astext()
        lines = text.split("\n")
        stripped = text
        if lines and lines[0].strip() in MARKERS:
            stripped = "\n".join(lines[1:])
        parent = block.parent
        if isinstance(parent, nodes.container) and "cell_input" in parent.get("classes", []):
            stripped = strip_bookkeeping(stripped) or stripped
        if stripped != text:
            block.children = [nodes.Text(stripped)]
            block.rawsource = stripped


MATHJAX2_ADAPTER = """
(function () {
  function install() {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {Queue: function (cmd) {
        var el = cmd && cmd[2];
        var ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
        ready.then(function () { return mj.typesetPromise ? mj.typesetPromise(el ? [el] : undefined) : null; })
             .catch(function (err) { console.warn("MathJax typeset in a widget failed", err); });
      }};
    }
  }
  document.addEventListener("DOMContentLoaded", install);
  window.addEventListener("load", install);
})();
"""


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "sphinx-thebe" in name or "THEBE_JS_URL" in body


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


HTML_BUILDERS = ("html", "dirhtml", "singlehtml")
STATIC = ROOT / "tools" / "book" / "static"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _widget_state(source: str) -> dict:
    """The widget state stored in a notebook's metadata (the panels' last results live there)."""
    path = Path(source)
    if path.suffix != ".ipynb" or not path.exists():
        return {}
    meta = json.loads(path.read_text()).get("metadata", {})
    return meta.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})


def _control_html(spec: dict, disabled: bool, _=lambda text, context=None: text) -> str:
    name, kind, label = spec["name"], spec["kind"], html.escape(_(spec["label"], CONTROL))
    attrs = f'data-control="{html.escape(name)}" aria-label="{label}"'
    attrs += " disabled" if disabled else ""
    readout = ""
    if kind == "fixed":  # a recorded panel's setting measured at one value only: text, not a control
        return (f'<span class="lp-control lp-fixed"><span class="lp-label">{label}</span>'
                f'<span data-control="{html.escape(name)}">{html.escape(str(spec["labels"][0]))}</span></span>')
    if kind in ("selection-slider", "select"):
        index = spec.get("index") or 0
        if kind == "select":
            options = "".join(f'<option value="{i}"{" selected" if i == index else ""}>'
                              f'{html.escape(_(str(lab), OPTION))}</option>' for i, lab in enumerate(spec["labels"]))
            widget = f"<select {attrs}>{options}</select>"
        else:
            widget = f'<input type="range" min="0" max="{len(spec["values"]) - 1}" step="1" value="{index}" {attrs}>'
            readout = html.escape(str(spec["labels"][index]))
    elif kind == "log-slider":
        exp = math.log(spec["value"], spec["base"])
        widget = (f'<input type="range" min="{spec["min"]}" max="{spec["max"]}" step="{spec["step"]}" '
                  f'value="{exp:.6g}" {attrs}>')
        readout = f'{spec["value"]:.3g}'
    elif kind in ("int-slider", "float-slider"):
        widget = (f'<input type="range" min="{spec["min"]}" max="{spec["max"]}" step="{spec["step"]}" '
                  f'value="{spec["value"]}" {attrs}>')
        readout = f'{spec["value"]:,}' if kind == "int-slider" else f'{spec["value"]:.3g}'
    elif kind == "checkbox":
        widget = f'<input type="checkbox"{" checked" if spec["value"] else ""} {attrs}>'
    elif kind == "number":
        bounds = "".join(f' {k}="{spec[k]}"' for k in ("min", "max") if spec.get(k) is not None)
        widget = f'<input type="number" value="{spec["value"]}"{bounds} {attrs}>'
    else:
        widget = f'<input type="text" value="{html.escape(str(spec["value"]))}" size="40" {attrs}>'
    out = f'<output data-readout="{html.escape(name)}">{readout}</output>' if kind.endswith("slider") else ""
    if kind == "int-slider" and (spec["max"] - spec["min"]) / spec["step"] > 1000:
        # a slider a few hundred pixels long cannot reach every one of thousands of values: a number box can
        out = (f'<input type="number" class="lp-number-box" data-readout="{html.escape(name)}" min="{spec["min"]}" '
               f'max="{spec["max"]}" step="{spec["step"]}" value="{spec["value"]}" '
               f'aria-label="{html.escape(_("{label} (number)")).format(label=label)}"{" disabled" if disabled else ""}>')
    return (f'<label class="lp-control lp-{kind}"><span class="lp-label">{label}</span>'
            f"{widget}{out}</label>")


def _grid_label(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def recorded_specs(specs: list[dict], grid: dict[str, list]) -> list[dict]:
    """A recorded panel's controls in the page: each offers exactly the values of the recorded grid.

    >>> recorded_specs([{"name": "n", "label": "n", "kind": "int-slider", "value": 4}], {"n": [2, 4]})[0]["index"]
    1
    >>> recorded_specs([{"name": "n", "label": "n", "kind": "int-slider", "value": 4}], {"n": [1]})[0]["kind"]
    'fixed'
    """
    out = []
    for spec in specs:
        values = grid.get(spec["name"])
        if values is None or (spec["kind"] == "checkbox" and sorted(values) == [False, True]):
            out.append(spec)
            continue
        current = spec.get("value", spec["values"][spec.get("index") or 0] if "values" in spec else None)
        # one recorded value: shown as a fixed setting, not as a control that changes nothing
        kind = ("fixed" if len(values) == 1 else
                "selection-slider" if spec["kind"].endswith("slider") else "select")
        out.append({"name": spec["name"], "label": spec["label"], "kind": kind, "values": values,
                    "labels": [_grid_label(v) for v in values],
                    "index": values.index(current) if current in values else 0})
    return out


def _json_script(data) -> str:
    """JSON for a ``<script type="application/json">``: ``</`` cannot end the script early."""
    return json.dumps(data, sort_keys=True).replace("</", "<\\/")


def panel_html(data: dict, meta: dict, state: dict, _=lambda text, context=None: text) -> str:
    """The static page's form of a panel (see the module docstring); ``_`` translates its text."""
    live = data.get("live")
    recording = json.loads(meta["recording"]) if data.get("recorded") and meta.get("recording") else None
    specs = meta.get("controls", [])
    if recording:
        specs = recorded_specs(specs, recording["grid"])
    controls = "".join(_control_html(spec, disabled=True, _=_) for spec in specs)
    title = html.escape(_(data.get("title", "")))
    if recording:
        note = html.escape(_("recorded on {machine}, {date}: the controls switch between the settings measured "
                             "when the notebook ran; run the notebook to measure others on your machine")).format(
            machine=html.escape(recording["machine"]), date=html.escape(recording["date"]))
        result = ('<div class="lp-result" aria-live="polite"></div>'
                  f'<script type="application/json" class="lp-recording">{_json_script(recording)}</script>')
        attrs = (f' data-recorded="{html.escape(data["recorded"])}" '
                 f'data-controls="{html.escape(json.dumps(specs))}"')
    elif live:
        note = html.escape(_("computed in this page from lectorch's data (no kernel needed); "
                             "run the notebook for the parts that measure"))
        result = '<div class="lp-result" aria-live="polite"></div>'
        attrs = f' data-live="{html.escape(live)}" data-controls="{html.escape(json.dumps(specs))}"'
    else:
        device = html.escape(meta.get("device", "this machine"))
        note = html.escape(_("snapshot of a run on {device} — run the notebook to explore")).format(device=device)
        stored = state.get(meta.get("result_model", ""), {}).get("state", {}).get("value", "")
        result = f'<div class="lp-result">{stored}</div>'
        attrs = ' data-snapshot="true"'
    return (f'<div class="lectorch-panel"{attrs}><div class="lp-title">{title}</div>'
            f'<form class="lp-controls" onsubmit="return false">{controls}</form>'
            f'<p class="lp-note">{note}</p>{result}</div>')


def check_html(data: dict, _=lambda text: text) -> str:
    """A checker cell's output in the static page: what the checker tests, not a verdict."""
    summary = html.escape(_(data.get("summary") or ""))
    exercise = html.escape(data.get("exercise") or "")
    # a Chinese summary ends with a Chinese full stop; an English one (even with ± or µ in it) with ". "
    stop = "。" if re.search(r"[\u3400-\u9fff]", summary) else ". "
    return (f'<div class="lectorch-check" data-exercise="{exercise}"><span class="lc-label">{html.escape(_("checker"))}</span> '
            f"{summary}{stop}<i>{html.escape(_('Run the notebook to get feedback on your answer.'))}</i></div>")


def _render_lectorch_outputs(render_unhandled, self, data):
    """lectorch's panels and checker results in the page (myst-nb knows neither mime type;
    :func:`patches.render_unknown_outputs` sends them here), any other output to myst-nb's own."""
    if data.mime_type not in (PANEL_MIME, CHECK_MIME):
        return render_unhandled(self, data)
    _ = ui_gettext(self.renderer.document.settings.env.config.language)
    if data.mime_type == PANEL_MIME:
        source = self.renderer.document["source"]
        meta = (data.output_metadata or {}).get(PANEL_MIME, {})
        return [nodes.raw("", panel_html(data.content, meta, _widget_state(source), _), format="html")]
    return [nodes.raw("", check_html(data.content, _), format="html")]


def _config_inited(app, config) -> None:
    overrides = list(config.nb_mime_priority_overrides or [])
    for builder in HTML_BUILDERS:
        overrides += [(builder, PANEL_MIME, 1), (builder, CHECK_MIME, 2)]
    for builder in ("latex", "text", "linkcheck", "gettext"):
        overrides += [(builder, PANEL_MIME, None), (builder, CHECK_MIME, None)]
    config.nb_mime_priority_overrides = overrides
    config.html_static_path = list(config.html_static_path) + [str(STATIC)]
    # the tab's icon: without one, a browser asks every page load for /favicon.ico, a 404
    config.html_favicon = config.html_favicon or str(STATIC / "favicon.svg")


def _write_live_data(app) -> None:
    if app.builder.format != "html":
        return
    from lectorch.widgets.live import export_data

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    body = json.dumps(export_data(), sort_keys=True)
    text = f"window.LECTORCH_LIVE_DATA = {body};\n"
    _ = ui_gettext(app.config.language)  # the page script's own text, in the page's language (_ui.po)
    ui = {m: _(m) for m in live_messages() if _(m) != m}
    if ui:
        text += f"window.LECTORCH_LIVE_UI = {json.dumps(ui, ensure_ascii=False, sort_keys=True)};\n"
    (static / "lectorch-live-data.js").write_text(text, encoding="utf-8")


def progress_html(model_id: str, state: dict) -> str | None:
    """A stored progress bar (tqdm's HBox of HTML, progress, HTML) as plain HTML, else None."""
    model = state.get(model_id, {})
    if model.get("model_name") != "HBoxModel":
        return None
    children = [state.get(ref.removeprefix("IPY_MODEL_"), {}) for ref in model.get("state", {}).get("children", [])]
    names = [c.get("model_name") for c in children]
    if names != ["HTMLModel", "FloatProgressModel", "HTMLModel"] and names != ["HTMLModel", "IntProgressModel", "HTMLModel"]:
        return None
    left, bar, right = (c.get("state", {}) for c in children)
    return (f'<div class="lectorch-progress">{left.get("value", "")} '
            f'<progress value="{bar.get("value", 0)}" max="{bar.get("max", 1)}"></progress> '
            f'{right.get("value", "")}</div>')


class StaticProgressBars(SphinxPostTransform):
    """Progress bars (tqdm in a notebook) become plain HTML: no widget manager for a progress bar."""

    default_priority = 5  # after myst-nb's SelectMimeType (4)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        state = None
        for node in list(self.document.findall(nodes.raw)):
            text = node.astext()
            if WIDGET_VIEW not in text:
                continue
            match = re.search(r'"model_id":\s*"([^"]+)"', text)
            if state is None:
                state = _widget_state(self.document["source"])
            static = progress_html(match.group(1), state) if match else None
            if static is not None:
                node.replace_self(nodes.raw("", static, format="html"))


def _uses_widget_manager(doctree) -> bool:
    return any(WIDGET_VIEW in node.astext() for node in doctree.findall(nodes.raw))


def _drop_unused_widget_manager(app, pagename, templatename, context, doctree) -> None:
    if doctree is None or _uses_widget_manager(doctree):
        return
    def keep(asset) -> bool:
        name = str(getattr(asset, "filename", asset) or "")
        kind = str(getattr(asset, "attributes", {}).get("type", ""))
        return "html-manager" not in name and kind != "application/vnd.jupyter.widget-state+json"
    if "script_files" in context:
        context["script_files"] = [a for a in context["script_files"] if keep(a)]


def gpu_mark(language: str | None = None) -> str:
    """The mark of a GPU cell, its tooltip in the page's language (``_ui.po``)."""
    title = html.escape(ui_gettext(language)(GPU_MARK_TITLE))
    return f'<span class="lectorch-gpu-mark" title="{title}">GPU</span>'


def _mark_gpu_cells(app, doctree) -> None:
    """Cells tagged ``gpu`` get the visible mark that the GPU admonition promises."""
    mark = gpu_mark(app.config.language)
    for cell in list(doctree.findall(nodes.container)):
        if "tag_gpu" in cell.get("classes", []):
            cell.insert(0, nodes.raw("", mark, format="html"))


def _exercise_hint(app, doctree) -> None:
    """One line above a page's first exercise: how a self-study reader (or a class) works it."""
    if app.builder.format != "html":  # not a message of the pages' catalogs: it comes from _ui.po
        return
    from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node

    first = next(iter(doctree.findall(lambda n: isinstance(n, (exercise_node, exercise_enumerable_node)))), None)
    if first is None or first.parent is None:
        return
    text = ui_gettext(app.config.language)(plain_notebook.CLASS_PAGE_HINT if app.tags.has("class")
                                           else plain_notebook.PAGE_HINT)
    hint = nodes.paragraph("", "", nodes.emphasis(text, text), classes=["lectorch-exercise-hint"])
    first.parent.insert(first.parent.index(first), hint)


def student_notebook_path(pagename: str, language: str | None) -> str:
    """Where the published book keeps a page's reader notebook (the one its download button gives):
    ``_sources/<page>.ipynb`` of its edition's folder.

    >>> student_notebook_path("chapters/03_strides_views", "zh_CN")
    'zh/_sources/chapters/03_strides_views.ipynb'
    """
    return f"{ZH_FOLDER + '/' if is_chinese(language) else ''}_sources/{pagename}.ipynb"


def _launch_reader_notebook(app, pagename, templatename, context, doctree) -> None:
    """The Colab button opens the page's reader notebook (stubs, plain Markdown, the page's
    language) from the branch the book is published on, not the chapter with its solutions."""
    branch = app.config.lectorch_pages_branch
    if not branch:
        return
    _ = ui_gettext(app.config.language)
    path = repository_url().removeprefix("https://github.com/")
    target = f"/github/{path}/blob/{branch}/{student_notebook_path(pagename, app.config.language)}"

    def visit(item) -> None:
        if isinstance(item, dict):
            if item.get("text") == "Colab" and "/github/" in str(item.get("url", "")):
                item["url"] = item["url"].split("/github/")[0] + target
                item["tooltip"] = _("Open this page's notebook in Colab")
            for value in item.values():
                visit(value)
        elif isinstance(item, list):
            for value in item:
                visit(value)

    visit(context.get("header_buttons", []))


def _number_per_chapter(app, env) -> None:
    """Number exercises, solutions and figures per chapter: "Exercise 5.2", "Fig. 5.1" (not across the book)."""
    for docname, by_type in env.toc_fignumbers.items():
        chapter = plain_notebook.chapter_number(docname)
        for figtype, numbers in by_type.items():
            order = sorted(numbers, key=lambda key: numbers[key])
            for i, key in enumerate(order, start=1):
                numbers[key] = (chapter, i) if chapter is not None else (i,)
    return []


class InstallDirective(Directive):
    """``{lectorch-install}``: a code block with the one pinned install line (from ``_config.yml``)."""

    has_content = False

    def run(self):
        text = f"%{install_command().replace('pip install', 'pip install -q', 1)}"
        block = nodes.literal_block(text, text)
        block["language"] = "ipython3"
        return [block]


class CloneDirective(Directive):
    """``{lectorch-clone}``: ``git clone <repository.url>`` and the make target, as a bash block."""

    has_content = False

    def run(self):
        text = f"git clone {repository_url()} lectorch && cd lectorch\nmake lab"
        block = nodes.literal_block(text, text)
        block["language"] = "bash"
        return [block]


class TorchMatrixDirective(Directive):
    """``{lectorch-torch-matrix}``: the table of the torch releases the course is tested on, from the
    committed result of `make torch-matrix` (``benchmarks/torch-matrix.json``). Its column titles
    are translatable messages of the page; its cells are data (not extracted for translation)."""

    has_content = False

    def run(self):
        import torch_matrix

        source, line = self.state_machine.get_source_and_line(self.lineno)
        rows = torch_matrix.table()
        table = nodes.table(classes=["lectorch-torch-matrix"])
        group = nodes.tgroup(cols=len(rows[0]))
        table += group
        group += [nodes.colspec(colwidth=1) for _ in rows[0]]
        for part, part_rows in ((nodes.thead(), rows[:1]), (nodes.tbody(), rows[1:])):
            for i, cells in enumerate(part_rows):
                row = nodes.row()
                for text in cells:
                    para = nodes.paragraph(text, text)
                    if isinstance(part, nodes.thead):  # a message of the page: running.po translates it
                        para.source, para.line = source, line
                    row += nodes.entry("", para)
                part += row
            group += part
        return [table]


def setup(app):
    import book_light  # tools/, beside this extension: the fonts cut to what the pages show

    book_light.setup(app)
    patches.render_unknown_outputs(_render_lectorch_outputs)
    app.add_js_file(None, body=MATHJAX2_ADAPTER, priority=100)
    app.add_js_file("lectorch-live-data.js", priority=500)
    app.add_js_file("lectorch-live.js", priority=501, defer="defer")
    app.add_js_file("lectorch-nav.js", priority=502, defer="defer")
    app.add_css_file("lectorch.css")
    app.add_css_file("lectorch-reader.css")
    app.add_js_file("lectorch-figures.js", priority=503, defer="defer")  # tap a figure to enlarge it
    app.add_css_file("lectorch-figures.css")
    app.add_directive("lectorch-install", InstallDirective)
    app.add_directive("lectorch-clone", CloneDirective)
    app.add_directive("lectorch-torch-matrix", TorchMatrixDirective)
    app.add_post_transform(StaticProgressBars)
    app.connect("config-inited", _config_inited)
    app.connect("builder-inited", _write_live_data)
    app.connect("doctree-read", _hide_test_markers)
    app.connect("doctree-read", _mark_gpu_cells)
    app.connect("doctree-read", _exercise_hint)
    app.connect("env-get-updated", _number_per_chapter, priority=900)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("html-page-context", _launch_reader_notebook, priority=600)  # after the theme's buttons (501)
    # the branch the built book is published on (_config.yml): Colab opens the reader notebooks there
    app.add_config_value("lectorch_pages_branch", "", "html")
    app.connect("html-page-context", _drop_unused_widget_manager, priority=901)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
