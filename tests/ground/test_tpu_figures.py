"""The four TPU figures where the book and Google's Cloud TPU pages differ (issue #40): each field keeps the book's
number, which the book's worked answers need, and its `read` entry carries Google's printed figure, the day it was
read and a flag that names the book's number and the gap, computed here so the flag's words cannot drift."""

import re

import pytest

import scalebook as sb

# chip, field, the book's number (ch. 2 table), Google's printed figure and unit
FIGURES = [
    ("v5p", "hbm_bytes", 96e9, 95, "GiB"),
    ("v5p", "hbm_bandwidth", 2.8e12, 2765, "GB/s"),
    ("v6e", "hbm_bandwidth", 1.6e12, 1638, "GB/s"),
    ("v5e", "ici_bandwidth", 4.5e10, 400, "GB/s"),
]


@pytest.mark.parametrize("name, field, book, printed, unit", FIGURES)
def test_the_field_is_the_books_and_the_reading_is_googles(name, field, book, printed, unit):
    chip = sb.get_chip(name)
    reading = chip.readings[field]
    assert getattr(chip, field) == book
    assert (reading.printed, reading.unit) == (printed, unit)
    assert "cloud.google.com/tpu/docs" in reading.source and reading.on is not None
    assert reading.value != pytest.approx(book, rel=0.01), "a figure within 1 % needs no flag"


@pytest.mark.parametrize("name, field, book, printed, unit", FIGURES)
def test_each_flag_names_the_books_number_and_the_gap_it_computes(name, field, book, printed, unit):
    """The flag says how far Google's figure is from the book's, in per cent: that number is recomputed here."""
    reading = sb.get_chip(name).readings[field]
    gap = abs(reading.value / book - 1) * 100
    said = re.findall(r"(\d+(?:\.\d+)?) % (more|less)", reading.flag)
    assert said, reading.flag
    number, direction = said[-1]
    assert float(number) == pytest.approx(gap, abs=0.05 if "." in number else 0.5), (reading.flag, gap)
    assert direction == ("more" if reading.value > book else "less")
    assert "book" in reading.flag


def test_v5e_link_is_googles_400_gbps_per_chip_over_four_ports_both_ways():
    """400 GB/s per chip, both directions, over 4 ports: 50 GB/s per link one way; the book keeps 45."""
    reading = sb.get_chip("v5e").readings["ici_bandwidth"]
    assert (reading.direction, reading.ports) == ("bidirectional", 4)
    assert reading.value == pytest.approx(5.0e10)


def test_the_books_beta_is_googles_figures_not_a_rounding():
    """Ch. 7's β ≈ 8: Google's v5e figures (819 GB/s HBM, 400 GB/s ICI per chip over 4 ports) give 8.19; the erratum
    says so (the number in its words is recomputed here) instead of 'the book rounds down'."""
    from scalebook.book import errata

    v5e = sb.get_chip("v5e")
    google = v5e.readings["hbm_bandwidth"].value / (2 * v5e.readings["ici_bandwidth"].value)
    entry = next(e for e in errata.errata() if e.quantity == "β = W_hbm / W_ici on v5e")
    assert f"{google:.3g}" == "8.19" and f"{google:.3g}" in entry.why
    assert "rounds down" not in entry.why and entry.kind != "rounding"
    assert round(google) == entry.book
