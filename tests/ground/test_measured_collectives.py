"""The book's Appendix B curves, read off its plots (data/collective_curves.toml), against the collective model.

The readings check themselves: each plot's second series is a formula of its first and was read independently, and
each plot's "claimed bandwidth" line is the link figure the package uses. Then the model is set against them: what
it gets right (the v5e AllGather's plateau is the book's bound; the 8 x H100 plateau is the calibrated model's)
and what it does not (a 4-chip axis's AllReduce beats the model's bound, which leaves out the ring's (X-1)/X)."""

import dataclasses
import math

import pytest

import scalebook as sb
from scalebook import measured_collectives as measured

CURVES = list(measured.curves())
PIXELS = 4  # how far apart two readings of one point may be: overlapping markers pull each other's centre


def misread(c: measured.Curve) -> list[float]:
    """The sizes where the plot's second series disagrees with its first x the plot's formula by more than
    `PIXELS` pixels of the y axis."""
    first = dict(zip(c.sizes, c.bandwidth))
    limit = PIXELS * c.resolution
    return [v for v, d in zip(c.derived_sizes, c.derived) if abs(first[v] * c.derived_factor - d) > limit]


@pytest.mark.parametrize("key", CURVES)
def test_each_plots_second_series_is_its_formula_of_the_first(key):
    c = measured.curve(key)
    assert set(c.derived_sizes) <= set(c.sizes) and len(c.derived) >= 6
    assert misread(c) == []


def test_a_misread_point_is_caught():
    """The fixture: one second-series point moved by ten pixels."""
    c = measured.curve("v5e_all_gather")
    moved = dataclasses.replace(c, derived=(c.derived[0] + 10 * c.resolution, *c.derived[1:]))
    assert misread(moved) == [c.derived_sizes[0]]


@pytest.mark.parametrize("key, figure", [("v5p_all_reduce", lambda: sb.get_chip("v5p").ici_bandwidth),
                                         ("v5e_all_gather", lambda: sb.get_chip("v5e").ici_bandwidth),
                                         ("h100_all_gather", lambda: sb.get_chip("h100").nvlink_bandwidth)])
def test_each_plots_claimed_line_is_the_link_figure_we_use(key, figure):
    assert measured.curve(key).claimed == pytest.approx(figure(), rel=0.001)


@pytest.mark.parametrize("key", CURVES)
def test_the_sizes_are_the_powers_of_two_swept_and_the_times_follow(key):
    c = measured.curve(key)
    assert all(math.log2(v).is_integer() for v in c.sizes) and list(c.sizes) == sorted(c.sizes)
    assert c.times == pytest.approx([v / bw for v, bw in zip(c.sizes, c.bandwidth)])
    assert all(bw < 1.5 * c.claimed * (2 if c.system.chip.kind == "tpu" else 8 / 7) for bw in c.bandwidth)


def test_the_v5e_allgather_reaches_the_books_bound_and_95_percent_of_the_ring():
    c = measured.curve("v5e_all_gather")
    V, plateau = c.sizes[-1], c.bandwidth[-1]
    assert plateau == pytest.approx(measured.model_bandwidth(c, V), rel=0.01)
    assert plateau / measured.ring_bound(c, V) == pytest.approx(c.system.chip.efficiency("calibrated").link, abs=0.02)


def test_a_four_chip_allreduce_beats_the_models_bound_which_drops_the_rings_factor():
    c = measured.curve("v5p_all_reduce")
    V, plateau = c.sizes[-1], c.bandwidth[-1]
    assert plateau > 1.15 * measured.model_bandwidth(c, V)
    assert 0.85 < plateau / measured.ring_bound(c, V) < 0.95
    assert c.bandwidth[0] < 0.5 * measured.model_bandwidth(c, c.sizes[0], "calibrated")


def test_the_v5e_allgathers_small_messages_beat_the_calibrated_hop_latency():
    c = measured.curve("v5e_all_gather")
    assert c.bandwidth[0] > 1.2 * measured.model_bandwidth(c, c.sizes[0], "calibrated")


def test_the_h100_allgather_plateau_is_the_calibrated_models_and_small_messages_pay_more():
    c = measured.curve("h100_all_gather")
    V, plateau = c.sizes[-1], c.bandwidth[-1]
    assert plateau == pytest.approx(measured.model_bandwidth(c, V, "calibrated"), rel=0.03)
    assert all(bw < measured.model_bandwidth(c, v, "calibrated") for v, bw in zip(c.sizes, c.bandwidth))


def test_the_comparison_table_has_a_row_a_point():
    c = measured.curve("v5p_all_reduce")
    table = measured.comparison(c)
    assert len(table.rows) == len(c.sizes)
    assert table.rows[-1]["published / calibrated"] == pytest.approx(c.bandwidth[-1] / measured.model_bandwidth(
        c, c.sizes[-1], "calibrated"))


def test_an_unknown_curve_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="v5e_all_gather"):
        measured.curve("v5e_allgather")
