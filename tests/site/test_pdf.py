"""`make pdf` (_ext/pdf_book.py): the website printed to one PDF with a table of contents, bookmarks, figures,
typeset maths, and the folds (worked answers, folded cells) printed open. A two-page book of fixtures is printed
without a site; with a built site (SCALEBOOK_SITE, default _build/html) its first two chapters are printed and
read back, and _build/pdf/scalebook.pdf when `make pdf` has made it. Printing a whole site takes minutes, so the
full PDF is checked only where it exists.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import unicodedata
from pathlib import Path

import pytest
from browser import BROWSER

pypdf = pytest.importorskip("pypdf")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FULL_PDF = SITE.parent / "pdf" / "scalebook.pdf"
FIXTURES = Path(__file__).parent / "fixtures"
_spec = importlib.util.spec_from_file_location("pdf_book", ROOT / "_ext" / "pdf_book.py")
pdf_book = sys.modules["pdf_book"] = importlib.util.module_from_spec(_spec)  # a dataclass needs its module listed
_spec.loader.exec_module(pdf_book)

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make pdf` installs it")
needs_site = pytest.mark.skipif(not (SITE / "chapters").is_dir(), reason=f"no built site in {SITE}: `make book`")


def _outline(reader: pypdf.PdfReader) -> list[tuple[str, int, int]]:
    """(title, depth, 0-based page) of every bookmark, in order."""
    def walk(items: list, depth: int) -> list[tuple[str, int, int]]:
        found = []
        for item in items:
            found += walk(item, depth + 1) if isinstance(item, list) else \
                [(item.title, depth, reader.get_destination_page_number(item))]
        return found
    return walk(reader.outline, 0)


def _text(pages: list) -> str:
    """The pages' text with ligatures undone (the 'ﬂ' of 'Rooflines') and lines joined."""
    return " ".join(unicodedata.normalize("NFKC", " ".join(p.extract_text() for p in pages)).split())


def test_the_contents_page_lists_parts_and_chapters_with_their_first_page():
    chapters = [pdf_book.Chapter(None, "0. Intro", Path("a.html")), pdf_book.Chapter("Part 1", "1. Roofs", Path("b"))]
    page = pdf_book.contents_html("A book", chapters, [2, 7])
    assert "<h1>A book</h1>" in page
    assert page.index("0. Intro</span><span>2<") < page.index("<h2>Part 1</h2>") < page.index("1. Roofs</span><span>7<")


def test_a_site_without_chapters_is_refused_by_name(tmp_path: Path):
    with pytest.raises(ValueError, match="site must be a built website"):
        pdf_book.toc_chapters(tmp_path)
    with pytest.raises(ValueError, match="chapters must list at least one page"):
        pdf_book.build([], tmp_path / "book.pdf")


@needs_browser
def test_two_fixture_pages_print_behind_a_contents_page(tmp_path: Path):
    chapters = [pdf_book.Chapter(None, "Clean", FIXTURES / "clean.html"),
                pdf_book.Chapter("Part 1", "Raw", FIXTURES / "raw_tex.html")]
    pages = pdf_book.build(chapters, tmp_path / "book.pdf", book="Fixture book")
    reader = pypdf.PdfReader(tmp_path / "book.pdf")
    assert pages == len(reader.pages) == 3  # contents, then one page each
    assert _outline(reader) == [("Clean", 0, 1), ("Part 1", 0, 2), ("Raw", 1, 2)]
    contents = reader.pages[0].extract_text()
    assert "Fixture book" in contents and "Clean 2" in contents and "Raw 3" in contents
    assert "A clean page" in reader.pages[1].extract_text()


@needs_site
@needs_browser
def test_two_chapters_of_the_site_print_with_title_figures_and_maths(tmp_path: Path):
    chapters = pdf_book.toc_chapters(SITE)[:2]
    assert [c.page.name for c in chapters] == ["00_intro.html", "01_rooflines.html"]
    pages = pdf_book.build(chapters, tmp_path / "two.pdf")
    reader = pypdf.PdfReader(tmp_path / "two.pdf")
    starts = {title: page for title, _, page in _outline(reader)}
    start = starts[chapters[1].title]
    assert pages == len(reader.pages) > 20 and starts[chapters[0].title] == 1 < start
    rooflines = _text(reader.pages[start:start + 6])
    assert "1. Rooflines: when FLOPs win and when bytes win" in rooflines
    assert "max(Tmath, Tcomms)" in rooflines  # a display formula, typeset by the site's MathJax
    assert "One byte per element" in _text(reader.pages[start:])  # Q1's worked answer, printed open
    assert "Show code cell" not in _text(reader.pages)  # and no fold's button
    assert sum(len(p.images) for p in reader.pages[start:]) >= 3  # the chapter's figures


@pytest.mark.skipif(not FULL_PDF.exists(), reason=f"no {FULL_PDF}: `make pdf` makes it")
def test_the_whole_book_has_every_chapter_of_the_table_of_contents():
    reader = pypdf.PdfReader(FULL_PDF)
    titles = [title for title, depth, _ in _outline(reader)]
    expected = [c.title for c in pdf_book.toc_chapters(SITE)] if (SITE / "chapters").is_dir() else []
    assert all(title in titles for title in expected), set(expected) - set(titles)
    assert len(reader.pages) >= 10 * len(titles)  # every chapter printed, not a stub page each
