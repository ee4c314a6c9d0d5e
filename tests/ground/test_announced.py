"""Chips announced in 2026 (issue #40): listed with the day, the event and a source, never priced. A look-up of one
says it is announced and what must be published first, instead of 'not known' or a number."""

import datetime

import pytest

import scalebook as sb
from scalebook.hardware import announced, chip_names

ANNOUNCED = list(announced.announced())


def test_the_2026_chips_the_issue_names_are_listed():
    names = {chip.name for chip in announced.announced().values()}
    assert {"NVIDIA Rubin", "AMD Instinct MI455X", "AMD Instinct MI430X", "TPU 8t", "TPU 8i"} <= names


@pytest.mark.parametrize("key", ANNOUNCED)
def test_each_is_dated_in_2026_sourced_and_not_in_the_spec_table(key):
    chip = announced.announced()[key]
    assert chip.on.year == 2026 and chip.on <= datetime.date(2026, 12, 6)
    assert key not in chip_names() and chip.source and chip.missing
    assert chip.source != sb.get_chip("h100").source("bf16_flops")


@pytest.mark.parametrize("name", ["rubin", "NVIDIA Rubin", "vera-rubin", "MI455X", "amd mi430x", "TPU 8t", "tpu8i"])
def test_get_chip_refuses_an_announced_chip_and_says_why(name):
    with pytest.raises(KeyError) as raised:
        sb.get_chip(name)
    message = str(raised.value)
    assert "announced" in message and "not priced until" in message and "publishes" in message
    assert "is not known" not in message


def test_a_family_name_names_each_of_its_chips():
    with pytest.raises(KeyError) as raised:
        sb.get_chip("TPU 8")
    assert "TPU 8t" in str(raised.value) and "TPU 8i" in str(raised.value)


def test_no_alias_of_an_announced_chip_shadows_a_priced_one():
    """Every priced chip's names still give that chip: an announced alias never takes one of them."""
    for key in chip_names():
        chip = sb.get_chip(key)
        for name in (key, chip.name, *chip.aliases):
            assert announced.refusal(name) is None, (name, announced.refusal(name))
            assert sb.get_chip(name) is chip


def test_the_table_the_chapter_shows_has_every_announced_chip_and_no_number_column():
    table = announced.announced_chips()
    rows = table.rows
    assert [r["chip"] for r in rows] == [c.name for c in announced.announced().values()]
    assert all(isinstance(v, str) for r in rows for v in r.values())


def test_a_bad_entry_is_refused_with_the_field_named():
    with pytest.raises((TypeError, ValueError), match="kind"):
        announced.Announced(key="x", name="X", vendor="amd", kind="fpga", on=datetime.date(2026, 1, 1), event="e",
                            expected="e", claims="c", missing="m", source="s", cite="s")
    with pytest.raises(TypeError, match="on="):
        announced.Announced(key="x", name="X", vendor="amd", kind="gpu", on="2026-01-01", event="e",
                            expected="e", claims="c", missing="m", source="s", cite="s")
