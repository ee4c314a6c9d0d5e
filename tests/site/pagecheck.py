"""Check a built page's text the way a reader reads it, without a browser: raw TeX, frozen bars, long outputs.

`page_problems(html)` returns one line per problem, empty for a clean page:
- raw TeX: a `$` that is not money (`$1.20 per hour`) or a TeX command (`\\text{`, `\\frac`, ...) in the prose,
  outside the math that MathJax typesets and outside code. It is what a reader sees when dollar-math did not pair
  up (chapter 8 once had a line of an inequality begin with `>`, which Markdown turned into a blockquote, leaving
  `$2DF/(Y W_\\text{hbm})` raw);
- a frozen progress bar: a tqdm line below 100 % (`calibrating:   0%|          | 0/2`) in a cell's output, what a
  notebook widget bar leaves in a static page;
- an output longer than `MAX_OUTPUT_CHARS` characters of text (chapter 9 once printed a 29,000-character table).

`check_lines(html)` counts the visible lines of the `✓ ... vs published ...` log kind and the sections they sit in:
the issue asks for at most one such line per section on average. A line inside a collapsed `<details>` (a
hidden cell, a "Checked numbers" table) or a dropdown is not visible and not counted.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Tag

MAX_OUTPUT_CHARS = 8_000  # characters of text in one cell output: about two screens of a table
TEX = re.compile(r"\$|\\[A-Za-z]+|\\[()\[\]]")  # a dollar, a TeX command (\text, \frac), \( or \[
# Dollars that are money, not maths: "$1.20 per", "$10.8/h", "$0.80;", and a lone "$" in "FLOPs per $".
CURRENCY = re.compile(r"\$\d[\d,]*(?:\.\d+)?(?=[\s/,.;:)]|$)|(?<=\s)\$(?=\s|$)", re.M)
BAR = re.compile(r"(\d{1,3})%\|")  # tqdm's "  37%|███▋      | 3/8"
CHECK_LINE = re.compile(r"✓[^\n]*\bvs\b")
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


def _unfolded_text(output: Tag) -> str:
    """The text of a cell output without what it folds away itself (a long table's rows in a closed <details>)."""
    folded = {id(d) for d in output.find_all("details") if not d.has_attr("open")}
    return "".join(text for text in output.find_all(string=True) if not any(id(p) in folded for p in text.parents))


def long_outputs(html: str, limit: int = MAX_OUTPUT_CHARS) -> list[str]:
    """One line per cell output showing more than `limit` characters of text (`limit` a positive count) before
    anything is opened; rows the output folds into a closed `<details>` of its own are not counted."""
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number of characters, got {limit!r}")
    texts = [_unfolded_text(div) for div in _article(_soup(html)).select("div.cell_output")]
    return [f"output of {len(text):,} characters (limit {limit:,}): {text.strip()[:60]}..."
            for text in texts if len(text) > limit]


def page_problems(html: str) -> list[str]:
    """Raw TeX, frozen progress bars and outputs over the size limit in one page's HTML."""
    return raw_tex(html) + frozen_bars(html) + long_outputs(html)


def _shown(tag: Tag) -> bool:
    """False when `tag` sits inside a fold that is closed when the page opens: a `<details>`, a dropdown."""
    return not any((parent.name == "details" and not parent.has_attr("open"))
                   or "dropdown" in (parent.get("class") or []) for parent in tag.parents)


def check_lines(html: str) -> tuple[int, int]:
    """(visible `✓ ... vs ...` lines in cell outputs, sections of the page): the first over the second ≤ 1."""
    article = _article(_soup(html))
    lines = sum(len(CHECK_LINE.findall(div.get_text())) for div in article.select("div.cell_output")
                if _shown(div))
    return lines, len(article.find_all("section")) or 1
