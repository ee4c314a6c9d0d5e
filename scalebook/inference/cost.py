"""What serving costs: the chip-hour price table (`data/prices.toml`, with its date and source), the one price
look-up of the package (`chip_price`), and dollars per million generated tokens."""

from __future__ import annotations

from functools import cache

from ..data import load
from ..hardware.chips import Chip, get_chip
from ..units import checks

__all__ = ["prices", "chip_price", "cost_per_million_tokens"]


@cache
def prices() -> dict[str, dict]:
    """Return the chip-hour price table (USD per chip-hour, with its date and source) from data/prices.toml."""
    return load("data/prices.toml")


def chip_price(chip: Chip | str) -> float:
    """Return the listed on-demand price of one `chip` in US dollars per chip-hour (`prices()`; KeyError naming the
    priced chips when it has none): the one price look-up of the package."""
    chip = get_chip(chip)
    table = prices()["chips"]
    key = next((k for k in table if get_chip(k) is chip), None)
    if key is None:
        raise KeyError(f"no price for {chip.name}; priced chips: {sorted(table)}")
    return table[key]["usd_per_hour"]


@checks(tokens_per_second_per_chip="size")
def cost_per_million_tokens(chip: Chip | str, tokens_per_second_per_chip: float) -> float:
    """Return US dollars per million generated tokens at the listed chip-hour price."""
    return chip_price(chip) / 3600 / tokens_per_second_per_chip * 1e6
