"""Chip specs: every number the book prints, forgiving names, and a source for every figure."""

import datetime
import math

import pytest

import scalebook as sb
from scalebook import collectives, inference
from scalebook.hardware import GpuCluster, chip_for_device_kind, chip_names
from scalebook.hardware.chips import PRINTED_UNITS
from scalebook.hardware.gpu import INFINITY_FABRIC, NVLINK

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
# B200's HBM is NVIDIA's usable 180 GB (HGX specification; issue #31), not the book's 192 GB physical total.
GPU_TABLE = [
    ("a100", 80e9, 2.0e12, 3.1e14, 108),
    ("h100", 80e9, 3.35e12, 9.89e14, 132),
    ("h200", 141e9, 4.8e12, 9.89e14, 132),
    ("b200", 180e9, 8.0e12, 2.25e15, 148),
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
                                 "v100", "a100", "h100", "h100-hbm2e", "h200", "h800", "b200", "gb200",
                                 "b300", "gb300", "mi300x", "mi325x", "mi355x"}


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
    assert len(table) == 20
    assert "TPU v5e" in str(table) and "<table" in table._repr_html_()
    assert len(sb.list_chips(vendor="google")) == 7
    assert len(sb.list_chips(vendor="amd")) == 3


def test_replace_builds_a_variant_and_rejects_unknown_fields():
    fast = sb.get_chip("v5e").replace(hbm_bandwidth=1.64e12)
    assert fast.critical_intensity() == pytest.approx(120.1, rel=1e-3)
    with pytest.raises(ValueError, match="hbm_bw"):
        sb.get_chip("v5e").replace(hbm_bw=1)


# ---- December-2026 hardware (issue #31) ----
NEW_CHIPS = ["b300", "gb300", "mi300x", "mi325x", "mi355x"]

# (chip, bf16 FLOP/s dense, HBM bytes, HBM B/s, one-way scale-up egress B/s): chips.toml's `read` tables.
NEW_TABLE = [
    ("b300", 2.25e15, 270e9, 8.0e12, 9.0e11),     # HGX B300: 36 PFLOPS sparse / 8; 270 GB usable; 1.8 TB/s bidi
    ("gb300", 2.5e15, 279e9, 8.0e12, 9.0e11),     # NVL72: 180 PFLOPS dense / 72; 576 TB/s / 72; 130 TB/s / 72 / 2
    ("mi300x", 1.3074e15, 192e9, 5.3e12, 4.48e11),  # AMD: 1307.4 TFLOPS; 7 Infinity Fabric links of 64 GB/s each way
    ("mi325x", 1.3074e15, 256e9, 6.0e12, 4.48e11),
    ("mi355x", 2.5e15, 288e9, 8.0e12, 5.355e11),  # 7 links of 153 GB/s bidirectional
]


@pytest.mark.parametrize("name, bf16, hbm, hbm_bw, egress", NEW_TABLE)
def test_december_2026_chips_carry_their_datasheet_numbers(name, bf16, hbm, hbm_bw, egress):
    chip = sb.get_chip(name)
    assert (chip.bf16_flops, chip.hbm_bytes, chip.hbm_bandwidth, chip.nvlink_bandwidth) == (bf16, hbm, hbm_bw, egress)
    assert chip.kind == "gpu" and chip.vendor in ("nvidia", "amd")


@pytest.mark.parametrize("name", NEW_CHIPS)
def test_every_figure_of_a_new_chip_says_what_was_printed_and_when(name):
    chip = sb.get_chip(name)
    figures = [f for f in ("bf16_flops", "fp8_flops", "int8_flops", "fp4_flops", "hbm_bytes", "hbm_bandwidth",
                           "nvlink_bandwidth") if getattr(chip, f) is not None]
    for field in figures:
        reading = chip.readings[field]
        assert reading.on == datetime.date(2026, 12, 4), field
        assert reading.unit in PRINTED_UNITS and len(reading.source) > 10


@pytest.mark.parametrize("alias, name", [("Blackwell Ultra", "NVIDIA B300"), ("GB300 NVL72", "NVIDIA GB300"),
                                         ("AMD Instinct MI300X", "AMD MI300X"), ("mi355x", "AMD MI355X")])
def test_new_chips_by_their_common_names(alias, name):
    assert sb.get_chip(alias).name == name


def test_new_chip_calibration_is_measured_only_where_mamf_measured_it():
    """MAMF (ml-engineering): B300 1769 of 2250, MI300X 668.4 and MI325X 784.9 of AMD's 1307.4, MI355X 1565 of
    AMD's dense 2500; GB300 has no measurement and copies GB200's 0.729, marked assumed."""
    measured = {"b300": 1769 / 2250, "mi300x": 668.4 / 1307.4, "mi325x": 784.9 / 1307.4, "mi355x": 1565 / 2500}
    for name, fraction in measured.items():
        eff = sb.get_chip(name).efficiency("calibrated")
        assert eff.matmul == pytest.approx(fraction, abs=6e-4)
        assert "matmul" not in eff.assumed and "hbm" in eff.assumed and "collectives" in eff.assumed
    gb300 = sb.get_chip("gb300").efficiency("calibrated")
    assert gb300.matmul == sb.get_chip("gb200").efficiency("calibrated").matmul and "matmul" in gb300.assumed


def test_existing_calibrated_factors_are_unchanged():
    assert sb.get_chip("b200").efficiency("calibrated").matmul == 0.776
    assert sb.get_chip("gb200").efficiency("calibrated").matmul == 0.729
    assert sb.get_chip("h100").efficiency("calibrated").collective("all_reduce") == 0.82


def test_blackwell_ultra_and_amd_fabrics():
    """B300 and GB300 are NVLink 5 (18 links of 50 GB/s each way); AMD parts are a switchless Infinity Fabric
    mesh of 7 links (64 GB/s each way on CDNA 3, 76.5 on CDNA 4)."""
    assert GpuCluster("b300", gpus=8).nvlink is NVLINK["5.0"] and GpuCluster("gb300", gpus=72).nvlink is NVLINK["5.0"]
    assert GpuCluster("gb300", gpus=72).gpus_per_node == 72 and GpuCluster("gb300", gpus=72).node_egress == 7.2e12
    assert GpuCluster("b300", gpus=1024).node_egress == 800e9  # one 800 Gb/s ConnectX-8 per GPU
    mi300x, mi355x = GpuCluster("mi300x", gpus=8), GpuCluster("mi355x", gpus=8)
    assert mi300x.mesh and mi355x.mesh and not GpuCluster("b300", gpus=8).mesh
    assert mi300x.nvlink is INFINITY_FABRIC["CDNA 3"] and mi300x.nvswitches is None
    assert mi300x.node_bandwidth == 8 * 448e9


def test_a_mesh_gives_a_smaller_group_only_its_own_links():
    """AllGather of 1 GB: 8 MI300X use 7 links of 64 GB/s each (7/8 GB / 448 GB/s = 1.95 ms); 4 of them only
    3 links (3/4 GB / 192 GB/s = 3.91 ms); behind an NVSwitch 4 B300 keep their whole 900 GB/s."""
    node = GpuCluster("mi300x", gpus=8)
    assert sb.all_gather(node, None, 1e9).time == pytest.approx(1e9 * 7 / 8 / 448e9)
    assert sb.all_gather(node.subset(4), None, 1e9).time == pytest.approx(1e9 * 3 / 4 / 192e9)
    assert sb.all_gather(GpuCluster("b300", gpus=4), None, 1e9).time == pytest.approx(1e9 * 3 / 4 / 900e9)


@pytest.mark.parametrize("name", NEW_CHIPS)
def test_new_chips_are_priced_by_every_model(name):
    """roofline, collectives on a GpuCluster, decode_step and predict: finite, positive, ideal <= calibrated."""
    chip = sb.get_chip(name)
    gemm = sb.roofline.matmul(8192, 8192, 8192, chip)
    assert math.isfinite(gemm.time) and gemm.time > 0 and gemm.bound == "compute"
    cluster = GpuCluster(name, gpus=64)
    for kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        ideal = collectives.collective(kind, cluster, None, 1e9)
        real = collectives.collective(kind, cluster, None, 1e9, efficiency="calibrated")
        assert 0 < ideal.time <= real.time and math.isfinite(real.time)
    decode = [inference.decode_step("llama3-70b", chip, 8, 64, 4096, efficiency=e).time
              for e in ("ideal", "calibrated")]
    assert 0 < decode[0] <= decode[1] and math.isfinite(decode[1])
    steps = [sb.training.predict("llama3-70b", cluster, 64, 4 * 2**20, 8192, tp=8, efficiency=e)
             for e in ("ideal", "calibrated")]
    assert 0 < steps[0].step_time <= steps[1].step_time and math.isfinite(steps[1].step_time)
    assert 0 < steps[1].mfu <= steps[0].mfu <= 1


def test_mxu_count_and_vector_rate_come_from_the_spec():
    from scalebook.hardware.chips import mxus_per_core
    from scalebook.hardware.sm import vpu_flops_per_core
    assert mxus_per_core("v5e") == 4  # 1.97e14 / (2 * 128² * 1.5 GHz)
    assert mxus_per_core("v5p") == 4
    assert mxus_per_core("v4p") is None  # no clock in the table
    # ch. 2 appendix pop quiz: a v5p core's VPU does ~7e12 FLOP/s (8 x 128 x 4 x 1.75 GHz)
    sb.expect(vpu_flops_per_core("v5p"), sb.published("02_tpus.vpu_flops_per_core"))


def test_the_bandwidth_ladder_of_a_chip_is_the_books_and_runs_fastest_first():
    from scalebook.hardware.chips import ladder_rows
    rows = ladder_rows("v5e")
    assert rows["VMEM→MXU (≈22× HBM)"] == pytest.approx(22 * 8.2e11)
    assert rows["ICI link, bidirectional"] == pytest.approx(9e10)
    assert rows["ICI, all links, one-way"] == pytest.approx(4 * 4.5e10)
    known = [v for v in rows.values() if v]
    assert known == sorted(known, reverse=True)  # a ladder: each channel slower than the one before
    assert ladder_rows("v6e")["VMEM→MXU (≈22× HBM)"] is None  # no VMEM size in our table


def test_elementwise_pipeline_overlaps_every_stage():
    from scalebook.hardware.sm import PIPELINE_STAGES, pipeline_stages
    n, stages = 6, len(PIPELINE_STAGES)
    full = pipeline_stages(n, stages - 1)
    assert sorted(full.values()) == list(range(stages))[::-1][::-1]  # all five busy, chunks 4..0
    assert pipeline_stages(n, n + stages - 2)["VMEM → HBM"] == n - 1  # the last step drains the last chunk
    with pytest.raises(ValueError, match="step"):
        pipeline_stages(n, n + stages - 1)
