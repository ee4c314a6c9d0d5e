"""Print the built website to one PDF: `make pdf` writes _build/pdf/scalebook.pdf after `make book`.

Each page of the table of contents (_toc.yml, in its order) is printed by headless Chromium as a reader's browser
shows it: figures, the maths typeset by the site's own MathJax (no network needed), explorers as their snapshots.
pypdf then merges the pages behind a printed table of contents (each chapter with its first page) and gives the
PDF an outline (bookmarks) by part and chapter. tests/site/test_pdf.py checks the result.

    python _ext/pdf_book.py [--site _build/html] [--out _build/pdf/scalebook.pdf]
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Virtual time lets MathJax typeset before the page is printed without waiting out real seconds.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                  "--virtual-time-budget=10000", "--proxy-server=http://127.0.0.1:9"]
PRINT_TIMEOUT_S = 300  # one page, on a busy machine


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


def print_page(url: str, out: Path) -> None:
    """Print the page at `url` (file: or http:) to the PDF file `out`, A4 with the browser's print style."""
    run = subprocess.run([_browser(), *CHROMIUM_FLAGS, f"--print-to-pdf={out}", url],
                         capture_output=True, text=True, timeout=PRINT_TIMEOUT_S)
    if run.returncode != 0 or not out.exists():
        raise RuntimeError(f"chromium could not print {url} (status {run.returncode}): {run.stderr[-500:]}")


def contents_html(book: str, chapters: list[Chapter], first_pages: list[int]) -> str:
    """The printed table of contents: each part's caption, then its chapters with their first page (1-based)."""
    rows, part = [], None
    for chapter, first in zip(chapters, first_pages):
        if chapter.part != part and chapter.part:
            rows.append(f"<h2>{html.escape(chapter.part)}</h2>")
        part = chapter.part
        rows.append(f"<p><span>{html.escape(chapter.title)}</span><span>{first}</span></p>")
    style = ("body{font-family:sans-serif;margin:2cm} h1{font-size:24pt} h2{font-size:13pt;margin-top:1.2em}"
             " p{display:flex;justify-content:space-between;margin:.2em 0 .2em 1em;font-size:11pt}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Contents</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(book)}</h1><h2>Contents</h2>"
            + "".join(rows) + "</body></html>")


def _print_contents(book: str, chapters: list[Chapter], sizes: list[int], folder: Path) -> Path:
    """Print the table of contents until the page numbers it states count its own pages."""
    own = 1
    while True:
        starts = [own + 1 + sum(sizes[:i]) for i in range(len(sizes))]
        page = folder / "contents.html"
        page.write_text(contents_html(book, chapters, starts), encoding="utf-8")
        print_page(page.as_uri(), folder / "contents.pdf")
        from pypdf import PdfReader

        printed = len(PdfReader(folder / "contents.pdf").pages)
        if printed == own:
            return folder / "contents.pdf"
        own = printed


def build(chapters: list[Chapter], out: Path, book: str = "scalebook") -> int:
    """Print `chapters` in order behind a table of contents into the PDF `out`; return its number of pages."""
    from pypdf import PdfReader, PdfWriter

    if not chapters:
        raise ValueError("chapters must list at least one page to print, got none")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        printed = []
        for index, chapter in enumerate(chapters):
            print(f"printing {chapter.page.name}", file=sys.stderr)
            print_page(chapter.page.resolve().as_uri(), folder / f"{index:03d}.pdf")
            printed.append(folder / f"{index:03d}.pdf")
        sizes = [len(PdfReader(p).pages) for p in printed]
        writer = PdfWriter()
        writer.append(_print_contents(book, chapters, sizes, folder), import_outline=False)
        parts: dict[str, object] = {}
        for chapter, pdf in zip(chapters, printed):
            first = len(writer.pages)
            writer.append(pdf, import_outline=False)
            if chapter.part and chapter.part not in parts:
                parts[chapter.part] = writer.add_outline_item(title=chapter.part, page_number=first)
            writer.add_outline_item(title=chapter.title, page_number=first, parent=parts.get(chapter.part or ""))
        writer.add_metadata({"/Title": book})
        with out.open("wb") as stream:
            writer.write(stream)
        return len(writer.pages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python _ext/pdf_book.py", description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built website")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "scalebook.pdf", help="the PDF")
    args = parser.parse_args(argv)
    import yaml

    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]
    pages = build(toc_chapters(args.site), args.out, book)
    print(f"wrote {args.out} ({pages} pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
