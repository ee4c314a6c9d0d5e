"""Chips announced but not yet priced: named, dated and sourced, so that a look-up says why it has no numbers.

A chip enters `chips.toml`'s `[chips]` table, and so every model of the package, only when its vendor publishes
the figures a roofline needs (dense peak FLOP/s, HBM bytes and bandwidth, scale-up bandwidth) in a datasheet or
product page. Until then it is listed under `[announced]`: its name, who announced it, when and where, what the
vendor claimed (as text, never as a number the package computes with) and the source. `get_chip` asks `refusal`
first, so `sb.get_chip("rubin")` fails with the reason instead of "not known".
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from functools import cache

from ..data import load
from ..tables import Table
from ..units import check_fields

__all__ = ["Announced", "announced", "announced_chips", "refusal", "chip_key", "VENDORS"]

VENDORS = {"nvidia": "NVIDIA", "amd": "AMD", "google": "Google"}  # a vendor key as the vendor writes its name


@dataclass(frozen=True)
class Announced:
    """One announced chip: `name`, `vendor`, `kind` ('gpu' or 'tpu'), the day (`on`) and `event` it was announced,
    when the vendor says it ships (`expected`), the vendor's `claims` (text, not figures we price with), what is
    `missing` before it can be priced, the `source` text and a short `cite` of it, and the `aliases` a reader may
    type."""

    key: str
    name: str
    vendor: str
    kind: str
    on: datetime.date
    event: str
    expected: str
    claims: str
    missing: str
    source: str
    cite: str
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self, key="text", name="text", vendor=tuple(VENDORS), kind=("gpu", "tpu"), event="text",
                     expected="text", claims="text", missing="text", source="text", cite="text")
        if not isinstance(self.on, datetime.date):
            raise TypeError(f"on={self.on!r} must be a date (a TOML date such as 2026-01-05)")

    @property
    def reason(self) -> str:
        """Why the chip has no numbers: announced when and where, not priced until its figures are published."""
        return (f"{self.name} is announced ({self.event}, {self.on.isoformat()}; expected {self.expected}), not "
                f"priced until {VENDORS.get(self.vendor, self.vendor)} publishes "
                f"{self.missing}")


def chip_key(name: str) -> str:
    """A chip's name as a look-up key: lower case, without spaces, dashes, underscores or a vendor's prefix
    ('NVIDIA H100' and 'h-100' give 'h100'); `chips.get_chip` and `refusal` both look names up by it."""
    return re.sub(r"^(nvidia|google|amd)", "", re.sub(r"[\s_\-]+", "", str(name).lower()))


@cache
def announced() -> dict[str, Announced]:
    """Return every announced chip by key, in the order `chips.toml` lists them."""
    data = load("hardware/chips.toml")
    refs: dict[str, str] = data["sources"]
    return {key: Announced(key=key, **{**entry, "source": refs[entry["source"]],
                                       "aliases": tuple(entry.get("aliases", ()))})
            for key, entry in data.get("announced", {}).items()}


def refusal(name: str) -> str | None:
    """Return why `name` (forgiving case, spaces and a vendor's prefix) cannot be priced when it names announced
    chips (a family name such as 'TPU 8' names each of its chips), else None."""
    key = chip_key(name)
    reasons = [chip.reason for chip in announced().values()
               if key in {chip_key(alias) for alias in (chip.key, chip.name, *chip.aliases)}]
    return "; ".join(reasons) or None


def announced_chips() -> Table:
    """Return the announced chips as a table: name, announced (day and event), expected, the vendor's claims and
    where they were read (a short citation; `announced()` has each source whole)."""
    rows = [{"chip": c.name, "announced": f"{c.on.isoformat()}, {c.event}", "expected": c.expected,
             "vendor's claims (not priced)": c.claims, "source": c.cite} for c in announced().values()]
    return Table(rows, title="Announced in 2026, not priced until their datasheets are published")
