"""Signs that a notebook was not worked alone, flagged in the gradebook (its `flags` column) for the teacher to look at.

Notebooks of one problem set are compared in pairs, on what each holds of its own (`Work`: what the handout did
not give, `reasoning.handout`):

- **the same answers**: the same last answer to at least `MIN_ANSWERS` questions whose inputs differ between the
  two students (each has their own variant, `variants`): answers that hold a number and are not the book's own
  answer (students who both kept the book's inputs made that slip each on their own);
- **the same code**: at least `MIN_CELLS` code cells of their own identical byte for byte, making up at least half
  of the own code cells of the one with fewer.

An answer or a cell that more than a quarter of the set's notebooks share (and more than two) counts for no pair:
it is the obvious one, which honest students reach alike. And a notebook is flagged when its own cells, code or
text, **name another student of the roster** (`roster.Roster`): their full name (two words or more, in either
order, "Last, First" too), email, or login or uid (four characters or more, not all digits), as whole words,
compared after NFC and case folding. Both notebooks of a pair are flagged, each naming the other: which one copied
is the teacher's judgement. A flag is a reason to look, never a verdict; the variants protect numbers, not
understanding (teachers_guide.md, "What a variant protects, and what it cannot").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..roster import Roster, Student
from .reasoning import Cells
from .submissions import Result

__all__ = ["Work", "work", "flag", "MIN_ANSWERS", "MIN_CELLS", "MAX_TEXT"]

MIN_ANSWERS = 2  # varied questions answered alike, to flag a pair
MIN_CELLS = 3  # own code cells alike, to flag a pair (and half of the smaller notebook's)
MAX_TEXT = 256 * 2**10  # characters of a notebook's own text searched for other students' names
_COMMON = 4  # an answer or cell more than 1/_COMMON of the notebooks share is the obvious one


@dataclass(frozen=True)
class Work:
    """What integrity compares of one notebook: its answers (qid: the last answer as canonical JSON, those
    holding a number), the SHA-256 of each of its own code cells, and its own text (normalised, capped)."""

    answers: dict[str, str]
    code: frozenset[str]
    text: str


def _has_number(value: Any) -> bool:
    if isinstance(value, list):
        return any(map(_has_number, value))
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _folded(text: str) -> str:
    """`text` compared as names are: NFC, case folded, every run of whitespace one space."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def work(cells: Cells, given: frozenset[str], answers: dict[str, Any]) -> Work:
    """The `Work` of a notebook of `cells` whose handout held the cell texts `given`; `answers` is {qid: its last
    plain answer}."""
    own = [(kind, text.strip()) for kind, text in cells if text.strip() and text.strip() not in given]
    return Work({q: json.dumps(a, sort_keys=True) for q, a in answers.items() if _has_number(a)},
                frozenset(hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest()
                          for kind, t in own if kind == "code"),
                _folded("\n".join(t for _, t in own)[:MAX_TEXT]))


def _rare(size: int, notebooks: int) -> bool:
    """Whether `size` notebooks sharing an answer or a cell is evidence: two or more, not common (see the module)."""
    return size == 2 or 2 < size and size * _COMMON <= notebooks


def _same_answers(mine: list[Result], differ: Callable[[str, str, str], bool],
                  bookish: Callable[[str, Any], bool]) -> dict[tuple[int, int], list[str]]:
    """{(i, j): the questions notebooks i and j answered alike, their inputs differing}, for pairs over the bar."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(mine):
        for qid, answer in r.work.answers.items():
            groups.setdefault((qid, answer), []).append(i)
    pairs: dict[tuple[int, int], list[str]] = {}
    for (qid, answer), group in groups.items():
        if not _rare(len(group), len(mine)) or bookish(qid, json.loads(answer)):
            continue
        for i, j in itertools.combinations(group, 2):
            if differ(qid, mine[i].submission.student, mine[j].submission.student):
                pairs.setdefault((i, j), []).append(qid)
    return {pair: qids for pair, qids in pairs.items() if len(qids) >= MIN_ANSWERS}


def _same_code(mine: list[Result]) -> dict[tuple[int, int], int]:
    """{(i, j): how many own code cells notebooks i and j share}, for pairs over the bar (see the module)."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(mine):
        for digest in r.work.code:
            groups.setdefault(digest, []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for group in groups.values():
        for pair in itertools.combinations(group, 2) if _rare(len(group), len(mine)) else ():
            shared[pair] = shared.get(pair, 0) + 1
    return {(i, j): n for (i, j), n in shared.items()
            if n >= MIN_CELLS and 2 * n >= min(len(mine[i].work.code), len(mine[j].work.code))}


def _names(student: Student) -> set[str]:
    """The spellings by which a notebook would name `student` (see the module), folded."""
    name = _folded(student.name)
    last, comma, first = name.partition(",")
    words = f"{first} {last}".split() if comma else name.split()
    if len(words) < 2:
        words = []  # one word names too many things to be a student's name
    names = {" ".join(words), " ".join(words[::-1]), f"{words[-1]}, {' '.join(words[:-1])}"} if words else set()
    ids = {_folded(x) for x in (student.login, student.uid, student.email.split("@")[0])}
    return names | {_folded(student.email)} - {""} | {x for x in ids if len(x) >= 4 and x.isascii() and not x.isdigit()}


def _finder(roster: Roster) -> tuple[re.Pattern[str], dict[str, set[str]]]:
    """One pattern matching, as whole words, every spelling of every student of `roster`; and {spelling: uids}."""
    owners: dict[str, set[str]] = {}
    for student in roster.students:
        for spelling in _names(student):
            owners.setdefault(spelling, set()).add(student.uid)
    alternatives = "|".join(map(re.escape, sorted(owners, key=len, reverse=True))) or r"(?!)"
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)"), owners


def _named(text: str, finder: tuple[re.Pattern[str], dict[str, set[str]]], me: str) -> set[str]:
    """The uids of the students other than `me` whom `text` (folded) names."""
    pattern, owners = finder
    return {uid for m in pattern.finditer(text) for uid in owners[m[0]]} - {me}


def _flag_set(mine: list[Result], differ: Callable[[str, str, str], bool], bookish: Callable[[str, Any], bool],
              finder: tuple[re.Pattern[str], dict[str, set[str]]] | None, name: Callable[[str], str]) -> None:
    """`flag` for the notebooks of one problem set."""
    for (i, j), qids in _same_answers(mine, differ, bookish).items():
        for a, b in ((i, j), (j, i)):
            mine[a].flags.append(f"same answers as {name(mine[b].submission.student)} to {len(qids)} questions "
                                 f"whose inputs differ ({', '.join(sorted(qids))})")
    for (i, j), n in _same_code(mine).items():
        for a, b in ((i, j), (j, i)):
            mine[a].flags.append(f"{n} of its own code cells identical to {name(mine[b].submission.student)}'s")
    for r in mine if finder else []:
        for uid in sorted(_named(r.work.text, finder, r.submission.student)):
            r.flags.append(f"names another student, {name(uid)}")


def flag(results: list[Result], differ: Callable[[str, str, str], bool], bookish: Callable[[str, Any], bool],
         roster: Roster | None = None, name: Callable[[str], str] = str) -> None:
    """Add to each result's `flags` what integrity finds (see the module), comparing the notebooks of each problem
    set. `differ(qid, a, b)` says whether students a and b have different inputs to `qid`; `bookish(qid, answer)`
    whether an answer is right for the book's inputs; `name(student)` is how a flag names a student."""
    finder = _finder(roster) if roster else None
    sets: dict[str, list[Result]] = {}
    for r in results:
        if r.work is not None and r.submission.problem_set and r.status != "superseded":
            sets.setdefault(r.submission.problem_set, []).append(r)
    for mine in sets.values():
        _flag_set(mine, differ, bookish, finder, name)
