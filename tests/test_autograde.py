"""The autograder on synthetic submissions: full marks, zero, a timeout, a corrupt file; submissions untouched."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from scalebook.autograde import find_submissions, grade, question_points

ROOT = Path(__file__).resolve().parents[1]
SETS = sorted(p.stem for p in (ROOT / "solutions").glob("*.md"))


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict, dict]:
    """Per problem set: a correct submission (the solutions), an empty one (the exercise) and one that loops
    forever; plus a corrupt file and a file with an unrecognisable name. Graded once for the module."""
    subs = tmp_path_factory.mktemp("submissions")
    for name in SETS:
        (subs / f"ada__{name}.ipynb").write_bytes((ROOT / "solutions" / f"{name}.ipynb").read_bytes())
        (subs / f"bo__{name}.ipynb").write_bytes((ROOT / "exercises" / f"{name}.ipynb").read_bytes())
        loop = json.loads((ROOT / "exercises" / f"{name}.ipynb").read_text())
        loop["cells"].insert(3, {"cell_type": "code", "execution_count": None, "id": "forever", "metadata": {},
                                 "outputs": [], "source": ["while True:\n", "    pass"]})
        (subs / f"cy__{name}.ipynb").write_text(json.dumps(loop))
    (subs / "di__01_rooflines.ipynb").write_text("this is not a notebook")
    loud = json.loads((ROOT / "solutions" / "01_rooflines.ipynb").read_text())
    loud["cells"].insert(3, {"cell_type": "code", "execution_count": None, "id": "loud", "metadata": {},
                             "outputs": [], "source": ["print('x' * 20_000_000)"]})
    (subs / "ed__01_rooflines.ipynb").write_text(json.dumps(loud))
    (subs / "homework.txt").write_text("wrong file")
    before = _digest(subs)
    out = subs.parent / "out" / "gradebook.csv"
    grade(subs, out, root=ROOT, timeout=8, jobs=2)
    with open(out, newline="") as f:
        rows = {(r["student"], r["problem set"] or r["file"]): r for r in csv.DictReader(f)}
    return out, rows, before, _digest(subs)


@pytest.mark.slow
@pytest.mark.parametrize("problem_set", SETS)
def test_the_solutions_earn_full_marks_and_the_blank_exercise_zero(graded, problem_set):
    _, rows, _, _ = graded
    possible = sum(question_points(problem_set, ROOT).values())
    assert rows[("ada", problem_set)]["status"] == "graded"
    assert int(rows[("ada", problem_set)]["total"]) == possible > 0
    assert int(rows[("bo", problem_set)]["total"]) == 0 and rows[("bo", problem_set)]["status"] == "graded"


@pytest.mark.slow
@pytest.mark.parametrize("problem_set", SETS)
def test_an_endless_loop_times_out_with_zero(graded, problem_set):
    _, rows, _, _ = graded
    assert rows[("cy", problem_set)]["status"] == "timeout" and int(rows[("cy", problem_set)]["total"]) == 0


@pytest.mark.slow
def test_bad_files_get_a_row_not_a_crash(graded):
    out, rows, before, after = graded
    assert rows[("di", "01_rooflines")]["status"] == "corrupt"
    huge = rows[("ed", "01_rooflines")]  # a 20 MB print does not stop the grading
    assert huge["status"] == "graded" and int(huge["total"]) == int(huge["possible"])
    assert rows[("homework", "homework.txt")]["status"] == "unrecognised"
    assert before == after  # the grader worked on copies
    feedback = (out.parent / "feedback" / "bo.md").read_text()
    assert "not answered" in feedback and "01_rooflines" in feedback


def test_submissions_are_found_flat_or_per_student(tmp_path):
    (tmp_path / "eve").mkdir()
    (tmp_path / "eve" / "02_tpus.ipynb").write_text("{}")
    (tmp_path / "fay__03_sharding.ipynb").write_text("{}")
    found = {(s.student, s.problem_set) for s in find_submissions(tmp_path)}
    assert found == {("eve", "02_tpus"), ("fay", "03_sharding")}


def test_points_are_the_stars_of_each_heading():
    points = question_points("01_rooflines", ROOT)
    assert points["01.1"] == 1 and points["01.9"] == 3 and len(points) == 11


def test_grader_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        find_submissions(tmp_path / "nope")
    with pytest.raises(ValueError, match="timeout"):
        grade(tmp_path, tmp_path / "g.csv", root=ROOT, timeout=0)
    with pytest.raises(ValueError, match="solutions/"):
        grade(tmp_path, tmp_path / "g.csv", root=tmp_path)
