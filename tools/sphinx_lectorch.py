"""A small Sphinx extension for the book.

1. Hide the ``# NBVAL_IGNORE_OUTPUT`` marker line of code cells: it is for the test suite, not the
   reader (the notebooks keep it).
2. Let the widgets typeset with MathJax 3: ipywidgets 8 controls call the MathJax 2 API
   (``MathJax.Hub.Queue``) whenever ``window.MathJax`` exists, which throws under MathJax 3
   ("Cannot read properties of undefined (reading 'Queue')"). A two-line adapter maps it onto
   ``MathJax.typesetPromise``.
3. Drop the unused thebe scripts:

jupyter-book 1 always loads sphinx-thebe, which registers its configuration script twice under
Sphinx 7 ("Identifier 'THEBE_JS_URL' has already been declared" in the console) and points at a
CDN. The book has no thebe button (launch_buttons.thebe is false), so the scripts are removed.
"""

from __future__ import annotations

from docutils import nodes

MARKERS = ("# NBVAL_IGNORE_OUTPUT",)


def _hide_test_markers(app, doctree) -> None:
    for block in doctree.findall(nodes.literal_block):
        text = block.astext()
        lines = text.split("\n")
        if lines and lines[0].strip() in MARKERS:
            stripped = "\n".join(lines[1:])
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


def setup(app):
    app.add_js_file(None, body=MATHJAX2_ADAPTER, priority=100)
    app.connect("doctree-read", _hide_test_markers)
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
