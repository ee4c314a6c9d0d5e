"""The roster, the one source of identity in a course (issue #37, item 1): the class list a teacher already has is
imported from each platform's own export, keys are issued per roster entry, and every upload is filed under exactly
one student or reported unmatched, never graded under a guessed name.

Each fixture follows its platform's documented or as-written format, cited beside it; a test never invents its own
idea of an export."""

from __future__ import annotations

import csv
import os
import unicodedata
from pathlib import Path

import pytest

from scalebook import cli
from scalebook.course.grader.submissions import find_submissions
from scalebook.course.roster import Roster, Student, find_roster, normalise, read_upload_name, sender
from scalebook.course.variants import student_key

# Canvas, Grades > Export > Export Entire Gradebook
# (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-export-grades-in-the-Gradebook/ta-p/809), as Canvas's
# exporter writes it (instructure/canvas-lms, lib/gradebook_exporter.rb): the header `Student, ID, SIS User ID,
# SIS Login ID, Section`, an assignment column titled with its id, the totals; a "Manual Posting" row for an
# assignment posted by hand; the "    Points Possible" row; students by sortable name ("Last, First"); a name that
# starts with = written as ="..."; the test student (Student View) last.
CANVAS = '''\
Student,ID,SIS User ID,SIS Login ID,Section,01 Rooflines (1001),02 TPUs (1002),Current Score,Unposted Current Score,\
Final Score,Unposted Final Score
,,,,,,Manual Posting,,,,
    Points Possible,,,,,28.00,30.00,(read only),(read only),(read only),(read only)
"Smith, Jane",12345,S0001,jsmith,Section 01,28.00,N/A,100.00,100.00,48.28,48.28
"Øster, Åsa",12346,S0002,aoster,Section 02,,N/A,,,0.00,0.00
"=""=Lee, Ann""",12347,S0003,alee,Section 01,14.00,N/A,50.00,50.00,24.14,24.14
"Student, Test",12399,,,Section 01,,N/A,,,0.00,0.00
'''
# The same export by a user who may not see SIS ids: `SIS User ID` is left out (lib/gradebook_exporter.rb).
CANVAS_TA = """\
Student,ID,SIS Login ID,Section,01 Rooflines (1001)
    Points Possible,,,,28.00
"Smith, Jane",12345,jsmith,Section 01,28.00
"""
# Moodle, Participants > select all > "Download table data as" CSV: `First name`, `Last name`, then the site's
# identity fields (moodle/moodle, user/action_redir.php; `Email address` is the default, `ID number` a common one).
MOODLE_PARTICIPANTS = """\
First name,Last name,ID number,Email address
Jane,Smith,S0001,Jane.Smith@example.edu
Åsa,Øster,S0002,asa.oster@example.edu
"""
# Moodle's grade export, plain text (https://docs.moodle.org/en/Grade_export): the user fields, then the grade items;
# an older Moodle calls the last name "Surname".
MOODLE_GRADES = """\
"First name","Surname","ID number","Institution","Department","Email address","Assignment: 01 Rooflines (Real)",\
"Last downloaded from this course"
"Jane","Smith","S0001","","","jane.smith@example.edu","28.00","1716900000"
"""
# A Gradescope roster (https://guides.gradescope.com/hc/en-us/articles/21926598776333): a unique Email per member,
# the name in one column or two, an optional SID, section columns; a downloaded roster's Role column.
GRADESCOPE = """\
First Name,Last Name,SID,Email,Role,Sections
Jane,Smith,S0001,jane.smith@example.edu,Student,Section 01
Pat,Grader,,pat@example.edu,TA,
"""
GRADESCOPE_FULL_NAME = """\
Full Name,Email,SID
Jane Smith,jane.smith@example.edu,S0001
"""


def export(tmp_path: Path, text: str, name: str = "export.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def canvas(tmp_path: Path) -> Roster:
    return Roster.from_export(export(tmp_path, CANVAS))


# --- importing each platform's export ---------------------------------------------------------------------------


def test_a_canvas_gradebook_export_gives_one_student_per_row_and_skips_its_two_header_rows(canvas):
    assert canvas.source == "canvas"
    jane = canvas.students[0]
    assert jane == Student("jsmith", "Jane Smith", "", "S0001", "12345", "jsmith", "Section 01")
    assert [s.name for s in canvas.students] == ["Jane Smith", "Åsa Øster", "Ann =Lee", "Test Student"]
    assert canvas.students[3].uid == "canvas-12399"  # no login, email or SIS id: Canvas's own id


def test_a_canvas_export_without_sis_user_ids_still_imports(tmp_path):
    roster = Roster.from_export(export(tmp_path, CANVAS_TA))
    assert [(s.uid, s.lms_id, s.sis_id) for s in roster.students] == [("jsmith", "12345", "")]


@pytest.mark.parametrize("text", [MOODLE_PARTICIPANTS, MOODLE_GRADES])
def test_moodle_s_participants_and_grade_exports_import_by_email(tmp_path, text):
    roster = Roster.from_export(export(tmp_path, text))
    assert roster.source == "moodle"
    assert roster.students[0] == Student("jane.smith@example.edu", "Jane Smith", "jane.smith@example.edu", "S0001")


@pytest.mark.parametrize("text", [GRADESCOPE, GRADESCOPE_FULL_NAME])
def test_a_gradescope_roster_imports_its_students_and_leaves_out_its_staff(tmp_path, text):
    roster = Roster.from_export(export(tmp_path, text))
    assert roster.source == "gradescope"
    assert [(s.uid, s.name, s.sis_id) for s in roster.students] == [("jane.smith@example.edu", "Jane Smith", "S0001")]


def test_an_export_of_no_known_platform_is_refused_naming_what_is_read(tmp_path):
    with pytest.raises(ValueError, match="Canvas's gradebook export .* Moodle's .* Gradescope roster"):
        Roster.from_export(export(tmp_path, "name,mail\nJane,j@x\n"))


def test_an_invisible_character_in_an_exported_name_is_refused_naming_the_row(tmp_path):
    text = MOODLE_PARTICIPANTS.replace("Jane,Smith", "Ja\u200bne,Smith")
    with pytest.raises(ValueError, match=r"row 2: name 'Ja\\u200bne Smith' holds .*U\+200B ZERO WIDTH SPACE"):
        Roster.from_export(export(tmp_path, text))


def test_two_students_with_one_email_are_refused(tmp_path):
    text = MOODLE_PARTICIPANTS + "Janet,Smith,S0009,JANE.SMITH@example.edu\n"
    with pytest.raises(ValueError, match="two students of the roster have email 'jane.smith@example.edu'"):
        Roster.from_export(export(tmp_path, text))


def test_the_roster_file_round_trips_and_is_found_in_the_course_folder(canvas, tmp_path):
    assert find_roster(tmp_path) is None
    canvas.write(tmp_path / "roster.csv")
    again = find_roster(tmp_path)
    assert again is not None and again.students == canvas.students


def test_a_name_a_spreadsheet_would_run_is_written_quoted_and_read_back_as_typed(tmp_path):
    roster = Roster([Student("x1", "=HYPERLINK(1)", "x@example.edu")])
    roster.write(tmp_path / "roster.csv")
    assert "'=HYPERLINK(1)" in (tmp_path / "roster.csv").read_text(encoding="utf-8")
    assert Roster.read(tmp_path / "roster.csv").students == roster.students


# --- names compared as they are seen ----------------------------------------------------------------------------


def test_spellings_of_one_name_normalise_alike():
    nfd = unicodedata.normalize("NFD", "José")
    assert nfd != "José" and normalise(nfd) == normalise("José") == "josé"
    assert normalise("  Dup \u00a0") == normalise("dup") == normalise("DUP") == "dup"
    assert normalise("Jane   Smith") == "jane smith"


@pytest.mark.parametrize("text", ["du\u200bp", "dup\u202e", "dup\x00", "dup\n", "dup\u2028", "\udcff",
                                  "dup\u3164", "du\u2800p", "dup\ufe0f"])
def test_a_name_with_an_invisible_or_control_character_is_refused_by_name(text):
    with pytest.raises(ValueError, match=r"name '.*' holds .*U\+"):
        normalise(text)


# --- who is who -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["jsmith", "JSMITH ", "S0001", "12345", "Jane Smith", "smith, jane", "Smith Jane",
                                  unicodedata.normalize("NFD", " JANE  SMITH ")])
def test_a_student_is_found_by_any_id_or_their_name_however_spelled(canvas, text):
    assert canvas.match(text).uid == "jsmith"


def test_a_name_two_students_share_matches_neither_and_says_whom(tmp_path):
    roster = Roster([Student("a1", "Sam Lee", "a@x.edu"), Student("b2", "Sam Lee", "b@x.edu")])
    assert roster.match("Sam Lee") is None
    assert "names 2 students of the roster (uids a1, b2)" in roster.explain("sam lee")
    assert roster.match("b@x.edu").uid == "b2"


def test_an_unknown_name_is_explained_with_the_closest(canvas):
    assert canvas.match("jsmyth") is None
    assert "no student of the roster is 'jsmyth'" in canvas.explain("jsmyth")
    assert "'jsmith'" in canvas.explain("jsmyth")


# --- who sent an upload -----------------------------------------------------------------------------------------

# Canvas's "Download Submissions" names each file `<lastfirst>[_LATE]_<user id>_<file id>_<file name>`, the name
# lower-cased with non-word characters dropped (instructure/canvas-lms, lib/content_zipper.rb: get_filename,
# sanitize_user_name, add_upload_submission).
@pytest.mark.parametrize("name", ["smithjane_12345_678901_01_rooflines.ipynb",
                                  "smithjane_LATE_12345_678901_01_rooflines.ipynb",
                                  "smithjane_late_12345_678901_jsmith__01_rooflines.ipynb"])
def test_a_canvas_download_name_is_filed_under_its_canvas_user(canvas, name):
    assert canvas.resolve_upload(name).uid == "jsmith"
    assert read_upload_name(name).rest == "01_rooflines.ipynb"


def test_a_canvas_download_of_an_unknown_user_or_anonymous_grading_names_no_one(canvas):
    assert canvas.resolve_upload("smithjane_99999_678901_01_rooflines.ipynb") is None
    assert "no student of the roster has Canvas ID 99999" in canvas.find_upload(
        "smithjane_99999_678901_01_rooflines.ipynb").why
    assert "anonymous grading" in canvas.find_upload("anon_aB3dE_678901_01_rooflines.ipynb").why


def test_a_canvas_download_is_matched_by_canvas_s_spelling_of_the_name_where_the_roster_has_no_canvas_ids(tmp_path):
    moodle = Roster.from_export(export(tmp_path, MOODLE_PARTICIPANTS))
    assert moodle.resolve_upload("smithjane_12345_678901_01_rooflines.ipynb").uid == "jane.smith@example.edu"
    assert moodle.resolve_upload("østeråsa_12346_678902_01_rooflines.ipynb").uid == "asa.oster@example.edu"


# Moodle's "Download all submissions" (moodle/moodle, mod/assign/classes/downloader.php): a folder
# `<Full Name>_<participant id>_assignsubmission_file` (4.1 on; `..._file_` from 3.1 to 4.0), or a file
# `<Full Name>_<participant id>_assignsubmission_file_<file name>` without folders.
@pytest.mark.parametrize("name, folder", [("Jane Smith_1234567_assignsubmission_file_", True),
                                          ("Jane Smith_1234567_assignsubmission_file", True),
                                          ("Jane Smith_1234567_assignsubmission_file_01_rooflines.ipynb", False)])
def test_a_moodle_download_name_is_filed_under_the_student_it_names(tmp_path, name, folder):
    roster = Roster.from_export(export(tmp_path, MOODLE_PARTICIPANTS))
    assert roster.resolve_upload(name, folder).uid == "jane.smith@example.edu"


def test_moodle_s_blind_marking_names_no_one(tmp_path):
    roster = Roster.from_export(export(tmp_path, MOODLE_PARTICIPANTS))
    assert "blind marking" in roster.find_upload("Participant_1234567_assignsubmission_file_", True).why


# Gradescope's /autograder/submission_metadata.json lists the submitters in `users`, each with email, id, name and,
# where the roster has one, sid (https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).
def metadata(**user: str) -> dict:
    return {"id": 123456, "assignment": {"id": 25828, "title": "01 Rooflines"}, "users": [{"id": 1234, **user}]}


def test_gradescope_s_submitter_is_found_by_email_then_sid_then_name(tmp_path):
    roster = Roster.from_export(export(tmp_path, GRADESCOPE))
    uid = "jane.smith@example.edu"
    assert roster.resolve_gradescope(metadata(email="Jane.Smith@example.edu", name="J. Smith")).uid == uid
    assert roster.resolve_gradescope(metadata(email="other@example.edu", sid="S0001", name="x")).uid == uid
    assert roster.resolve_gradescope(metadata(email="other@example.edu", name="Jane Smith")).uid == uid


def test_gradescope_s_unknown_or_group_submitter_names_no_one(tmp_path):
    roster = Roster.from_export(export(tmp_path, GRADESCOPE))
    assert roster.resolve_gradescope(metadata(email="who@example.edu", name="Who")) is None
    assert "who@example.edu" in roster.find_gradescope(metadata(email="who@example.edu")).why
    group = {"users": [{"email": "jane.smith@example.edu"}, {"email": "pat@example.edu"}]}
    assert "group submission of 2 users" in roster.find_gradescope(group).why
    assert "no users" in roster.find_gradescope({}).why


# --- the grader's submissions, filed by the roster --------------------------------------------------------------


def notebook(path: Path, mtime: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}", encoding="utf-8")
    os.utime(path, ns=(mtime, mtime))


@pytest.mark.parametrize("spellings", [("dup", "Dup"), ("José", unicodedata.normalize("NFD", "José")), ("dup", "dup ")])
def test_two_spellings_of_one_name_are_one_student_whose_latest_file_counts(tmp_path, spellings):
    for n, name in enumerate(spellings):
        notebook(tmp_path / f"{name}__01_rooflines.ipynb", 10**18 + n)
    found = find_submissions(tmp_path)
    counted = [s for s in found if not s.refused]
    assert len({s.student for s in found}) == 1 and len(counted) == 1
    assert counted[0].path.name == f"{spellings[1]}__01_rooflines.ipynb"
    assert [s.refused for s in found if s.refused] == ["superseded"]


def test_a_name_with_an_invisible_character_is_unmatched_not_graded(tmp_path):
    notebook(tmp_path / "du\u200bp__01_rooflines.ipynb", 10**18)
    [row] = find_submissions(tmp_path)
    assert row.refused == "unmatched" and "U+200B" in row.why


def test_with_a_roster_every_upload_is_filed_under_a_uid_or_unmatched_with_the_reason(canvas, tmp_path):
    subs = tmp_path / "submissions"
    notebook(subs / "smithjane_LATE_12345_678901_01_rooflines.ipynb", 10**18)
    notebook(subs / "aoster__01_rooflines.ipynb", 10**18)
    notebook(subs / "Ann =Lee" / "02_tpus.ipynb", 10**18)
    notebook(subs / "mallory__01_rooflines.ipynb", 10**18)
    notebook(subs / "doejohn_55555_678903_01_rooflines.ipynb", 10**18)
    rows = {(s.student, s.problem_set, s.refused) for s in find_submissions(subs, canvas)}
    assert rows == {("jsmith", "01_rooflines", ""), ("aoster", "01_rooflines", ""), ("alee", "02_tpus", ""),
                    ("mallory", "01_rooflines", "unmatched"), ("doejohn", "01_rooflines", "unmatched")}


def test_a_moodle_download_folder_is_filed_under_its_student_with_or_without_a_roster(tmp_path):
    subs = tmp_path / "submissions"
    notebook(subs / "Jane Smith_1234567_assignsubmission_file" / "01_rooflines.ipynb", 10**18)
    assert [s.student for s in find_submissions(subs)] == ["jane smith"]
    roster = Roster.from_export(export(tmp_path, MOODLE_PARTICIPANTS))
    assert [s.student for s in find_submissions(subs, roster)] == ["jane.smith@example.edu"]


def test_without_a_roster_a_canvas_download_is_unmatched_and_says_to_grade_with_one(tmp_path):
    assert "grade with the class roster" in sender("smithjane_12345_678901_01_rooflines.ipynb", None)[2]


def test_grading_with_a_roster_writes_an_unmatched_row_with_its_reason(canvas, tmp_path):
    from scalebook.course.grader.autograde import grade

    subs = tmp_path / "submissions"
    notebook(subs / "mallory__01_rooflines.ipynb", 10**18)
    out = tmp_path / "grades" / "gradebook.csv"
    grade(subs, out, root=Path(__file__).resolve().parents[2], sandboxed=False, roster=canvas)
    [row] = list(csv.DictReader(out.open(encoding="utf-8")))
    assert row["status"] == "unmatched" and "no student of the roster is 'mallory'" in row["detail"]


# --- the teacher's commands -------------------------------------------------------------------------------------


def test_the_roster_command_imports_an_export_and_keys_are_issued_per_roster_entry(tmp_path, capsys):
    secret = tmp_path / "course.key"
    secret.write_text("a long course secret\n", encoding="utf-8")
    assert cli.main(["course", "roster", str(export(tmp_path, CANVAS)), "--out", str(tmp_path / "roster.csv")]) == 0
    assert "4 students" in capsys.readouterr().out
    keys = tmp_path / "keys.csv"
    assert cli.main(["course", "keys", "--secret-file", str(secret), "--roster", str(tmp_path / "roster.csv"),
                     "--out", str(keys)]) == 0
    shown = capsys.readouterr().out
    rows = list(csv.DictReader(keys.open(encoding="utf-8")))
    assert [r["uid"] for r in rows] == ["jsmith", "aoster", "alee", "canvas-12399"]
    assert all(r["key"] == student_key("a long course secret", r["uid"]) and r["key"] in shown for r in rows)


def test_keys_by_name_still_work_without_a_roster_and_are_refused_in_a_course_with_one(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()  # the course folder: the one holding solutions/
    secret = tmp_path / "course.key"
    secret.write_text("a long course secret\n", encoding="utf-8")
    argv = ["course", "keys", "--secret-file", str(secret), "--course", str(tmp_path), "alice"]
    assert cli.main(argv) == 0
    assert student_key("a long course secret", "alice") in capsys.readouterr().out
    Roster([Student("a1", "Alice")]).write(tmp_path / "roster.csv")
    assert cli.main(argv) == 2
    assert "keys derive from its uids" in capsys.readouterr().err


def test_the_roster_command_refuses_a_bad_export_in_one_line(tmp_path, capsys):
    assert cli.main(["course", "roster", str(export(tmp_path, "a,b\n1,2\n")), "--out", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "export=" in err and not (tmp_path / "r.csv").exists()
