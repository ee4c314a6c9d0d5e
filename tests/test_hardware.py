"""Chip specs: every number the book prints, forgiving names, and a source for every figure."""

import pytest

import scalebook as sb
from scalebook.hardware import chip_for_device_kind, chip_names

# (chip, HBM bytes, HBM B/s, bf16 FLOP/s, int8 OP/s, ICI one-way B/s): How To Scale Your Model, ch. 2 tables.
TPU_TABLE = [
    ("v3", 32e9, 9.0e11, 1.4e14, 1.4e14, 1.0e11),
    ("v4p", 32e9, 1.2e12, 2.75e14, 2.75e14, 4.5e10),
    ("v5p", 96e9, 2.8e12, 4.59e14, 9.18e14, 9.0e10),
    ("v5e", 16e9, 8.2e11, 1.97e14, 3.94e14, 4.5e10),
    ("v6e", 32e9, 1.6e12, 9.20e14, 1.84e15, 9.0e10),
    ("tpu7x", 192e9, 7.4e12, 2.30e15, 4.61e15, 9.0e10),
]


@pytest.mark.parametrize("name, hbm, hbm_bw, bf16, int8, ici", TPU_TABLE)
def test_tpu_specs_match_the_books_table(name, hbm, hbm_bw, bf16, int8, ici):
    chip = sb.get_chip(name)
    assert chip.hbm_bytes == hbm
    assert chip.hbm_bandwidth == hbm_bw
    assert chip.bf16_flops == bf16
    assert chip.int8_flops == int8
    assert chip.ici_bandwidth == ici
    assert chip.ici_bidirectional == 2 * ici


def test_tpu_io_and_topology_figures():
    v5e, v5p, v6e = sb.get_chip("v5e"), sb.get_chip("v5p"), sb.get_chip("v6e")
    assert v5e.pcie_bandwidth == 1.6e10 and v6e.pcie_bandwidth == 3.2e10
    assert v5p.dcn_bandwidth == 6.25e9 and v6e.dcn_bandwidth == 12.5e9 and v5e.dcn_bandwidth == 3.125e9
    assert v5e.vmem_bytes == 128 * 2**20
    assert v5e.clock_hz == 1.5e9 and v5p.clock_hz == 1.75e9
    assert v5e.max_slice == (16, 16) and v5p.max_slice == (16, 20, 28)
    assert v5e.ici_links == 4 and v5p.ici_links == 6
    assert v6e.mxu_size == 256 and v5e.mxu_size == 128


# (chip, HBM bytes, HBM B/s, bf16 FLOP/s, SMs): ch. 12 tables (H100 HBM 3.35e12 from ch. 1, B200 bf16 2.25e15 text).
GPU_TABLE = [
    ("a100", 80e9, 2.0e12, 3.1e14, 108),
    ("h100", 80e9, 3.35e12, 9.89e14, 132),
    ("h200", 141e9, 4.8e12, 9.89e14, 132),
    ("b200", 192e9, 8.0e12, 2.25e15, 148),
]


@pytest.mark.parametrize("name, hbm, hbm_bw, bf16, sms", GPU_TABLE)
def test_gpu_specs_match_the_books_tables(name, hbm, hbm_bw, bf16, sms):
    chip = sb.get_chip(name)
    assert (chip.hbm_bytes, chip.hbm_bandwidth, chip.bf16_flops, chip.cores) == (hbm, hbm_bw, bf16, sms)


def test_gpu_nvlink_egress_per_generation():
    assert sb.get_chip("a100").nvlink_bandwidth == 300e9
    assert sb.get_chip("h100").nvlink_bandwidth == 450e9
    assert sb.get_chip("b200").nvlink_bandwidth == 900e9
    assert sb.get_chip("h800").nvlink_bandwidth == 300e9
    assert sb.get_chip("v100").bf16_flops is None  # Volta has no bf16


def test_every_listed_chip_is_present():
    assert set(chip_names()) == {"v2", "v3", "v4p", "v5p", "v5e", "v6e", "tpu7x",
                                 "v100", "a100", "h100", "h100-hbm2e", "h200", "h800", "b200", "gb200"}


@pytest.mark.parametrize("name", chip_names())
def test_every_number_has_a_source(name):
    chip = sb.get_chip(name)
    fields = [f for f in ("bf16_flops", "fp16_flops", "int8_flops", "fp8_flops", "hbm_bytes", "hbm_bandwidth",
                          "ici_bandwidth", "nvlink_bandwidth", "dcn_bandwidth", "pcie_bandwidth", "clock_hz")
              if getattr(chip, f) is not None]
    assert fields
    for field in fields:
        assert len(chip.source(field)) > 10, f"{name}.{field} has no source"


@pytest.mark.parametrize("alias", ["v5e", "TPU v5e", "tpu-v5e", "TPU_V5E", "v5litepod", "tpu v5 lite"])
def test_forgiving_names(alias):
    assert sb.get_chip(alias).name == "TPU v5e"


def test_vendor_prefixes_and_nicknames():
    assert sb.get_chip("NVIDIA-H100").name == "NVIDIA H100"
    assert sb.get_chip("Trillium").name == "TPU v6e"
    assert sb.get_chip("Ironwood").name == "TPU7x"
    assert sb.get_chip("v4").name == "TPU v4p"


def test_unknown_chip_suggests_the_closest():
    with pytest.raises(KeyError, match=r"chip='v5x'.*closest: TPU v5e, TPU v5p"):
        sb.get_chip("v5x")
    with pytest.raises(KeyError, match=r"closest:.*NVIDIA H100"):
        sb.get_chip("h10")


@pytest.mark.parametrize("kind, expected", [
    ("TPU v5 lite", "TPU v5e"), ("TPU v5", "TPU v5p"), ("TPU v4", "TPU v4p"), ("TPU v6 lite", "TPU v6e"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100"), ("NVIDIA A100-SXM4-80GB", "NVIDIA A100"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100"), ("TPU v2", "TPU v2"),
])
def test_device_kind_maps_to_chip(kind, expected):
    assert chip_for_device_kind(kind).name == expected


def test_device_kind_of_a_cpu_is_not_a_chip():
    assert chip_for_device_kind("cpu") is None


def test_peak_flops_by_dtype():
    h100 = sb.get_chip("h100")
    assert h100.peak_flops("bf16") == 9.89e14
    assert h100.peak_flops("fp16") == 9.89e14
    assert h100.peak_flops("fp8") == 1.979e15
    with pytest.raises(ValueError, match="no published fp4 peak"):
        h100.peak_flops("fp4")


def test_list_chips_table():
    table = sb.list_chips()
    assert len(table) == 15
    assert "TPU v5e" in str(table) and "<table>" in table._repr_html_()
    assert len(sb.list_chips(vendor="google")) == 7


def test_replace_builds_a_variant_and_rejects_unknown_fields():
    fast = sb.get_chip("v5e").replace(hbm_bandwidth=1.64e12)
    assert fast.critical_intensity() == pytest.approx(120.1, rel=1e-3)
    with pytest.raises(ValueError, match="hbm_bw"):
        sb.get_chip("v5e").replace(hbm_bw=1)
