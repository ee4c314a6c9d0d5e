"""Hints that teach: two progressive hints per problem, every number in them checked against the answer key.

Each problem registers two hints (`scalebook.course.key.solution(..., hints=(first, second))`). The first names
the regime or the quantity that matters, in words. The second teaches the method: which formula, which regime,
which term dominates. Neither prints the answer: the student still computes it from their own values.

A hint template holds three things:

- prose, which states no number: no numeral written with digits (digits inside a name such as v5e, bf16, H100,
  4x4x4 or llama3-70b are part of the name);
- `{V}` fields, filled with this student's value of input V (`scalebook.course.variants`);
- formulas, each written `⟦name = expression⟧` and shown to the student as `name = expression`: a Python
  expression over the problem's inputs, the names the hint's other formulas define, `sb` (this package) and
  ceil, floor, sqrt, min, max, sum, range, next and round, so the student can type it into a cell. The one formula
  that no other formula of the hint uses claims the answer; each other one defines a name on the way to it.

So every number a hint states is either the student's own input or sits in a formula, and
tests/course/test_hints.py evaluates every formula for generated students against the key's reference answer,
at the tolerance `check` grades with. `hint(qid)` (`sb.hint`) reveals the next hint; under the grader it only
records that a hint was taken, so the gradebook can charge the course's cost per hint.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from .answers import GRADE_ANSWERS
from .variants import draw, key_in_session, values_for

__all__ = ["hint", "hint_text", "formulas", "FORMULA", "MAX_HINTS"]

MAX_HINTS = 2
FORMULA = re.compile(r"⟦([^⟦⟧]*)⟧")  # a formula in a hint template: ⟦name = expression⟧
_TAKEN: dict[str, int] = {}  # hints revealed in this session, per question


def formulas(template: str) -> list[tuple[str, str]]:
    """The formulas `⟦name = expression⟧` of a hint template, in order, as (name, expression)."""
    found = []
    for body in FORMULA.findall(template):
        name, equals, expression = (part.strip() for part in body.partition("="))
        if not (equals and name.isidentifier() and expression) or "{" in body or "}" in body:
            raise ValueError(f"formula ⟦{body}⟧ must read ⟦name = expression⟧, without braces")
        found.append((name, expression))
    return found


def _as_read(found: re.Match[str]) -> str:
    """A formula as the student reads it: `name = expression`, without the brackets."""
    name, _, expression = found.group(1).partition("=")
    return f"{name.strip()} = {expression.strip()}"


def _fill(template: str, values: Mapping[str, Any]) -> str:
    """A hint as the student reads it: `{V}` fields filled with the student's values (numbers to 4 significant
    figures) and each formula shown as `name = expression`."""
    formulas(template)
    shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in values.items()}
    return FORMULA.sub(_as_read, template.format(**shown))


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
