"""Time the grading of a class: seconds of wall time per notebook, at the grader's default `--jobs`.

    python benchmarks/grade_class.py [--students 30] [--problem-set 01_rooflines] [--jobs N] [--no-sandbox]

Builds a class of `--students` honest submissions (the solution notebooks; by default the problem sets in turn,
so every set is in the class, JAX's included), grades it as `scalebook grade` does (in sandboxes, `--jobs`
defaulting to the CPUs this process may use) and prints the wall time, the seconds per notebook and how many
notebooks earned full marks. The target (issue #37) is at most 3 s per notebook for a 30-notebook class on a
2-core machine. A report, not a gate: the time depends on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import tempfile
import time
from pathlib import Path

from scalebook.course.grader import sandbox
from scalebook.course.grader.autograde import cores, grade

ROOT = Path(__file__).resolve().parents[1]


def make_class(folder: Path, students: int, problem_set: str | None) -> None:
    """`students` honest submissions, `student<i>__<set>.ipynb`: `problem_set`'s solutions, or every set's in turn."""
    sets = [problem_set] if problem_set else sorted(p.stem for p in (ROOT / "solutions").glob("*.md"))
    for i in range(students):
        name = sets[i % len(sets)]
        shutil.copyfile(ROOT / "solutions" / f"{name}.ipynb", folder / f"student{i:02d}__{name}.ipynb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--problem-set", help="grade this set's solutions only (default: every set in turn)")
    parser.add_argument("--jobs", type=int, default=None, help=f"notebooks at once (default: the grader's, {cores()})")
    parser.add_argument("--no-sandbox", action="store_true", help="run the notebooks as plain processes")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "class", Path(tmp) / "grades" / "gradebook.csv"
        folder.mkdir()
        make_class(folder, args.students, args.problem_set)
        start = time.perf_counter()
        grade(folder, out, root=ROOT, jobs=args.jobs, sandboxed=not args.no_sandbox)
        seconds = time.perf_counter() - start
        with open(out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    full = sum(r["total"] == r["possible"] and r["status"] == "graded" for r in rows)
    mode = "no sandbox" if args.no_sandbox else sandbox.backend()
    print(f"{len(rows)} notebooks ({args.problem_set or 'every problem set in turn'}) graded in {seconds:.1f} s "
          f"with --jobs {args.jobs or cores()} on {cores()} CPU(s), {mode}: {seconds / len(rows):.2f} s per notebook; "
          f"full marks {full} of {len(rows)}")


if __name__ == "__main__":
    main()
