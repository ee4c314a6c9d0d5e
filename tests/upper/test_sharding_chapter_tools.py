"""Chapter 3's tools: the sharding grid, ring collectives step by step, collective cost figures, the explorers
(open on the worked answers and redraw in well under 0.05 s) and the shard_map collective benchmark."""

import pytest

import scalebook as sb

sb.setup(quiet=True)  # before JAX starts: the benchmark needs 8 emulated devices

from explorers import assert_answers_fast  # noqa: E402

from scalebook.rings import busiest_link_share, device_blocks, ring_schedule  # noqa: E402

# --- which device holds which block ---------------------------------------------------------------------------


def test_two_axis_sharding_gives_every_device_its_own_block():
    owners = device_blocks("A[I_X, J_Y]", {"X": 2, "Y": 2})
    assert owners == {(0, 0): [(0, 0)], (0, 1): [(0, 1)], (1, 0): [(1, 0)], (1, 1): [(1, 1)]}


def test_flattened_axes_put_x_major():
    owners = device_blocks("A[I_XY, J]", {"X": 2, "Y": 4})
    assert owners[(5, 0)] == [(1, 1)]  # block 5 = x·4 + y with x = 1, y = 1


def test_an_unmentioned_axis_replicates_the_blocks():
    owners = device_blocks("A[I_X, J]", {"X": 4, "Y": 2})
    assert len(owners) == 4 and all(len(devs) == 2 for devs in owners.values())


def test_device_blocks_rejects_unknown_axes():
    with pytest.raises(ValueError, match="mesh axes"):
        device_blocks("A[I_Z, J]", {"X": 2, "Y": 2})


# --- ring collectives -----------------------------------------------------------------------------------------


def test_allgather_on_a_bidirectional_ring_takes_n_over_2_steps_and_ends_complete():
    states = ring_schedule(8, "all_gather")
    assert len(states) - 1 == 4
    assert all(len(pieces) == 8 for pieces in states[-1].held)


def test_reduce_scatter_leaves_each_device_its_fully_reduced_chunk():
    final = ring_schedule(8, "reduce_scatter")[-1]
    assert [[(p.chunk, p.fill) for p in pieces] for pieces in final.held] == [[(i, 1.0)] for i in range(8)]


def test_all_to_all_delivers_every_piece():
    final = ring_schedule(6, "all_to_all", bidirectional=False)[-1]
    assert all(p.chunk == i for i, pieces in enumerate(final.held) for p in pieces)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_busiest_link_shares_match_the_books_ring_counts(n):
    # ch. 3: V/W_bidi for a bidirectional AllGather (half of V on each one-way link); (n-1)/n·V one-way;
    # AllToAll is half an AllGather one-way (3.Q10) and tends to a quarter on a bidirectional ring.
    assert busiest_link_share(n) == pytest.approx(0.5)
    assert busiest_link_share(n, bidirectional=False) == pytest.approx((n - 1) / n)
    assert busiest_link_share(n, "reduce_scatter") == pytest.approx(0.5)
    one_way = busiest_link_share(n, "all_to_all", bidirectional=False) / busiest_link_share(n, bidirectional=False)
    assert one_way == pytest.approx(0.5)
    assert busiest_link_share(n, "all_to_all") / busiest_link_share(n) == pytest.approx((n + 2) / (4 * n))


def test_no_wraparound_costs_about_twice_the_ring():
    assert busiest_link_share(8, wrap=False) == pytest.approx(7 / 8)


@pytest.mark.parametrize("kwargs, message", [({"n": 1}, "from 2 to 16"), ({"kind": "psum"}, "kind"),
                                             ({"bidirectional": False, "wrap": False}, "wraparound")])
def test_ring_schedule_rejects_bad_rings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ring_schedule(**{"n": 8, **kwargs})


# --- figures -----------------------------------------------------------------------------------------------------


def test_sharding_grid_is_titled_with_local_shape_and_bytes():
    mesh = sb.TpuMesh("v5e", X=8, Y=2)
    fig = sb.plots.sharding.sharding_grid("A[I_XY, J]", mesh, {"I": 1024, "J": 4096}, dtype="fp32")
    assert "fp32[64, 4096]" in fig._suptitle.get_text() and "1.05 MB" in fig._suptitle.get_text()
    left, right = fig.axes
    assert "elements" in left.get_xlabel() and "mesh axis" in right.get_ylabel() and left.get_title()


def test_sharding_grid_accepts_plain_axis_sizes():
    fig = sb.plots.sharding.sharding_grid("A[I_X, J]", {"X": 4, "Y": 2}, {"I": 64, "J": 64})
    assert "2 copies" in fig._suptitle.get_text()


def test_ring_steps_draws_one_panel_per_step():
    fig = sb.plots.sharding.ring_steps(8, "all_gather", nbytes=8e6)
    assert sum(ax.get_visible() and ax.axison for ax in fig.axes) == 5
    assert "1 MB" in fig._suptitle.get_text() and fig.axes[0].get_xlabel() == "device"


def test_collective_vs_size_shows_floor_bandwidth_and_measurements():
    mesh = sb.TpuMesh("v5e", X=8, Y=4)
    fig = sb.plots.sharding.collective_vs_size(mesh, "Y", measured=[(1e5, 5e-6), (1e7, 3e-4)])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "bytes" in ax.get_xlabel() and "(s)" in ax.get_ylabel()
    labels = [line.get_label() for line in ax.get_lines()]
    assert any("latency floor: 3 µs" in label for label in labels) and "measured" in labels
    assert "all_gather_Y" in ax.get_title()


def test_collective_vs_size_rejects_bad_input():
    with pytest.raises(ValueError, match="kind"):
        sb.plots.sharding.collective_vs_size(sb.TpuMesh("v5e", X=4), "X", kind="psum")
    with pytest.raises(ValueError, match="sizes"):
        sb.plots.sharding.collective_vs_size(sb.TpuMesh("v5e", X=4), "X", sizes=[0, 1])


# --- explorers -----------------------------------------------------------------------------------------------------


def test_collective_explorer_opens_on_pop_quiz_2():
    ex = sb.widgets.collective_explorer()
    chart, est = ex.result
    sb.expect(est.time, sb.published("03_sharding.pq2_all_gather_y"))  # ch. 3 Pop Quiz 2, no wraparound
    assert "<svg" in chart.to_svg()


def test_matmul_explorer_opens_on_q6():
    ex = sb.widgets.matmul_explorer()
    assert ex.result.expr == "A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K]" and ex.result.kinds == ["all_reduce"]


def test_ring_explorer_table_has_a_column_per_device():
    ex = sb.widgets.ring_explorer(n=6, step=2)
    assert ex.output.value.count("dev ") == 6 and "after step 2 of 3" in ex.output.value


def test_sharding_grid_explorer_reports_local_bytes():
    ex = sb.widgets.sharding_grid_explorer()
    assert "bf16[512, 2048] = 2.1 MB per device" in ex.output.value
    ex.update(spec="A[I_XY, J]", X=8, dtype="fp32")
    assert "fp32[64, 4096] = 1.05 MB per device" in ex.output.value  # ch. 3 Pop Quiz 1: 1 MiB


def test_memory_explorer_opens_on_the_second_pop_quiz():
    ex = sb.widgets.memory_explorer()
    values = {row["quantity"]: row["value"] for row in ex.result}
    assert values["local shape"] == "int8[8, 2048]" and values["bytes per device"] == "16.4 kB"
    assert values["copies of the array"] == "2"


def test_spec_options_use_each_axis_once():
    from scalebook.widgets.sharding import spec_options

    options = spec_options("A", ("I", "J"), ("X", "Y", "Z"))
    assert len(options) == 27 and options[0] == "A[I, J]" and "A[I_XZ, J_Y]" in options


@pytest.mark.parametrize("make, change", [
    (sb.widgets.collective_explorer, {"kind": "all_to_all"}),
    (sb.widgets.collective_explorer, {"nbytes": 1e4}),
    (sb.widgets.collective_explorer, {"chip": "v5p"}),
    (sb.widgets.matmul_explorer, {"A": "A[I, J_X]"}),
    (sb.widgets.matmul_explorer, {"I": 128.0}),
    (sb.widgets.ring_explorer, {"n": 16}),
    (sb.widgets.ring_explorer, {"kind": "all_to_all"}),
    (sb.widgets.ring_explorer, {"step": 15}),
    (sb.widgets.sharding_grid_explorer, {"spec": "A[I_XY, J]"}),
    (sb.widgets.sharding_grid_explorer, {"X": 8}),
    (sb.widgets.memory_explorer, {"Z": 1}),
])
def test_explorers_redraw_fast(make, change):
    assert_answers_fast(make, change)


def test_explorers_answer_a_combination_with_no_answer_in_one_line_not_an_error():
    ex = sb.widgets.ring_explorer()
    ex.update(direction="one-way", links="no wraparound")
    assert isinstance(ex.result, sb.widgets.Unfit) and "does not fit:" in ex.output.value
    assert "wraparound" in ex.output.value and "cb222e" not in ex.output.value  # the reason, and no red error


# --- the collective benchmark --------------------------------------------------------------------------------------


def test_collective_sweep_times_every_kind_and_size():
    import jax

    if jax.device_count() < 4:
        pytest.skip("needs 4 devices: run with JAX_NUM_CPU_DEVICES=8")
    table = sb.bench.collective_sweep(sizes=(256, 1024), axis_size=4, repeats=2, progress=False)
    assert len(table) == 8
    assert [(r["kind"], r["bytes per device"]) for r in table][:2] == [("all_gather", 256), ("all_gather", 1024)]
    assert all(r["measured"] > 0 for r in table)
    row = next(r for r in table if r["kind"] == "all_gather" and r["bytes per device"] == 1024)
    assert row["V"] == 4 * 1024 and row["model"] == "all_gather"
    assert next(r for r in table if r["kind"] == "psum")["model"] == "all_reduce"


def test_collective_sweep_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="allowed"):
        sb.bench.collective_sweep(kinds=("all_reduce",), progress=False)
