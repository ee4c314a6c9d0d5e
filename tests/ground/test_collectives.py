"""Collective costs on a torus, checked against chapter 3's worked answers, plus the model's invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

import scalebook as sb
from scalebook import TpuMesh

CUBE = TpuMesh("v4p", X=4, Y=4, Z=4)
B, D = 1024, 4096


def test_q2_gathers_and_reduce_on_a_full_cube():
    # 3.Q2: AllGather_X([B_X, D_Y]) = 2BD/(W·Y) ~ 23 µs; AllGather_XY = 2BD/(2W) ~ 46 µs;
    # AllReduce_Z([B_X, D_Y]{U_Z}) = 4BD/(X·Y·W) ~ 11.6 µs (W = 9e10 bidirectional).
    assert sb.all_gather(CUBE, "X", 2 * B * D, also_sharded="Y").time == pytest.approx(23.3e-6, rel=0.01)
    assert sb.all_gather(CUBE, "XY", 2 * B * D).time == pytest.approx(46.6e-6, rel=0.01)
    assert sb.all_reduce(CUBE, "Z", 2 * B * D, also_sharded="XY").time == pytest.approx(11.65e-6, rel=0.01)


def test_q3_tiny_gather_is_latency_bound():
    # 3.Q3: AllGather_X of bf16[128] on 4x4x4 -> 2 hops (chapter 3 asserts the book's ~2 µs).
    est = sb.all_gather(CUBE, "X", 2 * 128)
    assert est.bound == "latency" and est.t_latency > 100 * est.t_comms


def test_pq2_gather_without_wraparound():
    # 3.PQ2: v5e {X:8, Y:4}, AllGather_Y of bf16[2048, 8192]: 3 x 8.4e6 / 4.5e10 (chapter 3 asserts the book's
    # ~560 µs, naive 377 µs, and the small gather's ~3 µs).
    mesh = TpuMesh("v5e", X=8, Y=4)
    V = 2 * 2048 * 8192
    assert sb.all_gather(mesh, "Y", V).time == pytest.approx(3 * (V / 4) / mesh.chip.ici_bandwidth, rel=0.01)
    assert V / mesh.chip.ici_bidirectional == pytest.approx(373e-6, rel=0.01)  # book rounds V to 34 MB: 377 µs
    small = sb.all_gather(mesh, "Y", 2 * 256 * 256)
    assert small.bound == "latency"


def test_q10_all_to_all_without_wraparound_takes_twice_the_rings_time():
    # Chapter 3 asserts the quarter of an AllGather on a wrapped axis (Q10); here, the axis without wraparound.
    ring = TpuMesh("v5e", X=16, Y=16)
    # Without wraparound the middle link alone carries V/4 each way: V / (4 W_uni), twice the ring's time.
    line = TpuMesh("v5e", X=8, Y=8)
    assert sb.all_to_all(line, "X", 1e9).time == pytest.approx(1e9 / (4 * 4.5e10))
    assert sb.all_to_all(line, "X", 1e9).time == pytest.approx(2 * sb.all_to_all(ring, "X", 1e9).time)


def test_all_to_all_on_a_torus_is_limited_by_the_longest_axis():
    mesh = TpuMesh("v5p", X=4, Y=4, Z=8)
    # V · max(X, Y, Z) / (4 · N · W_bidi)
    assert sb.all_to_all(mesh, None, 1e9).time == pytest.approx(1e9 * 8 / (4 * 128 * 1.8e11))


def test_breakdown_shows_every_term():
    est = sb.all_gather(TpuMesh("v5e", X=16, Y=4), "X", 1e8)
    terms = dict(est.terms)
    assert "bidirectional" in terms["axes"] and "(N−1)/N" in terms and "hops" in terms["latency term"]


def test_a_group_of_one_is_free():
    assert sb.all_gather(TpuMesh("v5e", X=1, Y=4), "X", 1e9).time == 0


def test_collectives_reject_bad_input():
    with pytest.raises(ValueError, match="mesh must be a TpuMesh"):
        sb.all_gather("v5e", "X", 1e9)
    with pytest.raises(ValueError, match="nbytes"):
        sb.all_gather(CUBE, "X", -1)
    with pytest.raises(ValueError, match="also_sharded"):
        sb.all_gather(CUBE, "X", 1e9, also_sharded="X")
    with pytest.raises(ValueError, match="kind="):
        sb.collectives.collective("broadcast", CUBE, "X", 1e9)


sizes = st.floats(min_value=1e7, max_value=1e11)
meshes = st.sampled_from([TpuMesh("v5e", X=16, Y=16), TpuMesh("v5e", X=4, Y=8), TpuMesh("v5p", X=4, Y=4, Z=4),
                          TpuMesh("v5p", X=2, Y=2, Z=4)])


@given(V=sizes, mesh=meshes)
def test_all_reduce_costs_twice_all_gather_in_the_bandwidth_regime(V, mesh):
    assert sb.all_reduce(mesh, "X", V).time == pytest.approx(2 * sb.all_gather(mesh, "X", V).time)
    assert sb.reduce_scatter(mesh, "X", V).time == pytest.approx(sb.all_gather(mesh, "X", V).time)


@given(V=st.floats(min_value=1.0, max_value=1e11), size=st.sampled_from([4, 8, 16]))
def test_losing_wraparound_never_helps(V, size):
    wrapped = TpuMesh("v5e", X=size, Y=1, wrap=True)
    open_line = TpuMesh("v5e", X=size, Y=1, wrap=False)
    for kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        assert getattr(sb, kind)(open_line, "X", V).time >= getattr(sb, kind)(wrapped, "X", V).time


@given(V=sizes)
def test_more_axes_never_slower_in_the_bandwidth_regime(V):
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    one, two, three = (sb.all_gather(mesh, axes, V).time for axes in ("X", "XY", "XYZ"))
    assert three <= two <= one


@given(V=sizes, factor=st.floats(min_value=1.0, max_value=10.0))
def test_more_link_bandwidth_never_slows_a_collective(V, factor):
    chip = sb.get_chip("v5e")
    slow = TpuMesh(chip, X=16, Y=16)
    fast = TpuMesh(chip.replace(ici_bandwidth=chip.ici_bandwidth * factor), X=16, Y=16)
    assert sb.all_gather(fast, "X", V).time <= sb.all_gather(slow, "X", V).time
