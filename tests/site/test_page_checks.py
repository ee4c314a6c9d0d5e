"""The built pages read cleanly: no raw TeX, no frozen progress bar, no output over the size limit, and at most one
visible `✓ ... vs published ...` line per section on average. No browser needed (tests/site/pagecheck.py).

Each check first fails on a fixture page made to fail it (fixtures/raw_tex.html, frozen_bar.html,
long_output.html, check_log.html): a check of the site that cannot fail proves nothing.
SCALEBOOK_SITE points at a site built elsewhere (default: _build/html).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pagecheck import MAX_OUTPUT_CHARS, check_lines, frozen_bars, long_outputs, page_problems, raw_tex

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
PAGES = sorted(p for folder in ("chapters", "exercises") for p in (SITE / folder).glob("*.html"))
CHAPTERS = [p for p in PAGES if p.parent.name == "chapters"]

needs_site = pytest.mark.skipif(not PAGES, reason=f"no built site in {SITE}: run `make book` first")


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_raw_tex_is_found_in_prose_but_not_in_maths_money_or_code():
    found = raw_tex(_fixture("raw_tex.html"))
    assert len(found) == 2, found  # the unpaired "$" and the "\text" the blockquote left behind
    assert "$2DF/(Y W_hbm)" in found[0] and "\\text" in found[1]


def test_a_bar_frozen_below_100_percent_is_found_and_a_finished_one_is_not():
    assert frozen_bars(_fixture("frozen_bar.html")) == [
        "frozen progress bar: calibrating:   0%|          | 0/2 [00:00<?, ?it/s]"]


def test_an_output_over_the_limit_is_found_and_a_short_or_capped_one_is_not():
    found = long_outputs(_fixture("long_output.html"))
    assert len(found) == 1 and found[0].startswith("output of 11,779 characters (limit 8,000)"), found
    assert len(long_outputs(_fixture("long_output.html"), limit=20)) == 2  # not the capped table: 13 shown


def test_the_output_limit_must_be_a_positive_count():
    with pytest.raises(ValueError, match="limit must be a positive number of characters, got 0"):
        long_outputs("<p></p>", limit=0)


def test_visible_check_lines_are_counted_and_folded_ones_are_not():
    assert check_lines(_fixture("check_log.html")) == (4, 2)  # 2 per section: the fixture reads like a log


def test_a_clean_page_has_no_problem():
    assert page_problems(_fixture("clean.html")) == []
    assert check_lines(_fixture("clean.html")) == (0, 1)


@needs_site
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_page_has_no_raw_tex_frozen_bar_or_overlong_output(page: Path):
    assert page_problems(page.read_text(encoding="utf-8")) == [], f"limit {MAX_OUTPUT_CHARS:,} characters"


@needs_site
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_shows_at_most_one_check_line_per_section(page: Path):
    lines, sections = check_lines(page.read_text(encoding="utf-8"))
    assert lines <= sections, f"{lines} visible check lines in {sections} sections"
