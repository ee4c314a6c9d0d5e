"""One meaning per name (issue #39): each name says one thing, and its old spelling warns until release 0.3."""

import re
from pathlib import Path

import pytest

import scalebook as sb
from scalebook import roofline, training, validation
from scalebook.course import key, variants

ROOT = Path(__file__).resolve().parents[2]


def test_a_rooflines_fraction_of_peak_is_assumed_mfu_and_efficiency_its_old_name_warns():
    at_80 = roofline.matmul(8192, 8192, 8192, "h100", assumed_mfu=0.8)
    assert at_80.t_math == pytest.approx(roofline.matmul(8192, 8192, 8192, "h100").t_math / 0.8, rel=1e-12)
    with pytest.warns(DeprecationWarning, match="assumed_mfu"):
        old = roofline.matmul(8192, 8192, 8192, "h100", efficiency=0.8)
    assert old == at_80
    with pytest.raises(ValueError, match="assumed_mfu"):
        roofline.estimate(1, 10, "v5e", assumed_mfu=1.5)


def test_efficiency_is_a_mode_wherever_a_calculator_takes_it():
    """'ideal' (a true bound) or 'calibrated' (sourced factors): a fraction given as efficiency is refused."""
    mesh = sb.TpuMesh("v5p", X=4, Y=4, Z=4)
    for call in (lambda e: sb.all_gather(mesh, "X", 2**30, efficiency=e),
                 lambda e: training.predict("llama3-8b", "h100", 8, 8 * 8192, 8192, tp=8, efficiency=e),
                 lambda e: validation.predict_run(validation.runs()[0], e)):
        assert call("ideal") != call("calibrated")
        with pytest.raises(ValueError, match="efficiency"):
            call(0.8)


def test_the_sharded_matmul_is_a_ShardedMatmul_and_sb_Plan_its_old_name_warns():
    mesh = sb.TpuMesh("v5e", X=4, Y=2)
    found = sb.sharded_matmul("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", mesh, I=8192, J=4096, K=8192)
    assert isinstance(found, sb.ShardedMatmul) and type(found).__name__ == "ShardedMatmul"
    with pytest.warns(DeprecationWarning, match="ShardedMatmul"):
        assert sb.Plan is sb.ShardedMatmul
    assert "Plan" not in sb.__all__ and not hasattr(sb.sharding, "Plan")


def test_validation_prices_a_published_run_with_predict_run_and_predict_its_old_name_warns():
    run = validation.runs()[0]
    with pytest.warns(DeprecationWarning, match="predict_run"):
        old = validation.predict(run, "ideal")
    assert old == validation.predict_run(run, "ideal") and "predict" not in validation.__all__


def test_the_answer_key_registers_with_solution_and_the_students_problem_is_another_name():
    assert key.solution is not variants.problem and sb.course.problem is variants.problem
    assert key.get_problem("01.3").solve.__module__ == "scalebook.course.key.rooflines"
    with pytest.warns(DeprecationWarning, match="solution"):
        register = key.problem("99.test", "a test", "s")
    assert callable(register) and "99.test" not in {p.qid for p in key.list_problems("99.")}
    sources = "".join(p.read_text() for p in (ROOT / "scalebook/course/key").glob("*.py"))
    assert "@problem(" not in sources and sources.count("@solution(") == len(key.list_problems())


def test_the_pipeline_schedules_live_in_training_and_chapter_5_spells_them_from_there():
    assert sb.plots.schedules.__all__ == ["schedule_figure"]
    chapter = (ROOT / "chapters/05_training.md").read_text()
    assert "sb.plots.schedules.interleaved_schedule" not in chapter
    assert "sb.plots.schedules.zero_bubble_schedule" not in chapter
    assert "sb.training.interleaved_schedule(4, 8, virtual=2)" in chapter


OLD_SPELLINGS = (r"sb\.Plan\b", r"sb\.validation\.predict\(", r"fsdp=(True|False)", r"efficiency=None",
                 r"sb\.plots\.schedules\.(interleaved|zero_bubble)_schedule",
                 r"roofline\.(matmul|estimate)\([^)]*efficiency=")


def test_no_chapter_solution_or_exercise_types_an_old_spelling():
    """The old names warn for readers' own notebooks; the book's own pages use the names that mean one thing."""
    pages = [p for folder in ("chapters", "solutions", "exercises") for p in (ROOT / folder).glob("*.md")]
    found = [(p.name, old) for p in pages for old in OLD_SPELLINGS if re.search(old, p.read_text())]
    assert len(pages) > 20 and not found
