"""Widgets answer well under 0.1 s and open on the worked answer (a design puzzle's too); plots are labelled figures."""

import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook.course.puzzles import get_puzzle
from scalebook.widgets import Log, explore


def test_roofline_explorer_opens_on_the_v5e_knee():
    explorer = sb.widgets.roofline_explorer()
    assert explorer.values() == {"chip": "v5e", "dtype": "bf16", "B": 240, "D": 8192, "F": 8192}
    chart, est = explorer.result
    assert est.flops == 2 * 240 * 8192 * 8192
    assert "<svg" in chart.to_svg()


@pytest.mark.parametrize("change", [{"B": 1}, {"B": 60000}, {"chip": "h100"}, {"dtype": "int8"}, {"F": 200000}])
def test_explorer_answers_in_well_under_a_tenth_of_a_second(change):
    assert_answers_fast(sb.widgets.roofline_explorer, change, limit=0.02)


def test_explorer_snapshot_travels_with_the_widget():
    bundle = sb.widgets.roofline_explorer()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "<svg" in bundle["text/html"] and "B = 240" in bundle["text/html"]


def test_explore_builds_controls_from_specs():
    ex = explore(sb.roofline.matmul, B=(1, 1024, 1, 240), D=Log(128, 65536, 8192), F=8192,
                 chip=["v5e", "h100"], dtype="bf16")
    assert set(ex.controls) == {"B", "D", "chip"}
    assert ex.fixed == {"F": 8192, "dtype": "bf16"}
    assert ex.result.flops == 2 * 240 * 8192 * 8192
    ex.update(chip="h100")
    assert ex.result.t_math == pytest.approx(2 * 240 * 8192 * 8192 / sb.get_chip("h100").bf16_flops)


def test_explorer_shows_errors_instead_of_crashing():
    ex = explore(sb.roofline.matmul, B=(0, 10, 1, 5), D=1024, F=1024, chip="v5e")
    ex.update(B=0)
    assert isinstance(ex.result, ValueError) and "B=0 must be a positive" in ex.output.value


@pytest.mark.parametrize("spec, message", [((1, 2, 3, 4, 5), "a slider is"), ((5, 1), "outside"),
                                           (Log(0, 10, 1), "Log needs"), ([], "at least one option")])
def test_bad_control_specs_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        explore(lambda x: x, x=spec)


def test_update_unknown_control():
    with pytest.raises(KeyError, match="no control"):
        sb.widgets.roofline_explorer().update(batch=3)


def test_roofline_plot_is_labelled():
    fig = sb.plots.roofline.roofline(["v5e", "h100"], points={"matmul": sb.roofline.matmul(128, 8192, 8192, "v5e")})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOPs per byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel() and ax.get_title()


def test_batch_roofline_reaches_peak():
    fig = sb.plots.roofline.batch_roofline("v5e", [(4096, 4096)], weight_dtype="int8", act_dtype="bf16")
    line = fig.axes[0].lines[0]
    assert max(line.get_ydata()) == pytest.approx(1.97e14)


def test_plot_rejects_bad_ranges():
    with pytest.raises(ValueError, match="intensity"):
        sb.plots.roofline.roofline("v5e", intensity=(10, 1))
    with pytest.raises(ValueError, match="batches"):
        sb.plots.roofline.batch_roofline("v5e", [(1024, 1024)], batches=[])


def test_a_design_puzzles_explorer_opens_on_the_solution_and_scores_a_move():
    puzzle = get_puzzle("P1")
    explorer = puzzle.explorer()
    values = explorer.values()
    best = puzzle.solution()
    assert (values["tp"], values["pp"], values["cp"]) == (best.tp, best.pp, best.cp)
    assert explorer.fn(**values).points == 1.0
    assert explorer.fn(tp=8, pp=1, cp=1, data="fsdp").points == 0.3
    assert explorer.fn(tp=3, pp=1, cp=1, data="fsdp").points == 0.0
