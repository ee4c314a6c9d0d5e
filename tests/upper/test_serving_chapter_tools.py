"""Chapter 8's topology explorer, and chapter 7's serving explorer and continuous-batching stepper."""


from speed import assert_fast

import scalebook as sb


def test_topology_explorer_opens_on_the_chapter_answer_and_redraws_fast():
    ex = sb.widgets.topology_explorer()
    assert "19.3 ms" in ex.output.value and "0.53" in ex.output.value
    assert_fast(ex.update(dtype="bf16", topology="4x8", ici=True), 0.1, "topology explorer redraw")
    assert "ICI collectives" in ex.output.value and "not counted" not in ex.output.value
    assert_fast(ex.update(context=131072), 0.1, "topology explorer redraw at 128k context")


# --- ch. 7's serving explorer and the continuous-batching stepper (issue 21) -------------------------------------

from explorers import assert_answers_fast  # noqa: E402

from scalebook.inference.serving import Report  # noqa: E402
from scalebook.widgets.serving import batching_stepper  # noqa: E402


def test_serving_explorer_opens_and_redraws_fast():
    explorer = sb.widgets.serving_explorer()
    assert isinstance(explorer.result[-1], Report) and "<svg" in explorer.output.value
    for change in ({"rate": 5.0}, {"mode": "disaggregated"}, {"slots": 64}, {"prompt": 8192.0},
                   {"output": 2048.0}, {"prefix_hit": 0.5}, {"rate": 100.0}):
        explorer.update(**change)
        assert_fast(explorer.update(**change), 0.05, f"serving explorer redraw {change}")
    explorer.update(slots=1024, prompt=32768.0)
    assert "do not fit in HBM" in explorer.output.value


def test_batching_stepper_answers_fast():
    assert_answers_fast(batching_stepper, {"step": 5})
