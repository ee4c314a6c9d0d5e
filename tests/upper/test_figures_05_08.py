"""Chapters 05–08 draw at least as many figures as the book has in each (book-figures.md: 9, 1, 19, 2).

Cheap and honest without executing notebooks: a figure counts only when a code cell's last line calls a
`sb.plots` function whose return annotation is a matplotlib `Figure` (so the cell displays it), and the function is
resolved for real, so a renamed or deleted function fails here instead of being counted."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import scalebook as sb

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
BOOK_FIGURES = {"05_training": 9, "06_training_llama": 1, "07_inference": 19, "08_serving_llama": 2}
CELL = re.compile(r"```\{code-cell\} ipython3\n(.*?)```", re.S)


def _figure_calls(text: str) -> list[str]:
    """The `sb.plots...` functions whose figure a cell shows (the cell's last expression)."""
    shown = []
    for body in CELL.findall(text):
        lines = [line for line in body.splitlines() if not line.startswith(":")]
        code = "\n".join(re.sub(r"^(\s*)%.*", r"\1pass", line) for line in lines)  # IPython magics
        tree = ast.parse(code)
        if not tree.body or not isinstance(tree.body[-1], ast.Expr) or not isinstance(tree.body[-1].value, ast.Call):
            continue
        name = ast.unparse(tree.body[-1].value.func)
        if name.startswith("sb.plots."):
            shown.append(name)
    return shown


def _returns_figure(dotted: str) -> bool:
    obj = sb
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return "Figure" in str(inspect.signature(obj).return_annotation)


@pytest.mark.parametrize("chapter", sorted(BOOK_FIGURES))
def test_chapter_draws_at_least_the_books_figures(chapter: str) -> None:
    calls = _figure_calls((CHAPTERS / f"{chapter}.md").read_text(encoding="utf-8"))
    not_figures = [c for c in calls if not _returns_figure(c)]
    assert not not_figures, f"{chapter}: these calls do not return a Figure: {not_figures}"
    assert len(calls) >= BOOK_FIGURES[chapter], f"{chapter}: {len(calls)} figures, the book has {BOOK_FIGURES[chapter]}"


def test_the_count_ignores_figures_that_are_not_shown() -> None:
    text = ("```{code-cell} ipython3\nfig = sb.plots.inference.pareto()\nprint(1)\n```\n"
            "```{code-cell} ipython3\nsb.plots.inference.pareto()\n```")
    assert _figure_calls(text) == ["sb.plots.inference.pareto"]


DRAWINGS = [
    ("parallelism.layer_chain", {}), ("parallelism.layout", {"strategy": "fsdp_tp"}),
    ("parallelism.comms_ratio", {}), ("schedules.schedule_figure",
                                      {"grid": [["F0", "", "B0"], ["", "F0", "B0"]], "title": "tiny"}),
    ("kv_cache.decoding", {"cached": True}), ("kv_cache.heads", {}), ("kv_cache.layer_sharing", {}),
    ("kv_cache.paged_cache", {}), ("serving.engine", {"mode": "disaggregated"}), ("serving.continuous_batching", {}),
    ("serving.prefix_tree", {"prompts": [["s", "a"], ["s", "b"]]}), ("serving.speculative", {}),
    ("serving.speculative_panels", {}), ("kv_cache.cache_sharding", {}), ("serving.weight_stationary_curves", {}),
    ("serving.latency_bound_gather", {}),
]


@pytest.mark.parametrize("name, kwargs", DRAWINGS, ids=[d[0] for d in DRAWINGS])
def test_each_new_drawing_has_a_title(name: str, kwargs: dict) -> None:
    module, func = name.split(".")
    fig = getattr(getattr(sb.plots, module), func)(**kwargs)
    titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
    assert any(titles), f"{name} draws no title"


def test_a_layout_names_a_strategy_it_knows() -> None:
    with pytest.raises(ValueError, match="strategy"):
        sb.plots.parallelism.layout("zero")


WORKED = re.compile(r"^### (Example \d\.Ex\d+|Q\d+\.|Worked question|Pop quiz|Appendix C's example)", re.M)


@pytest.mark.parametrize("chapter", sorted(BOOK_FIGURES))
def test_every_worked_problem_has_an_explorer_in_its_section(chapter: str) -> None:
    text = (CHAPTERS / f"{chapter}.md").read_text(encoding="utf-8")
    starts = [m.start() for m in WORKED.finditer(text)]
    assert starts, f"{chapter}: no worked problems found (has the heading style changed?)"
    missing = []
    for start in starts:
        end = min((m.start() for m in re.finditer(r"^#{2,3} ", text[start + 4:], re.M)), default=len(text))
        section = text[start:start + 4 + end]
        if "sb.widgets." not in section and "sb.lab." not in section:  # a lab's own cells are re-run with other inputs
            missing.append(section.splitlines()[0])
    assert not missing, f"{chapter}: worked problems without an explorer: {missing}"


# Megatron-LM's interleaved 1F1B (Narayanan et al., 2021; Megatron-Core, forward_backward_pipelining_with_interleaving):
# rank r runs 2·(P - r - 1) + (v - 1)·P warm-up forwards, then one forward and one backward in turn. For P = 4,
# v = 2, M = 8: 10, 8, 6, 4 warm-up forwards, so 11, 9, 7, 5 forwards before each rank's first backward.
def test_interleaved_schedule_follows_megatrons_warm_up_and_chunk_order() -> None:
    grid = sb.training.interleaved_schedule(4, 8, virtual=2)
    ops = [[c for c in row if c] for row in grid]
    assert [next(i for i, c in enumerate(row) if c.startswith("B")) for row in ops] == [11, 9, 7, 5]
    # the forward order cycles chunk 0 over one group of P microbatches, then chunk 1, then the next group
    assert [c for c in ops[0] if c.startswith("F")][:12] == [
        "F0.0", "F1.0", "F2.0", "F3.0", "F0.1", "F1.1", "F2.1", "F3.1", "F4.0", "F5.0", "F6.0", "F7.0"]
    assert ops[3][4:8] == ["F0.1", "B0.1", "F1.1", "B1.1"]  # the last rank turns 1F1B right after its warm-up
    assert ops[0][-4:] == ["B4.0", "B5.0", "B6.0", "B7.0"]  # backwards leave through chunk 0 of rank 0 last


def test_interleaved_schedule_keeps_every_dependency_and_idles_the_formula() -> None:
    P, M, v = 4, 8, 2
    grid = sb.training.interleaved_schedule(P, M, virtual=v)
    slot = {}
    for rank, row in enumerate(grid):
        for t, label in enumerate(row):
            if label:
                kind, m, chunk = label[0], *map(int, label[1:].split("."))
                slot[(kind, m, chunk * P + rank)] = t
    assert len(slot) == 2 * M * P * v  # every forward and backward of every virtual stage, once
    for (kind, m, s), t in slot.items():
        before = ("F", m, s - 1) if kind == "F" else ("B", m, s + 1) if s < P * v - 1 else ("F", m, s)
        assert s == 0 and kind == "F" or slot[before] < t
    assert sb.training.idle_fraction(grid) == pytest.approx((P - 1) / (v * M + P - 1))  # 3/19


def test_interleaved_schedule_refuses_a_partial_group_of_microbatches() -> None:
    with pytest.raises(ValueError, match="microbatches=6 must be a multiple of stages=4"):
        sb.training.interleaved_schedule(4, 6, virtual=2)
