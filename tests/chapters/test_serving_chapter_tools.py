"""Chapter 8's topology explorer, and chapter 7's engine diagrams and continuous-batching stepper."""

import pytest

import scalebook as sb


def test_topology_explorer_opens_on_the_chapter_answer_and_redraws_fast():
    ex = sb.widgets.topology_explorer()
    assert "19.3 ms" in ex.output.value and "0.53" in ex.output.value
    assert ex.update(dtype="bf16", topology="4x8", ici=True) < 0.1
    assert "ICI collectives" in ex.output.value and "not counted" not in ex.output.value
    assert ex.update(context=131072) < 0.1


# --- ch. 7's engine diagrams and the continuous-batching stepper (issue 21) ---------------------------------------

from explorers import assert_answers_fast  # noqa: E402

from scalebook.plots.serving import batching_snapshots, engine_segments  # noqa: E402
from scalebook.widgets.serving import batching_stepper  # noqa: E402


def test_continuous_batching_refills_a_freed_slot_before_the_next_step():
    snaps = batching_snapshots(2, [1, 3, 2], steps=4)
    # request 0 makes its single token in step 0; before step 1 its slot already holds request 2
    assert snaps[1][1][0] == (2, 0) and snaps[1][3] == [0]
    assert snaps[3][3] == [0, 2, 1]  # all three finished after three steps


def test_interleaved_prefills_stall_running_decodes_and_disaggregation_does_not():
    prompts, outputs = [100, 100], [10, 10]
    inter = engine_segments("interleaved", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    first = next(b for b in inter if b[3] == "decode" and b[4] == 0)
    assert first[2] - first[1] == pytest.approx(10 * 0.1 + 1.0)  # stretched by request 1's prefill
    dis = engine_segments("disaggregated", prompts, outputs, 2, t_prefill=1.0, t_step=0.1)
    assert all(b[2] - b[1] == pytest.approx(1.0) for b in dis if b[3] == "decode")


def test_batching_stepper_answers_fast():
    assert_answers_fast(batching_stepper, {"step": 5})
