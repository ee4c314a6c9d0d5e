"""What grading writes: the CSV gradebook (a row per file, a column per question), each student's feedback
in Markdown, and the terminal's summary (a row per student, a column per problem set).

Rows are appended to a file beside the CSV (`.<name>.partial`) and to the feedback as results arrive
(constant cost per row), and `Gradebook.finish` writes the CSV once, in order, through a temporary file and a
rename: until then the earlier gradebook stays whole where it was, and a run stopped at any moment (Ctrl-C)
leaves it so (`Gradebook.abandon` removes the partial rows); a failure to write one row becomes that row's status.
A regrade of some students only (`kept`) keeps the other students' rows as they were.

Text that comes from a submission (names, kernel names, error lines) is escaped for each place it goes:
control and bidirectional characters and undecodable bytes shown as escapes everywhere (`clean`), a leading
`= + - @` quoted in the CSV (`cell`), Markdown and HTML syntax escaped in the feedback (`markdown`).

The "write your reasoning" cells are graded by hand, from one page per problem set (`reasoning.py`). The
points the teacher gives that reasoning live in their own file (`manual.py`), which no regrade writes; the CSV's
`reasoning` column shows them, per student and problem set. The `flags` column says what `integrity.py` found.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import re
import threading
import traceback
import unicodedata
from pathlib import Path
from typing import Any, TextIO

from ...tables import Table
from ..files import write_atomic
from ..letters import invisible
from .manual import COLUMNS, manual_path, read_manual, set_points, typed_in_gradebook, write_template
from .submissions import Result, Submission

__all__ = ["Gradebook", "summary", "grader_error", "clean", "cell", "markdown", "feedback_name", "read_rows",
           "is_qid", "points_cell", "check_out"]


def grader_error(submission: Submission, err: BaseException, where: str = "") -> Result:
    """The row of a file on which the grader itself failed: the error and the line it came from."""
    frame = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
    at = f" ({frame.name}:{frame.lineno})" if frame else ""
    return Result(submission, "grader error", detail=f"{where}{type(err).__name__}: {err}{at}")


_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}  # control, format (bidi overrides), surrogates, private, breaks


def clean(value: str) -> str:
    """`value` as text that is safe to print anywhere: an undecodable byte of a file name (a lone surrogate
    from surrogateescape) as \\xNN, and every control, format or bidirectional character (ESC, CR, NUL,
    BEL, the right-to-left override ...), every character that shows as nothing (`letters.invisible`: a Hangul
    filler, a zero-width space) and any other lone surrogate as a \\xNN or \\uNNNN escape."""
    out = []
    for ch in str(value):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif unicodedata.category(ch) in _UNSAFE or invisible(ch):
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def cell(value: str) -> str:
    """A value as a CSV cell: cleaned (`clean`), and a leading = + - @ quoted with ' so a spreadsheet
    shows it instead of running it."""
    value = clean(value)
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


def markdown(value: str) -> str:
    """A value as Markdown text: cleaned (`clean`), with every ASCII punctuation character escaped, so no
    markup, link or HTML tag of a submission's reaches the rendered feedback."""
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", clean(value))


# Hex characters of the hash in a feedback file's name: 80 bits, so that no one finds a name of their own that
# shares a classmate's file (8 characters, 32 bits, fell to a birthday search in a minute).
NAME_HASH = 20


def feedback_name(student: str, owners: dict[str, str] | None = None) -> str:
    """A file name for a student's feedback (and reasoning): the name in safe characters, then a hash of the
    whole of it (the roster's uid, where there is a roster), so 'a b' and 'a_b' differ. With `owners` ({file
    name: student} of the files this run writes), a name that another student's file already has raises
    ValueError instead: no student's file is ever overwritten with another's."""
    raw = student.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:NAME_HASH]
    name = f"{re.sub(r'[^A-Za-z0-9_-]', '_', clean(student))[:60]}-{digest}.md"
    if owners is not None and owners.setdefault(name, student) != student:
        raise ValueError(f"the feedback file {name!r} is {clean(owners[name])!r}'s; "
                         f"{clean(student)!r}'s would overwrite it, so it is not written")
    return name


_HINTS = {"right": "✓", "wrong": "✗ wrong — `sb.hint(...)` with the question's id gives a hint; compare units",
          "unanswered": "… not answered — replace the `...`", "missing": "? never checked — did the cell run?",
          "no key": "! not graded: the answer key has no reference for it — tell your teacher"}


def feedback_section(r: Result) -> str:
    """One result as a section of a student's feedback (Markdown; the submission's text escaped)."""
    name = r.submission.problem_set or markdown(r.submission.path.name)
    lines = [f"## {name}: {r.total} / {sum(r.possible.values())} points ({markdown(r.status)})", ""]
    if r.detail:
        lines.append(f"{markdown(r.detail)}\n")
    lines += [f"- {q}: {r.points.get(q, 0)}/{p} {_line(r, q)}" for q, p in r.possible.items()]
    if r.errors:
        lines += ["", "Cells that raised an error:", *[f"- {markdown(e)}" for e in r.errors]]
    return "\n".join(lines) + "\n\n"


def _line(r: Result, qid: str) -> str:
    """A question's verdict in the feedback: ✓ or ✗ with the likely mistake and a hint, never the expected
    value; and the hints taken."""
    outcome = r.outcomes.get(qid, "missing")
    text = f"✗ wrong — {markdown(r.advice[qid])}" if outcome == "wrong" and r.advice.get(qid) else _HINTS[outcome]
    taken = r.hints.get(qid, 0)
    return text + (f" ({taken} hint{'s' * (taken > 1)} taken)" if taken else "")


def _feedback_title(student: str) -> str:
    return f"# Feedback for {markdown(student)}\n\n"


_QID_COLUMN = re.compile(r"^\d+(\.\d+)+$")
_REQUIRED = ("student", "problem set", "file", "total", "possible", "reasoning", "status")


def is_qid(column: str) -> bool:
    """Whether a gradebook column is a question's ('01.2')."""
    return bool(_QID_COLUMN.match(column))


def _qid_order(qid: str) -> list[int]:
    return [int(x) for x in qid.split(".")]


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the gradebook CSV `path` as `scalebook grade` wrote them (every cell text); ValueError naming the
    file when it is not one (a column missing)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"gradebook={str(path)!r} is not a gradebook `scalebook grade` wrote: it has no "
                             f"{', '.join(repr(c) for c in missing)} column")
        return list(reader)


def points_cell(points: float | None) -> str:
    """Points as a CSV cell: '' for none, whole numbers without a decimal point."""
    return "" if points is None else f"{points:g}" if float(points).is_integer() else f"{round(points, 3)}"


def _merged(earlier: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a regrade of some students: `earlier`'s rows in order, each regraded student's (`fresh`) rows in
    place of their earlier ones, students new to the gradebook at the end."""
    mine: dict[str, list[dict[str, Any]]] = {}
    for row in fresh:
        mine.setdefault(row["student"], []).append(row)
    rows: list[dict[str, Any]] = []
    placed: set[str] = set()
    for row in earlier:
        student = row["student"]
        if student not in mine:
            rows.append(row)
        elif student not in placed:
            placed.add(student)
            rows += mine[student]
    return rows + [r for r in fresh if r["student"] not in placed]


def _earlier_rows(out: Path) -> list[dict[str, str]]:
    """The rows of the gradebook already at `out` ([] when there is none, or it is not a gradebook)."""
    try:
        return read_rows(out)
    except (OSError, ValueError):
        return []


def check_out(out: Path, folder: Path, force: bool, regrade: bool = False) -> list[dict[str, str]]:
    """Refuse an output path that is a folder, lies in the submissions, or would overwrite a gradebook or its
    feedback without `force` (or, for a `regrade` of some students, has no gradebook to join), and a rewrite that
    would lose reasoning points typed into the gradebook itself rather than its manual-points file. Return the
    earlier gradebook's rows."""
    if out.is_dir():
        raise ValueError(f"out={str(out)!r} is a folder; give the path of the CSV file to write")
    if out.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"out={str(out)!r} lies inside the submissions folder; write the gradebook elsewhere")
    earlier = _earlier_rows(out)
    if regrade and not earlier:
        raise ValueError(f"out={str(out)!r} is no gradebook: regrading some students (--student) rewrites their rows "
                         "in the gradebook a full run wrote")
    if (out.exists() or out.is_symlink()) and not (force or regrade):
        raise ValueError(f"out={str(out)!r} exists; pass force=True (--force) to overwrite that gradebook")
    for kind in ("feedback", "reasoning"):
        written = out.parent / kind
        if written.is_dir() and any(written.iterdir()) and not (force or regrade):
            raise ValueError(f"{str(written)!r} holds earlier {kind}; pass force=True (--force) to overwrite it")
    lost = typed_in_gradebook(earlier, read_manual(manual_path(out)))
    if lost:
        raise ValueError(f"out={str(out)!r} holds reasoning points typed into the gradebook itself "
                         f"({'; '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}), which a regrade would lose: "
                         f"move them to {manual_path(out).name} beside it (columns {', '.join(COLUMNS)}) first")
    return earlier


class Gradebook:
    """The CSV and the feedback files: each result appended as it arrives (constant cost per row) to a file beside
    the CSV, and the CSV written once, atomically and in order, by `finish` (the earlier one whole until then)."""

    def __init__(self, out: Path, folder: Path, submissions: list[Submission], qids: set[str], mode: str,
                 kept: list[dict[str, str]] | None = None) -> None:
        """Start the gradebook `out` (and `feedback/` beside it) of `submissions` in `folder`: a column per
        question of `qids`, and `mode` (the sandbox and its caps) in every row. `kept` are the earlier gradebook's
        rows when only some students are regraded: the others' rows stay as they were."""
        self.out, self.folder, self.mode = out, folder, mode
        self.partial = out.with_name(f".{out.name}.partial")
        self.feedback, self.reasoning = out.parent / "feedback", out.parent / "reasoning"
        self.lock = threading.Lock()
        self.results: list[Result | None] = [None] * len(submissions)
        self.submissions = submissions
        self.kept = kept or []
        self.started: set[str] = set()  # students whose feedback this run has begun (earlier files are replaced)
        self.owners: dict[str, str] = {}  # feedback file name: the student whose it is (`feedback_name`)
        qids = qids | {c for row in self.kept[:1] for c in row if is_qid(c)}
        self.columns = ["student", "problem set", "file", *sorted(qids, key=_qid_order),
                        "total", "possible", "hints", "reasoning", "status", "sandbox", "detail", "flags"]
        self.feedback.mkdir(exist_ok=True)
        self.reasoning.mkdir(exist_ok=True)
        write_atomic(self.partial, ",".join(self.columns) + "\r\n")
        self.csv: TextIO = open(self.partial, "a", newline="", encoding="utf-8")  # closed by finish or abandon
        self.writer = csv.DictWriter(self.csv, fieldnames=self.columns, restval="")

    def row(self, r: Result) -> dict[str, Any]:
        """The CSV row of one result, every text cell escaped; `reasoning` is filled by `finish` from the
        teacher's manual points."""
        return {"student": cell(r.submission.student), "problem set": r.submission.problem_set or "",
                "file": cell(str(r.submission.path.relative_to(self.folder))), **r.points, "total": r.total,
                "possible": sum(r.possible.values()), "hints": sum(r.hints.values()), "status": cell(r.status),
                "sandbox": self.mode,
                "detail": cell(r.detail), "flags": cell("; ".join(r.flags))}

    def record(self, index: int, result: Result) -> None:
        """Store one result and append its row and its feedback section; a failure to write them becomes
        the row's status."""
        with self.lock:
            try:
                self._append(result)
            except Exception as err:  # noqa: BLE001 - one row's failure stays in its row
                result = grader_error(result.submission, err, "writing its row: ")
                with contextlib.suppress(Exception):  # finish writes it, if this cannot
                    self._append(result)
            self.results[index] = result

    def _append(self, result: Result) -> None:
        self.writer.writerow(self.row(result))
        self.csv.flush()
        student = result.submission.student
        first = student not in self.started
        with open(self.feedback / feedback_name(student, self.owners), "w" if first else "a", encoding="utf-8") as f:
            f.write((_feedback_title(student) if first else "") + feedback_section(result))
        self.started.add(student)

    def abandon(self) -> None:
        """Stop without a gradebook: the rows written so far are removed and the earlier gradebook stays as it was."""
        with self.lock:
            self.csv.close()
            self.partial.unlink(missing_ok=True)

    def finish(self) -> list[Result]:
        """Write the CSV (every file's row, in order; the kept rows of students not regraded; each row's
        `reasoning` the teacher's manual points) through a temporary file and a rename, then each student's feedback;
        create the manual-points file if there is none; return the results (a file no result came for is a grader
        error)."""
        with self.lock:
            self.csv.close()
        results = [r or Result(s, "grader error", detail="no result came back")
                   for r, s in zip(self.results, self.submissions)]
        manual = read_manual(manual_path(self.out))
        rows = _merged(self.kept, [self.row(r) for r in results])
        for row in rows:
            row["reasoning"] = points_cell(set_points(manual, row["student"], row["problem set"]))
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.columns, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(self.out, text.getvalue())
        self.partial.unlink(missing_ok=True)
        write_template(manual_path(self.out), [(cell(r.submission.student), q) for r in results
                                               if r.status != "superseded" for q in r.possible if q in r.reasoning])
        students: dict[str, list[Result]] = {}
        for r in results:
            students.setdefault(r.submission.student, []).append(r)
        for student, mine in students.items():
            try:
                name = feedback_name(student, self.owners)
            except ValueError:  # another student's file: this student's rows say so
                continue
            write_atomic(self.feedback / name, _feedback_title(student) + "".join(map(feedback_section, mine)))
        return results


_WIDE = 24  # characters of a student's name in the terminal's summary (the CSV has all of it)


def summary(results: list[Result], title: str) -> Table:
    """The terminal's gradebook: a first row of the points possible, then one row per student with a column
    per problem set, headed by its number (the points of the file that counts, '!' when it was not graded in
    full), the total, and how many of the student's files were not graded; the CSV has every question."""
    sets = sorted({_number(r.submission.problem_set) for r in results if r.submission.problem_set})
    top = {"student": "(points possible)", **dict.fromkeys(sets, ""), "total": 0, "not graded": ""}
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        name = clean(r.submission.student)
        row = rows.setdefault(name, {"student": name if len(name) <= _WIDE else name[:_WIDE - 1] + "…",
                                     **dict.fromkeys(sets, ""), "total": 0, "not graded": 0})
        if r.status == "superseded" or not r.submission.problem_set:
            row["not graded"] += r.status != "superseded"
            continue
        number = _number(r.submission.problem_set)
        row[number] = f"{r.total}" + ("" if r.status == "graded" else "!")
        row["total"] += r.total
        row["not graded"] += r.status != "graded"
        top[number] = max(top[number] or 0, sum(r.possible.values()))
    top["total"] = sum(top[n] or 0 for n in sets)
    columns = ["student", *sets, "total", "not graded"]
    return Table([top, *rows.values()], columns=columns, title=title)


def _number(problem_set: str) -> str:
    return problem_set.split("_")[0]
