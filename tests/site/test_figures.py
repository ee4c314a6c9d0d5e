"""Every figure of the built site is vector (issue #40): an SVG image or inline `<svg>`, never a PNG, JPEG, GIF or
WebP, so it stays sharp on a high-resolution screen and when zoomed; and a chapter printed by Chromium (the printer
`make pdf` uses) holds no raster image under `PRINT_DPI` dots per inch at its printed size.

The checks are tried on fixtures first (a PNG figure and a data-URI PNG snapshot must be found, an SVG one not), then
run on every page of the built site (SCALEBOOK_SITE, default _build/html). A build made before the figures turned
SVG fails both: its chapters' figures were 100-dpi PNGs, printed at about 100 dpi.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser import BROWSER
from bs4 import BeautifulSoup

pypdf = pytest.importorskip("pypdf")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
PAGES = sorted(p for p in SITE.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)
CHAPTERS = sorted((SITE / "chapters").glob("*.html"))
PRINT_DPI = 300  # the print resolution for anything not vector
RASTER = re.compile(r"\.(png|jpe?g|gif|webp)(\?|#|$)|^data:image/(png|jpeg|gif|webp)[;,]", re.I)
VECTOR = re.compile(r"\.svg(\?|#|$)|^data:image/svg\+xml[;,]", re.I)
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)

_spec = importlib.util.spec_from_file_location("pdf_book", ROOT / "_ext" / "pdf_book.py")
pdf_book = sys.modules.setdefault("pdf_book", importlib.util.module_from_spec(_spec))
if not hasattr(pdf_book, "print_page"):
    _spec.loader.exec_module(pdf_book)

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: run `make book` first")


def _images(html: str) -> list[str]:
    """The `src` of every image in a page's reading column (the article; the whole body of a bare page)."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup.find("main") or soup.body or soup
    return [img.get("src", "") for img in article.find_all("img")]


def raster_figures(html: str) -> list[str]:
    """The first 80 characters of the `src` of each raster image (PNG, JPEG, GIF, WebP) in a page's reading column."""
    return [src[:80] for src in _images(html) if RASTER.search(src)]


def vector_figures(html: str) -> int:
    """How many SVG images and inline `<svg>` drawings a page's cell outputs hold."""
    soup = BeautifulSoup(html, "html.parser")
    outputs = soup.select("div.cell_output")
    return sum(bool(VECTOR.search(img.get("src", ""))) for out in outputs for img in out.find_all("img")) + \
        sum(len(out.find_all("svg")) for out in outputs)


def print_to_pdf(page: Path, out: Path) -> Path:
    """Print the HTML file `page` to `out` with Chromium and `make pdf`'s flags (its print stylesheet applies)."""
    subprocess.run([BROWSER, *pdf_book.CHROMIUM_FLAGS, f"--print-to-pdf={out}", page.as_uri()], check=True,
                   capture_output=True, timeout=pdf_book.PRINT_TIMEOUT_S)
    return out


def _drawn(page: pypdf.PageObject) -> list[tuple[str, float]]:
    """(name, width in points) of each image XObject a PDF page draws: its width is the length of the first row
    of the transformation in force at the `Do` that paints it (an image fills the unit square)."""
    found: list[tuple[str, float]] = []

    def visit(op: bytes, args: list, cm: list, tm: list) -> None:
        if op == b"Do":
            found.append((str(args[0]), (cm[0] ** 2 + cm[1] ** 2) ** 0.5))
    page.extract_text(visitor_operand_before=visit)
    return found


def low_resolution_images(pdf: Path, dpi: float = PRINT_DPI) -> list[str]:
    """'page N: W px over X in = D dpi' for each raster image a PDF prints at fewer than `dpi` dots per inch."""
    found = []
    for n, page in enumerate(pypdf.PdfReader(pdf).pages, 1):
        xobjects = page.get("/Resources", {}).get("/XObject", {})
        for name, width_pt in _drawn(page):
            obj = xobjects.get(name)
            obj = obj.get_object() if obj is not None else None
            if obj is None or obj.get("/Subtype") != "/Image" or width_pt < 36:  # forms, and icons under half an inch
                continue
            pixels = int(obj["/Width"])
            if pixels / (width_pt / 72) < dpi:
                found.append(f"page {n}: {pixels} px over {width_pt / 72:.2f} in = {pixels / (width_pt / 72):.0f} dpi")
    return found


def test_raster_figures_are_found_and_vector_ones_are_not():
    page = ("<article><div class='cell_output'><img src='../_images/a.png'/><img src='../_images/b.svg'/>"
            "<img src='data:image/png;base64,iVBOR'/><img src='data:image/svg+xml;base64,PHN2Zz4='/><svg></svg>"
            "</div></article>")
    assert raster_figures(page) == ["../_images/a.png", "data:image/png;base64,iVBOR"]
    assert vector_figures(page) == 3


@needs_site
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_every_figure_of_the_site_is_vector(page: Path):
    assert raster_figures(page.read_text()) == []


@needs_site
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_that_draws_figures_shows_them(page: Path):
    """A chapter whose source ends cells with `sb.plots...(...)` shows at least that many vector figures."""
    cells = CELL.findall((ROOT / "chapters" / f"{page.stem}.md").read_text())
    drawn = sum(bool(re.match(r"(display\()?sb\.plots\.", c.strip().splitlines()[-1])) for c in cells if c.strip())
    assert vector_figures(page.read_text()) >= drawn


@needs_browser
def test_a_raster_figure_prints_below_300_dpi_and_is_found(tmp_path: Path):
    """The print check can fail: a 100-dpi PNG (what the figures were) printed 6 in wide is reported."""
    import matplotlib

    matplotlib.use("Agg")
    from scalebook.plots.base import figure

    fig, ax = figure((6.0, 3.0))
    ax.plot([0, 1], [0, 1])
    fig.savefig(tmp_path / "f.png", dpi=100)
    (tmp_path / "p.html").write_text("<html><body><img src='f.png' style='width:6in'/></body></html>")
    found = low_resolution_images(print_to_pdf(tmp_path / "p.html", tmp_path / "p.pdf"))
    assert len(found) == 1 and found[0].endswith("= 100 dpi"), found


@needs_site
@needs_browser
@pytest.mark.parametrize("chapter", ["01_rooflines", "14_moe"])
def test_a_printed_chapter_has_no_image_under_300_dpi(tmp_path: Path, chapter: str):
    pdf = print_to_pdf(SITE / "chapters" / f"{chapter}.html", tmp_path / "c.pdf")
    assert len(pypdf.PdfReader(pdf).pages) > 2
    assert low_resolution_images(pdf) == []
