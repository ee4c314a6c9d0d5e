"""A student's answers: `check` beside the key in self-study, and the plain record a graded notebook hands out.

`check(qid, answer)` grades a reader's answer against the reference solution registered in the answer key
(`course.key`), for this student's own values of the inputs (`course.variants`). Under the autograder (grading
mode, `GRADE_ANSWERS` set) it only hands the answer, as plain JSON data, to the grader, which compares it with the
key in its own process (`course.grader.autograde`): the key is absent inside the sandbox.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..compare import Comparison, ExpectationError, is_number, percent
from .mistakes import likely_mistake
from .variants import draw, enrolled, key_in_session

__all__ = ["check", "agrees", "right_for_other_values", "plain_answer", "GRADE_ANSWERS", "MAX_RECORD", "MAX_DEPTH"]


GRADE_ANSWERS = "SCALEBOOK_GRADE_ANSWERS"
MAX_RECORD = 64 * 1024  # bytes of one answer record; a larger answer is recorded as oversized
MAX_DEPTH = 16  # nesting of lists in one answer


def plain_answer(value: Any, depth: int = 0) -> Any:
    """Return `value` as plain JSON data (numbers, strings, booleans, None, lists of them), or raise
    `TypeError`: arrays and NumPy scalars become lists and numbers; nothing executable survives."""
    if depth > MAX_DEPTH:
        raise TypeError(f"an answer nests deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [plain_answer(v, depth + 1) for v in value]
    if hasattr(value, "tolist"):  # NumPy and JAX arrays and scalars
        return plain_answer(value.tolist(), depth + 1)
    if is_number(value):
        return float(value)
    raise TypeError(f"an answer must be a number, a string or a list of them, got {type(value).__name__}")


def _hand_out(qid: Any, answer: Any) -> None:
    """Append one record {qid, answer} (or {qid, unanswered} / {qid, invalid}) to the grader's channel."""
    record: dict[str, Any] = {"qid": str(qid)[:32]}
    if answer is ... or answer is None:
        record["unanswered"] = True
    else:
        try:
            record["answer"] = plain_answer(answer)
            json.dumps(record)  # ints too long to print raise here
        except (TypeError, ValueError, OverflowError, RecursionError) as err:
            record.pop("answer", None)
            record["invalid"] = str(err)[:200]
    line = json.dumps(record)
    if len(line) > MAX_RECORD:
        line = json.dumps({"qid": record["qid"], "invalid": "the answer is larger than the grader accepts"})
    with open(os.environ[GRADE_ANSWERS], "a", encoding="utf-8") as channel:
        channel.write(line + "\n")
    print(f"{record['qid']}: answer recorded for the grader.")


def agrees(answer: Any, reference: Any, rtol: float) -> bool:
    """Whether `answer` is within `rtol` of `reference` by `sb.check`'s comparison; False for an answer of the
    wrong kind (a string for a number, a list of another length ...)."""
    try:
        return Comparison(answer, reference, rtol).ok
    except (TypeError, ValueError, OverflowError):
        return False


def right_for_other_values(qid: str, whose: str) -> str:
    """The message for an answer that is right for `whose` values ("the book's", "another key's") but not for
    the student's own: it names the slip and where their own values are, never an expected value."""
    return (f"right for {whose} values, not for yours: your inputs differ from those, so compute with your own "
            f"(print(sb.problem({qid!r})) lists them).")


def check(qid: str, answer: Any) -> Comparison | None:
    """Grade `answer` to problem `qid` against its registered reference solution.

    Returns a ✓ `Comparison` when right; raises `ExpectationError` when wrong: in self-study with the
    reference value, in a course (a student named, `sb.setup(student=...)`) with the likely mistake and a
    pointer to `sb.hint`, never the value, or, when the answer is right for the book's values but the student
    has their own, with that (`right_for_other_values`). The reference is for this student's own values of the
    inputs (`scalebook.course.variants`). Prints a reminder and returns None when the answer is still the `...`
    placeholder. In grading mode (`GRADE_ANSWERS` set) it records the answer for the grader and returns None.
    """
    if os.environ.get(GRADE_ANSWERS):
        _hand_out(qid, answer)
        return None
    from .key import get_problem

    problem = get_problem(qid)
    if answer is ... or answer is None:
        print(f"{qid}: not answered yet — replace the `...` with your answer ({problem.unit}).")
        return None
    unit = problem.unit if problem.unit in ("s", "B", "B/s", "FLOP/s") else ""
    reference = problem.reference(draw(problem.params, key_in_session(), problem.qid))
    try:
        result = Comparison(answer, reference, problem.rtol, f"answer in {problem.unit}", qid, unit,
                            reference_name="expected")
        ok = result.ok
    except (TypeError, ValueError) as err:  # an answer of the wrong kind (a string, an array ...)
        raise ExpectationError(f"✗ {qid}: the answer must be a number in {problem.unit}, got {answer!r}") from err
    if not ok and key_in_session() is not None and agrees(answer, problem.reference(), problem.rtol):
        raise ExpectationError(f"✗ {qid}: " + right_for_other_values(qid, "the book's"))
    if not ok and enrolled() is not None:
        whose = "your values" if key_in_session() else "the book's values (you have no key)"
        mistake = likely_mistake(answer, reference, problem.rtol)
        raise ExpectationError(f"✗ {qid}: not within {percent(problem.rtol)} of the answer for {whose} "
                               f"({problem.unit}). {mistake + ' ' if mistake else ''}"
                               f"`sb.hint({qid!r})` gives a hint.")
    if not ok:
        raise ExpectationError(str(result))
    return result
