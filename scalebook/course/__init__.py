"""The classroom: everything a course adds to the book, apart from the book's own calculators.

    roster.py      the class list, imported from the platform's export: who each student is, who sent each upload
    session.py     `setup`: a student's session, enrolled with their key, then the lab started (`sb.setup`)
    inputs.py      a problem's inputs as the key declares them: `vary` marks one, with its range or choices
    variants.py    per-student inputs: each student's values drawn from their key, `student_key` issues a key,
                   `problem(qid)` shows a student their own values
    key/           the answer key: every problem's reference solution (`@solution`), hidden from the grader's sandbox
    answers.py     `check`: a student's answer beside the key, or handed to the grader as plain data
    hints.py       two hints per problem, each use recorded for the grader
    mistakes.py    the likely slip behind a wrong answer (a power of ten, a factor of two ...)
    handouts.py    the student version of a problem set, made from its solution source
    puzzles.py     design puzzles: open problems whose answer is a training layout
    grader/        grading a class: submissions, the sandbox and its caps, the run, the gradebook
    gradescope.py  Gradescope's autograder zip and the run inside it
    exports.py     a gradebook as Canvas and Moodle import it, and as Gradescope's results

The teacher's commands (`scalebook grade`, `scalebook course ...`) are `cli/teacher.py`. Students call
`sb.setup`, `sb.problem`, `sb.hint` and `sb.check` from the top face; this face is the teacher's.
Each name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import (
        answers,
        exports,
        grader,
        gradescope,
        handouts,
        hints,
        key,
        mistakes,
        puzzles,
        roster,
        session,
        variants,
    )
    from .answers import check
    from .grader.autograde import grade
    from .handouts import strip_solutions
    from .hints import hint
    from .session import setup
    from .variants import problem, student_key

_MODULES = ("roster", "session", "variants", "key", "answers", "hints", "mistakes", "handouts", "puzzles", "grader",
            "gradescope", "exports")
_TABLE = {
    "check": "answers", "problem": "variants", "setup": "session", "student_key": "variants", "hint": "hints",
    "strip_solutions": "handouts", "grade": "grader.autograde",
    **{name: name for name in _MODULES},
}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
