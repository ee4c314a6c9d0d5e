"""The print edition (`make pdf`) reads without the code it leaves out, and its headings keep their words whole.

- No output prints as a bare number: the print style leaves every code cell's source out, so an output that is only
  a number or a tuple of numbers (`1.9436904115234044`, `(16, 30)`) would mean nothing on paper. Read in Chromium
  laid out for print (its print stylesheet applied), over every page `make pdf` prints. It fails on
  fixtures/print_faults.html, and it failed on chapters 0, 1 and 2 as they stood (`est.upper / est.time` printed
  1.9436904115234044; chapter 2's `v5e.bf16_flops / mxu` 4.007975260416667), and on chapters 3, 7 and 10.
- Chapter 0, printed, does not point at the setup cell it leaves out ("Every chapter starts with these two lines").
- No heading breaks inside a word: in Chromium's printed PDF, a word of a heading (a page's or a table column's,
  both set in bold) is never cut across two lines. It finds chapter 5's "strate/gy" with the table cells' rule
  (break anywhere) reaching the headings, as the print stylesheet had it.
SCALEBOOK_SITE points at a site built elsewhere (default: _build/html).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest
from browser import BROWSER, read_offline

pypdf = pytest.importorskip("pypdf")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"


def _extension(name: str) -> ModuleType:
    """The module `name` of _ext/ (not a package: Sphinx loads it by path), loaded as Sphinx and `make pdf` do."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "_ext" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pdf_book = _extension("pdf_book")
PRINTED = pdf_book.toc_chapters(SITE) if (SITE / "chapters").is_dir() else []
needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not PRINTED, reason=f"no built site in {SITE}: `make book`")

# Each text output (a value shown, or what the cell printed) that the page prints without its cell's source.
OUTPUTS_WITHOUT_SOURCE = r"""JSON.stringify([...document.querySelectorAll(
    '.bd-article div.cell_output .output.text_plain, .bd-article div.cell_output .output.stream')]
  .filter(output => output.checkVisibility())
  .filter(output => { const source = output.closest('div.cell').querySelector('div.cell_input');
                      return !source || !source.checkVisibility(); })
  .map(output => output.innerText.trim()))"""
WORD = re.compile(r"[A-Za-z]{2,}")  # a word, a unit or a name; a lone letter is an exponent's e or an axis


def bare_outputs(url: str) -> list[str]:
    """The outputs the page at `url`, laid out for print, shows without their code and without a word to say what
    they are: a number, or numbers in brackets."""
    printed = json.loads(read_offline(url, OUTPUTS_WITHOUT_SOURCE, media="print")[0])
    return [text for text in printed if not WORD.search(text)]


def _printed_text(page: Path, out: Path) -> str:
    pdf_book.print_page(page, out)
    text = " ".join(p.extract_text() for p in pypdf.PdfReader(out).pages)
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _heading_words(page: Path) -> set[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return {word for heading in soup.select(":is(h1, h2, h3, h4, h5, h6, th)")
            for word in re.findall(r"[A-Za-z0-9]+", heading.get_text())}


def _bold(page: pypdf.PageObject) -> list[tuple[float, str]]:
    """(y, text) of every piece of text `page` draws in a bold font, in the order drawn; y in points from its foot."""
    found: list[tuple[float, str]] = []
    page.extract_text(visitor_text=lambda text, cm, tm, font, size: found.append((pypdf.mult(tm, cm)[5], text))
                      if text.strip() and font and "Bold" in str(font.get("/BaseFont")) else None)
    return found


def split_headings(page: Path, out: Path) -> list[str]:
    """Each heading word of the HTML `page` (a page's heading or a table column's) that its printed PDF, written to
    `out`, breaks across two lines: two bold pieces of text on different lines that join into the word."""
    words = _heading_words(page)
    pdf_book.print_page(page, out)
    found = []
    for number, printed in enumerate(pypdf.PdfReader(out).pages, start=1):
        bold = _bold(printed)
        for (y, before), (next_y, after) in zip(bold, bold[1:]):
            end, start = re.search(r"([A-Za-z0-9]+)-?$", before), re.match(r"[A-Za-z0-9]+", after)
            if next_y != y and end and start and end.group(1) + start.group(0) in words:
                found.append(f"page {number}: {end.group(1)}/{start.group(0)}")
    return found


@needs_browser
def test_a_bare_number_or_tuple_printed_without_its_code_is_found_and_a_labelled_output_is_not():
    assert bare_outputs((FIXTURES / "print_faults.html").as_uri()) == ["1.9436904115234044", "(16, 30)"]


def test_one_print_flushed_in_two_stream_messages_renders_as_one_labelled_block():
    """CI's site printed chapter 10's `print("shape of each shard:", *shapes)` as "shape of each shard:" and a bare
    "(4, 4)" below it: on a busy machine the kernel flushed the one print in two stream messages, and myst-nb draws
    each message as its own block unless `nb_merge_streams` is set (then one block, the value under its label).
    Read from the Sphinx configuration Jupyter Book makes of _config.yml, and merged by myst-nb's own function."""
    import nbformat
    from jupyter_book.config import get_final_config
    from myst_nb.core.utils import coalesce_streams

    config, _ = get_final_config(user_yaml=ROOT / "_config.yml", cli_config={"latex_individualpages": False},
                                 sourcedir=ROOT)
    assert config.get("nb_merge_streams") is True
    split = [nbformat.v4.new_output("stream", name="stdout", text=text)
             for text in ("shape of each shard: ", "(4, 4)\n")]
    assert not WORD.search(split[1]["text"])
    merged = coalesce_streams(split)  # one block; myst-nb ends each message's text with a line break
    assert [o["text"] for o in merged] == ["shape of each shard:\n(4, 4)\n"]


@needs_site
@needs_browser
@pytest.mark.parametrize("page", [c.page for c in PRINTED], ids=lambda p: str(p.relative_to(SITE)))
def test_no_printed_page_shows_a_bare_number_without_its_code(page: Path):
    assert bare_outputs(page.as_uri()) == []


@needs_site
@needs_browser
def test_printed_chapter_0_says_what_every_chapter_starts_with_without_pointing_at_a_cell_it_leaves_out(
        tmp_path: Path):
    text = _printed_text(SITE / "chapters" / "00_intro.html", tmp_path / "00.pdf")
    assert "these two lines" not in text or "rt = sb.setup()" in text
    assert "Every chapter starts by importing scalebook as sb and calling sb.setup()" in text


@needs_browser
def test_a_heading_broken_inside_a_word_is_found_when_headings_may_break_anywhere(tmp_path: Path):
    page = (FIXTURES / "print_faults.html").read_text(encoding="utf-8")
    loose = "<style>@media print { .bd-article table th { overflow-wrap: anywhere !important; } }</style></head>"
    (tmp_path / "loose.html").write_text(page.replace("</head>", f'<base href="{FIXTURES.as_uri()}/">{loose}'),
                                         encoding="utf-8")
    assert "page 1: strateg/y" in split_headings(tmp_path / "loose.html", tmp_path / "loose.pdf")
    assert split_headings(FIXTURES / "print_faults.html", tmp_path / "fixture.pdf") == []


@needs_site
@needs_browser
def test_chapter_5_prints_no_heading_broken_inside_a_word(tmp_path: Path):
    assert split_headings(SITE / "chapters" / "05_training.html", tmp_path / "05.pdf") == []
