"""Design puzzles: the planner's layout scores full, an infeasible one zero, a feasible but slow one partial credit,
and every target both leaves the worked solution room and rules out the obvious layouts."""

from __future__ import annotations

import pytest

from scalebook.course.puzzles import PUZZLES, GiB, Puzzle, get_puzzle
from scalebook.training import Layout

IDS = [p.pid for p in PUZZLES]


def test_there_are_at_least_six_puzzles():
    assert len(PUZZLES) >= 6 and len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("pid", IDS)
def test_the_worked_solution_scores_full_and_meets_the_target(pid):
    puzzle = get_puzzle(pid)
    score = puzzle.score(puzzle.solution())
    assert score.points == 1.0 and score.meets_target
    assert score.step_time <= puzzle.max_step and score.memory <= puzzle.max_memory


@pytest.mark.parametrize("pid", IDS)
def test_pure_data_parallelism_is_infeasible_and_scores_zero(pid):
    puzzle = get_puzzle(pid)
    score = puzzle.score(Layout(dp=puzzle.chips))
    assert score.points == 0.0 and not score.feasible and "GiB per chip" in score.why


@pytest.mark.parametrize("pid", IDS)
def test_a_layout_of_the_wrong_size_or_a_hybrid_scores_zero(pid):
    puzzle = get_puzzle(pid)
    for layout in (Layout(fsdp=puzzle.chips // 2), Layout(dp=2, fsdp=puzzle.chips // 2), "TP 4"):
        score = puzzle.score(layout)
        assert score.points == 0.0 and "not a layout of this run" in score.why


@pytest.mark.parametrize("pid", IDS)
def test_wider_tensor_parallelism_fits_but_misses_the_target(pid):
    puzzle = get_puzzle(pid)
    tp = max(8, 2 * puzzle.solution().tp)
    score = puzzle.score(Layout(tp=tp, fsdp=puzzle.chips // tp))
    assert score.feasible and not score.meets_target and score.points == 0.3


def test_a_feasible_layout_that_meets_the_target_scores_by_closeness():
    puzzle = Puzzle("test", "llama3-8b", "v5e", 256, 2 * 2**20, 8192, max_step=4.5, max_memory=14 * GiB)
    best, other = puzzle.score(puzzle.solution()), puzzle.score(Layout(fsdp=256))
    assert best.points == 1.0 and other.meets_target
    assert other.points == pytest.approx(0.6 + 0.4 * best.step_time / other.step_time, abs=1e-3)
    assert 0.6 < other.points < 1.0


def test_the_text_states_the_target_and_an_unknown_puzzle_is_named():
    assert "25 s" in get_puzzle("P1").text and "60 GiB" in get_puzzle("P1").text
    with pytest.raises(KeyError, match="P1"):
        get_puzzle("P99")
