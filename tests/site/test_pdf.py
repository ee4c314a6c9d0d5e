"""`make pdf` (_ext/pdf_book.py): the website printed as a book, on A4 and on US Letter, with a table of contents,
bookmarks, figures and typeset maths; worked answers printed open; no code cell source, no check marks, no explorer
status lines (_ext/static/scalebook-print.css). A fixture page in the site's markup and a two-page book of fixtures
are printed without a site; with a built site (SCALEBOOK_SITE, default _build/html) its first two chapters are
printed and read back, and the whole book (_build/pdf/scalebook-a4.pdf and scalebook-letter.pdf beside the site)
when `make pdf` has made it: its page count must be the README's. Printing a whole site takes minutes, so the full
PDF is checked only where it exists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import BROWSER

pypdf = pytest.importorskip("pypdf")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
README = ROOT / "README.md"
_spec = importlib.util.spec_from_file_location("pdf_book", ROOT / "_ext" / "pdf_book.py")
pdf_book = sys.modules["pdf_book"] = importlib.util.module_from_spec(_spec)  # a dataclass needs its module listed
_spec.loader.exec_module(pdf_book)
FULL_PDFS = {paper: SITE.parent / "pdf" / f"scalebook-{paper}.pdf" for paper in pdf_book.PAPERS}
PAPER_PT = {"a4": (595, 842), "letter": (612, 792)}  # width and height in points (1/72 in): 210 x 297 mm, 8.5 x 11 in
# Lines of a code cell's source: prose names functions (`sb.setup()`), but imports and checks only a cell's code.
CODE = re.compile(r"import scalebook|sb\.expect\(")

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


def _placed(page: pypdf.PageObject) -> list[tuple[float, float, str]]:
    """(x, y, text) of every piece of text drawn on `page`: in points from its bottom left corner."""
    found: list[tuple[float, float, str]] = []
    page.extract_text(visitor_text=lambda text, cm, tm, *_: found.append((*pypdf.mult(tm, cm)[4:], text.strip()))
                      if text.strip() else None)
    return found


def _figures(pages: list) -> int:
    """How many figures the pages draw: raster images, and vector drawings (an SVG figure prints as a PDF form)."""
    def forms(page: pypdf.PageObject) -> int:
        drawn = page.get("/Resources", {}).get("/XObject", {}) or {}
        return sum(drawn[name].get_object().get("/Subtype") == "/Form" for name in drawn)
    return sum(len(page.images) + forms(page) for page in pages)


def _links(pages: list) -> list[str]:
    """The addresses of the pages' web links."""
    return [a.get_object().get("/A", {}).get("/URI", "") for p in pages for a in p.get("/Annots", None) or []]


def _hidden_in_print(text: str, marks: int = 0) -> list[str]:
    """What the print edition must not show, found in `text`: check marks (beyond the `marks` that are the pages'
    own words or table entries), explorer status lines, code."""
    return [f"{text.count('✓')} ✓ where {marks} are content"] * (text.count("✓") != marks) \
        + re.findall(r"a snapshot here[^;)]*", text) + CODE.findall(text)


class _Content(HTMLParser):
    """Counts the ✓ of a page that are its content: in its prose or a table's cells, not a check mark
    (`.sb-check`, scalebook/book/checks.py) and not a code cell's source (`.cell_input`)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, bool]] = []  # each open element: its tag, whether print leaves it out
        self.marks = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.open.append((tag, "sb-check" in classes or "cell_input" in classes))

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if not any(left_out for _, left_out in self.open):
            self.marks += data.count("✓")


def _content_marks(pages: list[Path]) -> int:
    """How many ✓ the print edition of `pages` keeps: those that are the pages' own words or table entries."""
    counted = 0
    for page in pages:
        parser = _Content()
        parser.feed(page.read_text(encoding="utf-8"))
        counted += parser.marks
    return counted


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


def test_a_paper_size_not_offered_is_refused_by_name():
    with pytest.raises(ValueError, match=r"paper must be one of \['a4', 'letter'\], got 'a5'"):
        pdf_book.print_page(FIXTURES / "print.html", Path("never.pdf"), "a5")


@needs_browser
@pytest.mark.parametrize("paper", sorted(PAPER_PT))
def test_a_page_prints_its_prose_figures_and_answers_without_code_checks_or_status_lines(tmp_path: Path, paper: str):
    pdf_book.print_page(FIXTURES / "print.html", tmp_path / "page.pdf", paper)
    reader = pypdf.PdfReader(tmp_path / "page.pdf")
    page = reader.pages[0]
    assert (round(page.mediabox.width), round(page.mediabox.height)) == PAPER_PT[paper]
    text = _text(reader.pages)
    for kept in ("Prose the reader keeps", "literal_block_in_prose = 1", "output_the_reader_keeps",
                 "An explorer's title", "B = 240", "snapshot_figure_text", "Worked answer", "The answer, printed open"):
        assert kept in text, kept
    assert _hidden_in_print(text) == []
    for gone in ("code_cell_source", "explorer_cell_source", "Interactive in JupyterLab"):
        assert gone not in text, gone
    assert not any("colab.research.google.com" in link for link in _links(reader.pages))  # the badges are left out
    assert len(page.images) == 0  # the explorer's SVG is drawn as vectors (its words read back above), not rasterised
    last = [x for x, _, text in _placed(page) if text.startswith("last_")]
    assert last and max(last) < float(page.mediabox.width) - 36  # the wide table's last column, inside the margin


@needs_browser
def test_two_fixture_pages_print_behind_a_contents_page(tmp_path: Path):
    chapters = [pdf_book.Chapter(None, "Clean", FIXTURES / "clean.html"),
                pdf_book.Chapter("Part 1", "Raw", FIXTURES / "raw_tex.html")]
    pages = pdf_book.build(chapters, tmp_path / "book.pdf", book="Fixture book")
    reader = pypdf.PdfReader(tmp_path / "book.pdf")
    assert pages == len(reader.pages) == 3  # contents, then one page each
    assert _outline(reader) == [("Clean", 0, 1), ("Part 1", 0, 2), ("Raw", 1, 2)]
    contents = reader.pages[0].extract_text()
    assert "Fixture book" in contents and "Clean 1" in contents and "Raw 2" in contents
    assert "A clean page" in reader.pages[1].extract_text()
    assert reader.page_labels == ["i", "1", "2"]  # the contents in roman, the chapters from 1, as printed:
    assert [min(_placed(p), key=lambda placed: placed[1])[2] for p in reader.pages[1:]] == ["1", "2"]  # at the foot


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
    assert _hidden_in_print(_text(reader.pages[start:]), _content_marks([chapters[1].page])) == []
    assert _figures(reader.pages[start:]) >= 3  # the chapter's figures


def _readme_pages(paper: str) -> int:
    """The page count the README states for the PDF on `paper`."""
    found = re.search(rf"scalebook-{paper}\.pdf` \(([\d,]+) pages", README.read_text(encoding="utf-8"))
    assert found, f"README.md states no page count for scalebook-{paper}.pdf"
    return int(found.group(1).replace(",", ""))


@needs_site
@pytest.mark.parametrize("paper", sorted(PAPER_PT))
def test_the_whole_book_has_every_chapter_and_the_readme_states_its_page_count(paper: str):
    if not FULL_PDFS[paper].exists():
        pytest.skip(f"no {FULL_PDFS[paper]}: `make pdf` makes it")
    reader = pypdf.PdfReader(FULL_PDFS[paper])
    chapters = pdf_book.toc_chapters(SITE)
    titles = [title for title, depth, _ in _outline(reader)]
    assert all(c.title in titles for c in chapters), {c.title for c in chapters} - set(titles)
    assert len(reader.pages) >= 10 * len(titles)  # every chapter printed, not a stub page each
    assert abs(len(reader.pages) - _readme_pages(paper)) <= 0.02 * len(reader.pages)
    assert _hidden_in_print(_text(reader.pages), _content_marks([c.page for c in chapters])) == []
