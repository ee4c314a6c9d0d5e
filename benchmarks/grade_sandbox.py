"""Time a class's grading in sandboxes against the unsandboxed grader: what bubblewrap costs.

    python benchmarks/grade_sandbox.py [--students 20] [--jobs 2] [--timeout 120] [--out benchmarks/out]

Builds a class of honest submissions (the solution notebooks, cycling through the problem sets), grades it
with `--jobs` workers once in sandboxes and once with `sandboxed=False`, and writes `grade_sandbox.md` to
--out: both wall times, the ratio (the target is at most 1.5x) and the rows where the two gradebooks differ.
A report, not a gate: the time depends on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import tempfile
import time
from pathlib import Path

from scalebook.course.grader.autograde import grade

ROOT = Path(__file__).resolve().parents[1]


def make_class(folder: Path, students: int) -> None:
    """`students` honest submissions, `student<i>__<set>.ipynb`, the problem sets' solutions in turn."""
    sets = sorted(p.stem for p in (ROOT / "solutions").glob("*.md"))
    for i in range(students):
        name = sets[i % len(sets)]
        shutil.copyfile(ROOT / "solutions" / f"{name}.ipynb", folder / f"student{i:02d}__{name}.ipynb")


def timed_grade(folder: Path, out: Path, jobs: int, timeout: float, sandboxed: bool) -> tuple[float, list[dict]]:
    """Grade `folder` into `out`; return the wall time in seconds and the gradebook's rows."""
    start = time.perf_counter()
    grade(folder, out, root=ROOT, timeout=timeout, jobs=jobs, sandboxed=sandboxed)
    seconds = time.perf_counter() - start
    with open(out, newline="", encoding="utf-8") as f:
        return seconds, list(csv.DictReader(f))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120, help="seconds per cell")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        make_class(folder, args.students)
        plain_s, plain = timed_grade(folder, Path(tmp) / "plain.csv", args.jobs, args.timeout, sandboxed=False)
        boxed_s, boxed = timed_grade(folder, Path(tmp) / "boxed.csv", args.jobs, args.timeout, sandboxed=True)
    def marks(rows: list[dict]) -> list[tuple[str, str, str]]:
        return [(r["file"], r["total"], r["status"]) for r in rows]

    differ = sorted(set(marks(plain)) ^ set(marks(boxed)))
    ratio = boxed_s / plain_s
    lines = [f"# Grading {args.students} honest submissions with --jobs {args.jobs}", "",
             "| grader | wall time (s) |", "| --- | --- |",
             f"| --no-sandbox | {plain_s:.1f} |", f"| bubblewrap sandboxes | {boxed_s:.1f} |", "",
             f"Sandboxed / unsandboxed: **{ratio:.2f}x** (target at most 1.5x). "
             f"Full marks sandboxed: {sum(r['total'] == r['possible'] for r in boxed)} of {len(boxed)}. "
             f"Rows where the gradebooks differ (file, total, status): {differ or 'none'}."]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "grade_sandbox.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
