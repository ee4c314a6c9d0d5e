"""Gradescope and the LMS: results.json holds only the fields Gradescope documents, its autograder zip grades the
solutions to full marks in a fake /autograder layout, and the teacher's commands build keys, zips and exports."""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from scalebook import cli
from scalebook.course.grader.submissions import Result, Submission
from scalebook.course.gradescope import VISIBILITIES, autograder_zip, lms_csv, results_json
from scalebook.course.variants import student_key

ROOT = Path(__file__).resolve().parents[2]
# The fields of results.json that Gradescope's "Autograder Specifications" page documents, and their types.
TOP_FIELDS = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
              "visibility": str, "stdout_visibility": str, "extra_data": dict, "tests": list, "leaderboard": list}
TEST_FIELDS = {"score": (int, float), "max_score": (int, float), "status": str, "name": str, "name_format": str,
               "number": str, "output": str, "output_format": str, "tags": list, "visibility": str,
               "extra_data": dict}


def _valid(results: dict) -> None:
    """Assert `results` uses only documented fields, each of its documented type, with legal values."""
    assert set(results) <= set(TOP_FIELDS) and "tests" in results
    for name, value in results.items():
        assert isinstance(value, TOP_FIELDS[name]), name
    assert results["visibility"] in VISIBILITIES and results["stdout_visibility"] in VISIBILITIES
    for test in results["tests"]:
        assert set(test) <= set(TEST_FIELDS) and {"score", "max_score", "name"} <= set(test)
        assert all(isinstance(v, TEST_FIELDS[k]) for k, v in test.items()), test
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITIES
        assert 0 <= test["score"] <= test["max_score"]


def _result(student: str = "ada", problem_set: str = "01_rooflines") -> Result:
    return Result(Submission(student, problem_set, Path(f"{student}__{problem_set}.ipynb")), "graded",
                  outcomes={"01.1": "right", "01.2": "wrong", "01.3": "unanswered"},
                  points={"01.1": 1, "01.2": 0, "01.3": 0}, possible={"01.1": 1, "01.2": 1, "01.3": 2},
                  hints={"01.2": 2}, advice={"01.2": "Your answer is too large by a factor of 8: bits against bytes?"})


def test_results_json_has_only_gradescopes_fields_and_never_the_expected_value():
    results = results_json(_result(), "after_published")
    _valid(results)
    assert results["score"] == 1 and [t["score"] for t in results["tests"]] == [1, 0, 0]
    assert [t["max_score"] for t in results["tests"]] == [1, 1, 2]
    wrong = results["tests"][1]
    assert wrong["status"] == "failed" and "factor of 8" in wrong["output"] and "2 hints taken" in wrong["output"]
    with pytest.raises(ValueError, match="visibility"):
        results_json(_result(), "sometimes")


def test_the_lms_csv_has_a_row_per_student_and_a_column_per_set_and_question(tmp_path):
    second = _result("bo")
    second.points = {"01.1": 1, "01.2": 1, "01.3": 2}
    path = lms_csv([_result(), second, _result("=cmd")], tmp_path / "lms.csv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "total", "reasoning", "01_rooflines", "01.1", "01.2", "01.3"]
    assert {r["reasoning"] for r in rows} == {""}  # the teacher's points for the reasoning, given by hand
    assert [(r["student"], r["total"]) for r in rows] == [("'=cmd", "1"), ("ada", "1"), ("bo", "4")]


@pytest.mark.slow  # runs the solutions' notebooks through the autograder
def test_the_autograder_zip_grades_the_solutions_to_full_marks_in_gradescopes_layout(tmp_path):
    zipped = autograder_zip(tmp_path / "autograder.zip", "01_rooflines", root=ROOT)
    layout = tmp_path / "autograder"
    with zipfile.ZipFile(zipped) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "course/course.json", "course/solutions/01_rooflines.md"} <= set(names)
        assert all(not n.startswith("course/scalebook/problems/__pycache__") for n in names)
        assert archive.getinfo("run_autograder").external_attr >> 16 & stat.S_IXUSR
        archive.extractall(layout / "source")
    (layout / "submission").mkdir()
    shutil.copy(ROOT / "solutions" / "01_rooflines.ipynb", layout / "submission" / "my work.ipynb")
    (layout / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Ada", "email": "ada@x.edu"}]}))
    run = layout / "source" / "run_autograder"
    run.chmod(0o755)
    env = {**os.environ, "SCALEBOOK_AUTOGRADER_ROOT": str(layout), "SCALEBOOK_PYTHON": sys.executable}
    done = subprocess.run([str(run)], cwd=layout, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((layout / "results" / "results.json").read_text())
    _valid(results)
    assert len(results["tests"]) == 16 and all(t["status"] == "passed" for t in results["tests"])
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0


def test_the_course_commands_issue_keys_and_zips(tmp_path, capsys):
    secret = tmp_path / "course.key"
    secret.write_text("spring 2027 secret\n")
    assert cli.main(["course", "keys", "--secret-file", str(secret), "alice", "bob"]) == 0
    shown = capsys.readouterr().out
    assert student_key("spring 2027 secret", "alice") in shown and student_key("spring 2027 secret", "bob") in shown
    out = tmp_path / "ag.zip"
    assert cli.main(["course", "gradescope-zip", "02_tpus", "--out", str(out), "--secret-file", str(secret),
                     "--hint-cost", "0.25", "--visibility", "after_published"]) == 0
    with zipfile.ZipFile(out) as archive:
        config = json.loads(archive.read("course/course.json"))
    assert config == {"problem_set": "02_tpus", "hint_cost": 0.25, "visibility": "after_published", "timeout": 120,
                      "secret": "spring 2027 secret"}


@pytest.mark.parametrize("argv", [
    ["course", "gradescope-zip", "99_nothing"], ["course", "gradescope-zip", "01_rooflines", "--hint-cost", "2"],
    ["course", "gradescope-zip", "01_rooflines", "--visibility", "sometimes"], ["grade", ".", "--format", "pdf"],
])
def test_the_course_commands_refuse_bad_input_in_one_line(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = [*argv, "--out", str(tmp_path / "x.zip")] if argv[0] == "course" else argv
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalebook") and len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_a_crashed_cells_error_reaches_the_feedback_and_results_json(tmp_path):
    import hostile

    from scalebook.course.grader import sandbox
    from scalebook.course.grader.autograde import grade

    subs = tmp_path / "subs"
    subs.mkdir()
    cells = ["import scalebook as sb", "answer = undefined_name * 2", "sb.check('01.1', answer)",
             "raise ValueError('<b>boom</b>')"]
    (subs / "ada__01_rooflines.ipynb").write_text(hostile.notebook(*cells))
    exported: list = []
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=sandbox.available() is None, on_results=exported.extend)
    feedback = next((tmp_path / "feedback").glob("ada-*.md")).read_text()
    assert "cell 2\\: NameError\\: name \\'undefined\\_name\\' is not defined" in feedback
    assert "cell 4\\: ValueError\\: \\<b\\>boom\\<\\/b\\>" in feedback and "cell 3\\: NameError" in feedback
    output = results_json(exported[0])["output"]
    assert "cell 2: NameError" in output and "cell 4: ValueError: <b>boom</b>" in output
