"""Chapter 2's tools: the systolic-array simulator, the TPU figures and the TPU explorers."""

import numpy as np
import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook import systolic

# --- systolic.py -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("B, D, F", [(1, 1, 1), (3, 4, 4), (9, 7, 5), (2, 8, 3)])
def test_systolic_product_is_x_at_w(B, D, F):
    rng = np.random.default_rng(B * 100 + D * 10 + F)
    W, X = rng.normal(size=(D, F)), rng.normal(size=(B, D))
    run = systolic.simulate(W, X)
    np.testing.assert_allclose(run.product, X @ W)


@pytest.mark.parametrize("B, D, F", [(1, 1, 1), (3, 4, 4), (8, 2, 6)])
def test_frame_count_is_pipeline_fill_plus_batch(B, D, F):
    run = systolic.simulate(*systolic.example(B, D, F))
    assert run.cycles == len(run.frames) == B + D + F - 2 == systolic.cycles(B, D, F)


def test_every_output_leaves_the_bottom_row_exactly_once():
    run = systolic.simulate(*systolic.example(3, 4, 4))
    done = [d for f in run.frames for d in f.done]
    assert sorted(done) == [(b, j) for b in range(3) for j in range(4)]
    assert run.frames[0].busy == 1 and run.frames[0].done == ()  # the first activation has only entered
    assert run.frames[-1].busy == 1 and run.frames[-1].done == ((2, 3),)


def test_partial_sums_accumulate_down_a_column():
    W, X = systolic.example(3, 4, 4)
    run = systolic.simulate(W, X)
    W, X = np.asarray(W), np.asarray(X)  # the simulator's grids are pure Python; NumPy slices them here
    frame = run.frames[3]  # cycle 3: row b = 3 - i - j sits in PE (i, j)
    for i in range(4):
        for j in range(4):
            b = 3 - i - j
            if 0 <= b < 3:
                assert frame.row[i, j] == b
                assert frame.psum[i, j] == pytest.approx(X[b, : i + 1] @ W[: i + 1, j])
            else:
                assert frame.row[i, j] == -1 and np.isnan(frame.psum[i, j])


def test_utilisation_rises_with_batch_and_matches_the_simulation():
    util = [systolic.utilisation(B, 128, 128) for B in (1, 8, 128, 1024, 8192)]
    assert util == sorted(util) and util[0] < 0.005 and util[-1] > 0.95
    for B in (1, 2, 5, 8):
        assert systolic.simulate(*systolic.example(B, 4, 4)).utilisation == pytest.approx(systolic.utilisation(B, 4, 4))


def test_systolic_rejects_bad_shapes():
    with pytest.raises(ValueError, match="need X"):
        systolic.simulate(np.ones((3, 2)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="B=0"):
        systolic.cycles(0, 4, 4)


# --- figures -----------------------------------------------------------------------------------------------


def _labelled(fig):
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()
    assert fig.axes[0].get_title() or fig._suptitle is not None


def test_bandwidth_ladder_is_labelled_on_a_log_scale():
    fig = sb.plots.tpu.bandwidth_ladder()
    ax = fig.axes[0]
    _labelled(fig)
    assert ax.get_yscale() == "log" and "bytes/s" in ax.get_ylabel()


@pytest.mark.parametrize("mesh, panels", [(sb.TpuMesh("v5e", X=4, Y=4), 1), (sb.TpuMesh("v5p", X=4, Y=4, Z=4), 4),
                                          (sb.TpuMesh("v5e", X=16, Y=16), 1)])
def test_torus_draws_every_plane_labelled(mesh, panels):
    fig = sb.plots.tpu.torus(mesh)
    assert len(fig.axes) == panels
    _labelled(fig)
    assert f"diameter {mesh.diameter}" in fig._suptitle.get_text()
    hops = sorted(int(t.get_text()) for t in fig.axes[0].texts)
    assert hops[0] == 0 and hops[-1] == mesh.diameter - (mesh.ring_hops("Z") if "Z" in mesh.axes else 0)


def test_systolic_figure_and_its_range():
    fig = sb.plots.tpu.systolic(3)
    _labelled(fig)
    assert "cycle 4 of 9" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="step"):
        sb.plots.tpu.systolic(9)


def test_stage_breakdown_marks_max_and_sum():
    fig = sb.plots.tpu.stage_breakdown({"a": 0.1, "b": sb.roofline.estimate(0, 8.2e9, "v5e")})
    _labelled(fig)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("100 ms" in s for s in labels) and any("110 ms" in s for s in labels)


# --- explorers ---------------------------------------------------------------------------------------------


def test_transfer_explorer_opens_on_q5():
    ex = sb.widgets.transfer_explorer()
    est, picture = ex.result
    assert est.time == pytest.approx(6e-6 + 2 * 8 * 128 * 8192 / 9e10)
    assert "<svg" in picture._repr_html_()


def test_torus_explorer_opens_on_a_v5e_4x4():
    table, picture = sb.widgets.torus_explorer().result
    assert table.column("hops to farthest") == [3, 3, 6] and "2 hosts" in table.title
    assert "<svg" in picture.svg


def test_torus_explorer_shows_shape_errors():
    ex = sb.widgets.torus_explorer()
    ex.update(Z=2)
    assert isinstance(ex.result, sb.widgets.Unfit) and "does not fit:" in ex.output.value and "2-D" in ex.output.value


def test_offload_explorer_opens_on_q6():
    table = sb.widgets.offload_explorer().result
    times = dict(zip(table.column("stage"), table.column("time")))
    A = 2.0**34  # int8[128·1024, 128·1024]
    assert times["PCIe: each of 16 chips loads 1/16 from its host"] == pytest.approx(A / 16 / 1.6e10)
    assert times["ICI: 15 shards into chip 0 over 2 links"] == pytest.approx(A * 15 / 16 / (2 * 4.5e10))
    assert times["total if the stages overlap (slowest)"] == pytest.approx(A * 15 / 16 / (2 * 4.5e10))


def test_systolic_explorer_clamps_the_step():
    ex = sb.widgets.systolic_explorer()
    ex.update(step=24, B=1, D=2, F=2)
    picture, table = ex.result
    assert "cycle 3 of 3" in picture.svg


@pytest.mark.parametrize("make, change", [
    (sb.widgets.torus_explorer, {"X": 16, "Y": 16}),
    (sb.widgets.torus_explorer, {"chip": "v5p", "X": 16, "Y": 20, "Z": 28}),
    (sb.widgets.transfer_explorer, {"X": 16, "to_x": 9, "nbytes": 1e9}),
    (sb.widgets.systolic_explorer, {"step": 7, "B": 8, "D": 8, "F": 8}),
    (sb.widgets.offload_explorer, {"X": 16, "Y": 16, "B": 512}),
])
def test_tpu_explorers_answer_fast(make, change):
    assert_answers_fast(make, change)
