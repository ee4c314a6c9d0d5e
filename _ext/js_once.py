"""Sphinx extension: write each inline script into a page once (Sphinx 7.x wrote some twice).

Extensions that add an inline script after the builder has started (sphinx-thebe's
`const THEBE_JS_URL = ...`, sphinx-togglebutton's selector) call `app.add_js_file(None, body=...)`.
Sphinx 7.x stores that script under the name None, then, before writing, adds every registered script
again under the name '' (`filename or ''`); None != '' so the page gets two copies, and the second
`const` declaration throws "Identifier 'THEBE_JS_URL' has already been declared" on every page.
Sphinx fixed this upstream in its 8.x series (sphinx-doc/sphinx#13402: pass '' instead of None to the
builder), but Jupyter Book 1.x needs Sphinx 7; this extension applies the same one-line fix to the running app.
"""

from __future__ import annotations

from typing import Any


def setup(app: Any) -> dict[str, Any]:
    add_js_file = app.add_js_file

    def add_js_file_once(filename: str | None, priority: int = 500, loading_method: str | None = None,
                         **kwargs: Any) -> None:
        add_js_file(filename or "", priority=priority, loading_method=loading_method, **kwargs)

    app.add_js_file = add_js_file_once
    return {"parallel_read_safe": True, "parallel_write_safe": True}
