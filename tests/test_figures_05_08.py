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

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
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
        if "sb.widgets." not in section:
            missing.append(section.splitlines()[0])
    assert not missing, f"{chapter}: worked problems without an explorer: {missing}"
