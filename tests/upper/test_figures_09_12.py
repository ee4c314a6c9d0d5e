"""Chapters 9-12 against the book: at least as many figures per chapter as the original, an explorer for every quiz
and worked problem, and the new figures and explorers themselves (drawn without JAX, answering fast)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from explorers import assert_answers_fast
from traces import HLO, sample_trace

import scalebook as sb
from scalebook import profiling

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
# Figures in "How To Scale Your Model" per chapter (shared/book-figures.md: 09 11, 10 2, 11 0, 12 23).
BOOK_FIGURES = {"09_profiling": 11, "10_jax": 2, "11_conclusions": 0, "12_gpus": 23}
# A code-cell call that draws a figure: any sb.plots function.
FIGURE_CALL = re.compile(r"\bsb\.plots\.[\w.]+\(")
# Where a quiz question or worked problem starts, with its id ('9.Ex1', '10.Q2', '12.Q4.1', '12.PQ3').
QUESTION = re.compile(r"^(?:### (\d+\.Ex\d+)|## (Q\d+)\.|\*\*(?:Question )?(\d+\.P?Q[\d.]*\d)\b)"
                      r"|\*\*(12\.Q\d\.\d)\.\*\*", re.M)


def _code(text: str) -> str:
    return "\n".join(re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S))


@pytest.mark.parametrize("chapter", sorted(BOOK_FIGURES))
def test_each_chapter_draws_at_least_the_books_figures(chapter):
    calls = FIGURE_CALL.findall(_code((CHAPTERS / f"{chapter}.md").read_text()))
    assert len(calls) >= BOOK_FIGURES[chapter], (chapter, len(calls))


def test_chapters_9_to_12_draw_34_figures_or_more():
    total = sum(len(FIGURE_CALL.findall(_code((CHAPTERS / f"{c}.md").read_text()))) for c in BOOK_FIGURES)
    assert total >= 34


def _questions(text: str) -> list[tuple[str, int]]:
    found = []
    for m in QUESTION.finditer(text):
        qid = next(g for g in m.groups() if g)
        found.append((qid, m.start()))
    return found


def _quiz(qid: str) -> str:
    """'12.Q4.1' -> '12.Q4': questions of one quiz may share the explorer that follows the last of them."""
    return re.sub(r"^(\d+\.Q\d+)\.\d+$", r"\1", qid)


@pytest.mark.parametrize("chapter", ["09_profiling", "10_jax", "12_gpus"])
def test_every_quiz_and_worked_problem_has_its_explorer(chapter):
    text = (CHAPTERS / f"{chapter}.md").read_text()
    questions = _questions(text)
    assert len(questions) >= {"09_profiling": 5, "10_jax": 4, "12_gpus": 20}[chapter]
    covered: dict[str, bool] = {}
    for i in reversed(range(len(questions))):
        qid, start = questions[i]
        end = questions[i + 1][1] if i + 1 < len(questions) else len(text)
        section_end = text.find("\n## ", start + 1)
        span = text[start:min(end, section_end if section_end > 0 else len(text))]
        own = "_explorer(" in span
        shared = i + 1 < len(questions) and _quiz(questions[i + 1][0]) == _quiz(qid) and covered[questions[i + 1][0]]
        covered[qid] = own or shared
    assert [q for q, ok in covered.items() if not ok] == []


def test_gpu_figures_draw_from_package_objects():
    pytest.importorskip("matplotlib")
    node = sb.GpuCluster("h100", gpus=8)
    g = sb.plots.gpu_diagrams
    figures = [g.gpu_chip("h100"), g.sm_diagram("b200"), g.warp_divergence(),
               g.nvlink_nodes(), g.sharp_diagram(node), g.sharp_bandwidth(node, 2e-4),
               g.nvl72(sb.hardware.gpu.get_cluster("gb200-nvl72")), g.nvswitch("4.0"),
               g.gpu_pipeline(2, 2, t_reduce=2.5), g.gpu_pipeline(4, 4, t_send=0.3),
               g.expert_parallel(node, ep=8, experts=64)]
    for fig in figures:
        assert fig.axes[0].get_title() or fig.texts, fig
    with pytest.raises(ValueError, match="generations"):
        sb.plots.gpu_diagrams.nvlink_nodes(("9.9",))
    with pytest.raises(ValueError, match="experts"):
        sb.plots.gpu_diagrams.expert_parallel(node, ep=3, experts=64)


def test_pipeline_timeline_counts_its_bubble():
    pytest.importorskip("matplotlib")
    # GPipe, 2 stages x 2 microbatches, backward = 2 forward: 12 units of work over 2 x 9 slots of time.
    assert "busy 67%" in sb.plots.gpu_diagrams.gpu_pipeline(2, 2).axes[0].get_title()


def test_op_table_has_kinds_scopes_and_a_breakdown():
    trace = sample_trace()
    assert {(r["op"], r["kind"], r["scope"]) for r in trace.table} == {
        ("fusion.1", "matmul", "l0/ffw"), ("all-reduce.1", "collective", "l0/ffw (bwd)")}
    assert trace.row("fusion.1")["flops"] == 2 * 8 * 16 * 4
    assert trace.breakdown("kind") == pytest.approx({"matmul": 1e-5, "collective": 1e-5})
    assert "dot(" in profiling.fusion_text(HLO, "fusion.1")
    assert [r["global"] for r in profiling.parameters(HLO)] == [(8, 32), (32, 4)]


def test_profile_figures_and_explorers():
    pytest.importorskip("matplotlib")
    pytest.importorskip("ipywidgets")
    trace = sample_trace()
    for fig in (sb.plots.profile.timeline(trace), sb.plots.profile.timeline(trace, scope="l0/ffw"),
                sb.plots.trace.op_rooflines(trace), sb.plots.trace.time_breakdown(trace),
                sb.plots.trace.fusion_graph(HLO, "fusion.1"), sb.plots.trace.compile_stages(),
                sb.plots.trace.tiling((3, 5), "T(2,2)"), sb.plots.trace.memory_budget({"arguments": 1e6})):
        assert fig.axes[0].get_title()
    with pytest.raises(ValueError, match="no op"):
        sb.plots.profile.timeline(trace, scope="nowhere")
    ex = sb.widgets.op_explorer(trace)
    assert ex.values()["op"] == "fusion.1"  # opens on the most expensive matmul
    assert_answers_fast(lambda: sb.widgets.op_explorer(trace), {"op": "all-reduce.1"})


def test_worked_problem_explorers_answer_fast():
    pytest.importorskip("ipywidgets")
    from scalebook import widgets

    for make, change in ((widgets.profile_example_explorer, {"B": 64.0}),
                         (widgets.collective_check_explorer, {"hops": 2}),
                         (widgets.memory_check_explorer, {"params_gb": 4.0}),
                         (widgets.shard_program_explorer, {"program": "global mean"}),
                         (widgets.routing_explorer, {"k": 4}),
                         (widgets.collective_matmul_explorer, {"bidirectional": True})):
        assert_answers_fast(make, change)


def test_explorers_open_on_the_worked_answers():
    pytest.importorskip("ipywidgets")
    from scalebook.widgets import jax_programs
    from scalebook.widgets import profiling as profile_widgets

    assert "95.6 ms" in str(profile_widgets.profile_example_view())  # 9.Ex1: the book's predicted time
    assert "8.5 GB" in str(profile_widgets.memory_check_view())  # 9.Ex3: what is left free
    assert "none" in str(jax_programs.shard_program_view("per-shard mean"))  # 10.Q1: no communication
    assert "88%" in str(jax_programs.routing_view())  # 10.Q2: top-2 on 8 devices, 7 of 8 buffer rows padding
