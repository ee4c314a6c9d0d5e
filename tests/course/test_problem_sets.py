"""Every problem set: at least eight problems, the notebook and the answer key agree, `check` grades fairly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import scalebook as sb
from scalebook.compare import ExpectationError
from scalebook.course.key import get_problem, list_problems

SOLUTIONS = sorted((Path(__file__).resolve().parents[2] / "solutions").glob("*.md"))
CHECK = re.compile(r"""sb\.check\(\s*["']([^"']+)["']""")


def prefix(path: Path) -> str:
    return path.stem.split("_")[0] + "."


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_notebook_and_answer_key_name_the_same_problems_in_order(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    ids = CHECK.findall(text)
    registered = [p.qid for p in list_problems(prefix(path))]
    assert len(registered) >= 8, f"{path.name} needs at least 8 problems"
    assert len(ids) == len(set(ids)), f"a problem is checked twice in {path.name}: {ids}"
    assert sorted(ids) == sorted(registered)
    headings = re.findall(r"^## Problem (\d+) ", text, re.M)
    assert [f"{prefix(path)}{n}" for n in headings] == ids


@pytest.mark.parametrize("qid", [p.qid for p in list_problems()])
def test_check_accepts_the_reference_and_rejects_a_wrong_answer(qid: str) -> None:
    reference = get_problem(qid).reference()
    assert sb.check(qid, reference).ok
    with pytest.raises(ExpectationError, match="expected"):
        sb.check(qid, 3 * reference + 1)


def test_check_leaves_an_unanswered_problem_open(capsys: pytest.CaptureFixture[str]) -> None:
    assert sb.check("01.1", ...) is None
    assert "not answered yet" in capsys.readouterr().out
