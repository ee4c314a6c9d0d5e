"""Hints that teach: two progressive hints per problem.

Each problem registers two hints (`scalebook.course.key.problem(..., hints=(first, second))`): the first
names the regime or the quantity that matters, the second is the formula as a template whose `{V}`
fields are filled with the student's own values of the inputs (`scalebook.course.variants`). `hint(qid)`
(`sb.hint`) reveals the next one; under the grader it only records that a hint was taken, so the
gradebook can charge the course's cost per hint.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .answers import GRADE_ANSWERS
from .variants import draw, key_in_session, values_for

__all__ = ["hint", "hint_text", "MAX_HINTS"]

MAX_HINTS = 2
_TAKEN: dict[str, int] = {}  # hints revealed in this session, per question

def _fill(template: str, values: Mapping[str, Any]) -> str:
    """A hint template with the student's values in its `{V}` fields (numbers to 4 significant figures)."""
    shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in values.items()}
    return template.format(**shown)


def hint_text(qid: str, level: int, values: Mapping[str, Any] | None = None) -> str:
    """Hint `level` (1 or 2) of problem `qid`, filled with the student's input `values` (default the book's)."""
    from .key import get_problem

    p = get_problem(qid)
    if level not in range(1, len(p.hints) + 1):
        raise ValueError(f"level={level!r}: problem {qid} has hints 1 to {len(p.hints)}")
    return _fill(p.hints[level - 1], {**draw(p.params, None, p.qid), **(values or {})})


def _record(qid: str, level: int) -> None:
    """Under the grader: tell it that hint `level` of `qid` was taken (the hint's text is not in the sandbox)."""
    with open(os.environ[GRADE_ANSWERS], "a", encoding="utf-8") as channel:
        channel.write(json.dumps({"qid": str(qid)[:32], "hint": level}) + "\n")
    print(f"{str(qid)[:32]}: hint {level} recorded for the grader.")


def hint(qid: str) -> None:
    """Print the next hint of problem `qid` (the first, then the second, then the second again); under the
    grader, record that it was taken instead (a course may charge for each hint)."""
    level = min(_TAKEN.get(str(qid), 0) + 1, MAX_HINTS)
    _TAKEN[str(qid)] = level
    if os.environ.get(GRADE_ANSWERS):
        _record(qid, level)
        return
    print(f"{qid}, hint {level} of {MAX_HINTS}: {hint_text(qid, level, values_for(qid, key_in_session()))}")
