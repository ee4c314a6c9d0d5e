"""TPU slices: wraparound rules, hops, pod totals and point-to-point transfers (How To Scale Your Model, ch. 2)."""

import pytest

import scalebook as sb
from scalebook import TpuMesh


def test_v5e_axes_wrap_only_at_full_pod_width():
    assert TpuMesh("v5e", X=16, Y=16).wrap == {"X": True, "Y": True}
    assert TpuMesh("v5e", X=16, Y=4).wrap == {"X": True, "Y": False}
    assert TpuMesh("v5e", X=4, Y=4).wrap == {"X": False, "Y": False}


def test_v5p_slices_wrap_when_made_of_whole_cubes():
    assert all(TpuMesh("v5p", X=4, Y=4, Z=4).wrap.values())
    assert all(TpuMesh("v5p", X=4, Y=8, Z=16).wrap.values())
    assert not any(TpuMesh("v5p", X=2, Y=2, Z=4).wrap.values())  # smaller than a cube: no optical switches


def test_wraparound_can_be_overridden():
    assert TpuMesh("v5p", X=4, Y=4, Z=4, wrap=False).wrap == {"X": False, "Y": False, "Z": False}
    assert TpuMesh("v5e", X=8, Y=8, wrap={"X": True}).wrap == {"X": True, "Y": False}


def test_hops_take_the_short_way_round_a_torus():
    ring = TpuMesh("v5e", X=16, Y=16)
    assert ring.hops((0, 0), (15, 0)) == 1
    assert ring.diameter == 16
    line = TpuMesh("v5e", X=4, Y=4)
    assert line.hops((0, 0), (3, 3)) == 6 and line.diameter == 6


def test_q2_full_pods():
    # 2.Q2: v5e pod 16x16 -> 32 hosts, 256 cores, ~5.1e16 FLOP/s, ~4 TB; v5p 16x20x28 -> 2,240 hosts,
    # 17,920 cores, ~4.1e18 FLOP/s, ~860 TB.
    v5e, v5p = TpuMesh("v5e", X=16, Y=16), TpuMesh("v5p", X=16, Y=20, Z=28)
    sb.expect(v5e.hosts, sb.published("02_tpus.q2_v5e_hosts"))
    sb.expect(v5e.cores, sb.published("02_tpus.q2_v5e_cores"))
    # the book's 5.1e16 is 256 chips at a peak rounded to 2e14; ours is 256 x 1.97e14
    sb.expect(v5e.total_flops() * 2e14 / v5e.chip.bf16_flops, sb.published("02_tpus.q2_v5e_flops"))
    sb.expect(v5e.total_hbm, sb.published("02_tpus.q2_v5e_hbm"))
    assert v5p.n_chips == 8960
    sb.expect(v5p.hosts, sb.published("02_tpus.q2_v5p_hosts"))
    sb.expect(v5p.cores, sb.published("02_tpus.q2_v5p_cores"))
    sb.expect(v5p.total_flops(), sb.published("02_tpus.q2_v5p_flops"))
    sb.expect(v5p.total_hbm, sb.published("02_tpus.q2_v5p_hbm"))


def test_q5_point_to_point_on_a_4x4_without_wraparound():
    # 2.Q5: bf16[8,128,8192] from (0,0) to (3,3): 6 hops -> 6 µs; 2 links x 4.5e10 -> ~188 µs; ~194 µs total.
    est = TpuMesh("v5e", X=4, Y=4).transfer_time(2 * 8 * 128 * 8192, (0, 0), (3, 3))  # chapter 2: 6 µs latency
    # the book rounds the 16.8 MB payload to 1.7e7 B
    sb.expect(est.t_comms * 1.7e7 / (2 * 8 * 128 * 8192), sb.published("02_tpus.q5_bandwidth_part"))
    assert est.time == pytest.approx(194e-6, rel=0.02)
    assert est.bound == "comms"


def test_q1_streaming_weights_sets_a_latency_floor():
    # 2.Q1: 200B bf16 params over 32 v4p chips: 12.5 GB per chip at HBM speed (chapter 2 asserts the book's ~10 ms).
    per_chip = 2 * 200e9 / 32
    assert sb.roofline.estimate(0, per_chip, "v4p").time == pytest.approx(per_chip / sb.get_chip("v4p").hbm_bandwidth)


@pytest.mark.parametrize("chip, shape, message", [
    ("v5e", dict(X=32, Y=8), "does not fit"),
    ("v5e", dict(X=4, Y=4, Z=2), "2-D"),
    ("v5p", dict(X=32, Y=32, Z=32), "does not fit"),
    ("h100", dict(X=8, Y=1), "not a TPU"),
    ("v5e", dict(X=0, Y=4), "X=0"),
])
def test_invalid_slices_are_refused(chip, shape, message):
    with pytest.raises(ValueError, match=message):
        TpuMesh(chip, **shape)


def test_bad_coordinates_and_axes():
    mesh = TpuMesh("v5e", X=4, Y=4)
    with pytest.raises(ValueError, match="coordinate on axis X"):
        mesh.hops((0, 0), (4, 0))
    with pytest.raises(ValueError, match="axes='W'"):
        mesh.size("W")
    with pytest.raises(ValueError, match="wrap names unknown axes"):
        TpuMesh("v5e", X=4, Y=4, wrap={"Z": True})


def test_q3_host_resident_weights_need_a_huge_batch():
    # 2.Q3: bf16 weights and activations streamed over PCIe (the book uses 1.6e10 B/s) into a v6e
    # (9.2e14 FLOP/s), F = 4D, B << D: compute-bound only for B > C / W_pcie ~ 57,500.
    sb.expect(sb.roofline.critical_batch("v6e", bandwidth=1.6e10), sb.published("02_tpus.q3_pcie_critical_batch"))


def test_q4_int8_matmul_from_hbm_and_from_vmem():
    # 2.Q4: int8[16384, 4096] weights x int8[B, 4096] on a v5e: from HBM compute-bound above B ~ 267 in the
    # book (rounded coefficients; exact ~259); from VMEM (22 x HBM bandwidth) above B ~ 11.
    v5e = sb.get_chip("v5e")
    sb.expect(sb.roofline.crossover_batch(4096, 16384, v5e, "int8"), sb.published("02_tpus.q4_hbm_crossover_batch"))
    vmem = 22 * v5e.hbm_bandwidth
    sb.expect(sb.roofline.critical_intensity(v5e, bandwidth=vmem), sb.published("02_tpus.vmem_critical_intensity"))
    sb.expect(sb.roofline.crossover_batch(4096, 16384, v5e, "int8", bandwidth=vmem),
              sb.published("02_tpus.q4_vmem_crossover_batch"))


def test_q6_stages_of_the_host_to_chip_gather():
    # 2.Q6: int8[128·1024, 128·1024] (~16 GB) in host DRAM over a v5e 4x4; the book rounds the array to 16e9 B:
    # PCIe in parallel on 16 chips ~63 ms; ICI into chip (0,0) over 2 links >= ~167 ms; HBM -> MXU ~20 ms;
    # multiply by bf16[8, 128·1024] ~1.4 ms.
    v5e, V = sb.get_chip("v5e"), 16e9
    sb.expect(sb.roofline.estimate(0, V / 16, v5e, bandwidth=v5e.pcie_bandwidth).time, sb.published("02_tpus.q6_pcie"))
    sb.expect(V * 15 / 16 / (2 * v5e.ici_bandwidth), sb.published("02_tpus.q6_ici"))
    sb.expect(sb.roofline.estimate(0, V, v5e).time, sb.published("02_tpus.q6_hbm"))
    flops = 2 * 8 * (128 * 1024) ** 2
    sb.expect(sb.roofline.estimate(flops, 0, v5e).time, sb.published("02_tpus.q6_flops"))


def test_appendix_vpu_is_thirty_times_slower_than_the_mxu():
    # ch. 2 pop quiz: v5p VPU = 8 sublanes x 128 lanes x 4 ALUs x 1.75 GHz ~ 7e12 FLOP/s per core, ~30x below
    # the MXU's ~2.3e14 per core (4.59e14 per two-core chip).
    v5p = sb.get_chip("v5p")
    vpu = 8 * 128 * 4 * v5p.clock_hz
    sb.expect(vpu, sb.published("02_tpus.vpu_flops_per_core"))
    assert (v5p.bf16_flops / v5p.cores) / vpu == pytest.approx(30, rel=0.1)  # the book's ~30x; ours is 32x
