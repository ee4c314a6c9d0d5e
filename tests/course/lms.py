"""Canvas's and Moodle's grade importers, restated line by line from their code, for the tests that read an
export through them (tests/course/test_exports.py, tests/course/test_walkthrough.py).

Canvas: "How do I import grades in the Gradebook?"
(https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807) and
`GradebookImporter` (instructure/canvas-lms, lib/gradebook_importer.rb). Moodle: "Grade import"
(https://docs.moodle.org/en/Grade_import) and `gradeimport_csv_load_data::prepare_import_grade_data`
(moodle/moodle, grade/import/csv/classes/load_data.php).
"""

from __future__ import annotations

import csv
import io
import re


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


# ---- Canvas's importer, restated from lib/gradebook_importer.rb ------------------------------------------------------

NON_ASSIGNMENT = re.compile("|".join(["Current Score", "Current Points", "Current Grade", "Final Score",
                                      "Final Points", "Final Grade", "Override Score", "Override Grade",
                                      "Override Status"]))  # NON_ASSIGNMENT_COLUMN_HEADERS


def title_and_id(text: str) -> tuple[str, str | None]:
    """Assignment.title_and_id: `if str =~ /\\A(.*)\\s\\((\\d+)\\)\\z/ then [$1, $2] else [str, nil]`."""
    found = re.fullmatch(r"(.*)\s\((\d+)\)", text, re.S)
    return (found[1], found[2]) if found else (text, None)


def canvas_reads(text: str, students: list[dict[str, str]]) -> dict[str, object]:
    """What GradebookImporter#parse! makes of `text` in a course of `students` (id, sis_user_id, login, name,
    sortable_name): the assignments (title, id, points possible) and each row's student id and grades. Raises
    AssertionError where the importer raises InvalidHeaderRow."""
    rows = [r for r in csv_rows(text) if not re.fullmatch(r"[;, ]+", ",".join(r))]  # skip_lines: /^[;, ]+$/
    header = rows[0]
    # row_has_student_headers?: row.length > 3 && row[0].include?("Student") && row[1].include?("ID")
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], header
    # update_column_count: name, ID, section; SIS User ID and SIS Login ID (Integration ID, Root Account) between
    columns, sis_user, sis_login = 3, None, None
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        columns, sis_login = 4, 2
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        columns, sis_user, sis_login = 5 + bool(re.search(r"Integration\s+ID", header[4])), 2, 3
    # header?: last_student_info_column(row).include?("Section")
    assert "Section" in header[columns - 1], header
    titles = [h for h in header[columns:] if not NON_ASSIGNMENT.search(h)]  # strip_non_assignment_columns
    assignments = {h: {"title": title_and_id(h)[0], "id": title_and_id(h)[1], "points_possible": None}
                   for h in titles}
    graded = []
    for row in rows[1:]:
        if "Points Possible" in row[0]:  # check_for_non_student_row -> process_pp
            for h in titles:
                assignments[h]["points_possible"] = row[header.index(h)] or None
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", c, re.I) for c in row if c):
            continue
        # process_student: the ID column, else SIS User ID, else SIS Login ID, else the name or sortable name
        found = ([s for s in students if row[1] and s["id"] == row[1]]
                 or [s for s in students if sis_user is not None and row[sis_user] and s["sis"] == row[sis_user]]
                 or [s for s in students if sis_login is not None and row[sis_login] and s["login"] == row[sis_login]]
                 or [s for s in students if row[0] in (s["name"], s["sortable_name"])])
        graded.append({"student": found[0]["id"] if found else None,
                       "grades": {h: row[header.index(h)].strip() for h in titles}})
    return {"assignments": assignments, "rows": graded}


CANVAS_COURSE = [{"id": "1001", "sis": "S-1", "login": "ada", "name": "Ada Lovelace", "sortable_name": "Lovelace, Ada"},
                 {"id": "1002", "sis": "S-2", "login": "grace", "name": "Grace Hopper",
                  "sortable_name": "Hopper, Grace"},
                 {"id": "1003", "sis": "S-3", "login": "alan", "name": "Alan Turing", "sortable_name": "Turing, Alan"}]


# ---- Moodle's importer, restated from grade/import/csv/classes/load_data.php ----------------------------------------

def moodle_reads(text: str, users: list[dict[str, str]], mapfrom: str, mapto: str) -> dict[str, dict[str, object]]:
    """What prepare_import_grade_data makes of `text` with the identifier column `mapfrom` mapped to `mapto`
    (useremail: the `email` field, useridnumber: `idnumber`) and every other column to a new grade item:
    {user's email: {column: grade or None}}. Raises AssertionError where Moodle aborts the import."""
    field = {"useremail": "email", "useridnumber": "idnumber"}[mapto]
    rows = csv_rows(text)
    header = [h.strip() for h in rows[0]]  # trim_headers
    key = header.index(mapfrom)
    imported: dict[str, dict[str, object]] = {}
    studentid = None  # set once before the loop, as Moodle does: a row without one would reuse the last
    for line in rows[1:]:
        if len(line) <= 1:  # "There is no data on this line, move on."
            continue
        grades: dict[str, object] = {}
        for i, value in enumerate(line):
            value = value.strip()
            if i == key:
                if value:  # "Skip invalid row with blank user field."
                    match = [u for u in users if u[field] == value]  # $DB->get_record('user', [field => value])
                    assert match, f"usermappingerror: {value!r}"
                    studentid = match[0]["email"]
            else:  # import_new_grade_item: `if (trim($value) != '-') $newgrade->finalgrade = $value;`
                grades[header[i]] = None if value == "-" else float(value)
        assert studentid, "usermappingerrorusernotfound"
        assert studentid not in imported, f"two rows for {studentid}: a row without an identifier took the last"
        imported[studentid] = grades
    return imported


MOODLE_USERS = [{"email": "ada.lovelace@uni.example", "idnumber": "S-1"},
                {"email": "grace@uni.example", "idnumber": "S-2"}, {"email": "alan@uni.example", "idnumber": "S-3"}]
