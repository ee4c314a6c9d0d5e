"""Grades where a course keeps them: the gradebook CSV `scalebook grade` wrote, turned into the file Canvas or
Moodle imports, or Gradescope's results, without grading anything again.

A student's score in a problem set is the `total` of their file that counts (the gradebook's row that is not
`superseded`) plus the points the teacher gave its reasoning by hand (`grader/manual.py`). A set the student sent
nothing for has no score, and neither has a row the grader could not grade (`UNSCORED`: named in the notes, to be
regraded), never a silent 0. Students are named as the roster (`roster.py`) knows them; a gradebook student the
roster does not know is left out and named in the notes.

**Canvas** (`canvas`). Canvas's Gradebook import (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-
grades-in-the-Gradebook/ta-p/807) reads the file with `GradebookImporter` (instructure/canvas-lms,
lib/gradebook_importer.rb): its header's first cell holds "Student" and its second "ID", `SIS User ID` and
`SIS Login ID` follow, and `Section` is the last student column; every later column is an assignment, "Title (id)"
naming an existing one by its id (`Assignment.title_and_id`), a bare title matching the assignment of that title or
creating one; a row whose first cell holds "Points Possible" gives the points of the assignments it creates. Each
student is found by ID (Canvas's user id), else SIS User ID, else SIS Login ID, else their name or sortable name.
So this writes exactly `Student, ID, SIS User ID, SIS Login ID, Section`, a column per problem set (titled
`Problem set 05: training` unless the teacher names the assignment, `"PS 5 (48213)"`), the Points Possible row and a
row per roster student, blank where they have no score (Canvas reads blank or "-" as no score; a blank replaces a
score Canvas already holds for that assignment).

**Moodle** (`moodle`). Moodle's CSV grade import (https://docs.moodle.org/en/Grade_import) maps one column to the
user ("Map from" a column, "Map to" `useremail` or `useridnumber`) and every other column to a grade item, or a new
one. `gradeimport_csv_load_data` (moodle/moodle, grade/import/csv/classes/load_data.php) looks each row's value up
exactly, aborts the whole import when a row matches nobody or has no value, and reads "-" as no grade (for an
existing item "" too). So this writes one identifier column, `Email address` (Moodle's own export's name for it),
or `ID number` when not every student has an email, filled on every row, then a column per problem set, "-" where
a student has no score.

**Gradescope** (`gradescope`). Gradescope documents no import of scores from a file: scores reach it through its
autograder (`gradescope.py`), whose `results.json` (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
holds a `score` and a test per question. This writes that `results.json` for every student and problem set of the
gradebook, as `<out>/<set>/<student>.json`, the students named by the email Gradescope knows them by.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..units import closest
from .files import write_atomic
from .grader.autograde import course_root, question_points
from .grader.gradebook import cell, clean, feedback_name, is_qid, points_cell, read_rows
from .grader.manual import manual_path, read_manual, set_points
from .roster import Roster, Student

__all__ = ["Export", "canvas", "moodle", "gradescope", "titles", "PLATFORMS", "CANVAS_COLUMNS", "UNSCORED"]

PLATFORMS = ("canvas", "moodle", "gradescope")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# statuses of rows that say nothing of the student's work: the grader's own failure, a file it could not file
UNSCORED = frozenset({"grader error", "unmatched", "unknown problem set", "unrecognised"})
_FORMULA = ("=", "+", "-", "@")


@dataclass(frozen=True)
class Export:
    """What an export wrote (`path`) and what it could not fill or left out (`notes`, one sentence each)."""

    path: Path
    notes: tuple[str, ...] = ()


@dataclass
class _Scores:
    """A gradebook's scores: the problem sets, their points possible, each student's score per set (None: no
    score) and the row it came from, and notes on what was left blank."""

    sets: list[str]
    possible: dict[str, float]
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    rows: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _scores(gradebook: Path) -> _Scores:
    """The scores of the gradebook CSV `gradebook` (and its manual-points file)."""
    rows = read_rows(gradebook)
    manual = read_manual(manual_path(gradebook))
    counted = [r for r in rows if r["problem set"] and r["status"] != "superseded"]
    sets = sorted({r["problem set"] for r in counted})
    found = _Scores(sets, {s: max(_number(r["possible"]) for r in counted if r["problem set"] == s) for s in sets})
    for row in counted:
        student, problem_set = row["student"], row["problem set"]
        if row["status"] == "unmatched":
            found.notes.append(f"{student}, {problem_set}: an upload the roster matched to no student "
                               f"({row.get('detail', '')}); left out")
            continue
        if row["status"] in UNSCORED:
            score = None
            found.notes.append(f"{student}, {problem_set}: left blank, the gradebook says {row['status']!r} "
                               f"({row.get('detail', '')}); regrade it")
        else:
            score = _number(row["total"]) + (set_points(manual, student, problem_set) or 0.0)
        found.scores.setdefault(student, {})[problem_set] = score
        found.rows.setdefault(student, {})[problem_set] = row
    return found


def titles(sets: list[str], names: Mapping[str, str] | None = None) -> dict[str, str]:
    """{problem set: the assignment's title}: `names` keyed by a set ('05_training') or its number ('05'), else
    'Problem set 05: training'. ValueError for a key that is no set, or a title that is blank, holds a control
    character or repeats another's."""
    names = dict(names or {})
    for key, title in names.items():
        if not any(key in (s, s.split("_")[0]) for s in sets):
            near = closest(key, sets + [s.split("_")[0] for s in sets])
            raise ValueError(f"assignment {key!r} is no problem set of the gradebook; it has {', '.join(sets)}"
                             + (f" (closest: {', '.join(near)})" if near else ""))
        if not str(title).strip() or clean(title) != title:
            raise ValueError(f"assignment {key!r}: title={title!r} must be visible text on one line")
    out = {}
    for s in sets:
        number, _, slug = s.partition("_")
        out[s] = names.get(s) or names.get(number) or f"Problem set {number}: {slug.replace('_', ' ')}"
    twice = sorted({t for t in out.values() if list(out.values()).count(t) > 1})
    if twice:
        raise ValueError(f"two problem sets would share the assignment title {twice[0]!r}; give each its own")
    return out


def _uncell(value: str) -> str:
    """A gradebook cell read back: the ' that `gradebook.cell` put before a leading = + - @ removed."""
    return value[1:] if value[:1] == "'" and value[1:2] in _FORMULA else value


def _who(found: _Scores, roster: Roster | None) -> tuple[list[tuple[Student | None, str]], list[str]]:
    """The rows to export, each (roster student or None, their gradebook name or ''): every roster student in its
    order, or without a roster every gradebook student; and notes naming gradebook students left out."""
    if roster is None:
        return [(None, s) for s in sorted(found.scores)], []
    by_uid = {s.uid: s for s in roster.students}
    named: dict[str, str] = {}
    notes = []
    for student in sorted(found.scores):
        match = by_uid.get(_uncell(student)) or roster.match(_uncell(student))
        if match is None:
            notes.append(f"{student}: not in the roster, left out ({roster.explain(_uncell(student))})")
        elif match.uid in named:
            notes.append(f"{student}: the roster's {match.uid!r} again (as {named[match.uid]!r}); left out")
        else:
            named[match.uid] = student
    return [(s, named.get(s.uid, "")) for s in roster.students], notes


def _write_csv(out: Path, rows: list[list[Any]]) -> Path:
    """Write `rows` as a UTF-8 CSV at `out` (its folder created) through a temporary file and a rename."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    write_atomic(out, text.getvalue())
    return out


def _cells(found: _Scores, gradebook_name: str, blank: str) -> list[str]:
    """A student's score per problem set as CSV cells, `blank` where they have none."""
    mine = found.scores.get(gradebook_name, {})
    return [blank if mine.get(s) is None else points_cell(mine[s]) for s in found.sets]


def canvas(gradebook: Path, roster: Roster | None, out: Path, assignments: Mapping[str, str] | None = None) -> Export:
    """Write the CSV Canvas's Gradebook import reads (see the module's docstring) of the gradebook `gradebook` to
    `out`: a row per student of `roster` (without one, per gradebook student, matched by name only), a column per
    problem set titled by `assignments` ({set or its number: title}, 'PS 5 (48213)' naming Canvas assignment 48213)."""
    found = _scores(gradebook)
    named = titles(found.sets, assignments)
    who, notes = _who(found, roster)
    if roster is None:
        notes.insert(0, "without a roster, ID, SIS User ID, SIS Login ID and Section are blank: Canvas can match "
                        "each student only by their name, exactly as Canvas shows it")
    rows: list[list[Any]] = [[*CANVAS_COLUMNS, *(named[s] for s in found.sets)],
                             ["Points Possible", "", "", "", "", *(points_cell(found.possible[s]) for s in found.sets)]]
    for student, name in who:
        identity = ([student.name, student.lms_id, student.sis_id, student.login, student.section] if student else
                    [_uncell(name), "", "", "", ""])
        rows.append([*map(cell, identity), *_cells(found, name, "")])
    return Export(_write_csv(out, rows), tuple(found.notes + notes))


def _moodle_identifier(who: list[tuple[Student | None, str]]) -> tuple[str, str]:
    """(Moodle's column title, the Student field) that identifies every row: email when all have one, else the ID
    number when all have one, else email (the others are left out)."""
    students = [s for s, _ in who if s]
    if all(s.email for s in students) or not all(s.sis_id for s in students):
        return "Email address", "email"
    return "ID number", "sis_id"


def moodle(gradebook: Path, roster: Roster | None, out: Path, assignments: Mapping[str, str] | None = None) -> Export:
    """Write the CSV Moodle's grade import reads (see the module's docstring) of the gradebook `gradebook` to `out`:
    one identifier column (email, or ID number) filled on every row, then a column per problem set titled by
    `assignments`, '-' where a student has no score. Without a roster the gradebook's students must be emails."""
    found = _scores(gradebook)
    named = titles(found.sets, assignments)
    who, notes = _who(found, roster)
    if roster is None:
        if not all("@" in _uncell(name) for _, name in who):
            raise ValueError("moodle: Moodle matches each row by email address or ID number, which only the roster "
                             "holds here: pass the roster (roster=..., --roster)")
        header, ids = "Email address", [(_uncell(name), name) for _, name in who]
    else:
        header, attribute = _moodle_identifier(who)
        ids = []
        for student, name in who:
            if getattr(student, attribute):
                ids.append((getattr(student, attribute), name))
            else:
                notes.append(f"{student.uid}: no {header.lower()} in the roster, left out (Moodle would stop the "
                             "whole import at a row it cannot match)")
    rows = [[header, *(named[s] for s in found.sets)],
            *([cell(value), *_cells(found, name, "-")] for value, name in ids)]
    return Export(_write_csv(out, rows), tuple(found.notes + notes))


def _results(found: _Scores, student: str, problem_set: str, points: dict[str, int]) -> dict[str, Any]:
    """Gradescope's results.json of one student's problem set, from its gradebook row: the score (reasoning
    points included), a test per question and one for the reasoning points."""
    row, score = found.rows[student][problem_set], found.scores[student][problem_set]
    tests = [{"name": f"Problem {q}", "number": q, "score": _number(row.get(q, "")), "max_score": p}
             for q, p in points.items() if is_qid(q)]
    manual = score - _number(row["total"]) if score is not None else 0.0
    if manual:
        tests.append({"name": "Reasoning (points given by hand)", "score": manual})
    return {"score": score, "output": clean(f"{problem_set}: {points_cell(score)} / {sum(points.values())} points "
                                            f"({row['status']})"), "tests": tests}


def gradescope(gradebook: Path, roster: Roster | None, out: Path, root: Path | None = None) -> Export:
    """Write Gradescope's results.json (see the module's docstring) of every student and problem set of the gradebook
    `gradebook` under the folder `out` (`<set>/<student>.json`, named by the roster's email where it has one); the
    points of each question come from the course at `root` (`autograde.course_root`)."""
    found = _scores(gradebook)
    root = course_root(root)
    points = {s: question_points(s, root) for s in found.sets}
    who, notes = _who(found, roster)
    out = Path(out)
    for student, name in who:
        for problem_set in found.scores.get(name, {}):
            if found.scores[name][problem_set] is None:
                continue
            folder = out / problem_set
            folder.mkdir(parents=True, exist_ok=True)
            label = (student.email or student.uid) if student else _uncell(name)
            target = folder / f"{feedback_name(label)[:-3]}.json"
            target.write_text(json.dumps(_results(found, name, problem_set, points[problem_set]), indent=1),
                              encoding="utf-8")
    return Export(out, tuple(found.notes + notes))
