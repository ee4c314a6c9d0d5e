"""Units: SI constants, formatting at the edge, and parsing of human sizes."""

import pytest

from scalebook import units


@pytest.mark.parametrize(
    "text, expected",
    [("16GiB", 16 * 2**30), ("1.5 GB", 1.5e9), ("512KiB", 512 * 1024), ("96e9", 96e9), ("4096", 4096.0),
     ("2TB", 2e12), (4096, 4096.0), ("128 MiB", 128 * 2**20)],
)
def test_parse_size_reads_decimal_and_binary_units(text, expected):
    assert units.parse_size(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["16 GiBs", "lots", "", "-3GB", -1])
def test_parse_size_rejects_nonsense_naming_the_argument(bad):
    with pytest.raises(ValueError, match="size="):
        units.parse_size(bad)


def test_formatting_picks_readable_prefixes():
    assert units.fmt_bytes(16e9) == "16 GB"
    assert units.fmt_bytes(16 * 2**30, binary=True) == "16 GiB"
    assert units.fmt_time(1.01e-3) == "1.01 ms"
    assert units.fmt_time(194e-6) == "194 µs"
    assert units.fmt_time(7200) == "2 h"
    assert units.fmt_time(3.8e6) == "44 days"
    assert units.fmt_time(1.37e10) == "434 years"
    assert units.fmt_flops(6.26e24) == "6.26e+24 FLOPs"
    assert units.fmt_flops(2.1e12) == "2.1 TFLOPs"
    assert units.fmt_rate(1.97e14) == "197 TFLOP/s"
    assert units.fmt_rate(8.2e11, "B/s") == "820 GB/s"


def test_dtype_sizes_and_unknown_dtype():
    assert units.dtype_bytes("bf16") == 2
    assert units.dtype_bytes("int8") == 1
    assert units.dtype_bytes("int4") == 0.5
    with pytest.raises(ValueError, match="dtype='bf17'.*allowed"):
        units.dtype_bytes("bf17")
