"""The exports import as each platform documents and implements its import, built from a gradebook the grader
wrote, without grading again.

Canvas: "How do I import grades in the Gradebook?"
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807) and the code
that reads the file, `GradebookImporter` (instructure/canvas-lms, lib/gradebook_importer.rb), whose rules
`canvas_reads` restates line by line. Moodle: "Grade import" (https://docs.moodle.org/en/Grade_import) and
`gradeimport_csv_load_data::prepare_import_grade_data` (moodle/moodle, grade/import/csv/classes/load_data.php),
restated by `moodle_reads`. Gradescope: the autograder's results.json
(https://gradescope-autograders.readthedocs.io/en/latest/specs/).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import fakeclass
import pytest
from lms import CANVAS_COURSE, MOODLE_USERS, canvas_reads, csv_rows, moodle_reads

from scalebook import cli
from scalebook.course import exports
from scalebook.course.grader import autograde
from scalebook.course.grader.autograde import grade
from scalebook.course.roster import Roster

# Canvas's gradebook export, as lib/gradebook_exporter.rb writes it (the course's class list, read by roster.py).
CANVAS_EXPORT = """Student,ID,SIS User ID,SIS Login ID,Section,Problem set 01: rooflines (48213),Current Score
    Points Possible,,,,,28,(read only)
"Lovelace, Ada",1001,S-1,ada,Section A,,
"Hopper, Grace",1002,S-2,grace,Section A,,
"Turing, Alan",1003,S-3,alan,Section B,,
"""
# Moodle's participants download: the name, then the site's identity fields.
MOODLE_EXPORT = """First name,Last name,ID number,Email address
Ada,Lovelace,S-1,ada.lovelace@uni.example
Grace,Hopper,S-2,grace@uni.example
Alan,Turing,S-3,alan@uni.example
"""
# Each student's first problem set; Grace also sent the third; Alan sent nothing.
FIRST = {"01.1": 1, "01.3": 2}  # the questions Ada answers right, with their points (solutions/01_rooflines.md)


# ---- the class ------------------------------------------------------------------------------------------------

@pytest.fixture
def gradebook(tmp_path, monkeypatch) -> Path:
    """Ada's first problem set (3 points), Grace's first (1) and third (1); Alan sent nothing. Named by their
    roster uid (the Canvas login)."""
    fakeclass.fake_runs(monkeypatch)
    subs = fakeclass.submissions(tmp_path / "subs", {
        "ada__01_rooflines.ipynb": fakeclass.notebook(FIRST, {"01.2": "Bytes per FLOP."}),
        "grace__01_rooflines.ipynb": fakeclass.notebook(["01.1"]),
        "grace__03_sharding.ipynb": fakeclass.notebook(["03.1"])})
    grade(subs, tmp_path / "grades" / "gradebook.csv", root=fakeclass.ROOT, sandboxed=False)
    return tmp_path / "grades" / "gradebook.csv"


@pytest.fixture
def canvas_roster(tmp_path) -> Roster:
    (tmp_path / "canvas.csv").write_text(CANVAS_EXPORT, encoding="utf-8")
    return Roster.from_export(tmp_path / "canvas.csv")


@pytest.fixture
def moodle_roster(tmp_path) -> Roster:
    (tmp_path / "moodle.csv").write_text(MOODLE_EXPORT, encoding="utf-8")
    return Roster.from_export(tmp_path / "moodle.csv")


def test_canvas_reads_the_export_as_one_assignment_per_set_with_every_student_found(gradebook, canvas_roster,
                                                                                   tmp_path):
    done = exports.canvas(gradebook, canvas_roster, tmp_path / "canvas-import.csv")
    text = done.path.read_text(encoding="utf-8")
    # The guide's and the importer's header: Student, ID, SIS User ID, SIS Login ID, Section, then assignments only.
    assert csv_rows(text)[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                              "Problem set 01: rooflines", "Problem set 03: sharding"]
    read = canvas_reads(text, CANVAS_COURSE)
    assert [a["points_possible"] for a in read["assignments"].values()] == ["28", "42"]
    grades = {r["student"]: list(r["grades"].values()) for r in read["rows"]}
    assert grades == {"1001": [str(sum(FIRST.values())), ""], "1002": ["1", "1"], "1003": ["", ""]}  # Alan: blank
    assert done.notes == ()


def test_a_named_assignment_is_the_canvas_assignment_of_that_id(gradebook, canvas_roster, tmp_path):
    done = exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv", {"01": "Problem set 01: rooflines (48213)"})
    read = canvas_reads(done.path.read_text(encoding="utf-8"), CANVAS_COURSE)
    assert [(a["title"], a["id"]) for a in read["assignments"].values()] == [
        ("Problem set 01: rooflines", "48213"), ("Problem set 03: sharding", None)]
    with pytest.raises(ValueError, match="'02' is no problem set.*01_rooflines"):
        exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv", {"02": "Problem set 2"})
    with pytest.raises(ValueError, match="share the assignment title"):
        exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv", {"01": "PS", "03": "PS"})


def test_without_a_roster_canvas_matches_by_name_and_the_notes_say_which_columns_are_blank(gradebook, tmp_path):
    done = exports.canvas(gradebook, None, tmp_path / "c.csv")
    rows = csv_rows(done.path.read_text(encoding="utf-8"))
    assert [r[:5] for r in rows[2:]] == [["ada", "", "", "", ""], ["grace", "", "", "", ""]]
    assert "ID, SIS User ID, SIS Login ID and Section are blank" in done.notes[0]
    assert canvas_reads(done.path.read_text(encoding="utf-8"), CANVAS_COURSE)["rows"][0]["student"] is None


def test_moodle_matches_every_row_by_email_and_reads_no_grade_for_a_non_submitter(gradebook, moodle_roster, tmp_path,
                                                                                 monkeypatch):
    # The gradebook names students by Canvas login; here the roster is Moodle's, whose uid is the email.
    rows = gradebook.read_text(encoding="utf-8").replace("ada,", "ada.lovelace@uni.example,")
    gradebook.write_text(rows.replace("grace,", "grace@uni.example,"), encoding="utf-8")
    done = exports.moodle(gradebook, moodle_roster, tmp_path / "moodle-import.csv")
    text = done.path.read_text(encoding="utf-8")
    assert csv_rows(text)[0] == ["Email address", "Problem set 01: rooflines", "Problem set 03: sharding"]
    read = moodle_reads(text, MOODLE_USERS, "Email address", "useremail")
    assert read == {"ada.lovelace@uni.example": {"Problem set 01: rooflines": 3.0, "Problem set 03: sharding": None},
                    "grace@uni.example": {"Problem set 01: rooflines": 1.0, "Problem set 03: sharding": 1.0},
                    "alan@uni.example": {"Problem set 01: rooflines": None, "Problem set 03: sharding": None}}


def test_moodle_uses_the_id_number_when_not_every_student_has_an_email(gradebook, canvas_roster, tmp_path):
    done = exports.moodle(gradebook, canvas_roster, tmp_path / "m.csv")  # Canvas's class list has no emails
    read = moodle_reads(done.path.read_text(encoding="utf-8"), MOODLE_USERS, "ID number", "useridnumber")
    assert read["ada.lovelace@uni.example"]["Problem set 01: rooflines"] == 3.0 and len(read) == 3
    with pytest.raises(ValueError, match="email address or ID number.*roster"):
        exports.moodle(gradebook, None, tmp_path / "m.csv")


def test_a_row_the_grader_could_not_grade_is_blank_and_named_never_a_zero(gradebook, canvas_roster, tmp_path):
    text = gradebook.read_text(encoding="utf-8").replace(",graded,", ",grader error,", 1)
    gradebook.write_text(text, encoding="utf-8")
    done = exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv")
    assert csv_rows(done.path.read_text(encoding="utf-8"))[2][5] == ""
    assert "ada, 01_rooflines: left blank, the gradebook says 'grader error'" in done.notes[0]


def test_an_upload_the_roster_matched_to_nobody_is_named_not_exported(gradebook, canvas_roster, tmp_path):
    text = gradebook.read_text(encoding="utf-8").replace("grace,03_sharding", "gracie,03_sharding")
    gradebook.write_text(text.replace(",graded,none", ",unmatched,none", 3), encoding="utf-8")
    done = exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv")
    assert [r[5:] for r in csv_rows(done.path.read_text(encoding="utf-8"))[2:]] == [["", ""], ["", ""], ["", ""]]
    assert [n.split(":")[0] for n in done.notes] == ["ada, 01_rooflines", "grace, 01_rooflines", "gracie, 03_sharding"]
    assert all("an upload the roster matched to no student" in n for n in done.notes)


def test_the_teachers_reasoning_points_are_added_to_the_set(gradebook, canvas_roster, tmp_path):
    manual = gradebook.with_name("gradebook-manual.csv")
    assert manual.read_text(encoding="utf-8").splitlines() == ["student,qid,points,note", "ada,01.2,,"]
    manual.write_text("student,qid,points,note\nada,01.2,2.5,clear\ngrace,03.4,1,\n", encoding="utf-8")
    done = exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv")
    assert [r[5:] for r in csv_rows(done.path.read_text(encoding="utf-8"))[2:]] == [["5.5", ""], ["1", "2"], ["", ""]]
    manual.write_text("student,qid,points,note\nada,01.2,lots,\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: points='lots' is not a number of points"):
        exports.canvas(gradebook, canvas_roster, tmp_path / "c.csv")


def test_gradescope_gets_a_results_json_per_student_and_set_from_the_gradebook_alone(gradebook, moodle_roster,
                                                                                     tmp_path, monkeypatch):
    monkeypatch.setattr(autograde, "grade_one", None)  # nothing is graded again
    done = exports.gradescope(gradebook, None, tmp_path / "gs", fakeclass.ROOT)
    files = sorted(p.relative_to(done.path).parts[0] for p in done.path.rglob("*.json"))
    assert files == ["01_rooflines", "01_rooflines", "03_sharding"]
    ada = json.loads(next((done.path / "01_rooflines").glob("ada-*.json")).read_text(encoding="utf-8"))
    assert ada["score"] == 3 and {t["number"]: (t["score"], t["max_score"]) for t in ada["tests"]}["01.3"] == (2, 2)
    assert all(set(t) <= {"name", "number", "score", "max_score"} for t in ada["tests"])


def test_the_export_command_creates_its_folder_and_says_what_it_left_out(gradebook, canvas_roster, tmp_path,
                                                                         capsys):
    out = tmp_path / "new" / "folder" / "canvas.csv"
    gradebook.write_text(gradebook.read_text(encoding="utf-8").replace("grace,", "grete,"), encoding="utf-8")
    assert cli.main(["course", "export", "--gradebook", str(gradebook), "--to", "canvas", "--out", str(out),
                     "--roster", str(tmp_path / "canvas.csv"), "--assignment", "03=Sharding (777)"]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out} (canvas)" in said and "note: grete: not in the roster, left out" in said
    assert csv_rows(out.read_text(encoding="utf-8"))[0][-1] == "Sharding (777)"


@pytest.mark.parametrize("argv, message", [
    (["--to", "blackbord"], "blackboard|canvas"), (["--to", "canvas", "--assignment", "05"], "SET=TITLE"),
    (["--to", "canvas", "--assignment", "07=PS7"], "'07' is no problem set"),
])
def test_the_export_command_refuses_bad_input_in_one_line(argv, message, gradebook, tmp_path, capsys):
    assert cli.main(["course", "export", "--gradebook", str(gradebook), "--out", str(tmp_path / "x.csv"),
                     *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err


def test_grade_format_canvas_derives_the_import_from_the_gradebook_it_wrote(tmp_path, monkeypatch, capsys):
    fakeclass.fake_runs(monkeypatch)
    subs = fakeclass.submissions(tmp_path / "subs", {"ada__01_rooflines.ipynb": fakeclass.notebook(FIRST)})
    out = tmp_path / "grades" / "g.csv"
    assert cli.main(["grade", str(subs), "--out", str(out), "--no-sandbox", "--format", "canvas",
                     "--course", str(fakeclass.ROOT)]) == 0
    rows = csv_rows(out.with_name("g-canvas.csv").read_text(encoding="utf-8"))
    assert rows[0][:5] == list(exports.CANVAS_COLUMNS) and rows[2][5] == "3"
    assert cli.main(["grade", str(subs), "--out", str(out), "--no-sandbox", "--format", "lms", "--force",
                     "--course", str(fakeclass.ROOT)]) == 0
    assert "--format lms is gone" in capsys.readouterr().out
