"""The built pages read cleanly: no raw TeX, no frozen progress bar, no output over the size limit (5,000
characters, folded rows included), and, in Chromium with the page's folds closed, no bare ✓ in view and at most one
check line in view per section (tests/site/pagecheck.py).

Each check first fails on a fixture page made to fail it (fixtures/raw_tex.html, frozen_bar.html,
long_output.html, check_log.html with its stylesheet switched off): a check of the site that cannot fail proves
nothing. On the site as it stood before the stylesheet left `sb.expect`'s marks out, the check-mark test failed on
every chapter but 14 (195 bare marks in view, 26 in chapter 5, up to 8 in a section). With JavaScript off, every
formula of a chapter is typeset (the build typesets them: _ext/server_maths.py); fixtures/cdn_math.html, whose maths
waits for a MathJax from a CDN, fails that check, as every chapter did before (210 formulas as TeX in chapter 1).
SCALEBOOK_SITE points at a site built elsewhere (default: _build/html).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser import BROWSER, read_offline
from pagecheck import (
    MAX_OUTPUT_CHARS,
    TYPESET_MATHS,
    VISIBLE_CHECKS,
    check_mark_problems,
    frozen_bars,
    long_outputs,
    page_problems,
    raw_tex,
    untypeset_maths,
)

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
PAGES = sorted(p for folder in ("chapters", "exercises") for p in (SITE / folder).glob("*.html"))
CHAPTERS = [p for p in PAGES if p.parent.name == "chapters"]

needs_site = pytest.mark.skipif(not PAGES, reason=f"no built site in {SITE}: run `make book` first")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
STYLESHEET_OFF = "document.querySelectorAll('link[href*=\"scalebook-page.css\"]').forEach(link => link.disabled = true)"


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_raw_tex_is_found_in_prose_but_not_in_maths_money_or_code():
    found = raw_tex(_fixture("raw_tex.html"))
    assert len(found) == 2, found  # the unpaired "$" and the "\text" the blockquote left behind
    assert "$2DF/(Y W_hbm)" in found[0] and "\\text" in found[1]


def test_a_bar_frozen_below_100_percent_is_found_and_a_finished_one_is_not():
    assert frozen_bars(_fixture("frozen_bar.html")) == [
        "frozen progress bar: calibrating:   0%|          | 0/2 [00:00<?, ?it/s]"]


def test_an_output_over_the_limit_is_found_folded_rows_and_all_but_a_reference_listing_is_not():
    found = long_outputs(_fixture("long_output.html"))
    assert [line.split(":")[0] for line in found] == ["output of 11,779 characters (limit 5,000)",
                                                     "output of 7,463 characters (limit 5,000)"], found
    assert len(long_outputs(_fixture("long_output.html"), limit=20)) == 3  # and the short answer, 22 characters


def test_the_output_limit_must_be_a_positive_count():
    with pytest.raises(ValueError, match="limit must be a positive number of characters, got 0"):
        long_outputs("<p></p>", limit=0)


def _check_marks(url: str, stylesheet: bool = True) -> list[str]:
    expression = VISIBLE_CHECKS if stylesheet else f"(() => {{ {STYLESHEET_OFF}; return {VISIBLE_CHECKS}; }})()"
    return check_mark_problems(read_offline(url, expression)[0])


@needs_browser
def test_without_the_stylesheet_bare_marks_and_crowded_sections_are_found_and_folded_ones_are_not():
    assert _check_marks((FIXTURES / "check_log.html").as_uri(), stylesheet=False) == [
        "bare mark in view in section 'one': ✓", "bare mark in view in section 'one': ✓ regression",
        "bare mark in view in section 'one': ✓", "3 check lines in view in section 'one' (at most 1)",
        "2 check lines in view in section 'two' (at most 1)"]


@needs_browser
def test_with_the_stylesheet_bare_marks_leave_the_page_and_a_log_of_lines_still_fails():
    assert _check_marks((FIXTURES / "check_log.html").as_uri()) == [
        "2 check lines in view in section 'two' (at most 1)"]


def _maths_without_javascript(url: str) -> list[str]:
    return untypeset_maths(read_offline(url, TYPESET_MATHS, scripts=False)[0])


@needs_browser
def test_maths_left_for_a_browser_to_typeset_is_found_with_javascript_off():
    assert _maths_without_javascript((FIXTURES / "cdn_math.html").as_uri()) == ["2 of 2 formulas left as TeX"]


def test_a_clean_page_has_no_problem():
    assert page_problems(_fixture("clean.html")) == []


@needs_site
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_page_has_no_raw_tex_frozen_bar_or_overlong_output(page: Path):
    assert page_problems(page.read_text(encoding="utf-8")) == [], f"limit {MAX_OUTPUT_CHARS:,} characters"


@needs_site
@needs_browser
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_shows_no_bare_mark_and_at_most_one_check_line_per_section(page: Path):
    assert _check_marks(page.as_uri()) == []


@needs_site
@needs_browser
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_maths_reads_with_javascript_off(page: Path):
    assert _maths_without_javascript(page.as_uri()) == []
