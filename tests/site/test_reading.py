"""The site as a reader without a network meets it, in headless Chromium: the maths typesets from the site's own
MathJax, and no worked answer's number is in sight before its dropdown is opened.

Each check is first run on a fixture page that must fail it: `fixtures/cdn_math.html` loads MathJax from a CDN
(raw TeX offline), `fixtures/spoiler.html` leaves one answer's number in a check output below its closed fold.
Run by `make test-site`; SCALEBOOK_SITE points at a site built elsewhere (default: _build/html).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from browser import BROWSER, read_offline
from pagecheck import tex_in_text

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
CHAPTERS = sorted((SITE / "chapters").glob("*.html"))
MATH_PAGES = CHAPTERS + sorted((SITE / "exercises").glob("*.html"))[:1]

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: run `make book` first")

# The reader's text once MathJax is done: prose and outputs, without code and without typeset formulas.
MATHS = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const root = document.querySelector('article') || document.body, parts = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode());)
    if (!n.parentElement.closest('pre, code, script, style, mjx-container')) parts.push(n.data);
  return JSON.stringify({formulas: root.querySelectorAll('span.math, div.math').length,
                         typeset: root.querySelectorAll('mjx-container').length, text: parts.join(' ')});
})()"""

# Each fold titled "...answer...": its whole text, the question before it (hidden text too) and what a reader
# sees of the fold and of what follows it, up to the next heading, section or fold.
FOLDS = """(() => {
  const FOLD = 'div.dropdown, details.sd-dropdown, details.dropdown';
  const seen = el => el.checkVisibility({contentVisibilityAuto: true, opacityProperty: true,
                                         visibilityProperty: true});
  const words = (root, shownOnly) => {
    const parts = [], walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());)
      if (!n.parentElement.closest('script, style') && (!shownOnly || seen(n.parentElement))) parts.push(n.data);
    return parts.join(' ');
  };
  const end = (el, forward) => el.tagName === 'SECTION' || el.matches(FOLD) || (forward && /^H[1-6]$/.test(el.tagName));
  const around = (fold, forward) => {
    const parts = [], step = forward ? 'nextElementSibling' : 'previousElementSibling';
    for (let el = fold[step]; el && !end(el, forward); el = el[step]) parts.push(words(el, forward));
    return parts.join(' ');
  };
  return JSON.stringify([...document.querySelectorAll(FOLD)].map(fold => ({
    title: (fold.querySelector('.admonition-title, summary') || fold).textContent.trim(),
    answer: words(fold, false), question: around(fold, false),
    shown: words(fold, true) + ' ' + around(fold, true)})));
})()"""
NUMBER = re.compile(r"(?<![A-Za-z\d.])\d+(?:,\d{3})*(?:\.\d+)?(?![A-Za-z\d])")  # not the 16 of bf16 or H100's 100


def maths_problems(url: str) -> list[str]:
    """Formulas MathJax left untypeset, raw TeX in the text, and requests to other hosts, with the network off."""
    value, offsite = read_offline(url, MATHS)
    page = json.loads(value)
    found = [f"{page['formulas'] - page['typeset']} of {page['formulas']} formulas not typeset"] \
        if page["typeset"] < page["formulas"] else []
    return found + tex_in_text(page["text"]) + [f"asked another host: {u}" for u in offsite]


def _numbers(text: str) -> set[str]:
    """The numbers in `text` with at least two significant digits ('560', '2,047', '1.37'; not '8', '100', and
    not the digits of a name such as 'bf16', 'H100' or 'v5e')."""
    found = {m.group().replace(",", "") for m in NUMBER.finditer(text)}
    return {n for n in found if len(n.replace(".", "").strip("0")) >= 2}


def spoilers(url: str) -> list[str]:
    """One line per worked answer whose numbers a reader sees before opening its fold; empty for a clean page.

    An answer's numbers are those in its fold that its question does not already state."""
    folds = json.loads(read_offline(url, FOLDS)[0])
    found = []
    for fold in (f for f in folds if "answer" in f["title"].lower()):
        if visible := sorted(_numbers(fold["answer"]) - _numbers(fold["question"]) & _numbers(fold["shown"])):
            question = " ".join(fold["question"].split())[-60:]
            found.append(f"...{question}: answer {', '.join(visible)} in sight")
    return found


@needs_browser
def test_the_offline_check_fails_on_maths_from_a_cdn():
    found = maths_problems((FIXTURES / "cdn_math.html").as_uri())
    assert found[0] == "2 of 2 formulas not typeset", found
    assert any("\\text" in line for line in found), found
    assert found[-1] == "asked another host: https://cdn.jsdelivr.net/npm/mathjax@3.2.2/es5/tex-mml-chtml.js"


@needs_site
@needs_browser
@pytest.mark.parametrize("page", MATH_PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_the_maths_typesets_with_the_network_off(page: Path):
    assert maths_problems(page.as_uri()) == []


@needs_browser
def test_the_spoiler_check_finds_the_answer_left_in_sight():
    found = spoilers((FIXTURES / "spoiler.html").as_uri())
    assert [line.split(": ")[-1] for line in found] == ["answer 560 in sight"], found


@needs_site
@needs_browser
def test_no_worked_answer_is_in_sight_before_its_dropdown_opens():
    found = [f"{page.stem}: {line}" for page in CHAPTERS for line in spoilers(page.as_uri())]
    assert found == [], f"{len(found)} answers in sight:\n" + "\n".join(found)
