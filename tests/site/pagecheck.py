"""Check a built page's text the way a reader reads it: raw TeX, frozen bars, long outputs, check marks in view.

`page_problems(html)` returns one line per problem, empty for a clean page:
- raw TeX: a `$` that is not money (`$1.20 per hour`) or a TeX command (`\\text{`, `\\frac`, ...) in the prose,
  outside the math that MathJax typesets and outside code. It is what a reader sees when dollar-math did not pair
  up (chapter 8 once had a line of an inequality begin with `>`, which Markdown turned into a blockquote, leaving
  `$2DF/(Y W_\\text{hbm})` raw);
- a frozen progress bar: a tqdm line below 100 % (`calibrating:   0%|          | 0/2`) in a cell's output, what a
  notebook widget bar leaves in a static page;
- an output longer than `MAX_OUTPUT_CHARS` characters of text, rows it folds away included (chapter 9 once printed
  a 26,000-character op table, 20 rows shown and the rest in a fold: a fold is opened by a reader, printed open in
  the PDF and kept in the notebook). A reference listing is exempt: the chapter's closing "Checked numbers" fold
  and the output of a cell tagged `reference-table` (chapter 13's scorecard of every published run).

Check marks need a browser, since the page's stylesheet decides what is in view: `VISIBLE_CHECKS` is a JavaScript
expression for Chromium (tests/site/browser.py) that lists every line of a cell output holding a ✓ that is rendered
with the page's folds closed (not in a table cell, where ✓ is data), and `check_mark_problems` reads that list: a
bare ✓ (a line that is nothing but the mark, `sb.expect`'s) is a problem, and so is more than one check line in a
section. `TYPESET_MATHS` counts the page's formulas and those typeset (a MathJax `mjx-container` in them): run in a
page with its JavaScript off, it shows whether the maths was typeset when the site was built (_ext/server_maths.py).
"""

from __future__ import annotations

import json
import re

from bs4 import BeautifulSoup, Tag

MAX_OUTPUT_CHARS = 5_000  # characters of text in one cell output, folded rows included: about a screen of a table
REFERENCE = "details.sb-checked-numbers, div.cell.tag_reference-table div.cell_output"  # listings exempt from it
TEX = re.compile(r"\$|\\[A-Za-z]+|\\[()\[\]]")  # a dollar, a TeX command (\text, \frac), \( or \[
# Dollars that are money, not maths: "$1.20 per", "$10.8/h", "$0.80;", and a lone "$" in "FLOPs per $".
CURRENCY = re.compile(r"\$\d[\d,]*(?:\.\d+)?(?=[\s/,.;:)]|$)|(?<=\s)\$(?=\s|$)", re.M)
BAR = re.compile(r"(\d{1,3})%\|")  # tqdm's "  37%|███▋      | 3/8"
BARE_MARKS = ("✓", "✓ regression")  # what `sb.expect`'s mark reads when nothing else is on its line
NOT_PROSE = ("script", "style", "pre", "code", "kbd", "samp", "textarea")
MATH = ("math", "MathJax", "mjx-container")


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _article(soup: BeautifulSoup) -> Tag:
    """The page's reading column (Sphinx's `<main>`/`<article>`), or the whole body of a bare page."""
    return soup.find("article") or soup.find("main") or soup.body or soup


def _is_math(tag: Tag) -> bool:
    return tag.name == "mjx-container" or any(c in MATH for c in tag.get("class") or [])


def _prose(node: Tag) -> list[str]:
    """The text of `node` a reader reads as prose: no code, no scripts, no math elements."""
    found = []
    for child in node.children:
        if isinstance(child, Tag):
            if child.name not in NOT_PROSE and not _is_math(child):
                found += _prose(child)
        elif type(child).__name__ == "NavigableString":
            found.append(str(child))
    return found


def tex_in_text(text: str) -> list[str]:
    """One line per place in a reader's `text` (prose, no code) that still holds TeX source."""
    text = CURRENCY.sub("USD", text)
    return [f"raw TeX: ...{text[max(m.start() - 40, 0):m.end() + 40].strip()}..." for m in TEX.finditer(text)]


def raw_tex(html: str) -> list[str]:
    """One line per prose fragment that still holds TeX source (a `$`, `\\text{`, `\\frac`, `\\(` ...)."""
    return tex_in_text(" ".join(_prose(_article(_soup(html)))))


def _outputs(html: str) -> list[str]:
    return [div.get_text() for div in _article(_soup(html)).select("div.cell_output")]


def frozen_bars(html: str) -> list[str]:
    """One line per progress bar below 100 % in a cell's output."""
    return [f"frozen progress bar: {line.strip()}" for text in _outputs(html) for line in text.splitlines()
            for m in BAR.finditer(line) if int(m.group(1)) < 100]


def long_outputs(html: str, limit: int = MAX_OUTPUT_CHARS) -> list[str]:
    """One line per cell output holding more than `limit` characters of text (`limit` a positive count), rows it
    folds into a closed `<details>` included; a reference listing (`REFERENCE`) is not counted."""
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number of characters, got {limit!r}")
    article = _article(_soup(html))
    exempt = {id(tag) for tag in article.select(REFERENCE)}
    texts = [div.get_text() for div in article.select("div.cell_output")
             if not any(id(tag) in exempt for tag in (div, *div.parents, *div.find_all(True)))]
    return [f"output of {len(text):,} characters (limit {limit:,}): {text.strip()[:60]}..."
            for text in texts if len(text) > limit]


def page_problems(html: str) -> list[str]:
    """Raw TeX, frozen progress bars and outputs over the size limit in one page's HTML."""
    return raw_tex(html) + frozen_bars(html) + long_outputs(html)


# Every line with a ✓ in view in a cell output, outside table cells, as JSON [{"section": id, "line": text}]:
# innerText holds only what is rendered (not a closed <details>, not what the stylesheet hides), one block at a time.
VISIBLE_CHECKS = r"""(() => {
  const article = document.querySelector('.bd-article') || document.querySelector('article') || document.body;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT), blocks = new Set();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (node.data.includes('\u2713') && element.closest('div.cell_output') && !element.closest('td, th')
        && element.checkVisibility({opacityProperty: true, visibilityProperty: true}))
      blocks.add(element.closest('div, pre, p, li') || element);
  }
  return JSON.stringify([...blocks].flatMap(block => block.innerText.split('\n')
    .filter(line => line.includes('\u2713'))
    .map(line => ({section: (block.closest('section') || {}).id || '', line: line.trim()}))));
})()"""


TYPESET_MATHS = r"""JSON.stringify([...(document.querySelector('.bd-article') || document.body)
  .querySelectorAll('span.math, div.math')].map(formula => !!formula.querySelector('mjx-container')))"""


def untypeset_maths(found: str) -> list[str]:
    """One line when formulas are left as TeX, from the JSON that `TYPESET_MATHS` returns in a page."""
    typeset = json.loads(found)
    return [f"{typeset.count(False)} of {len(typeset)} formulas left as TeX"] if not all(typeset) else []


def check_mark_problems(found: str) -> list[str]:
    """One line per bare ✓ in view and per section with more than one check line in view, from the JSON that
    `VISIBLE_CHECKS` returns in a page."""
    lines = json.loads(found)
    per_section: dict[str, int] = {}
    for line in lines:
        per_section[line["section"]] = per_section.get(line["section"], 0) + 1
    return ([f"bare mark in view in section {line['section']!r}: {line['line']}" for line in lines
             if line["line"] in BARE_MARKS]
            + [f"{count} check lines in view in section {section!r} (at most 1)"
               for section, count in per_section.items() if count > 1])
