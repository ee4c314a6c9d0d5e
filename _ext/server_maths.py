"""Sphinx extension: the maths typeset when the site is built, so that a page reads with JavaScript off too.

Sphinx writes each formula as TeX into the page (`\\(...\\)` in a `span.math`, `\\[...\\]` in a `div.math`) for
MathJax to typeset in the reader's browser: with JavaScript off a reader saw the TeX. Once the pages are written,
this extension typesets every formula left in them with the same MathJax, the site's pinned copy
(_ext/live_explorers.py fetches it), run by Node.js (_ext/typeset_maths.js), into CommonHTML, the output MathJax
makes in a browser; and it writes MathJax's stylesheet, every glyph of its TeX fonts (served by the site), to
`_static/mathjax-chtml.css`, which every page links. A page with no TeX left for MathJax to find (`raw_tex`) then
loses the two scripts that load MathJax in the browser (`without_mathjax`): its maths is already on the page, with
JavaScript on or off. A page that still holds TeX keeps them, so the browser typesets what the build could not. A
page Sphinx did not rewrite keeps the maths typeset by an earlier build.

Without Node.js (`make book` installs Debian's nodejs) the pages keep their TeX for MathJax in the browser, and
the build says so; tests/site/test_page_checks.py then fails, since the maths no longer reads with JavaScript off.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sphinx.util import logging

HERE = Path(__file__).resolve().parent
STYLESHEET = "mathjax-chtml.css"
FONTS = "mathjax/output/chtml/fonts/woff-v2"  # MathJax's fonts, as _ext/live_explorers.py copies them into _static/
# A formula as Sphinx writes it: its element's opening tag, anything before the TeX (an equation number), the TeX.
FORMULA = re.compile(r'(<(span|div) class="math notranslate nohighlight"[^>]*>)((?:(?!</\2>).)*?)(\\\(|\\\[)'
                     r'((?:(?!</\2>).)*?)(\\\)|\\\])(</\2>)', re.S)
# What MathJax in a browser skips when it looks for TeX (its skipHtmlTags, and the formulas already typeset), and the
# TeX it would find elsewhere: its default delimiters \( \) \[ \] $$ and a bare environment (\begin{...}).
SKIPPED = re.compile(r"<(script|noscript|style|textarea|pre|code|mjx-container)\b.*?</\1>", re.S | re.I)
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$|\\begin\{")
log = logging.getLogger(__name__)


def typeset(items: list[tuple[str, bool]], mathjax: Path) -> tuple[list[str], str]:
    """MathJax's CommonHTML for each (TeX, display) item, and its stylesheet (fonts found at `FONTS` beside it)."""
    run = subprocess.run(["node", str(HERE / "typeset_maths.js")], capture_output=True, text=True, timeout=600,
                         input=json.dumps({"mathjax": str(mathjax), "fontURL": FONTS, "items": items}))
    if run.returncode != 0:
        raise RuntimeError(f"MathJax in Node.js failed: {run.stderr[-2000:]}")
    done = json.loads(run.stdout)
    return done["html"], done["css"]


def _formulas(page: str) -> list[tuple[str, bool]]:
    return [(html.unescape(m.group(5)), m.group(4) == "\\[") for m in FORMULA.finditer(page)]


def raw_tex(page: str) -> list[str]:
    """The TeX that MathJax in a browser would still find in the HTML `page`: each delimiter or environment left."""
    return RAW_TEX.findall(SKIPPED.sub("", page))


def without_mathjax(page: str, script: str) -> str:
    """The HTML `page` without the scripts that load MathJax (its configuration, and `script`, the path of MathJax's
    loader under _static/ as Sphinx links it) when no TeX is left in it for MathJax; otherwise `page` unchanged."""
    if raw_tex(page):
        return page
    loader = rf'<script[^>]*src="(?:\.\./)*_static/{re.escape(script)}(?:\?[^"]*)?"[^>]*></script>\s*'
    return re.sub(rf"<script>window\.MathJax = [^<]*</script>\s*|{loader}", "", page)


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if shutil.which("node") is None:
        log.info("server_maths: no Node.js here, so the maths is left to MathJax in the reader's browser")
        return
    written = {path: path.read_text(encoding="utf-8") for path in Path(app.outdir).rglob("*.html")}
    found = {path: _formulas(text) for path, text in written.items()}
    stylesheet = Path(app.outdir) / "_static" / STYLESHEET
    pages = dict(written)
    if any(found.values()) or not stylesheet.exists():  # else every page was typeset by an earlier build
        done, css = typeset([item for items in found.values() for item in items], app.scalebook_live["mathjax"])
        stylesheet.write_text(css, encoding="utf-8")
        rendered = iter(done)
        pages = {path: FORMULA.sub(lambda m: m.group(1) + m.group(3) + next(rendered) + m.group(7), text)
                 if found[path] else text for path, text in written.items()}
    for path, text in pages.items():
        quiet = without_mathjax(text, app.config.mathjax_path)
        if quiet != written[path]:
            path.write_text(quiet, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.add_css_file(STYLESHEET)
    app.connect("build-finished", _build_finished, priority=900)  # after live_explorers has copied MathJax
    return {"parallel_read_safe": True, "parallel_write_safe": True}
