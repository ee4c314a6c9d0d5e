"""Chapter 8's topology explorer, and chapter 7's serving explorer and continuous-batching stepper."""


from speed import assert_fast

import scalebook as sb


def test_topology_explorer_opens_on_the_chapter_answer_and_redraws_fast():
    ex = sb.widgets.topology_explorer()
    assert "19.3 ms" in ex.output.value and "0.53" in ex.output.value
    assert_fast(ex.update(dtype="bf16", topology="4x8", ici=True), 0.1, "topology explorer redraw")
    assert "ICI collectives" in ex.output.value and "not counted" not in ex.output.value
    assert_fast(ex.update(context=131072), 0.1, "topology explorer redraw at 128k context")


def test_topology_explorer_says_a_slice_too_small_does_not_fit_instead_of_an_error():
    ex = sb.widgets.topology_explorer()
    ex.update(topology="2x2", context=131072)  # 70 GB of int8 weights on 4 x 16 GB leave no room for a cache
    assert "does not fit" in ex.output.value and "leaves no room for a 131072-token cache" in ex.output.value
    assert "#cf222e" not in ex.output.value  # not the red error


# --- ch. 7's serving explorer and the continuous-batching stepper (issue 21) -------------------------------------

from explorers import assert_answers_fast  # noqa: E402

from scalebook.inference.serving import Report, simulator  # noqa: E402
from scalebook.widgets.serving import batching_stepper  # noqa: E402


def test_serving_explorer_opens_and_redraws_fast():
    explorer = sb.widgets.serving_explorer()
    assert isinstance(explorer.result[-1], Report) and "<svg" in explorer.output.value
    for change in ({"rate": 5.0}, {"mode": "disaggregated"}, {"slots": 64}, {"prompt": 8192.0},
                   {"output": 2048.0}, {"prefix_hit": 0.5}, {"rate": 100.0}):
        simulator.forget_step_times()  # cold, as a reader's browser meets each answer: no step time computed yet
        assert_fast(explorer.update(**change), 0.05, f"serving explorer redraw {change}")
    explorer.update(slots=1024, prompt=32768.0)
    assert "do not fit in HBM" in explorer.output.value


def test_batching_stepper_answers_fast():
    assert_answers_fast(batching_stepper, {"step": 5})
