"""The page style (_ext/static/scalebook-page.css) in Chromium at a laptop's width: code lines wrap instead of
scrolling sideways, table cells are padded, and a figure in a cell tagged `full-width` fills the cell.

`fixtures/style.html` holds one of each; with the stylesheet switched off all three must be reported, so the
check can fail. Then every chapter of the built site (SCALEBOOK_SITE, default _build/html) is checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from browser import BROWSER, read_offline

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
CHAPTERS = sorted((SITE / "chapters").glob("*.html"))
FIXTURE = Path(__file__).parent / "fixtures" / "style.html"
MIN_PADDING_PX = 3  # on each side of a table cell: 6 px between two columns (ch. 3's ring grids use 3)

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: run `make book` first")


def _layout(switch_off: bool) -> str:
    """A JavaScript expression: the page's layout problems as a JSON list, optionally without our stylesheet."""
    return f"""(() => {{
  if ({json.dumps(switch_off)})
    document.querySelectorAll('link[href*="scalebook-page.css"]').forEach(link => link.disabled = true);
  const article = document.querySelector('.bd-article') || document.body, found = [];
  for (const pre of article.querySelectorAll('pre'))
    if (pre.scrollWidth > pre.clientWidth + 1) found.push('scrolls sideways: ' + pre.textContent.slice(0, 50));
  const cell = [...article.querySelectorAll('td, th')].find(c => {{
    const style = getComputedStyle(c);
    return Math.min(parseFloat(style.paddingLeft), parseFloat(style.paddingRight)) < {MIN_PADDING_PX}; }});
  if (cell) found.push('table cell without padding: ' + cell.textContent.trim().slice(0, 50));
  const inner = box => {{ const style = getComputedStyle(box);  // the width a child can fill
    return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight); }};
  for (const img of article.querySelectorAll('div.cell.tag_full-width div.cell_output img'))
    if (img.getBoundingClientRect().width < inner(img.closest('details') || img.closest('div.cell')) - 2)
      found.push('full-width figure narrower than its cell: ' + img.alt);
  return JSON.stringify(found);
}})()"""


def layout_problems(url: str, switch_off: bool = False) -> list[str]:
    """Code that scrolls sideways, unpadded table cells and full-width figures that do not fill their cell (a
    folded figure measured against the fold's inner width: the fold is padded like an admonition)."""
    return json.loads(read_offline(url, _layout(switch_off))[0])


@needs_browser
def test_without_the_stylesheet_each_problem_is_found():
    assert [line.split(":")[0] for line in layout_problems(FIXTURE.as_uri(), switch_off=True)] == [
        "scrolls sideways", "table cell without padding"] + ["full-width figure narrower than its cell"] * 2


@needs_browser
def test_with_the_stylesheet_code_wraps_cells_are_padded_and_figures_fill_the_width():
    assert layout_problems(FIXTURE.as_uri()) == []


@needs_site
@needs_browser
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_layout(page: Path):
    assert layout_problems(page.as_uri()) == []
