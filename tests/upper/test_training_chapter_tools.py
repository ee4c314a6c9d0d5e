"""Chapter 5's tools: the training roofline's curves and crossovers, memory and pipeline figures, the explorers
(open on the worked answers, redraw in well under 0.05 s) and one MLP training step compiled on 8 devices."""

import math

import pytest

import scalebook as sb

sb.setup(quiet=True)  # must run before JAX starts: XLA reads the CPU device count once

import jax  # noqa: E402
from explorers import assert_answers_fast  # noqa: E402

from scalebook.training.curves import best_split, strategy_cost, strategy_curves  # noqa: E402
from scalebook.training.footprint import parts_per_chip as per_chip  # noqa: E402
from scalebook.widgets.training import pipeline_html  # noqa: E402

ALPHA_V5P = 4.59e14 / (2 * 9e10)  # C / W_bidi = 2550 (book ch. 5)

needs_8 = pytest.mark.skipif(jax.device_count() < 8, reason="run with JAX_NUM_CPU_DEVICES=8: the lab needs 8 devices")

# --- the training roofline ------------------------------------------------------------------------------------


def test_flat_strategies_cross_where_the_step_compute_meets_their_weight_traffic():
    curves = strategy_curves("v5p", N=4096, D=8192, F=32768, M_X=2, M_Y=1)
    # FSDP: 12·B·D·F / (N·C) = 12·D·F / (3·W)  ->  B = N·α/3, the book's 850 tokens per chip.
    assert curves.crossovers["fsdp"] == pytest.approx(4096 * ALPHA_V5P / 3, rel=1e-6)
    # DP moves 8·D·F against the whole step's 12·B·D·F: two thirds of the backward-only threshold.
    assert curves.crossovers["dp"] == pytest.approx(4096 * ALPHA_V5P / 3 * 2 / 3, rel=1e-6)
    assert curves.crossovers["tp"] is None  # 4096-way TP is communication-bound at any batch


def test_fsdp_tp_crosses_at_or_above_the_ideal_optimum():
    curves = strategy_curves("v5p", N=4096, D=8192, F=32768, M_X=2, M_Y=1)
    ideal = 4096 * ALPHA_V5P**2 / (2 * 32768)  # ≈ 4.06e5 (ch. 5, Ex8)
    assert ideal <= curves.crossovers["fsdp_tp"] < 1.7 * ideal  # power-of-two splits: the book's plot shows ≈6e5


def test_best_split_divides_the_chips_next_to_x_opt():
    est, X, Y = best_split(48_000, 8192, 32768, "v5p", 64, M_X=2, M_Y=1)
    assert X * Y == 64 and X in (8, 16)  # X_opt ≈ 13.7
    assert est.t_comms == min(sb.training.layer_cost("fsdp_tp", 48_000, 8192, 32768, "v5p", X=x, Y=64 // x, M_X=2)
                              .t_comms for x in (8, 16))


def test_pure_strategies_use_every_axis():
    est, X, Y = strategy_cost("fsdp", 1e6, 8192, 32768, "v5p", 1024, M_X=2, M_Y=1)
    assert (X, Y) == (1024, 1)
    assert est.t_comms == pytest.approx(12 * 8192 * 32768 / (3 * 2 * 9e10))


def test_curves_reject_a_bad_chip_count():
    with pytest.raises(ValueError, match="N="):
        strategy_curves(N=0)


# --- figures --------------------------------------------------------------------------------------------------


def test_strategy_times_is_a_labelled_log_log_figure():
    ax = sb.plots.training.strategy_times().axes[0]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "tokens" in ax.get_xlabel() and "(s)" in ax.get_ylabel() and ax.get_title()


def test_memory_bars_split_state_or_replicate_it():
    mem = sb.training.memory("llama3-70b", 2**21, 4096)
    sharded, replicated = per_chip(mem), per_chip(mem, replicated=True)
    assert replicated["optimizer"] == pytest.approx(8 * mem.params / 2)  # 8 bytes of Adam per 2 of bf16
    assert sharded["optimizer"] == pytest.approx(replicated["optimizer"] / 4096)
    assert sharded["activations"] == replicated["activations"]
    ax = sb.plots.training.memory_bars({"DP": mem, "FSDP": mem}, hbm="v5p", replicated=["DP"]).axes[0]
    assert "GB" in ax.get_xlabel() and ax.get_title()
    with pytest.raises(ValueError, match="at least one"):
        sb.plots.training.memory_bars({})


def test_pipeline_figure_draws_one_patch_per_slot():
    grid = sb.training.pipeline_schedule(4, 8, "1f1b")
    ax = sb.plots.training.pipeline(grid).axes[0]
    assert len(ax.patches) == 4 * len(grid[0])
    assert "27%" in ax.get_title()  # (P-1)/(M+P-1) = 3/11
    with pytest.raises(ValueError, match="stage"):
        sb.plots.training.pipeline([])


# --- explorers ------------------------------------------------------------------------------------------------


def test_training_roofline_explorer_opens_on_the_books_v5p_example():
    ex = sb.widgets.training_roofline_explorer()
    assert ex.values() == {"chip": "v5p", "N": 4096, "D": 8192, "F": 32768, "M_X": 2, "M_Y": 1, "B": 4e5}
    chart, table = ex.result
    assert "<svg" in chart.to_svg()
    assert [r["bound"] for r in table] == ["comms"] * 4  # every strategy comms-bound below ≈4e5 (Ex8)


def test_memory_explorer_opens_on_problem_2():
    ex = sb.widgets.training_memory_explorer()
    _, table = ex.result
    total = next(r for r in table if r["part"] == "total")
    assert total["whole model"] == pytest.approx(130.2e9 + 41.94e12, rel=1e-3)  # ch. 5, Q2
    ex.update(layout="DP (state replicated)")
    assert "NOT fit" in ex.result[1].title


def test_pipeline_explorer_shades_every_idle_slot():
    grid = sb.training.pipeline_schedule(4, 8, "gpipe")
    assert pipeline_html(grid).count("background:#ddd") == sum(row.count("") for row in grid)
    _, table = sb.widgets.pipeline_explorer().result
    assert table[0]["bubble"] == pytest.approx(3 / 11)


@pytest.mark.parametrize("make, change", [
    (sb.widgets.training_roofline_explorer, {"B": 3e6}),
    (sb.widgets.training_roofline_explorer, {"N": 8960}),
    (sb.widgets.training_memory_explorer, {"remat": "block"}),
    (sb.widgets.pipeline_explorer, {"stages": 16, "microbatches": 32}),
])
def test_explorers_redraw_in_well_under_a_tenth_of_a_second(make, change):
    assert_answers_fast(make, change)


# --- the live lab: one training step ---------------------------------------------------------------------------


@needs_8
@pytest.mark.parametrize("strategy, expected", [
    ("dp", ["all_reduce"]),  # gradients (and the loss) in one AllReduce
    ("fsdp", ["all_gather", "all_reduce"]),  # weight gathers; on CPU the ReduceScatter is all-reduce + slice
    ("tp", ["all_reduce"]),  # the [B, D] output's partial sums
    ("fsdp_tp", ["all_gather", "all_reduce"]),
])
def test_each_strategy_emits_the_collectives_the_chapter_predicts(strategy, expected):
    colls, memory = sb.lab.ch05_mlp.mlp_train_step(strategy)
    assert sb.xla.kinds(colls) == expected
    assert min(memory.values()) > 0


@needs_8
def test_fsdp_gathers_each_weight_once_over_all_devices():
    colls, _ = sb.lab.ch05_mlp.mlp_train_step("fsdp", B=256, D=128, F=512)
    gathers = [c for c in colls if c.kind == "all_gather"]
    assert len(gathers) == 2 and all(c.group_size == 8 and c.nbytes == 128 * 512 * 4 for c in gathers)


@needs_8
def test_fsdp_tp_puts_weights_on_x_and_activations_on_y():
    colls, _ = sb.lab.ch05_mlp.mlp_train_step("fsdp_tp", {"X": 4, "Y": 2})
    assert {c.group_size for c in colls if c.kind == "all_gather"} == {4}
    assert 2 in {c.group_size for c in colls if c.kind == "all_reduce"}


@needs_8
@pytest.mark.parametrize("strategy", ["dp", "fsdp", "tp", "fsdp_tp"])
def test_argument_bytes_are_the_sharding_arithmetic(strategy):
    _, memory = sb.lab.ch05_mlp.mlp_train_step(strategy, dtype="fp32")
    predicted = sb.lab.ch05_mlp.mlp_argument_bytes(strategy)
    assert memory["arguments"] == predicted["weights"] + predicted["batch"]
    assert memory["outputs"] == pytest.approx(predicted["weights"], rel=1e-3)


def test_argument_bytes_divide_by_the_sharding_axes():
    assert sb.lab.ch05_mlp.mlp_argument_bytes("dp") == {"weights": 2 * 128 * 512 * 4, "batch": 256 * 128 * 4 / 8}
    weights = sb.lab.ch05_mlp.mlp_argument_bytes("fsdp_tp", {"X": 2, "Y": 4}, dtype="bf16")["weights"]
    assert weights == 2 * 128 * 512 * 2 / 8


@pytest.mark.parametrize("kwargs, match", [
    ({"strategy": "pp"}, "strategy"),
    ({"strategy": "fsdp_tp", "axes": {"X": 8}}, "axes"),
    ({"strategy": "dp", "B": 100}, "B="),
    ({"strategy": "dp", "dtype": "int4"}, "dtype"),
])
def test_mlp_train_step_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sb.lab.ch05_mlp.mlp_train_step(**kwargs)


def test_memory_bars_total_matches_math():
    mem = sb.training.memory("llama2-13b", 3e6, 4096, saves_per_layer=(5120 + 2 * 13824) / 5120)
    assert sum(per_chip(mem).values()) == pytest.approx(mem.per_chip)
    assert math.isclose(mem.activations, 2 * 40 * 3e6 * (5120 + 2 * 13824), rel_tol=1e-9)


# --- ch. 5's diagrams and explorers (issue 21) -------------------------------------------------------------------

from scalebook.training import interleaved_schedule, zero_bubble_schedule  # noqa: E402
from scalebook.widgets.training import (  # noqa: E402
    dp_capacity_explorer,
    layout_step_explorer,
    threshold_explorer,
    threshold_table,
)


def test_interleaved_grid_idles_exactly_the_formula_and_zero_bubble_idles_less_than_1f1b():
    grid = interleaved_schedule(4, 8, virtual=2)
    assert sb.training.idle_fraction(grid) == pytest.approx(sb.training.pipeline_bubble(4, 8, "interleaved", 2))
    zb = zero_bubble_schedule(4, 8)
    assert sum(c.startswith("W") for row in zb for c in row) == 4 * 8  # every weight gradient is placed once
    # same work as 1F1B plus the split-off W's, yet a smaller idle share: the W's fill the drain
    assert sb.training.idle_fraction(zb) < sb.training.idle_fraction(sb.training.pipeline_schedule(4, 8, "1f1b"))


def test_threshold_table_opens_on_the_books_ex9_numbers():
    rows = threshold_table("v5p", B=2e6, F=30_000, N=8960, M_X=2, M_Y=1).rows
    assert "850" in rows[0]["bound"] and rows[0]["chips B keeps busy"] == "2,353"  # 2e6 / 850 (ch. 5, Ex9)
    assert "108" in rows[1]["bound"]  # 2550² / (2 · 30,000)


@pytest.mark.parametrize("make, change", [(threshold_explorer, {"F": 49152.0}), (dp_capacity_explorer, {"chip": "v6e"}),
                                          (layout_step_explorer, {"X": 512})])
def test_chapter_5_explorers_answer_fast(make, change):
    assert_answers_fast(make, change)
