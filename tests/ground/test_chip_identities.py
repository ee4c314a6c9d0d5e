"""Chip figures against what their sources printed: a rack's figure / 72 is one GPU's, a per-chip bidirectional
figure / ports / 2 is one link one way, and where the book keeps its own number a flag says so (issue #31)."""

import pytest

import scalebook as sb
from scalebook.hardware import chip_names
from scalebook.hardware.gpu import INFINITY_FABRIC, NVLINK

READINGS = [(name, field) for name in chip_names() for field in sb.get_chip(name).readings]


@pytest.mark.parametrize("name, field", READINGS)
def test_every_reading_gives_its_field_or_flags_why_not(name, field):
    """printed x unit / (2 if sparse) / (2 if bidirectional) / chips / ports x links = the field, within the 1 %
    a printed figure's rounding allows; a reading that gives another number must carry a flag, and only then."""
    chip = sb.get_chip(name)
    reading, value = chip.readings[field], getattr(chip, field)
    agrees = reading.value == pytest.approx(value, rel=0.01)
    assert agrees != bool(reading.flag), (name, field, reading.value, value, reading.flag)


@pytest.mark.parametrize("name", ["gb200", "gb300"])
def test_an_nvl72_racks_figures_over_72_are_one_gpus(name):
    """GB200 NVL72: 720 PFLOPS fp8 sparse, 13.4 TB, 130 TB/s NVLink; GB300 NVL72: 180 PFLOPS bf16 dense,
    576 TB/s HBM, 130 TB/s NVLink. Divided by 72 (and by 2 for sparsity or both directions) they are per GPU."""
    chip = sb.get_chip(name)
    racks = {f: r for f, r in chip.readings.items() if r.chips == 72}
    assert len(racks) >= 3
    for field, reading in racks.items():
        per_gpu = reading.printed * {"PFLOP/s": 1e15, "TB": 1e12, "TB/s": 1e12}[reading.unit] / 72
        per_gpu /= 2 if reading.basis == "sparse" or reading.direction == "bidirectional" else 1
        assert per_gpu == pytest.approx(getattr(chip, field), rel=0.01), field
    assert chip.readings["nvlink_bandwidth"].printed == 130  # TB/s bidirectional over the whole rack


@pytest.mark.parametrize("name, ports, bidirectional", [("v5p", 6, 1.2e12), ("v6e", 4, 8.0e11), ("tpu7x", 6, 1.2e12)])
def test_googles_per_chip_bidirectional_figure_divides_out_to_1e11_per_link(name, ports, bidirectional):
    """Google prints ICI per chip, both directions: 1200 GB/s over 6 ports (v5p, TPU7x), 800 over 4 (v6e). Per
    chip bidirectional / ports / 2 = 1.0e11 B/s per link one way; the book's 9e10 is kept and flagged."""
    chip = sb.get_chip(name)
    reading = chip.readings["ici_bandwidth"]
    assert (reading.printed * 1e9, reading.ports, reading.direction) == (bidirectional, ports, "bidirectional")
    assert reading.value == bidirectional / ports / 2 == pytest.approx(1.0e11)
    assert chip.ici_bandwidth == 9.0e10 and chip.ici_links == ports
    assert "9e10" in reading.flag and "book" in reading.flag


def test_tpu7x_hbm_is_the_books_192_gb_and_google_prints_gib():
    chip = sb.get_chip("tpu7x")
    reading = chip.readings["hbm_bytes"]
    assert chip.hbm_bytes == 192e9 and reading.unit == "GiB" and reading.value == 192 * 2**30
    assert "192 GB" in reading.flag


@pytest.mark.parametrize("name", ["b200", "b300", "gb200", "gb300"])
def test_nvlink_per_gpu_over_its_links_is_one_link_one_way(name):
    """NVLink 5: 1.8 TB/s per GPU both ways / 18 links / 2 = 50 GB/s per link one way (ch. 12's NVLink table)."""
    chip, nvlink = sb.get_chip(name), NVLINK["5.0"]
    reading = chip.readings["nvlink_bandwidth"]
    per_gpu_bidirectional = reading.printed * 1e12 / reading.chips
    assert per_gpu_bidirectional / nvlink.links_per_gpu / 2 == pytest.approx(nvlink.link_bandwidth, rel=0.01)
    assert chip.nvlink_bandwidth == nvlink.gpu_bandwidth


@pytest.mark.parametrize("name, generation", [("mi300x", "CDNA 3"), ("mi325x", "CDNA 3"), ("mi355x", "CDNA 4")])
def test_infinity_fabric_link_figure_over_two_times_seven_links_is_the_egress(name, generation):
    """AMD prints one link's peak (128 GB/s, 153 GB/s for CDNA 4), read as bidirectional: / 2 per direction,
    x 7 links to the other GPUs of the node = the one-way egress the chip stores."""
    chip, fabric = sb.get_chip(name), INFINITY_FABRIC[generation]
    reading = chip.readings["nvlink_bandwidth"]
    assert reading.printed * 1e9 / 2 == fabric.link_bandwidth and reading.links == fabric.links_per_gpu == 7
    assert chip.nvlink_bandwidth == fabric.gpu_bandwidth == reading.value


def test_b200_is_180_gb_usable():
    chip = sb.get_chip("b200")
    assert chip.hbm_bytes == 180e9 and chip.readings["hbm_bytes"].value == 180e9
    assert "192" in chip.notes
