"""Chapter 8's topology explorer, and chapter 7's continuous-batching stepper."""


from speed import assert_fast

import scalebook as sb


def test_topology_explorer_opens_on_the_chapter_answer_and_redraws_fast():
    ex = sb.widgets.topology_explorer()
    assert "19.3 ms" in ex.output.value and "0.53" in ex.output.value
    assert_fast(ex.update(dtype="bf16", topology="4x8", ici=True), 0.1, "topology explorer redraw")
    assert "ICI collectives" in ex.output.value and "not counted" not in ex.output.value
    assert_fast(ex.update(context=131072), 0.1, "topology explorer redraw at 128k context")


# --- ch. 7's engine diagrams and the continuous-batching stepper (issue 21) ---------------------------------------

from explorers import assert_answers_fast  # noqa: E402

from scalebook.widgets.serving import batching_stepper  # noqa: E402


def test_batching_stepper_answers_fast():
    assert_answers_fast(batching_stepper, {"step": 5})
