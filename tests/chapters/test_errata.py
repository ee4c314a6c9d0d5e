"""The errata page lists every disagreement with the book the chapters record, each recomputed from the package.

A chapter records a disagreement in two ways: a *book / ours / why* table row (its "quantity"), or an `sb.expect`
whose `source` says the book prints something else. Each must be an entry of `data/errata.toml` and appear on
`errata.md`; each entry's `ours` is recomputed from its `computation`, and its `expect` found in its chapter (a
check's source is typed beside it, or comes with the book number it reads, `sb.published(key)`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import scalebook as sb
from scalebook.book import errata, upstream

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = errata.errata()
# An `sb.expect` whose source says the book prints another number.
DISAGREEING_SOURCE = re.compile(r"book prints|disagree|book without|the book's [^\"]* is ")
_QUANTITY = re.compile(r'"quantity":\s*(f?)"([^"]*)"')
_SOURCE = re.compile(r'source=f?"([^"]*)"')
_KEY = re.compile(r"""sb\.published\(\s*["']([^"']+)["']""")


def _sources(line: str) -> list[str]:
    """The sources of the checks on a line: typed (`source="..."`) or a book number's (`sb.published(key)`)."""
    return _SOURCE.findall(line) + [sb.published(key).source for key in _KEY.findall(line)]


def _chapter(name: str) -> str:
    return (ROOT / "chapters" / f"{name}.md").read_text(encoding="utf-8")


def recorded() -> list[tuple[str, str, bool]]:
    """Every disagreement the chapters record: (chapter, marker, is_prefix), a prefix for an f-string quantity."""
    found = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if '"why"' in line and '"book"' in line:
                for f, quantity in _QUANTITY.findall(line):
                    found.append((path.stem, quantity.split("{")[0] if f else quantity, bool(f)))
            found += [(path.stem, s, False) for s in _sources(line) if DISAGREEING_SOURCE.search(s)]
    return found


def test_the_chapters_record_disagreements_the_way_we_look_for_them() -> None:
    markers = recorded()
    assert len(markers) >= 18
    assert ("08_serving_llama", "35 GB / 16 GB (the book prints 2.81)", False) in markers
    assert ("03_sharding", "time to read one shard from H100 HBM", False) in markers


@pytest.mark.parametrize("chapter, marker, prefix", recorded())
def test_every_disagreement_in_the_chapters_is_on_the_page(chapter: str, marker: str, prefix: bool) -> None:
    listed = [e for e in ENTRIES if e.chapter == chapter and (
        (e.quantity.startswith(marker) if prefix else e.quantity == marker) or e.expect == marker)]
    assert listed, f"{chapter}: {marker!r} is not in data/errata.toml"
    page = (ROOT / errata.PAGE).read_text(encoding="utf-8")
    assert all(e.quantity.replace("|", "\\|") in page for e in listed)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.chapter}: {e.quantity}")
def test_every_entry_is_recomputed_by_the_package(entry: errata.Erratum) -> None:
    value = eval(entry.computation, {"sb": sb})  # noqa: S307 (our own data file)
    assert value == pytest.approx(entry.ours, rel=1e-4)
    assert abs(entry.ours / entry.book - 1) > 1e-3, "an entry must be a disagreement"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.chapter}: {e.quantity}")
def test_every_entry_points_at_the_check_in_its_chapter(entry: errata.Erratum) -> None:
    sources = [s for line in _chapter(entry.chapter).splitlines() for s in _sources(line)]
    assert entry.expect in sources, f"no sb.expect with source {entry.expect!r} in {entry.chapter}"
    assert entry.kind in ("rounding", "approximation", "units", "convention", "error in the book")
    assert entry.upstream.strip() and entry.why.strip()


def test_every_resolved_disagreement_was_adopted_from_the_ledger() -> None:
    status = {c.sha: c.status for c in upstream.ledger()}
    assert errata.resolved()
    for r in errata.resolved():
        assert status[r.commit] == "adopted", r.quantity


def test_the_page_is_up_to_date_and_part_of_the_site() -> None:
    assert errata.check(ROOT) == []
    assert "      - file: errata\n" in (ROOT / "_toc.yml").read_text()
    assert "(../errata.md)" in _chapter("00_intro")
    page = (ROOT / errata.PAGE).read_text(encoding="utf-8")
    assert all(f"`{c.short}`" in page for c in upstream.ledger())


def test_a_stale_page_fails(tmp_path: Path) -> None:
    (tmp_path / errata.PAGE).write_text("# an old list\n")
    assert errata.check(tmp_path) == ["errata.md is stale — run `make sync`"]
    assert errata.sync(tmp_path) and errata.check(tmp_path) == []


def test_make_check_sync_checks_the_page() -> None:
    recipe = re.search(r"^check-sync:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "-m scalebook.book.errata check" in recipe
