"""Roofline estimates, checked against every worked answer of chapter 1 (How To Scale Your Model, ch. 1)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import scalebook as sb
from scalebook import roofline as r

# --- the two clocks -------------------------------------------------------------------------------------------


def test_speed_examples_1e12_flops():
    # ch. 1: 1e12 FLOPs take ~1.01 ms on an H100 (9.89e14 FLOP/s) and ~1.1 ms on a v6e.
    sb.expect(r.estimate(1e12, 0, "h100").time, sb.published("01_rooflines.h100_1e12_flops"))
    sb.expect(r.estimate(1e12, 0, "v6e").time, sb.published("01_rooflines.v6e_1e12_flops"))


def test_max_and_sum_bound_the_time():
    est = r.estimate(2e12, 1.64e9, "v5e")  # 10.2 ms of math, 2 ms of bytes
    assert est.time == pytest.approx(2e12 / 1.97e14)
    assert est.upper == pytest.approx(2e12 / 1.97e14 + 1.64e9 / 8.2e11)
    assert est.bound == "compute"


# --- intensity --------------------------------------------------------------------------------------------------


def test_dot_product_intensity_tends_to_one_half():
    # ch. 1 in-text: (2N-1) FLOPs over (4N+2) bytes -> 1/2.
    assert r.dot(1e9, "v5e").intensity == pytest.approx(0.5, rel=1e-6)
    assert r.dot(1e9, "v5e").bound == "memory"


def test_v5e_critical_intensity_is_240():
    sb.expect(r.critical_intensity("v5e"), sb.published("01_rooflines.v5e_critical_intensity"))


def test_matmul_counts_flops_and_bytes():
    est = r.matmul(1024, 8192, 28672, "v5e")
    assert est.flops == 2 * 1024 * 8192 * 28672
    assert est.bytes == 2 * (1024 * 8192 + 8192 * 28672 + 1024 * 28672)
    assert est.intensity == pytest.approx(r.matmul_intensity(1024, 8192, 28672))


def test_matmul_intensity_is_about_B_for_small_batches():
    assert r.matmul_intensity(64, 16384, 16384) == pytest.approx(64, rel=0.01)


def test_v5e_bf16_matmul_turns_compute_bound_above_240_tokens():
    sb.expect(r.critical_batch("v5e"), sb.published("01_rooflines.v5e_critical_batch"))
    assert r.matmul(200, 16384, 16384, "v5e").bound == "memory"
    assert r.matmul(300, 16384, 16384, "v5e").bound == "compute"


# --- chapter 1 problems ----------------------------------------------------------------------------------------


def test_q1_int8_matmul_has_the_same_critical_batch():
    # 1.Q1: int8 intensity ~ 2B, int8 hardware intensity 3.94e14/8.2e11 = 480 -> B > 240.
    sb.expect(r.critical_intensity("v5e", "int8"), sb.published("01_rooflines.q1_int8_critical_intensity"))
    sb.expect(r.critical_batch("v5e", "int8"), sb.published("01_rooflines.q1_int8_critical_batch"))
    est = r.matmul(128, 8192, 8192, "v5e", dtype="int8")
    assert est.bytes == 128 * 8192 + 8192 * 8192 + 128 * 8192
    assert est.t_math == pytest.approx(2 * 128 * 8192 * 8192 / 3.94e14)
    assert est.intensity == pytest.approx(2 * 128, rel=0.05)


def test_q2_int8_weights_bf16_compute_halve_the_critical_batch():
    sb.expect(r.critical_batch("v5e", weight_dtype="int8"), sb.published("01_rooflines.q2_int8_weights_critical_batch"))


def test_q3_exact_crossovers_for_int8_weights():
    # 1.Q3 [our recompute]: bytes = 2BD + DF + 2BF -> compute-bound from B ~ 136 (D=F=4096), ~226 (D=F=1024).
    kw = dict(weight_dtype="int8", act_dtype="bf16")
    sb.expect(r.crossover_batch(4096, 4096, "v5e", **kw), sb.published("01_rooflines.q3_crossover_d4096"))
    sb.expect(r.crossover_batch(1024, 1024, "v5e", **kw), sb.published("01_rooflines.q3_crossover_d1024"))
    at = r.matmul(137, 4096, 4096, "v5e", **kw)
    assert at.bound == "compute"


def test_q4_batched_matvec_is_always_bandwidth_bound():
    # 1.Q4: int8[B,D] x int8[B,D,F] -> intensity ~ 2, whatever B.
    for B in (1, 64, 4096):
        est = r.einsum("BD,BDF->BF", {"B": B, "D": 4096, "F": 4096}, "v5e", "int8")
        assert est.intensity == pytest.approx(2, rel=0.01)
        assert est.bound == "memory"


def test_q5_h100_critical_batch_from_the_dense_peak():
    # 1.Q5: the spec sheet's 1.979e15 is 2:4 sparse; dense 9.89e14 over 3.35e12 B/s -> ~295.
    sb.expect(r.critical_batch("h100"), sb.published("01_rooflines.q5_h100_critical_batch"))


def test_two_chip_link_roofline_needs_D_above_8755():
    # ch. 1 in-text: X[B,D], Y[D,F] split on D over 2 v5e; partial sums 2BF bytes over a 4.5e10 B/s link.
    v5e = sb.get_chip("v5e")
    alpha = r.critical_intensity(v5e, bandwidth=v5e.ici_bandwidth)
    sb.expect(2 * alpha, sb.published("01_rooflines.two_chip_ici_threshold"))
    B, F = 4096, 16384
    below = r.estimate(B * 8192 * F, 2 * B * F, v5e, bandwidth=v5e.ici_bandwidth, channel="ICI")
    above = r.estimate(B * 9216 * F, 2 * B * F, v5e, bandwidth=v5e.ici_bandwidth, channel="ICI")
    assert below.bound == "comms" and above.bound == "compute"


def test_vpu_critical_intensity_on_v5p_is_about_3():
    v5p = sb.get_chip("v5p")
    vpu = 8 * 128 * 4 * v5p.clock_hz  # sublanes x lanes x ALUs x clock, ~7e12 FLOP/s per core
    sb.expect(vpu, sb.published("02_tpus.vpu_flops_per_core"))
    assert 2.4 < vpu / v5p.hbm_bandwidth < 3.6  # the book's "about 3" (ch. 1 footnote); chapter 1 checks our 2.56


def test_tiled_matmul_intensity_follows_the_tile_sizes():
    est = r.tiled_matmul(4096, 4096, 4096, 512, 512, 512, "v5e")
    assert est.flops == 2 * 4096**3
    tm = tk = tn = 8
    assert est.bytes == 2 * tm * tn * (tk * (512 * 512 * 2) + 512 * 512)
    # elements moved per FLOP pair -> intensity ~ bm*bn/(bm+bn) FLOPs per element (/2 bytes for bf16)
    assert r.tiled_intensity(512, 512) == 256
    assert est.intensity == pytest.approx(r.tiled_intensity(512, 512), rel=0.07)


def test_efficiency_scales_the_math_clock():
    full = r.matmul(4096, 8192, 8192, "h100")
    real = r.matmul(4096, 8192, 8192, "h100", assumed_mfu=0.8)
    assert real.t_math == pytest.approx(full.t_math / 0.8)


def test_einsum_flops_counts_by_the_books_rule():
    assert r.einsum_flops("BTD,DF->BTF", {"B": 2, "T": 3, "D": 4, "F": 5}) == 2 * 2 * 3 * 4 * 5
    assert r.einsum_flops("BD,BD->BD", {"B": 2, "D": 4}) == 8


def test_achievable_flops_is_the_roofline():
    assert r.achievable_flops(10, "v5e") == pytest.approx(10 * 8.2e11)
    assert r.achievable_flops(1e4, "v5e") == pytest.approx(1.97e14)


def test_estimates_add_in_sequence():
    a, b = r.matmul(128, 1024, 1024, "v5e"), r.matmul(256, 1024, 1024, "v5e")
    both = a + b
    assert both.flops == a.flops + b.flops and both.t_comms == pytest.approx(a.t_comms + b.t_comms)
    assert "<table" in both._repr_html_()


# --- properties -------------------------------------------------------------------------------------------------

sizes = st.integers(min_value=1, max_value=1 << 16)


@given(B=sizes, D=sizes, F=sizes)
def test_time_is_at_least_each_term_and_upper_at_most_twice(B, D, F):
    est = r.matmul(B, D, F, "v5e")
    assert est.time >= est.t_math and est.time >= est.t_comms
    assert est.time <= est.upper <= 2 * est.time * (1 + 1e-12)


@given(B=sizes, D=sizes, F=sizes, factor=st.floats(min_value=1.0, max_value=100.0))
def test_more_bandwidth_never_slows_a_matmul(B, D, F, factor):
    W = 8.2e11
    slow = r.matmul(B, D, F, "v5e", bandwidth=W)
    fast = r.matmul(B, D, F, "v5e", bandwidth=W * factor)
    assert fast.time <= slow.time * (1 + 1e-12)


@given(B=sizes)
def test_crossover_separates_the_regimes(B):
    crossover = r.crossover_batch(4096, 4096, "v5e")
    expected = "compute" if B >= crossover else "memory"
    assert r.matmul(B, 4096, 4096, "v5e").bound == expected
