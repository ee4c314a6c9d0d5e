"""Grade a folder of submitted exercise notebooks: one command for a course, robust to whatever comes in.

    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2]

A submission is `<student>__NN_slug.ipynb` in the folder, or `NN_slug.ipynb` inside a per-student folder.
Each runs on a copy, in a fresh kernel in its own process, with a time limit. Every `sb.check(qid, answer)`
it reaches reports right / wrong / unanswered to a log file named by `grading.GRADE_LOG`; the expected
answers come from the answer key (`scalebook.problems`, written from the solutions), never from the
submission. A question scores its points (the ★ count in its heading in `solutions/`) when right.
A crash, a timeout, a corrupt file or a missing question gives a row with a status and zero for what could
not be graded; the grader itself never fails on a submission, and never writes to one.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .grading import GRADE_LOG
from .tables import Table

__all__ = ["Submission", "Result", "find_submissions", "question_points", "grade_one", "grade", "main"]

_NAME = re.compile(r"^(?:(?P<student>.+?)__)?(?P<set>\d\d_[a-z0-9_]+)\.ipynb$")
_HEADING = re.compile(r"^## Problem (\d+) (★+)", re.M)


@dataclass(frozen=True)
class Submission:
    """One submitted file: who sent it, which problem set it claims to be (None if unrecognisable), where."""

    student: str
    problem_set: str | None
    path: Path


@dataclass
class Result:
    """The grade of one submission: points per question, and a status ('graded', 'timeout', 'error' ...)."""

    submission: Submission
    status: str
    outcomes: dict[str, str] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
    possible: dict[str, int] = field(default_factory=dict)
    detail: str = ""

    @property
    def total(self) -> int:
        return sum(self.points.values())


def find_submissions(folder: Path) -> list[Submission]:
    """List the submissions in `folder`: flat `<student>__NN_slug.ipynb` files and per-student folders."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"submissions={str(folder)!r} is not a folder")
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        rel = path.relative_to(folder)
        match = _NAME.match(path.name)
        student = (match and match["student"]) or (rel.parts[0] if len(rel.parts) > 1 else path.stem)
        found.append(Submission(student, match["set"] if match else None, path))
    return found


def question_points(problem_set: str, root: Path) -> dict[str, int]:
    """Return {qid: points} of a problem set: one point per ★ in each question's heading in `solutions/`."""
    source = Path(root) / "solutions" / f"{problem_set}.md"
    if not source.exists():
        raise ValueError(f"problem set {problem_set!r} has no solutions/{problem_set}.md")
    prefix = problem_set.split("_")[0]
    return {f"{prefix}.{n}": len(stars) for n, stars in _HEADING.findall(source.read_text(encoding="utf-8"))}


def _execute(notebook: Path, log: Path, timeout: float) -> str:
    """Run `notebook` in a child process with a fresh kernel; return 'graded', 'error' or 'timeout'."""
    env = {**os.environ, GRADE_LOG: str(log), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    command = [sys.executable, "-m", "scalebook.autograde", "_run", str(notebook), str(timeout)]
    try:
        done = subprocess.run(command, env=env, cwd=notebook.parent, capture_output=True, text=True,
                              timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return "timeout"
    return {0: "graded", 3: "timeout"}.get(done.returncode, "error")


def _run_in_kernel(notebook: str, timeout: str) -> int:
    """Child process: execute every cell (errors allowed) with a per-cell time limit; outputs are discarded."""
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=float(timeout), allow_errors=True, kernel_name="python3",
                                     resources={"metadata": {"path": str(Path(notebook).parent)}})
    try:
        client.execute()
    except nbclient.exceptions.CellTimeoutError:
        return 3
    except Exception:  # noqa: BLE001 - a kernel that dies is the submission's problem, reported as an error
        return 1
    return 0


def grade_one(submission: Submission, root: Path, timeout: float = 120) -> Result:
    """Grade one submission on a copy; never raises for anything the submission contains."""
    if submission.problem_set is None:
        return Result(submission, "unrecognised", detail="name it <student>__NN_slug.ipynb")
    try:
        possible = question_points(submission.problem_set, root)
    except ValueError as err:
        return Result(submission, "unknown problem set", detail=str(err))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / submission.path.name
        shutil.copyfile(submission.path, copy)
        try:
            readable = isinstance(json.loads(copy.read_text(encoding="utf-8"))["cells"], list)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            readable = False
        if not readable:
            return Result(submission, "corrupt", possible=possible, points=dict.fromkeys(possible, 0),
                          detail="not a readable notebook")
        log = Path(tmp) / "checks.jsonl"
        log.touch()
        status = _execute(copy, log, timeout)
        outcomes = {}
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry["qid"] in possible and outcomes.get(entry["qid"]) != "right":
                outcomes[entry["qid"]] = entry["outcome"]
    for qid in possible:
        outcomes.setdefault(qid, "missing")
    points = {q: (p if outcomes[q] == "right" else 0) for q, p in possible.items()}
    return Result(submission, status, outcomes, points, possible)


def _feedback(student: str, results: list[Result]) -> str:
    lines = [f"# Feedback for {student}", ""]
    hints = {"right": "✓", "wrong": "✗ wrong — rerun the cell to see the expected value and compare units",
             "unanswered": "… not answered — replace the `...`", "missing": "? never checked — did the cell run?"}
    for r in results:
        name = r.submission.problem_set or r.submission.path.name
        lines += [f"## {name}: {r.total} / {sum(r.possible.values())} points ({r.status})", ""]
        if r.detail:
            lines.append(f"{r.detail}\n")
        lines += [f"- {q}: {r.points.get(q, 0)}/{p} {hints[r.outcomes.get(q, 'missing')]}"
                  for q, p in r.possible.items()]
        lines.append("")
    return "\n".join(lines)


def grade(folder: Path, out: Path, root: Path | None = None, timeout: float = 120, jobs: int = 1) -> Table:
    """Grade every submission in `folder`; write the CSV gradebook `out` and `feedback/<student>.md` beside it."""
    if timeout <= 0 or jobs < 1:
        raise ValueError(f"timeout must be positive and jobs at least 1, got timeout={timeout!r}, jobs={jobs!r}")
    root = Path(root) if root else Path.cwd()
    if not (root / "solutions").is_dir():
        raise ValueError(f"root={str(root)!r} has no solutions/ folder (run from the repository root)")
    submissions = find_submissions(folder)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda s: grade_one(s, root, timeout), submissions))
    rows = [{"student": r.submission.student, "problem set": r.submission.problem_set or "",
             "file": r.submission.path.name, **r.points, "total": r.total,
             "possible": sum(r.possible.values()), "status": r.status} for r in results]
    columns = ["student", "problem set", "file"] + sorted({q for r in results for q in r.possible},
                                                          key=lambda q: [int(x) for x in q.split(".")])
    columns += ["total", "possible", "status"]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    feedback = out.parent / "feedback"
    feedback.mkdir(exist_ok=True)
    for student in sorted({r.submission.student for r in results}):
        mine = [r for r in results if r.submission.student == student]
        (feedback / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', student)}.md").write_text(_feedback(student, mine))
    return Table(rows, columns=columns, title=f"gradebook: {len(rows)} submission(s)")


def main(argv: list[str] | None = None) -> int:
    """`python -m scalebook.autograde _run NOTEBOOK TIMEOUT` is the child process of `_execute`."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[0] == "_run":
        return _run_in_kernel(argv[1], argv[2])
    print("usage: scalebook grade SUBMISSIONS_DIR --out gradebook.csv", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
