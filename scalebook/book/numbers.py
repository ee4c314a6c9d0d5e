"""The book's printed numbers that both a chapter and a unit test check, each typed once.

A number the book prints is asserted where a reader sees it, in the chapter (`sb.expect`, run by nbval). When a
unit test checks the same number too (the ground function that computes it deserves a test of its own), the
number lives here instead, in `scalebook/data/book/<chapter>.toml`, with the tolerance of the book's rounding and
the place it is printed. Both sides read it by key:

    sb.expect(sb.all_gather(mesh, "Y", V).time, sb.published("03_sharding.all_gather_y_wraparound"))

A key is the chapter's file stem and the number's name, joined by a dot.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import load
from ..units import check_kind, closest

__all__ = ["Published", "published", "book_numbers"]

_FOLDER = Path(__file__).resolve().parents[1] / "data" / "book"
_FIELDS = {"value", "rtol", "source", "unit"}


@dataclass(frozen=True)
class Published:
    """One printed number: its `value` (a number, or a list of numbers), the relative tolerance `rtol` of the
    book's rounding, where it is printed (`source`) and its `unit` ('s', 'B', 'FLOP/s' ... or '' for a count)."""

    key: str
    value: Any
    rtol: float
    source: str
    unit: str = ""

    def __float__(self) -> float:
        return float(self.value)


def read_chapter(path: Path) -> dict[str, Published]:
    """The numbers of one chapter file, each checked for its fields."""
    chapter, numbers = path.stem, {}
    for name, row in load(f"data/book/{path.name}").items():
        key = f"{chapter}.{name}"
        extra, missing = set(row) - _FIELDS, {"value", "rtol", "source"} - set(row)
        if extra or missing:
            raise ValueError(f"{path.name} [{name}]: fields {sorted(extra)} are unknown and {sorted(missing)} "
                             f"are missing; a number has {sorted(_FIELDS)}")
        numbers[key] = Published(key, row["value"], float(row["rtol"]), row["source"], row.get("unit", ""))
    return numbers


@functools.cache
def book_numbers() -> dict[str, Published]:
    """Every number of `data/book/*.toml`, by key ('03_sharding.all_gather_y_wraparound')."""
    return {key: number for path in sorted(_FOLDER.glob("*.toml")) for key, number in read_chapter(path).items()}


def published(key: str) -> Published:
    """The printed number `key` ('<chapter stem>.<name>'), to hand to `sb.expect`; an unknown key names the
    closest ones."""
    check_kind("key", key, "text")
    numbers = book_numbers()
    if key not in numbers:
        near = closest(key, numbers)
        hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
        raise ValueError(f"key={key!r} is not a book number of scalebook/data/book/ (keys read "
                         f"'<chapter stem>.<name>', e.g. {next(iter(numbers), '03_sharding.name')!r}){hint}")
    return numbers[key]
