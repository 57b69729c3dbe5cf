"""A small Sphinx extension for the book: drop the unused thebe scripts.

jupyter-book 1 always loads sphinx-thebe, which registers its configuration script twice under
Sphinx 7 ("Identifier 'THEBE_JS_URL' has already been declared" in the console) and points at a
CDN. The book has no thebe button (launch_buttons.thebe is false), so the scripts are removed.
"""

from __future__ import annotations


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "sphinx-thebe" in name or "THEBE_JS_URL" in body


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def setup(app):
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
