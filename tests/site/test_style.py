"""The page style (_ext/static/scalebook-page.css) in Chromium at a laptop's width (1,280 px) and a phone's (390 px):
code lines wrap instead of scrolling sideways, table cells are padded, a figure in a cell tagged `full-width` fills
the cell, tables fit the reading column, and captions and fold titles are legible in both colour modes.

Tables: at 1,280 px every table fits the column (one in a scroll box that hides part of it is clipped); at 390 px a
table may be wider than the column only inside its own horizontal scroll box that fits the column. Legibility: the
WCAG contrast ratio of each visible table caption, figure caption and fold title against the colour behind it, with
the theme's light and dark modes set (`html[data-theme]`, what the theme's switch and `prefers-color-scheme` set),
at least `MIN_CONTRAST`.

`fixtures/style.html` holds one of each page-style problem; with the stylesheet switched off all must be reported,
so the check can fail. A built chapter with the stylesheet switched off must show clipped tables and an illegible
dark-mode caption (chapter 5's, at 1.7 before the stylesheet's caption rule). Then every chapter of the built site
(SCALEBOOK_SITE, default _build/html) and its errata page are checked at both widths.
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
PAGES = CHAPTERS + sorted(SITE.glob("errata.html"))
FIXTURE = Path(__file__).parent / "fixtures" / "style.html"
MIN_PADDING_PX = 3  # on each side of a table cell: 6 px between two columns (ch. 3's ring grids use 3)
MIN_CONTRAST = 4.5  # WCAG 2's AA ratio for body text
LAPTOP, PHONE = 1280, 390  # page widths in CSS pixels
# The WCAG contrast ratio of an element's text colour against the first opaque background behind it.
CONTRAST = """
  const rgba = text => { const v = text.match(/[\\d.]+/g).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const luminance = colour => { const [r, g, b] = colour.slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const behind = element => { for (let e = element; e; e = e.parentElement) {
    const colour = rgba(getComputedStyle(e).backgroundColor); if (colour[3] > 0.5) return colour; }
    return [255, 255, 255, 1]; };
  const contrast = element => { const [a, b] = [luminance(rgba(getComputedStyle(element).color)),
    luminance(behind(element))].sort((x, y) => y - x); return (a + 0.05) / (b + 0.05); };
"""

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: run `make book` first")


def _layout(switch_off: bool, width: int) -> str:
    """A JavaScript expression: the page's layout problems at `width` px as a JSON list, optionally without our
    stylesheet."""
    return f"""(() => {{
  if ({json.dumps(switch_off)})
    document.querySelectorAll('link[href*="scalebook-page.css"]').forEach(link => link.disabled = true);
  const article = document.querySelector('.bd-article') || document.body, found = [];
  {CONTRAST}
  const column = article.getBoundingClientRect().right - parseFloat(getComputedStyle(article).paddingRight) + 1;
  for (const table of article.querySelectorAll('table')) {{
    if (!table.checkVisibility() || table.getBoundingClientRect().right <= column) continue;
    let box = table.parentElement;
    while (box !== article && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    const name = table.textContent.trim().replace(/\\s+/g, ' ').slice(0, 50);
    if (box === article || box.getBoundingClientRect().right > column)
      found.push('table wider than the column: ' + name);
    else if ({width} > {PHONE}) found.push('table clipped by its scroll box: ' + name);
  }}
  const theme = document.documentElement.dataset.theme;
  for (const mode of ['light', 'dark']) {{
    document.documentElement.dataset.theme = mode;
    for (const text of article.querySelectorAll('caption, figcaption, summary'))
      if (text.checkVisibility() && text.textContent.trim() && contrast(text) < {MIN_CONTRAST})
        found.push(`illegible in ${{mode}} mode (contrast ${{contrast(text).toFixed(2)}}): `
                   + text.textContent.trim().slice(0, 50));
  }}
  document.documentElement.dataset.theme = theme;
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


def layout_problems(url: str, switch_off: bool = False, width: int = LAPTOP) -> list[str]:
    """Tables that do not fit, captions and fold titles below `MIN_CONTRAST` in light or dark mode, code that scrolls
    sideways, unpadded table cells and full-width figures that do not fill their cell (a folded figure measured
    against the fold's inner width: the fold is padded like an admonition), on a page `width` px wide."""
    return json.loads(read_offline(url, _layout(switch_off, width), width=width)[0])


@needs_browser
def test_without_the_stylesheet_each_problem_is_found():
    assert [line.split(":")[0] for line in layout_problems(FIXTURE.as_uri(), switch_off=True)] == [
        "table clipped by its scroll box", "table wider than the column", "illegible in dark mode (contrast 1.71)",
        "scrolls sideways",
        "table cell without padding"] + ["full-width figure narrower than its cell"] * 2


@needs_browser
def test_a_table_too_wide_for_a_phone_is_found_unless_it_scrolls_in_its_own_box():
    assert [line.split(":")[0] for line in layout_problems(FIXTURE.as_uri(), width=PHONE)] == [
        "table wider than the column"]


@needs_browser
def test_with_the_stylesheet_code_wraps_cells_are_padded_and_figures_fill_the_width():
    assert layout_problems(FIXTURE.as_uri()) == []


@needs_site
@needs_browser
def test_without_the_stylesheet_a_chapter_clips_its_tables_and_greys_its_captions_in_dark_mode():
    found = {line.split(":")[0] for line in layout_problems((SITE / "chapters" / "05_training.html").as_uri(),
                                                           switch_off=True)}
    assert {"table clipped by its scroll box", "illegible in dark mode (contrast 1.71)"} <= found, found


@needs_site
@needs_browser
@pytest.mark.parametrize("width", [LAPTOP, PHONE])
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_page_layout(page: Path, width: int):
    assert layout_problems(page.as_uri(), width=width) == []
