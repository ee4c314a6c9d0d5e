"""The teacher's commands: grading a class and setting up a course.

    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs N] [--force] [--no-sandbox]
                    [--secret-file course.key] [--hint-cost 0.25] [--format csv|gradescope|lms]
    scalebook course keys --secret-file course.key alice bob ...     # each student's key for sb.setup(key=...)
    scalebook course gradescope-zip 01_rooflines --out autograder.zip [--secret-file course.key] [--hint-cost 0.25]
                                    [--visibility after_published] [--question-visibility 01.16=hidden]
                                    [--roster roster.csv]

The course secret lives in a file the teacher keeps (`--secret-file`); with it every student has their own
inputs (`scalebook.course.variants`), without it everyone has the book's. `--format gradescope` writes one
`results.json` per graded file (`gradescope/<file>.json` beside the gradebook); `--format lms` writes a CSV
with a row per student for Canvas or Moodle (`<gradebook>-lms.csv`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..arguments import count, new_file, one_of, seconds
from ..tables import Table
from .grader.autograde import cores, grade
from .grader.gradebook import feedback_name
from .grader.submissions import Result
from .gradescope import VISIBILITIES, autograder_zip, lms_csv, results_json
from .variants import student_key

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


def _export(results: list[Result], out: Path, fmt: str) -> str:
    """Write the export `fmt` of `results` beside the gradebook `out`; return what was written."""
    if fmt == "lms":
        return str(lms_csv(results, out.with_name(f"{out.stem}-lms.csv")))
    if fmt == "gradescope":
        folder = out.parent / "gradescope"
        folder.mkdir(exist_ok=True)
        for r in results:
            if r.possible:
                name = f"{feedback_name(r.submission.student)[:-3]}-{r.submission.problem_set}.json"
                (folder / name).write_text(json.dumps(results_json(r), indent=1), encoding="utf-8")
        return f"{folder}/"
    return ""


def _grade(args: argparse.Namespace) -> str:
    written: list[str] = []
    out = Path(args.out)
    table = grade(Path(args.submissions), out, timeout=args.timeout, jobs=args.jobs, sandboxed=not args.no_sandbox,
                  force=args.force, secret=read_secret(args.secret_file), hint_cost=args.hint_cost,
                  on_results=lambda results: written.append(_export(results, out, args.format)))
    extra = f" and {written[0]}" if written and written[0] else ""
    return f"{table}\n\nwrote {args.out}{extra} and feedback/ beside it"


def _keys(args: argparse.Namespace) -> str:
    secret = read_secret(args.secret_file)
    rows = [{"student": s, "key": student_key(secret, s)} for s in args.students]
    return str(Table(rows, columns=["student", "key"], title="each student's key: sb.setup(student=..., key=...)"))


def question_visibility(text: str) -> tuple[str, str]:
    """One question's own visibility on Gradescope, `QID=WHEN` ('01.3=hidden'), for --question-visibility."""
    qid, _, when = text.partition("=")
    if when not in VISIBILITIES:
        raise argparse.ArgumentTypeError(f"{text!r} is not QID=WHEN with WHEN one of {', '.join(VISIBILITIES)}")
    return qid.strip(), when


def _zip(args: argparse.Namespace) -> str:
    path = autograder_zip(Path(args.out), args.problem_set, secret=read_secret(args.secret_file),
                          hint_cost=args.hint_cost, visibility=args.visibility, timeout=args.timeout,
                          questions=dict(args.question_visibility or []),
                          roster=Path(args.roster) if args.roster else None)
    return f"wrote {path}: upload it as the autograder of {args.problem_set} on Gradescope"


def _course_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--secret-file", help="file whose first line is the course secret (variants per student)")
    parser.add_argument("--hint-cost", type=fraction, default=0.0,
                        help="fraction of a question's points each hint taken costs (default 0)")


def add_commands(sub: Any) -> None:
    """Add `grade` and `course` to the `scalebook` command's subparsers `sub`."""
    grader = sub.add_parser("grade", help="grade a folder of submitted exercise notebooks into a CSV gradebook")
    grader.add_argument("submissions", help="folder of <student>__NN_slug.ipynb files or per-student folders")
    grader.add_argument("--out", default="gradebook.csv", type=new_file,
                        help="CSV to write (feedback/ goes beside it)")
    grader.add_argument("--timeout", type=seconds, default=120, help="seconds allowed per cell (default 120)")
    grader.add_argument("--jobs", type=count, default=None,
                        help=f"notebooks graded at once (default: the CPUs this process may use, {cores()} here)")
    grader.add_argument("--force", action="store_true", help="overwrite an existing gradebook at --out")
    grader.add_argument("--no-sandbox", action="store_true",
                        help="run notebooks without a sandbox (trusted work only; every row says so)")
    grader.add_argument("--format", default="csv", type=one_of(["csv", "gradescope", "lms"]), metavar="FORMAT",
                        help="also write: gradescope (a results.json per file) or lms (a row per student)")
    _course_options(grader)
    grader.set_defaults(run=_grade)
    course = sub.add_parser("course", help="set up a course: students' keys, Gradescope's autograder zip")
    what = course.add_subparsers(dest="course_command", required=True)
    keys = what.add_parser("keys", help="each student's key (give it to them for sb.setup(student=, key=))")
    keys.add_argument("--secret-file", required=True, help="file whose first line is the course secret")
    keys.add_argument("students", nargs="+", help="the students' names, as their files will name them")
    keys.set_defaults(run=_keys)
    gradescope = what.add_parser("gradescope-zip", help="build Gradescope's autograder zip for one problem set")
    gradescope.add_argument("problem_set", help="the problem set, e.g. 01_rooflines (run in the repository)")
    gradescope.add_argument("--out", default="autograder.zip", type=new_file, help="zip to write")
    gradescope.add_argument("--visibility", default="visible", type=one_of(VISIBILITIES), metavar="WHEN",
                            help="when students see the tests: " + ", ".join(VISIBILITIES))
    gradescope.add_argument("--question-visibility", action="append", type=question_visibility, metavar="QID=WHEN",
                            help="one question's own visibility, e.g. 01.16=after_published (repeat per question)")
    gradescope.add_argument("--roster", help="the course's roster.csv (default: roster.csv here, if any)")
    gradescope.add_argument("--timeout", type=seconds, default=120, help="seconds allowed per cell (default 120)")
    _course_options(gradescope)
    gradescope.set_defaults(run=_zip)
