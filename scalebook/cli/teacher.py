"""The teacher's commands: grading a class and setting up a course.

    scalebook grade SUBMISSIONS_DIR --out grades/gradebook.csv [--timeout 120] [--jobs N] [--force] [--no-sandbox]
                    [--secret-file course.key] [--hint-cost 0.25] [--student ada ...] [--course DIR]
                    [--format csv|canvas|moodle|gradescope]
    scalebook course export --gradebook grades/gradebook.csv --to canvas|moodle|gradescope --out canvas.csv
                            [--roster roster.csv] [--assignment 05="Problem set 5 (48213)" ...] [--course DIR]
    scalebook course roster EXPORT.csv --out roster.csv [--force]  # the class list, from Canvas, Moodle or Gradescope
    scalebook course keys --secret-file course.key [--roster roster.csv] [--out keys.csv]  # a key per student
    scalebook course gradescope-zip 01_rooflines --out autograder.zip [--secret-file course.key] [--hint-cost 0.25]
                                    [--visibility after_published] [--question-visibility 01.16=hidden]
                                    [--roster roster.csv] [--course DIR]

The course secret lives in a file the teacher keeps (`--secret-file`); with it every student has their own
inputs (`scalebook.course.variants`), without it everyone has the book's. The roster (`roster.py`, the course
folder's `roster.csv` or `--roster`) says who the students are: keys are issued per roster entry and the grader
files every upload under one of them, or reports it unmatched. `course export` turns a gradebook into
what Canvas, Moodle or Gradescope imports (`exports.py`), without grading again; `grade --format` does the same
with the gradebook it has just written (`<gradebook>-canvas.csv`, `-moodle.csv`, or `gradescope/` beside it).
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path
from typing import Any

from ..course import exports
from ..course.grader.autograde import cores, course_root, grade
from ..course.gradescope import VISIBILITIES, autograder_zip
from ..course.roster import Roster, find_roster
from ..course.variants import student_key
from ..tables import Table
from .arguments import count, new_file, one_of, seconds

__all__ = ["add_commands", "read_secret"]


def read_secret(path: str | None) -> str | None:
    """The course secret in the file `path` (its first line, stripped), or None without a file."""
    if path is None:
        return None
    secret = Path(path).read_text(encoding="utf-8").strip()
    if not secret:
        raise ValueError(f"secret file {path!r} is empty: put the course's secret on its first line")
    return secret


def fraction(text: str) -> float:
    """A fraction of a question's points, 0 to 1 (for --hint-cost)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction from 0 to 1")
    return value


def gradebook_path(text: str) -> str:
    """A CSV to write: not a folder, and in a folder that exists or can be made (it is made when grading starts)."""
    if not text or Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file to write")
    above = Path(text).resolve().parent
    while not above.exists():
        above = above.parent
    if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: its folder cannot be made, {str(above)!r} is not a folder "
                                         "this user may write in")
    return text


def assignment(text: str) -> tuple[str, str]:
    """One problem set's assignment on the platform, `SET=TITLE` ('05=Problem set 5 (48213)'), for --assignment."""
    key, _, title = text.partition("=")
    if not key.strip() or not title.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not SET=TITLE, e.g. 05='Problem set 5 (48213)'")
    return key.strip(), title.strip()


def _roster(path: str | None, root: str | None) -> Roster | None:
    """The roster at `path` (the course's roster.csv, or a platform's export), else the course's own, else None."""
    if path:
        try:
            return Roster.read(path)
        except ValueError:
            return Roster.from_export(path)
    try:
        folder = course_root(Path(root) if root else None)
    except ValueError:
        return None
    return find_roster(folder)  # a roster.csv that cannot be read is an error, never a class without a roster


def _export(platform: str, gradebook: Path, out: Path, args: argparse.Namespace) -> str:
    """Write `platform`'s export of the gradebook `gradebook` to `out`; say what was written and what was left out."""
    roster = _roster(getattr(args, "roster", None), args.course)
    if platform == "gradescope":
        done = exports.gradescope(gradebook, roster, out, Path(args.course) if args.course else None)
    else:
        done = getattr(exports, platform)(gradebook, roster, out, dict(getattr(args, "assignment", None) or []))
    return "\n".join([f"wrote {done.path} ({platform})", *(f"  note: {n}" for n in done.notes)])


def _grade(args: argparse.Namespace) -> str:
    out = Path(args.out)
    table = grade(Path(args.submissions), out, root=Path(args.course) if args.course else None, timeout=args.timeout,
                  jobs=args.jobs, sandboxed=not args.no_sandbox, force=args.force,
                  secret=read_secret(args.secret_file), hint_cost=args.hint_cost, students=args.student,
                  roster=_roster(args.roster, args.course))
    lines = [str(table), "", f"wrote {args.out}, feedback/ and reasoning/ beside it; the reasoning points you give go "
                             f"in {out.stem}-manual.csv, which no regrade writes over"]
    if args.format == "lms":
        lines.append("--format lms is gone (its file imported in neither Canvas nor Moodle): --format canvas or "
                     "moodle writes what each imports; here is canvas")
    platform = {"lms": "canvas"}.get(args.format, args.format)
    if platform != "csv":
        target = out.parent / "gradescope" if platform == "gradescope" else out.with_name(f"{out.stem}-{platform}.csv")
        lines.append(_export(platform, out, target, args))
    return "\n".join(lines)


def _course_export(args: argparse.Namespace) -> str:
    return _export(args.to, Path(args.gradebook), Path(args.out), args)


def _import_roster(args: argparse.Namespace) -> str:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ValueError(f"out={args.out!r} exists; pass --force to import over that roster (the uids of students "
                         "still on the export stay as they were)")
    roster = Roster.from_export(args.export)
    out.parent.mkdir(parents=True, exist_ok=True)
    roster.write(out)
    rows = [{"uid": s.uid, "name": s.name, "email": s.email, "section": s.section} for s in roster.students]
    title = f"{len(roster.students)} students from a {roster.source} export; wrote {out}"
    return str(Table(rows, columns=["uid", "name", "email", "section"], title=title))


def _keys(args: argparse.Namespace) -> str:
    secret = read_secret(args.secret_file)
    roster = _roster(args.roster, args.course)
    if roster is not None and args.students:
        raise ValueError(f"students={args.students!r}: this course has a roster ({args.roster or 'roster.csv'}), and "
                         "keys derive from its uids; run `scalebook course keys --secret-file ... --roster roster.csv` "
                         "without names")
    if roster is None and not args.students:
        raise ValueError("name the students, or give --roster roster.csv (`scalebook course roster` makes one)")
    rows = ([{"uid": s.uid, "name": s.name, "email": s.email, "key": student_key(secret, s.uid)}
             for s in roster.students] if roster else
            [{"uid": n, "key": student_key(secret, n)} for n in args.students])
    if args.out:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # keys are as private as the secret
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return str(Table(rows, columns=list(rows[0]), title="each student's key: sb.setup(student=<uid>, key=<key>)"))


def question_visibility(text: str) -> tuple[str, str]:
    """One question's own visibility on Gradescope, `QID=WHEN` ('01.3=hidden'), for --question-visibility."""
    qid, _, when = text.partition("=")
    if when not in VISIBILITIES:
        raise argparse.ArgumentTypeError(f"{text!r} is not QID=WHEN with WHEN one of {', '.join(VISIBILITIES)}")
    return qid.strip(), when


def _zip(args: argparse.Namespace) -> str:
    path = autograder_zip(Path(args.out), args.problem_set, root=Path(args.course) if args.course else None,
                          secret=read_secret(args.secret_file), hint_cost=args.hint_cost, visibility=args.visibility,
                          timeout=args.timeout, questions=dict(args.question_visibility or []),
                          roster=_roster(args.roster, args.course))
    return f"wrote {path}: upload it as the autograder of {args.problem_set} on Gradescope"


def _course_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--secret-file", help="file whose first line is the course secret (variants per student)")
    parser.add_argument("--hint-cost", type=fraction, default=0.0,
                        help="fraction of a question's points each hint taken costs (default 0)")


def _course_folder(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", metavar="DIR",
                        help="the course's folder, holding solutions/ (default: here, else this package's checkout)")


def add_commands(sub: Any) -> None:
    """Add `grade` and `course` to the `scalebook` command's subparsers `sub`."""
    grader = sub.add_parser("grade", help="grade a folder of submitted exercise notebooks into a CSV gradebook")
    grader.add_argument("submissions", help="folder of <student>__NN_slug.ipynb files or per-student folders")
    grader.add_argument("--out", default="gradebook.csv", type=gradebook_path,
                        help="CSV to write (its folder is created; feedback/ and reasoning/ go beside it)")
    grader.add_argument("--timeout", type=seconds, default=120, help="seconds allowed per cell (default 120)")
    grader.add_argument("--jobs", type=count, default=None,
                        help=f"notebooks graded at once (default: the CPUs this process may use, {cores()} here)")
    grader.add_argument("--force", action="store_true",
                        help="overwrite an existing gradebook at --out (its manual points are kept)")
    grader.add_argument("--student", action="append", metavar="NAME",
                        help="regrade this student's files only, into the gradebook at --out (repeat per student)")
    grader.add_argument("--no-sandbox", action="store_true",
                        help="run notebooks without a sandbox (trusted work only; every row says so)")
    grader.add_argument("--format", default="csv", type=one_of(["csv", *exports.PLATFORMS, "lms"]), metavar="FORMAT",
                        help="also write what canvas, moodle or gradescope imports, from the gradebook written")
    grader.add_argument("--roster", help="the course's roster.csv (default: the course folder's, if any): each file "
                                         "is filed under the student it names, or reported unmatched")
    _course_options(grader)
    _course_folder(grader)
    grader.set_defaults(run=_grade)
    course = sub.add_parser("course", help="set up a course: students' keys, Gradescope's autograder zip")
    what = course.add_subparsers(dest="course_command", required=True)
    keys = what.add_parser("keys", help="each student's key (give it to them for sb.setup(student=, key=))")
    keys.add_argument("--secret-file", required=True, help="file whose first line is the course secret")
    keys.add_argument("--roster", help="the course's roster.csv (default: the course folder's, if any)")
    keys.add_argument("--out", type=new_file, help="also write the keys to this CSV (readable by you alone)")
    keys.add_argument("students", nargs="*", help="without a roster: the students' names, as their files name them")
    _course_folder(keys)
    keys.set_defaults(run=_keys)
    roster = what.add_parser("roster", help="import the class list: Canvas's gradebook export, Moodle's "
                                            "participants export or a Gradescope roster")
    roster.add_argument("export", help="the CSV the platform exported")
    roster.add_argument("--out", default="roster.csv", help="the course's roster to write (default: roster.csv)")
    roster.add_argument("--force", action="store_true", help="import over an existing roster")
    roster.set_defaults(run=_import_roster)
    gradescope = what.add_parser("gradescope-zip", help="build Gradescope's autograder zip for one problem set")
    gradescope.add_argument("problem_set", help="the problem set, e.g. 01_rooflines (run in the repository)")
    gradescope.add_argument("--out", default="autograder.zip", type=new_file, help="zip to write")
    gradescope.add_argument("--visibility", default="visible", type=one_of(VISIBILITIES), metavar="WHEN",
                            help="when students see the tests: " + ", ".join(VISIBILITIES))
    gradescope.add_argument("--question-visibility", action="append", type=question_visibility, metavar="QID=WHEN",
                            help="one question's own visibility, e.g. 01.16=after_published (repeat per question)")
    gradescope.add_argument("--roster", help="the course's roster.csv or the platform's export (default: the "
                                             "course folder's roster.csv, if any)")
    gradescope.add_argument("--timeout", type=seconds, default=120, help="seconds allowed per cell (default 120)")
    _course_options(gradescope)
    _course_folder(gradescope)
    gradescope.set_defaults(run=_zip)
    export = what.add_parser("export", help="turn a gradebook into what Canvas, Moodle or Gradescope imports")
    export.add_argument("--gradebook", required=True, help="the gradebook CSV `scalebook grade` wrote")
    export.add_argument("--to", required=True, type=one_of(exports.PLATFORMS), metavar="PLATFORM",
                        help="canvas, moodle or gradescope")
    export.add_argument("--out", required=True, type=gradebook_path,
                        help="the CSV to write (gradescope: a folder); its folder is created")
    export.add_argument("--roster", help="the course's roster.csv or the platform's export (default: the course's)")
    export.add_argument("--assignment", action="append", type=assignment, metavar="SET=TITLE",
                        help="the platform's assignment for a problem set, e.g. 05='Problem set 5 (48213)'")
    _course_folder(export)
    export.set_defaults(run=_course_export)
