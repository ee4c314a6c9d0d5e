"""Print the built website as a book: `make pdf` writes _build/pdf/scalebook-a4.pdf and scalebook-letter.pdf.

Each page of the table of contents (_toc.yml, in its order) is printed by headless Chromium with the site's print
stylesheet (_ext/static/scalebook-print.css): prose, figures, tables, maths typeset by the site's own MathJax (no
network needed), worked answers printed open, explorers as captioned figures of their snapshot; no code cell source,
no check marks, no explorer status lines. Chromium prints to the paper size a page's CSS asks for, so each page is
printed from a copy that asks for A4 or Letter and numbers its pages on from where the previous chapter ended (a
<base> keeps the copy's links to the site's files). pypdf then merges the pages behind a printed table of contents
(each chapter with its first page) and gives the PDF an outline (bookmarks) by part and chapter and page labels that
match the printed numbers. tests/site/test_pdf.py checks the result.

    python _ext/pdf_book.py [--site _build/html] [--paper a4|letter] [--out _build/pdf/scalebook-<paper>.pdf]
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Virtual time lets MathJax typeset before the page is printed without waiting out real seconds.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                  "--virtual-time-budget=10000", "--proxy-server=http://127.0.0.1:9"]
PRINT_TIMEOUT_S = 300  # one page, on a busy machine
# The paper sizes offered, as CSS `@page { size }` keywords (Chromium prints to the size the page asks for).
PAPERS = {"a4": "A4", "letter": "letter"}


@dataclass(frozen=True)
class Chapter:
    """One printed page of the site: its part's caption (None before the first part), title and HTML file."""

    part: str | None
    title: str
    page: Path


def _title(page: Path) -> str:
    """The page's own title: its <title> without the site's name (Sphinx joins the two with an escaped dash)."""
    match = re.search(r"<title>(.*?)</title>", page.read_text(encoding="utf-8"), re.S)
    return html.unescape(match.group(1).split(" &#8212; ")[0]).strip() if match else page.stem


def toc_chapters(site: Path, root: Path = ROOT) -> list[Chapter]:
    """The site's pages in the order of `root`/_toc.yml, each with its part's caption; `site` is the built HTML."""
    import yaml

    if not (site / "chapters").is_dir():
        raise ValueError(f"site must be a built website (run `make book`), got {site} without chapters/")
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [(None, toc["root"])] + [(part.get("caption"), entry["file"])
                                     for part in toc.get("parts", []) for entry in part.get("chapters", [])]
    chapters = []
    for part, name in files:
        page = site / f"{name}.html"
        if not page.exists():
            raise ValueError(f"_toc.yml lists {name!r}, but the site has no {page}: rebuild it with `make book`")
        chapters.append(Chapter(part, _title(page), page))
    return chapters


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("chromium is not installed: `make pdf` installs it from Debian")
    return found


def _on_paper(page: Path, paper: str, first: int | None = None) -> str:
    """The HTML of `page` asking for `paper` (a key of PAPERS), its links still resolved against its own folder;
    with `first`, its pages are numbered at their foot from `first` on."""
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {paper!r}")
    text = page.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", text)
    if head is None:
        raise ValueError(f"page must be an HTML document with a <head>, got {page}")
    style = f"@page {{ size: {PAPERS[paper]}; }}"
    if first is not None:
        style += (" @page { @bottom-center { content: counter(page); font: 9pt sans-serif; } }"
                  f" html {{ counter-reset: page {first - 1}; }}")
    extra = f'<base href="{html.escape(page.resolve().as_uri())}"><style>{style}</style>'
    return text[:head.end()] + extra + text[head.end():]


def print_page(page: Path, out: Path, paper: str = "a4", first: int | None = None) -> None:
    """Print the HTML file `page` to the PDF file `out` on `paper` ("a4" or "letter"), in its print style; with
    `first`, its pages are numbered from `first` on."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "page.html"
        copy.write_text(_on_paper(page, paper, first), encoding="utf-8")
        run = subprocess.run([_browser(), *CHROMIUM_FLAGS, f"--print-to-pdf={out}", copy.as_uri()],
                             capture_output=True, text=True, timeout=PRINT_TIMEOUT_S)
    if run.returncode != 0 or not out.exists():
        raise RuntimeError(f"chromium could not print {page} (status {run.returncode}): {run.stderr[-500:]}")


def contents_html(book: str, chapters: list[Chapter], first_pages: list[int]) -> str:
    """The printed table of contents: each part's caption, then its chapters with their first page (as numbered)."""
    rows, part = [], None
    for chapter, first in zip(chapters, first_pages):
        if chapter.part != part and chapter.part:
            rows.append(f"<h2>{html.escape(chapter.part)}</h2>")
        part = chapter.part
        rows.append(f"<p><span>{html.escape(chapter.title)}</span><span>{first}</span></p>")
    style = ("@page{margin:1.8cm} body{font-family:sans-serif} h1{font-size:22pt;margin-top:0}"
             " h2{font-size:12pt;margin:1em 0 .3em}"
             " p{display:flex;justify-content:space-between;margin:.15em 0 .15em 1em;font-size:10.5pt}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Contents</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(book)}</h1><h2>Contents</h2>"
            + "".join(rows) + "</body></html>")


def build(chapters: list[Chapter], out: Path, book: str = "scalebook", paper: str = "a4") -> int:
    """Print `chapters` in order behind a table of contents into the PDF `out` on `paper` ("a4" or "letter");
    return its number of pages. The chapters' pages are numbered from 1 at their foot (and so in a PDF reader's
    page labels); the contents, before them, are not."""
    from pypdf import PdfReader, PdfWriter

    if not chapters:
        raise ValueError("chapters must list at least one page to print, got none")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        printed, starts = [], [1]
        for index, chapter in enumerate(chapters):
            print(f"printing {chapter.page.name}", file=sys.stderr)
            printed.append(folder / f"{index:03d}.pdf")
            print_page(chapter.page, printed[-1], paper, starts[-1])
            starts.append(starts[-1] + len(PdfReader(printed[-1]).pages))
        (folder / "contents.html").write_text(contents_html(book, chapters, starts[:-1]), encoding="utf-8")
        print_page(folder / "contents.html", folder / "contents.pdf", paper)
        writer = PdfWriter()
        writer.append(folder / "contents.pdf", import_outline=False)
        front = len(writer.pages)
        parts: dict[str, object] = {}
        for chapter, pdf in zip(chapters, printed):
            first = len(writer.pages)
            writer.append(pdf, import_outline=False)
            if chapter.part and chapter.part not in parts:
                parts[chapter.part] = writer.add_outline_item(title=chapter.part, page_number=first)
            writer.add_outline_item(title=chapter.title, page_number=first, parent=parts.get(chapter.part or ""))
        writer.set_page_label(0, front - 1, style="/r")
        writer.set_page_label(front, len(writer.pages) - 1, style="/D", start=1)
        writer.add_metadata({"/Title": book})
        with out.open("wb") as stream:
            writer.write(stream)
        return len(writer.pages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python _ext/pdf_book.py", description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built website")
    parser.add_argument("--paper", choices=sorted(PAPERS), default="a4", help="the paper size (default a4)")
    parser.add_argument("--out", type=Path, help="the PDF (default _build/pdf/scalebook-<paper>.pdf)")
    args = parser.parse_args(argv)
    import yaml

    out = args.out or ROOT / "_build" / "pdf" / f"scalebook-{args.paper}.pdf"
    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]
    started = time.monotonic()
    pages = build(toc_chapters(args.site), out, book, args.paper)
    print(f"wrote {out} ({pages} pages, {args.paper}, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
