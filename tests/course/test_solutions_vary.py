"""The published solutions are right for every student: each solution notebook, run under a student's key, earns a
✓ on every problem, because its solution code computes from the student's values (`p = sb.problem(qid)`) rather
than the numbers of the text.

A teacher grades "a correct notebook of a varied student" (the Gradescope test, the class walkthrough), and the
simplest correct notebook is the solution run as that student: `sb.setup(student=..., key=...)`. Each problem set's
solution notebook (its MyST source, `solutions/NN_x.md`) is run here cell by cell in one namespace, as a kernel
would, once per generated student (`student_key(secret, name)`), with the setup cell naming the student; every
`sb.check` is compared with the key for that student's values. The book's own values stay nbval's job (the same
notebooks under `make test`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

import scalebook
from scalebook.compare import ExpectationError
from scalebook.course import variants
from scalebook.course.answers import check
from scalebook.course.variants import enrol, student_key

os.environ.setdefault("JAX_NUM_CPU_DEVICES", "8")  # as the Makefile sets it: chapter 10's cells shard over 8 devices

pytestmark = pytest.mark.slow  # runs every solution notebook's code, JAX programs included, three times

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.md"))
SECRET = "course secret of the solutions' test class"
STUDENTS = ("Ada Lovelace", "Grace Hopper", "Edsger Dijkstra")
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
SETUP = "sb.setup(quiet=True)"
CHECKED = re.compile(r"""sb\.check\(\s*["']([^"']+)["']""")


def code_cells(path: Path) -> list[str]:
    """The code cells of a notebook's MyST source in order, cell options dropped; cells tagged `remove-cell` (the
    install cell, IPython's %pip) are left out."""
    cells = []
    for cell in CELL.findall(path.read_text(encoding="utf-8")):
        options = [line for line in cell.splitlines() if line.startswith(":")]
        if not any("remove-cell" in line for line in options):
            cells.append("\n".join(line for line in cell.splitlines() if not line.startswith(":")))
    return cells


def as_student(cells: list[str], student: str, key: str) -> list[str]:
    """`cells` with the setup cell naming `student` and their `key`, as a student in a course starts."""
    named = f"sb.setup(quiet=True, student={student!r}, key={key!r})"
    assert sum(SETUP in cell for cell in cells) == 1, f"exactly one cell must call {SETUP}"
    return [cell.replace(SETUP, named) for cell in cells]


def run_as(path: Path, student: str) -> tuple[dict[str, str], set[str]]:
    """Run `path`'s code cells as `student` in one namespace; return ({qid: why it is ✗}, the qids checked).

    A cell that raises is a ✗ for the problem it checks (or for the cell, if it checks none); the run goes on, as
    `Run All` with errors allowed would."""
    failed: dict[str, str] = {}
    checked: set[str] = set()

    def graded(qid: str, answer: Any) -> Any:
        checked.add(qid)
        try:
            return check(qid, answer)
        except ExpectationError as err:
            failed[qid] = str(err).splitlines()[0]
            return None

    key = student_key(SECRET, student)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    real = scalebook.check
    scalebook.check = graded
    try:
        for number, cell in enumerate(as_student(code_cells(path), student, key), 1):
            try:
                exec(compile(cell, f"{path.name}, cell {number}", "exec"), namespace)  # noqa: S102
            except Exception as err:  # noqa: BLE001 - a crash is a ✗, reported with its cell
                named = CHECKED.search(cell)
                failed[named[1] if named else f"cell {number}"] = f"{type(err).__name__}: {err}"[:300]
    finally:
        scalebook.check = real
        enrol(None)
    return failed, checked


@pytest.fixture(autouse=True)
def _outside_a_course(monkeypatch):
    """No course secret, grader variant or course name leaks in from the environment: the key alone decides."""
    for name in (variants.SECRET, variants.VARIANT, variants.COURSE):
        monkeypatch.delenv(name, raising=False)


def test_the_harness_names_the_student_and_counts_an_answer_for_the_books_values_wrong(tmp_path):
    notebook = tmp_path / "01_rooflines.md"
    cells = ["import scalebook as sb\nrt = sb.setup(quiet=True)",
             'p = sb.problem("01.1")\nanswer = sb.roofline.estimate(3e12, 2.4e9, "v6e").upper\n'
             'sb.check("01.1", answer)',
             'p = sb.problem("01.3")\nanswer = sb.roofline.estimate(5 * p.T * p.V, 4 * p.T * p.V, "h100").time\n'
             'sb.check("01.3", answer)',
             "1 / 0"]
    notebook.write_text("".join(f"```{{code-cell}} ipython3\n{cell}\n```\n\n" for cell in cells), encoding="utf-8")
    failed, checked = run_as(notebook, STUDENTS[0])
    assert checked == {"01.1", "01.3"} and set(failed) == {"01.1", "cell 4"}
    assert "book's values" in failed["01.1"] and "ZeroDivisionError" in failed["cell 4"]
    assert variants.enrolled() is None  # the run leaves the session in self-study


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_the_solution_notebook_is_right_for_every_student(path: Path):
    wrong = {}
    for student in STUDENTS:
        failed, checked = run_as(path, student)
        registered = set(CHECKED.findall(path.read_text(encoding="utf-8")))
        assert checked == registered or failed, f"{path.name}: checks {sorted(registered - checked)} never ran"
        wrong.update({f"{student}, {qid}": why for qid, why in failed.items()})
    assert not wrong, f"{path.name}: {len(wrong)} ✗ under student keys:\n  " + "\n  ".join(
        f"{who}: {why}" for who, why in sorted(wrong.items()))
