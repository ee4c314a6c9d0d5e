"""The teacher's own points: what the written reasoning earns, typed by hand into `<gradebook stem>-manual.csv`
beside the gradebook, one row per student and question:

    student,qid,points,note
    ada,01.2,2,names the roofline and its ridge point

The grader writes this file once, when a gradebook is first made (a row per question a student wrote reasoning
for, `points` left blank), and never again: a regrade (`--force`, or `--student` for some students only) rewrites
the gradebook and leaves this file as the teacher left it. Each gradebook row's `reasoning` column then shows the
points of its student and problem set, and every export adds them to the set's score (`exports.py`).

`student` is the gradebook's `student` cell, as the CSV shows it; `qid` a question id (`01.2`); `points` a number
of points (0 or more) or blank for none yet; `note` is the teacher's own.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["COLUMNS", "manual_path", "read_manual", "set_points", "write_template", "typed_in_gradebook"]

COLUMNS = ("student", "qid", "points", "note")
_QID = re.compile(r"^\d{2}\.\d{1,3}$")


def manual_path(gradebook: Path) -> Path:
    """The manual-points file of the gradebook `gradebook`: `<stem>-manual.csv` beside it."""
    gradebook = Path(gradebook)
    return gradebook.with_name(f"{gradebook.stem}-manual.csv")


def _points(text: str, where: str) -> float | None:
    """A cell of the `points` column as a number of points (None when blank); a clear error otherwise."""
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{where}: points={text!r} is not a number of points (0 or more, or blank for none yet)")
    return value


def read_manual(path: Path) -> dict[tuple[str, str], float]:
    """{(student, qid): points} typed in the manual-points file `path` ({} when there is none); rows whose points are
    blank are left out. A missing column, a malformed question id, a value that is not a number of points or a
    question given twice for one student raises ValueError naming the file, the line and the value."""
    path = Path(path)
    if not path.exists():
        return {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS[:3] if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: the manual points need the columns {', '.join(COLUMNS)}; "
                             f"{', '.join(missing)} missing (its header is {reader.fieldnames})")
        found: dict[tuple[str, str], float] = {}
        first: dict[tuple[str, str], int] = {}
        for row in reader:
            where = f"{path}, line {reader.line_num}"
            key = ((row["student"] or "").strip(), (row["qid"] or "").strip())
            if not _QID.match(key[1]):
                raise ValueError(f"{where}: qid={key[1]!r} is not a question id like '01.2'")
            if key in first:
                raise ValueError(f"{where}: student {key[0]!r} has question {key[1]} again (first on line "
                                 f"{first[key]}); keep one row per student and question")
            first[key] = reader.line_num
            points = _points(row["points"] or "", where)
            if points is not None:
                found[key] = points
    return found


def set_points(manual: dict[tuple[str, str], float], student: str, problem_set: str) -> float | None:
    """The manual points of `student` in `problem_set` ('01_rooflines'): the sum over its questions (01.x), or None
    when the teacher gave none."""
    number = problem_set.split("_")[0]
    given = [p for (who, qid), p in manual.items() if who == student and qid.split(".")[0] == number]
    return sum(given) if given else None


def write_template(path: Path, rows: Iterable[tuple[str, str]]) -> bool:
    """Create the manual-points file `path` with a row, points blank, for each (student, qid) of `rows`; leave a file
    already there untouched. Return whether it was created."""
    try:
        f = open(path, "x", newline="", encoding="utf-8")
    except FileExistsError:
        return False
    with f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows((student, qid, "", "") for student, qid in rows)
        f.flush()
        os.fsync(f.fileno())
    return True


def typed_in_gradebook(rows: Iterable[dict[str, str]], manual: dict[tuple[str, str], float]) -> list[str]:
    """The gradebook rows (as read) whose `reasoning` cell holds points the manual-points file does not give, each as
    'student, problem set: value': points typed into the gradebook itself, which a rewrite would lose."""
    lost = []
    for row in rows:
        typed = (row.get("reasoning") or "").strip()
        if not typed:
            continue
        given = set_points(manual, row.get("student", ""), row.get("problem set", ""))
        try:
            same = given is not None and math.isclose(float(typed), given)
        except ValueError:
            same = False
        if not same:
            lost.append(f"{row.get('student', '')}, {row.get('problem set', '')}: {typed}")
    return lost
