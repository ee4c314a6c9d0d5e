"""A page whose maths the build typeset (_ext/server_maths.py) loads no MathJax, and its formulas show with JavaScript
on and off; a page that still holds TeX for MathJax to find keeps MathJax, which typesets it in the browser.

The check of the site failed on every chapter as built before: the maths was typeset on the server, and each page
still loaded MathJax (its configuration and `_static/mathjax/tex-mml-chtml.js`), which then found nothing to do.
The fallback is checked on fixtures/cdn_math.html, whose maths is left as TeX. SCALEBOOK_SITE points at a site
built elsewhere (default: _build/html).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest
from browser import BROWSER, read_offline
from pagecheck import TYPESET_MATHS, untypeset_maths

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
_spec = importlib.util.spec_from_file_location("server_maths", ROOT / "_ext" / "server_maths.py")
server_maths = sys.modules["server_maths"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(server_maths)
CHAPTERS = sorted((SITE / "chapters").glob("*.html"))
LOADER = "mathjax/tex-mml-chtml.js"  # MathJax's loader under _static/, as _ext/live_explorers.py sets mathjax_path
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: `make book`")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")

# Whether each of the page's formulas is typeset; of those in view (folds closed), how many are drawn (their
# mjx-container has an area); and whether MathJax was loaded.
MATHS_SHOWN = r"""(() => {
  const inView = [...document.querySelectorAll('.bd-article :is(span.math, div.math)')]
    .filter(formula => formula.checkVisibility());
  return JSON.stringify({typeset: JSON.parse(TYPESET), inView: inView.length, mathjax: typeof window.MathJax,
    drawn: inView.filter(f => (f.querySelector('mjx-container')?.getBoundingClientRect().width ?? 0) > 0).length});
})()""".replace("TYPESET", TYPESET_MATHS)


def test_a_page_with_tex_left_keeps_mathjax_and_a_typeset_page_loses_it():
    loader = ('<script>window.MathJax = {"options": {}}</script>\n'
              '<script defer="defer" src="../_static/mathjax/tex-mml-chtml.js?v=1"></script>\n')
    typeset = ('<span class="math notranslate nohighlight"><mjx-container jax="CHTML">\\(x\\)</mjx-container>'
               "</span><pre>r'\\(' in code</pre>")
    page = f"<html><head>{loader}</head><body>{typeset}</body></html>"
    assert server_maths.without_mathjax(page, LOADER) == \
        f"<html><head></head><body>{typeset}</body></html>"
    for raw in ("\\(x\\)", "\\[x\\]", "$$x$$", "\\begin{align}x\\end{align}"):
        assert server_maths.without_mathjax(page + raw, LOADER) == page + raw
    cdn = (FIXTURES / "cdn_math.html").read_text(encoding="utf-8")  # its maths left for MathJax from a CDN
    assert server_maths.raw_tex(cdn) and server_maths.without_mathjax(cdn, LOADER) == cdn


@needs_site
@needs_browser
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_a_typeset_chapter_loads_no_mathjax_and_its_maths_shows_with_javascript_on_and_off(page: Path):
    html = page.read_text(encoding="utf-8")
    assert server_maths.raw_tex(html) == []
    assert not re.search(r"<script[^>]*(mathjax/|>window\.MathJax)", html)
    for scripts in (True, False):
        shown = json.loads(read_offline(page.as_uri(), MATHS_SHOWN, scripts=scripts)[0])
        assert untypeset_maths(json.dumps(shown["typeset"])) == [] and shown["mathjax"] == "undefined"
        assert shown["drawn"] == shown["inView"] > 0 or not shown["typeset"], shown  # drawn, not only present
