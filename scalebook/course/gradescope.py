"""Grades where a course keeps them: Gradescope's autograder, and a CSV that Canvas or Moodle imports.

**Gradescope.** `autograder_zip(out, problem_set)` builds the zip Gradescope asks for (its "Autograder
Specifications": `setup.sh` and `run_autograder` at the zip's root, the zip unpacked into
`/autograder/source`): this package's source, the problem set's `solutions/` page (its ★ points) and a
`course.json` (the problem set, the course secret if any, the cost per hint, the tests' visibility). For each
submission Gradescope runs `run_autograder`, which runs `python -m scalebook.course.gradescope /autograder`: the first
notebook in `/autograder/submission` is graded by `autograde.grade_one` (in a sandbox where bubblewrap works,
which `setup.sh` installs) for the student `/autograder/submission_metadata.json` names, and the result is
written to `/autograder/results/results.json` in Gradescope's format (`results_json`): a test per question
with its score, max_score, status, output (✓ or ✗ with the likely slip and a hint, never the expected value)
and visibility.

**Canvas and Moodle.** `lms_csv(results, path)` writes one row per student: the total, a column per problem
set and one per question, which both import as a gradebook (matched on the student column).
"""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
import zipfile
from pathlib import Path
from typing import Any

from .grader import sandbox
from .grader.autograde import _Key, grade_one, question_points
from .grader.gradebook import cell, clean
from .grader.submissions import Result, Submission

__all__ = ["VISIBILITIES", "results_json", "run", "autograder_zip", "lms_csv", "main"]

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's, least visible first
_VERDICTS = {"right": "✓ right", "wrong": "✗ wrong", "unanswered": "… not answered (still `...`)",
             "missing": "? never checked: did the cell run?", "no key": "! not graded: tell your teacher"}
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
apt-get install -y bubblewrap python3-pip
python3 -m pip install --break-system-packages /autograder/source/course nbclient nbformat ipykernel
"""
RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission, in /autograder; the root and the Python can be overridden for tests.
set -euo pipefail
exec "${SCALEBOOK_PYTHON:-python3}" -m scalebook.course.gradescope "${SCALEBOOK_AUTOGRADER_ROOT:-/autograder}"
"""


def _check_visibility(visibility: str) -> str:
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility={visibility!r} is not one of Gradescope's: {', '.join(VISIBILITIES)}")
    return visibility


def _test(r: Result, qid: str, visibility: str) -> dict[str, Any]:
    """One question as a Gradescope test: name, number, score, max_score, status, output, visibility."""
    outcome = r.outcomes.get(qid, "missing")
    output = _VERDICTS[outcome] + (f": {r.advice[qid]}" if r.advice.get(qid) else "")
    taken = r.hints.get(qid, 0)
    output += f" ({taken} hint{'s' * (taken > 1)} taken)" if taken else ""
    return {"name": f"Problem {qid}", "number": qid, "score": r.points.get(qid, 0), "max_score": r.possible[qid],
            "status": "passed" if outcome == "right" else "failed", "output": clean(output),
            "visibility": visibility}


def results_json(r: Result, visibility: str = "visible") -> dict[str, Any]:
    """Gradescope's results.json for one graded submission: the total, a line on the run, a test per question."""
    _check_visibility(visibility)
    line = f"{r.submission.problem_set or 'submission'}: {r.total} / {sum(r.possible.values())} points ({r.status})"
    crashed = "".join(f"\n{clean(e)}" for e in r.errors)
    return {"score": r.total, "output": clean(line + (f"; {r.detail}" if r.detail else "")) + crashed,
            "visibility": visibility, "stdout_visibility": "hidden",
            "tests": [_test(r, q, visibility) for q in r.possible]}


def _student(root: Path) -> str:
    """The submitter Gradescope names in submission_metadata.json (their email, else their name), or 'student'."""
    try:
        users = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))["users"]
        return str(users[0].get("email") or users[0]["name"])
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return "student"


def run(root: Path) -> dict[str, Any]:
    """Grade the submission in Gradescope's layout under `root` (`/autograder`): read `source/course.json`, grade
    the first notebook in `submission/`, write and return `results/results.json`."""
    root = Path(root)
    course = root / "source" / "course"
    config = json.loads((course / "course.json").read_text(encoding="utf-8"))
    notebooks = sorted((root / "submission").glob("**/*.ipynb"))
    problem_set = config["problem_set"]
    if notebooks:
        submission = Submission(_student(root), problem_set, notebooks[0])
        sandboxed = sandbox.available() is None and not config.get("no_sandbox", False)
        result = grade_one(submission, course, float(config.get("timeout", 120)), sandboxed,
                           key=_Key(config.get("secret")), hide=(str(course.resolve()), str(root / "results")),
                           hint_cost=float(config.get("hint_cost", 0.0)))
    else:
        possible = question_points(problem_set, course)
        result = Result(Submission(_student(root), problem_set, root / "submission"), "no notebook",
                        possible=possible, points=dict.fromkeys(possible, 0), detail="upload your .ipynb")
    results = results_json(result, config.get("visibility", "visible"))
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


def _package_files(package: Path) -> list[Path]:
    """The package's source files, caches left out."""
    return sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".so"))


def _add(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o755 if executable else 0o644) << 16 | stat.S_IFREG << 16
    archive.writestr(info, text)


def autograder_zip(out: Path, problem_set: str, root: Path | None = None, secret: str | None = None,
                   hint_cost: float = 0.0, visibility: str = "visible", timeout: float = 120) -> Path:
    """Write Gradescope's autograder zip for `problem_set` ('01_rooflines') to `out` and return its path: `setup.sh`
    and `run_autograder` at the root, `course/` holding this package, `solutions/<problem_set>.md` and `course.json`
    (with the course `secret` when variants are on, so the zip is the teacher's to keep)."""
    root = Path(root) if root else Path.cwd()
    question_points(problem_set, root)  # the problem set exists and has points
    _check_visibility(visibility)
    if not 0 <= hint_cost <= 1:
        raise ValueError(f"hint_cost={hint_cost!r} must be a fraction of a question's points, 0 to 1")
    package = Path(__file__).resolve().parents[1]  # scalebook/, above this wing
    config = {"problem_set": problem_set, "hint_cost": hint_cost, "visibility": visibility, "timeout": timeout,
              **({"secret": secret} if secret else {})}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "setup.sh", SETUP_SH, executable=True)
        _add(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add(archive, "course/course.json", json.dumps(config, indent=1))
        _add(archive, f"course/solutions/{problem_set}.md", (root / "solutions" / f"{problem_set}.md").read_text())
        for name in ("pyproject.toml", "README.md"):
            _add(archive, f"course/{name}", (package.parent / name).read_text(encoding="utf-8"))
        for path in _package_files(package):
            archive.write(path, f"course/scalebook/{path.relative_to(package)}")
    return Path(out)


def lms_csv(results: list[Result], path: Path) -> Path:
    """Write one row per student (the total, an empty `reasoning` column for the points the teacher gives the
    reasoning by hand, a column per problem set, one per question) for Canvas or Moodle to import; a student's
    latest graded file of each set counts (superseded and refused rows are left out)."""
    counted = [r for r in results if r.submission.problem_set and r.possible and r.status != "superseded"]
    sets = sorted({r.submission.problem_set for r in counted})
    qids = sorted({q for r in counted for q in r.possible}, key=lambda q: [int(x) for x in q.split(".")])
    rows: dict[str, dict[str, Any]] = {}
    for r in counted:
        row = rows.setdefault(r.submission.student, {"student": cell(r.submission.student), "total": 0,
                                                      "reasoning": ""})
        row[r.submission.problem_set] = r.total
        row["total"] += r.total
        row.update({q: r.points.get(q, 0) for q in r.possible})
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["student", "total", "reasoning", *sets, *qids], restval=0)
        writer.writeheader()
        writer.writerows(rows[s] for s in sorted(rows))
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    """`python -m scalebook.course.gradescope ROOT`: grade the submission in Gradescope's layout under ROOT."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m scalebook.course.gradescope /autograder", file=sys.stderr)
        return 2
    results = run(Path(argv[0]))
    print(f"{results['score']} points; results.json written under {os.fspath(argv[0])}/results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
