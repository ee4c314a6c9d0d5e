"""How a kernel's arithmetic and memory times combine (issue #38, item 5): `estimate.combine`, the exponent read off
DeepGEMM's published GEMM sweep (`gemm.overlap_exponent`), and `Efficiency.overlap`, which the inference steps
use and no chip's calibrated set adopts (chapter 13 shows why)."""

import dataclasses
import math
import statistics

import pytest

import scalebook as sb
from scalebook import gemm
from scalebook.estimate import StepEstimate, combine


@pytest.mark.parametrize("overlap,expected", [(None, 4.0), (1.0, 7.0), (2.0, 5.0)])
def test_combine_is_the_max_the_sum_or_a_norm_between(overlap, expected):
    """3 s of arithmetic and 4 s of memory traffic: 4 s overlapped perfectly (the roofline), 7 s one after the
    other, 5 s as their 2-norm."""
    assert combine(3.0, 4.0, overlap) == pytest.approx(expected)


def test_combine_moves_from_the_sum_to_the_max_as_the_exponent_grows():
    times = [combine(3.0, 4.0, p) for p in (1.0, 1.35, 2.0, 8.0)]
    assert times == sorted(times, reverse=True) and 4.0 < times[-1] < times[0] == 7.0
    assert combine(0.0, 4.0, 1.35) == 4.0


@pytest.mark.parametrize("bad", [0.5, 0, -1, math.inf, math.nan, "2"])
def test_an_exponent_below_one_or_not_finite_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"overlap=.*exponent p >= 1"):
        combine(3.0, 4.0, bad)


def test_the_exponent_read_off_deepgemm_s_dense_sweep_is_1_35():
    """DeepGEMM's 18 dense FP8 GEMMs on H800 (M = 64, 128, 4,096): priced at H800's calibrated rates, the max of
    the two times is a median 20 % off their measured times, the sum 11 %, and p = 1.35 6 %, the least of the
    grid."""
    p = gemm.overlap_exponent()
    median = {q: statistics.median(abs(e) for _, e in gemm.gemm_sweep_errors(q)) for q in (None, 1.0, p)}
    assert p == 1.35 and len(gemm.gemm_sweep_errors(p)) == 18
    assert median[None] == pytest.approx(0.201, abs=0.005) and median[1.0] == pytest.approx(0.114, abs=0.005)
    assert median[p] < 0.07 and median[p] == min(
        statistics.median(abs(e) for _, e in gemm.gemm_sweep_errors(q)) for q in gemm.OVERLAP_GRID)


def test_no_chip_adopts_it_and_a_decode_step_built_with_it_lies_between_max_and_sum():
    """Every chip's calibrated set keeps the max (None); given the exponent, one decode step of Llama 3 70B on 8
    H100 at batch 16 combines its arithmetic and weight reads by it, and nothing else moves."""
    chips = [sb.get_chip(name) for name in sb.hardware.chips.chip_names()]
    assert all(chip.efficiency("calibrated").overlap is None for chip in chips if chip.calibration is not None)
    eff = sb.get_chip("h100").efficiency("calibrated")
    steps = {q: sb.inference.decode_step("llama3-70b", "h100", 8, 16, 4096, efficiency=dataclasses.replace(
        eff, overlap=q)) for q in (None, 1.35, 1.0)}
    assert steps[None].time < steps[1.35].time < steps[1.0].time
    s = steps[1.35]
    assert s.time == pytest.approx(s.t_kv + s.t_elementwise + s.t_fixed + combine(s.t_math, s.t_params, 1.35)
                                   + s.t_ici)


def test_steps_combined_differently_do_not_add():
    one = StepEstimate(flops=1e12, bytes=1e9, t_math=1e-3, t_comms=1e-3, t_params=2e-3)
    with pytest.raises(ValueError, match="overlap"):
        one + dataclasses.replace(one, overlap=1.35)
    assert (one + one).time == pytest.approx(2 * one.time)
